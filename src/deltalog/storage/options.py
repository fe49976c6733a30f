"""Storage options: the keys delta-rs and obstore users already write, normalised once.

Keys are case-insensitive and spelled as delta-rs, obstore and object_store spell them
(``AWS_ENDPOINT_URL``, ``aws_access_key_id``, ``AZURE_STORAGE_ACCOUNT_NAME``, ``google_service_account``,
``allow_http``, ...). :func:`split_options` sorts them into the store configuration, the HTTP client
options, the retry policy and deltalog's own settings; whatever the options leave out comes from the
standard environment variables and credential chains (obstore reads them).

deltalog's own keys:

* ``conditional_put`` -- ``"auto"`` (default: trust S3, Azure and GCS to honour ``If-None-Match``,
  which they all do now), ``"probe"`` (check once per bucket that a second create of the same key is
  refused), or ``"disabled"`` (the store does not honour it: commits need a DynamoDB lock table);
* ``aws_s3_locking_provider=dynamodb`` with ``delta_dynamo_table_name`` -- the lock table delta-rs and
  delta-spark's ``S3DynamoDBLogStore`` share (see :mod:`deltalog.storage.dynamodb`);
* ``max_retries`` and ``retry_timeout`` (seconds) -- retries of throttled or failed requests.

Values are strings (as in delta-rs) or Python booleans / numbers. Credentials are never shown:
:func:`redacted` masks them wherever options are printed.

Example:
    >>> parts = split_options({"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "AWS_ALLOW_HTTP": "true",
    ...                        "AWS_ACCESS_KEY_ID": "id", "max_retries": "3"})
    >>> parts.config, parts.client, parts.retry["max_retries"]
    ({'aws_endpoint_url': 'http://127.0.0.1:5000', 'aws_access_key_id': 'id'}, {'allow_http': True}, 3)
    >>> redacted({"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_REGION": "eu-west-1"})
    {'AWS_SECRET_ACCESS_KEY': '***', 'AWS_REGION': 'eu-west-1'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from deltalog.errors import InvalidArgumentError

__all__ = ["StorageOptions", "is_secret_key", "redacted", "scrub", "split_options", "with_environment"]

StorageOptions = Mapping[str, Any]
"""What users pass as ``storage_options=``: string keys (any case), string / bool / number values."""

#: obstore's HTTP client options (``ClientConfig``), without provider prefix.
_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "http1_only",
    "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle", "http2_only",
    "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "randomize_addresses", "read_timeout", "timeout", "user_agent",
})
_BOOL_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "http1_only", "http2_only", "randomize_addresses",
})
_PROVIDER_PREFIXES = ("aws_", "azure_storage_", "azure_", "google_", "gcs_")
#: Settings of delta-rs that deltalog does not need: accepted so delta-rs configurations work unchanged.
_IGNORED = frozenset({
    "aws_s3_allow_unsafe_rename",  # delta-rs' opt-out of locking; deltalog uses conditional puts
    "aws_force_credential_load",
    "aws_s3_pool_idle_timeout", "aws_sts_pool_idle_timeout", "aws_s3_get_internal_server_error_retries",
})
_DELTALOG_KEYS = frozenset({
    "conditional_put", "deltalog_conditional_put", "aws_s3_locking_provider", "delta_dynamo_table_name",
    "dynamo_table_name", "aws_endpoint_url_dynamodb", "lock_table_name", "dynamodb_lock_timeout",
})
_SECRET = re.compile(r"secret|password|token|sas|credential|account_key|access_key|private|key_id", re.I)


def is_secret_key(key: str) -> bool:
    """True for keys whose values must never be shown (keys, secrets, tokens, SAS).

    Example:
        >>> is_secret_key("AWS_SECRET_ACCESS_KEY"), is_secret_key("aws_region")
        (True, False)
    """
    return bool(_SECRET.search(key))


def redacted(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with every secret value replaced by ``***`` (for logs, reprs and error messages).

    Example:
        >>> redacted({"azure_storage_account_key": "abc=", "azure_storage_account_name": "acct"})
        {'azure_storage_account_key': '***', 'azure_storage_account_name': 'acct'}
    """
    return {k: ("***" if is_secret_key(str(k)) else v) for k, v in (options or {}).items()}


def scrub(text: str, options: Mapping[str, Any] | None) -> str:
    """``text`` with every secret option value (and anything after ``?`` in a URL: SAS tokens, signatures)
    replaced by ``***``; for messages that quote a client library's error.

    Example:
        >>> scrub("bad key abc123 at https://a.blob/x?sig=zz&se=1", {"AZURE_STORAGE_ACCOUNT_KEY": "abc123"})
        'bad key *** at https://a.blob/x?***'
    """
    for key, value in (options or {}).items():
        if is_secret_key(str(key)) and value is not None and len(str(value)) >= 4:
            text = text.replace(str(value), "***")
    return re.sub(r"(https?://[^\s?]+)\?\S*", r"\1?***", text)


@dataclass
class SplitOptions:
    """Storage options sorted by who consumes them (see :func:`split_options`)."""

    config: dict[str, str] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)
    deltalog: dict[str, str] = field(default_factory=dict)


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise InvalidArgumentError(f"storage option {key!r} must be true or false")


def _seconds(key: str, value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?", text)
    if m is None:
        raise InvalidArgumentError(f"storage option {key!r} must be a duration such as '30s' or '2m'")
    scale = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[m[2]]
    return float(m[1]) * scale


def split_options(options: StorageOptions | None) -> SplitOptions:
    """Sort ``options`` into store config, client options, retry settings and deltalog's own keys.

    Keys are lower-cased. A client option may carry a provider prefix (``AWS_ALLOW_HTTP`` is
    ``allow_http``). Anything else goes to the store configuration, which obstore validates (an
    unknown key is refused there, naming the key).

    Example:
        >>> split_options({"AZURE_STORAGE_USE_EMULATOR": "true", "timeout": "30s"}).client
        {'timeout': '30s'}
    """
    out = SplitOptions()
    if options is None:
        return out
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"storage_options must be a mapping of str to str, got {type(options).__name__}")
    for raw_key, value in options.items():
        if not isinstance(raw_key, str) or not raw_key.strip():
            raise InvalidArgumentError(f"storage option keys must be non-empty strings, got {raw_key!r}")
        if value is None:
            continue
        key = raw_key.strip().lower()
        bare = next((key[len(p):] for p in _PROVIDER_PREFIXES if key.startswith(p) and key[len(p):] in _CLIENT_KEYS),
                    key)
        if key in _IGNORED:
            continue
        if key in _DELTALOG_KEYS:
            out.deltalog[key] = str(value)
        elif bare in _CLIENT_KEYS:
            out.client[bare] = _as_bool(raw_key, value) if bare in _BOOL_CLIENT_KEYS else str(value)
        elif key == "max_retries":
            try:
                out.retry["max_retries"] = int(str(value))
            except ValueError:
                raise InvalidArgumentError(f"storage option {raw_key!r} must be an integer") from None
        elif key == "retry_timeout":
            out.retry["retry_timeout"] = timedelta(seconds=_seconds(raw_key, value))
        else:
            out.config[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


#: The prefixes of the environment variables that spell a provider's HTTP client options (``AWS_ALLOW_HTTP``,
#: ``AZURE_ALLOW_HTTP``, ``GOOGLE_ALLOW_HTTP``, as delta-rs and object_store read them).
_ENV_PREFIXES = {"s3": ("AWS_",), "azure": ("AZURE_STORAGE_", "AZURE_"), "gcs": ("GOOGLE_", "GCS_")}


def with_environment(split: SplitOptions, provider: str, environ: Mapping[str, str]) -> SplitOptions:
    """``split`` with the HTTP client options it leaves out taken from ``environ`` under ``provider``'s
    prefixes (``AWS_ALLOW_HTTP=true`` for an S3 emulator on ``http://``). obstore reads the store
    configuration (endpoint, region, credentials) from the environment itself, but not these; given options
    win over the environment.

    Example:
        >>> with_environment(split_options({}), "s3", {"AWS_ALLOW_HTTP": "true", "AWS_TIMEOUT": "30s"}).client
        {'allow_http': True, 'timeout': '30s'}
        >>> with_environment(split_options({"allow_http": "false"}), "s3", {"AWS_ALLOW_HTTP": "true"}).client
        {'allow_http': False}
    """
    for key in sorted(_CLIENT_KEYS):
        if key in split.client:
            continue
        for prefix in _ENV_PREFIXES.get(provider, ()):
            name = prefix + key.upper()
            value = environ.get(name)
            if value:
                split.client[key] = _as_bool(name, value) if key in _BOOL_CLIENT_KEYS else value
                break
    return split
