"""Inline deletion vectors as writers produce them: the Z85 encoding of the serialized bitmap (the
protocol's "Deletion Vector Descriptor" section), checked as the exact inverse of our decoder, against the
protocol's JSON example and the inline DVs of the conformance corpus, and the size threshold of
:func:`deltalog.data.deletion_vectors.store_deletion_vectors`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap

from deltalog.data.deletion_vectors import (
    INLINE_DV_MAX_BYTES,
    MAGIC_PORTABLE,
    inline_descriptor,
    read_deletion_vector,
    serialize_bitmap,
    store_deletion_vectors,
    write_deletion_vectors,
)
from deltalog.errors import DeletionVectorError
from deltalog.log.files import DV_TYPE, dv_unique_ids
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor, z85_decode, z85_encode

CORPUS = Path(__file__).parents[3] / "shared" / "conformance"

# PROTOCOL.md, "Deletion Vector Descriptor Schema", JSON Example 3 -- Inline: rows 3, 4, 7, 11, 18, 29.
SPEC_INLINE = {
    "storageType": "i",
    "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
    "sizeInBytes": 40,
    "cardinality": 6,
}
SPEC_ROWS = [3, 4, 7, 11, 18, 29]

# Row sets whose serialized sizes cover every remainder modulo 4 (so 0 to 3 padding bytes).
ROW_SETS: list[list[int]] = [
    [],  # 12 bytes: magic + zero buckets
    [0, 9],  # 36
    [*range(10), 70000],  # 37: a run container and an array container
    [3],  # 34
    [0, 1, 2, 10, 11, 12],  # 35
    [1, 2**32 + 1],  # two buckets
    list(range(0, 300, 7)),
    list(range(100_000)),  # one run: tiny whatever the row count
]


def _scattered(n: int) -> list[int]:
    """``n`` rows no two adjacent, in one 64K-row container: an array container of 2 bytes per row."""
    return list(range(0, 3 * n, 3))


@pytest.mark.parametrize("rows", ROW_SETS, ids=lambda r: f"{len(r)}rows")
def test_inline_encoding_is_the_exact_inverse_of_the_decoder(rows: list[int]) -> None:
    data = serialize_bitmap(rows)
    d = inline_descriptor(rows)
    raw = d.to_dict()
    assert raw == {"storageType": "i", "pathOrInlineDv": d.pathOrInlineDv, "sizeInBytes": len(data),
                   "cardinality": len(rows)}  # no offset: the protocol says absent for inline DVs
    # exactly the serialized bitmap (magic + portable roaring, no file framing), zero padded to 4 bytes
    text = raw["pathOrInlineDv"]
    assert len(text) == 5 * ((len(data) + 3) // 4)
    decoded = z85_decode(text)
    assert decoded[: len(data)] == data and decoded[len(data):] == b"\x00" * (-len(data) % 4)
    assert int.from_bytes(decoded[:4], "little") == MAGIC_PORTABLE
    assert not text[-5:].startswith("#")  # never the Rust crate's tail form, which delta-spark cannot read
    parsed = DeletionVectorDescriptor.from_dict(json.loads(json.dumps(raw)))
    assert read_deletion_vector(parsed, "/unused").tolist() == rows
    assert parsed.unique_id == "i" + text and parsed.absolute_path("/t") is None


def test_row_sets_cover_every_padding_length() -> None:
    assert {len(serialize_bitmap(rows)) % 4 for rows in ROW_SETS} == {0, 1, 2, 3}


def test_protocol_inline_example() -> None:
    d = DeletionVectorDescriptor.from_dict(SPEC_INLINE)
    raw = z85_decode(d.pathOrInlineDv)
    assert len(raw) == d.sizeInBytes == 40  # 4-byte aligned: no padding
    assert z85_encode(raw) == d.pathOrInlineDv  # our Z85 reproduces the example's text
    # The example's 12-byte header is the older "native" RoaringBitmapArray layout (big-endian magic
    # 1681511376, bitmap count, size), which Delta no longer writes; the 32-bit roaring bitmap after it
    # holds the example's rows and is byte for byte the one in our portable serialization.
    assert raw[:4] == (MAGIC_PORTABLE - 1).to_bytes(4, "big")
    assert list(BitMap.deserialize(raw[12:])) == SPEC_ROWS
    ours = serialize_bitmap(SPEC_ROWS)
    assert ours[:16] == MAGIC_PORTABLE.to_bytes(4, "little") + (1).to_bytes(8, "little") + bytes(4)
    assert ours[16:] == raw[12:]
    assert read_deletion_vector(inline_descriptor(SPEC_ROWS), "/").tolist() == SPEC_ROWS


def test_threshold_boundary(tmp_path: Path) -> None:
    assert INLINE_DV_MAX_BYTES == 128
    at, over = serialize_bitmap(_scattered(48)), serialize_bitmap(_scattered(49))
    assert (len(at), len(over)) == (128, 130)
    root = str(tmp_path)
    d_at, d_over = store_deletion_vectors(root, [(at, 48), (over, 49)])
    assert d_at.storageType == "i" and d_at.offset is None and d_at.sizeInBytes == 128
    assert len(d_at.pathOrInlineDv) == 160
    assert d_over.storageType == "u" and d_over.offset == 1 and d_over.sizeInBytes == 130
    assert [p.name for p in tmp_path.iterdir()] == [f"deletion_vector_{d_over.uuid}.bin"]
    assert read_deletion_vector(d_at, root).tolist() == _scattered(48)
    assert read_deletion_vector(d_over, root).tolist() == _scattered(49)
    # the limit is inclusive and adjustable per call
    [lowered] = store_deletion_vectors(root, [(at, 48)], inline_max_bytes=127)
    assert lowered.storageType == "u"
    [raised] = store_deletion_vectors(root, [(over, 49)], inline_max_bytes=130)
    assert raised.storageType == "i"


def test_store_keeps_order_and_writes_no_file_when_all_are_inline(tmp_path: Path) -> None:
    sets = [_scattered(100), [1], list(range(5000)), _scattered(60), []]
    bitmaps = [(serialize_bitmap(s), len(s)) for s in sets]
    descs = store_deletion_vectors(str(tmp_path), bitmaps, prefix="ab")
    assert [d.storageType for d in descs] == ["u", "i", "i", "u", "i"]
    assert descs[0].pathOrInlineDv == descs[3].pathOrInlineDv  # one file for the large ones
    assert descs[3].offset == 1 + descs[0].sizeInBytes + 8
    assert [p.name for p in tmp_path.iterdir()] == ["ab"]
    for d, s in zip(descs, sets, strict=True):
        assert d.cardinality == len(s)
        assert read_deletion_vector(d, str(tmp_path)).tolist() == s
    before = sorted(p.name for p in tmp_path.rglob("*"))
    small = store_deletion_vectors(str(tmp_path), bitmaps[1:3])
    assert [d.storageType for d in small] == ["i", "i"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written
    assert store_deletion_vectors(str(tmp_path), []) == []
    with pytest.raises(DeletionVectorError, match="letters and digits"):
        store_deletion_vectors(str(tmp_path), bitmaps, prefix="a/b")


def test_write_deletion_vectors_inlines_only_when_asked(tmp_path: Path) -> None:
    assert [d.storageType for d in write_deletion_vectors(str(tmp_path), [[1]])] == ["u"]
    descs = write_deletion_vectors(str(tmp_path), [[1], _scattered(49)], inline_max_bytes=INLINE_DV_MAX_BYTES)
    assert [d.storageType for d in descs] == ["i", "u"]
    assert descs[0] == inline_descriptor([1])


def test_unique_ids_of_inline_dvs_in_replay() -> None:
    import pyarrow as pa

    inline = {**inline_descriptor([3]).to_dict(), "offset": None, "maxRowIndex": None}
    stored = {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "offset": 1, "sizeInBytes": 34,
              "cardinality": 1, "maxRowIndex": None}
    ids = dv_unique_ids(pa.array([inline, stored, None], DV_TYPE)).to_pylist()
    assert ids == ["i" + inline["pathOrInlineDv"], "uvBn[lx{q8@P<9BNH/isA@1", None]
    assert ids[0] == inline_descriptor([3]).unique_id


def _inline_dvs_in_corpus() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for log in sorted(CORPUS.glob("**/_delta_log")):
        for f in sorted(log.glob("*.json")):
            text = f.read_text()
            if '"storageType":"i"' not in text.replace(" ", ""):
                continue
            for line in text.splitlines():
                action = json.loads(line) if line.strip() else {}
                for kind in ("add", "remove"):
                    dv = (action.get(kind) or {}).get("deletionVector")
                    if dv and dv["storageType"] == "i":
                        found.append((str(log.parent), dv))
    return found


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"conformance corpus not found at {CORPUS}")
def test_inline_dvs_of_the_corpus_decode_and_reencode_to_the_same_bytes() -> None:
    found = _inline_dvs_in_corpus()
    assert found  # kernel-rs-data/cdf-table-with-dv has some
    for table, raw in found:
        d = DeletionVectorDescriptor.from_dict({k: v for k, v in raw.items() if v is not None})
        rows = read_deletion_vector(d, table)
        assert rows.size == d.cardinality
        ours = inline_descriptor(rows)
        assert ours.sizeInBytes == d.sizeInBytes and ours.unique_id.startswith("i")
        # same bytes whichever padding convention the writer used (zero padding or the '#' tail)
        assert z85_decode(ours.pathOrInlineDv)[: d.sizeInBytes] == z85_decode(d.pathOrInlineDv)[: d.sizeInBytes]
        if d.sizeInBytes % 4 == 0:
            assert ours.pathOrInlineDv == d.pathOrInlineDv
