"""Deletion vector descriptors: the ``deletionVector`` object of ``add``/``remove`` actions.

A descriptor says *where* the bitmap of deleted rows lives (a file next to the table, a file at an
absolute URI, or inline in the log, base-85 encoded) and how many rows it deletes. Reading the bitmap
itself lives in :mod:`deltalog.data.deletion_vectors`; this module is pure metadata plus the Z85 codec.

Example:
    >>> dv = DeletionVectorDescriptor.from_dict(
    ...     {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "offset": 1,
    ...      "sizeInBytes": 36, "cardinality": 2})
    >>> dv.unique_id
    'uvBn[lx{q8@P<9BNH/isA@1'
    >>> dv.absolute_path("/data/t")
    '/data/t/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin'
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from deltalog.errors import DeletionVectorError

__all__ = [
    "STORAGE_ABSOLUTE",
    "STORAGE_INLINE",
    "STORAGE_RELATIVE",
    "DeletionVectorDescriptor",
    "local_path",
    "z85_decode",
    "z85_encode",
]

STORAGE_RELATIVE = "u"
"""The DV is in ``<table root>/<prefix>/deletion_vector_<uuid>.bin``; the path field is prefix + Z85(uuid)."""
STORAGE_INLINE = "i"
"""The serialized bitmap itself is Z85-encoded into the path field."""
STORAGE_ABSOLUTE = "p"
"""The path field is an absolute URI (or path) of the DV file."""

_STORAGE_TYPES = (STORAGE_RELATIVE, STORAGE_INLINE, STORAGE_ABSOLUTE)
_UUID_CHARS = 20  # Z85 length of a 16-byte UUID

# ---------------------------------------------------------------------------------------------------------
# Z85 (ZeroMQ RFC 32 base-85): each 4-byte big-endian word becomes 5 characters, most significant first.

_Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_ENCODE_TABLE = np.frombuffer(_Z85_ALPHABET.encode("ascii"), dtype=np.uint8)
_Z85_DECODE_TABLE = np.full(256, 255, dtype=np.uint8)
_Z85_DECODE_TABLE[_Z85_ENCODE_TABLE] = np.arange(85, dtype=np.uint8)
_POW85 = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def z85_encode(data: bytes) -> str:
    """Encode ``data`` as Z85, first padding it with zero bytes to a multiple of 4 (as Delta does).

    This is delta-spark's ``Base85Codec.encodeBytes``: an inline DV's ``sizeInBytes`` keeps the unpadded
    length and readers drop the padding after decoding (:func:`z85_decode` and the slice in
    :func:`deltalog.data.deletion_vectors.read_deletion_vector`). The Rust ``z85`` crate's ``'#'`` tail,
    which :func:`z85_decode` accepts, is never written: delta-spark cannot read it.

    Example:
        >>> z85_encode(bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]))
        'HelloWorld'
        >>> z85_encode(b"\\x01")  # padded to 4 bytes
        '0rr91'
    """
    pad = -len(data) % 4
    if pad:
        data = bytes(data) + b"\x00" * pad
    words = np.frombuffer(data, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _POW85[None, :]) % np.uint64(85)
    encoded: bytes = _Z85_ENCODE_TABLE[digits.reshape(-1)].tobytes()
    return encoded.decode("ascii")


def z85_decode(text: str) -> bytes:
    """Decode a Z85 string (length a multiple of 5) into bytes; bad input raises ``DeletionVectorError``.

    Besides plain Z85 this accepts the tail convention of the Rust ``z85`` crate (used by delta-kernel-rs
    for inline DVs): a last group starting with ``k`` ``'#'`` (impossible in plain Z85, as it would exceed
    32 bits) holds only ``4 - k`` bytes, encoded by its remaining ``5 - k`` characters.

    Example:
        >>> z85_decode("HelloWorld").hex()
        '864fd26fb559f75b'
        >>> z85_decode("##093").hex()
        '0300'
    """
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text length {len(text)} is not a multiple of 5")
    if text and text[-5] == "#":
        return _z85_decode_groups(text[:-5]) + _z85_decode_tail(text[-5:])
    return _z85_decode_groups(text)


def _z85_decode_tail(group: str) -> bytes:
    """Decode a final group of the Rust ``z85`` crate's padded form: ``k`` '#' then ``4 - k`` bytes."""
    missing = len(group) - len(group.lstrip("#"))
    if missing > 3:
        raise DeletionVectorError(f"invalid Z85 tail group {group!r}")
    value = 0
    for ch in group[missing:]:
        digit = _Z85_ALPHABET.find(ch)
        if digit < 0:
            raise DeletionVectorError(f"invalid Z85 character {ch!r} in tail group {group!r}")
        value = value * 85 + digit
    kept = 4 - missing
    if value >= 1 << (8 * kept):
        raise DeletionVectorError(f"Z85 tail group {group!r} out of range")
    return value.to_bytes(kept, "big")


def _z85_decode_groups(text: str) -> bytes:
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise DeletionVectorError(f"Z85 text contains non-ASCII characters: {text!r:.80}") from None
    values = _Z85_DECODE_TABLE[np.frombuffer(raw, dtype=np.uint8)]
    bad = np.flatnonzero(values == 255)
    if bad.size:
        pos = int(bad[0])
        raise DeletionVectorError(f"invalid Z85 character {text[pos]!r} at position {pos}")
    words = (values.reshape(-1, 5).astype(np.uint64) * _POW85[None, :]).sum(axis=1, dtype=np.uint64)
    if words.size and int(words.max()) > 0xFFFFFFFF:
        raise DeletionVectorError(f"Z85 group out of range in {text!r:.80}")
    decoded: bytes = words.astype(">u4").tobytes()
    return decoded


# ---------------------------------------------------------------------------------------------------------
# Paths


def local_path(uri_or_path: str) -> str:
    """Turn a ``file:`` URI into a local path (percent-decoded); other strings are returned unchanged.

    Example:
        >>> local_path("file:/tmp/a%20b/x.bin")
        '/tmp/a b/x.bin'
        >>> local_path("file:///tmp/t")
        '/tmp/t'
        >>> local_path("s3://bucket/t")
        's3://bucket/t'
    """
    if not uri_or_path.lower().startswith("file:"):
        return uri_or_path
    parts = urlsplit(uri_or_path)
    path = unquote(parts.path)
    if parts.netloc and parts.netloc.lower() != "localhost":
        path = f"//{parts.netloc}{path}"  # UNC-style host; keep it rather than silently dropping it
    return path


def _join(root: str, relative: str) -> str:
    return root.rstrip("/") + "/" + relative if root else relative


# ---------------------------------------------------------------------------------------------------------
# Descriptor


def _int_field(d: Mapping[str, Any], key: str, *, required: bool, where: Mapping[str, Any]) -> int | None:
    value = d.get(key)
    if value is None:
        if required:
            raise DeletionVectorError(f"deletion vector descriptor is missing '{key}'", **where)
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DeletionVectorError(
            f"deletion vector '{key}' must be an integer, got {type(value).__name__} ({value!r:.40})",
            **where,
        )
    if value < 0:
        raise DeletionVectorError(f"deletion vector '{key}' must not be negative, got {value}", **where)
    return int(value)


def _where_kwargs(where: Mapping[str, Any] | None) -> dict[str, Any]:
    if not where:
        return {}
    return {k: where[k] for k in ("table", "version", "file", "line") if k in where}


@dataclass(frozen=True)
class DeletionVectorDescriptor:
    """One ``deletionVector`` object; attribute names are the protocol's JSON keys.

    ``where`` (table/version/file/line of the log entry it came from) is only used in error messages
    and takes no part in equality.

    Example:
        >>> d = DeletionVectorDescriptor("i", "0rr91", sizeInBytes=1, cardinality=0)
        >>> d.to_dict()
        {'storageType': 'i', 'pathOrInlineDv': '0rr91', 'sizeInBytes': 1, 'cardinality': 0}
    """

    storageType: str
    pathOrInlineDv: str
    sizeInBytes: int
    cardinality: int
    offset: int | None = None
    maxRowIndex: int | None = None
    where: Mapping[str, Any] | None = field(default=None, compare=False, repr=False, kw_only=True)

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, where: Mapping[str, Any] | None = None
    ) -> DeletionVectorDescriptor:
        """Parse and validate a descriptor object; ``where`` may hold table/version/file/line for errors.

        Example:
            >>> d = DeletionVectorDescriptor.from_dict(
            ...     {"storageType": "i", "pathOrInlineDv": "0rr91", "sizeInBytes": 1, "cardinality": 0},
            ...     where={"version": 3})
            >>> d.cardinality, d.where
            (0, {'version': 3})
        """
        loc = _where_kwargs(where)
        if not isinstance(d, Mapping):
            raise DeletionVectorError(
                f"deletion vector descriptor must be an object, got {type(d).__name__}", **loc
            )
        storage = d.get("storageType")
        if storage not in _STORAGE_TYPES:
            raise DeletionVectorError(
                f"unknown deletion vector storageType {storage!r} (expected one of 'u', 'i', 'p')", **loc
            )
        path = d.get("pathOrInlineDv")
        if not isinstance(path, str):
            what = "missing" if path is None else f"not a string ({type(path).__name__})"
            raise DeletionVectorError(f"deletion vector 'pathOrInlineDv' is {what}", **loc)
        size = _int_field(d, "sizeInBytes", required=True, where=loc)
        card = _int_field(d, "cardinality", required=True, where=loc)
        offset = _int_field(d, "offset", required=False, where=loc)
        max_row = _int_field(d, "maxRowIndex", required=False, where=loc)
        assert size is not None and card is not None
        if storage == STORAGE_INLINE and offset is not None:
            raise DeletionVectorError("inline deletion vector must not have an 'offset'", **loc)
        if storage == STORAGE_RELATIVE and len(path) < _UUID_CHARS:
            raise DeletionVectorError(
                f"relative deletion vector path {path!r} is shorter than a {_UUID_CHARS}-character "
                "encoded UUID",
                **loc,
            )
        if storage == STORAGE_ABSOLUTE and not path:
            raise DeletionVectorError("absolute deletion vector path is empty", **loc)
        return cls(storage, path, size, card, offset, max_row, where=dict(loc) or None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object for the log; ``offset``/``maxRowIndex`` are omitted when ``None``.

        Example:
            >>> DeletionVectorDescriptor("p", "file:/x.bin", 36, 2, offset=1).to_dict()["offset"]
            1
        """
        out: dict[str, Any] = {"storageType": self.storageType, "pathOrInlineDv": self.pathOrInlineDv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.sizeInBytes
        out["cardinality"] = self.cardinality
        if self.maxRowIndex is not None:
            out["maxRowIndex"] = self.maxRowIndex
        return out

    @property
    def unique_id(self) -> str:
        """Key identifying this DV in log replay: storage type + path, plus ``@offset`` if present.

        Example:
            >>> DeletionVectorDescriptor("p", "file:/x.bin", 36, 2, offset=5).unique_id
            'pfile:/x.bin@5'
        """
        base = self.storageType + self.pathOrInlineDv
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        """True when the bitmap is stored in the log itself (``storageType == 'i'``).

        Example:
            >>> DeletionVectorDescriptor("i", "0rr91", 1, 0).is_inline
            True
        """
        return self.storageType == STORAGE_INLINE

    def error(self, message: str, *, file: str | None = None) -> DeletionVectorError:
        """Build a ``DeletionVectorError`` carrying this descriptor's log location (``file`` overrides it).

        Example:
            >>> str(DeletionVectorDescriptor("i", "", 0, 0).error("bad", file="x.bin"))
            'bad [file x.bin]'
        """
        loc = dict(self.where or {})
        if file is not None:
            loc["file"] = file
            loc.pop("line", None)
        return DeletionVectorError(message, **loc)

    @property
    def uuid(self) -> uuid.UUID | None:
        """The UUID encoded in a relative (``'u'``) descriptor, else ``None``.

        Example:
            >>> str(DeletionVectorDescriptor("u", "ab" + "vBn[lx{q8@P<9BNH/isA", 36, 2, 1).uuid)
            '61d16c75-6994-46b7-a15b-8b538852e50e'
        """
        if self.storageType != STORAGE_RELATIVE:
            return None
        if len(self.pathOrInlineDv) < _UUID_CHARS:
            raise self.error(f"relative deletion vector path {self.pathOrInlineDv!r} is too short")
        try:
            raw = z85_decode(self.pathOrInlineDv[-_UUID_CHARS:])
        except DeletionVectorError as exc:
            raise self.error(f"cannot decode deletion vector UUID: {exc.message}") from None
        return uuid.UUID(bytes=raw)

    def relative_path(self) -> str | None:
        """Path of a ``'u'`` DV relative to the table root (``<prefix>/deletion_vector_<uuid>.bin``).

        Example:
            >>> DeletionVectorDescriptor("u", "ab" + "vBn[lx{q8@P<9BNH/isA", 36, 2, 1).relative_path()
            'ab/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin'
        """
        dv_uuid = self.uuid
        if dv_uuid is None:
            return None
        prefix = self.pathOrInlineDv[:-_UUID_CHARS]
        name = f"deletion_vector_{dv_uuid}.bin"
        return f"{prefix}/{name}" if prefix else name

    def absolute_path(self, table_root: str) -> str | None:
        """Where the DV file is: a local path for local tables / ``file:`` URIs, else the URI; inline → None.

        Example:
            >>> DeletionVectorDescriptor("p", "file:/t/a%20b.bin", 36, 2, 1).absolute_path("/t")
            '/t/a b.bin'
            >>> DeletionVectorDescriptor("i", "0rr91", 1, 0).absolute_path("/t") is None
            True
        """
        if self.storageType == STORAGE_INLINE:
            return None
        if self.storageType == STORAGE_ABSOLUTE:
            return local_path(self.pathOrInlineDv)
        relative = self.relative_path()
        assert relative is not None
        return _join(local_path(table_root), relative)
