"""Object-store settings in a Spark session: the Hadoop keys users already set, as storage options.

Spark users configure S3, Azure and GCS through Hadoop settings (``spark.hadoop.fs.s3a.endpoint``,
``fs.s3a.access.key``, ``fs.azure.account.key.<account>.dfs.core.windows.net``, ...). deltalog's kernel
talks to object stores through obstore, configured by storage options as delta-rs spells them; this module
translates the first into the second, so ``spark.read.format("delta").load("s3a://bucket/t")`` needs
nothing deltalog-specific:

* S3 (``s3``, ``s3a``): ``fs.s3a.endpoint`` (scheme from ``fs.s3a.connection.ssl.enabled``),
  ``access.key``, ``secret.key``, ``session.token``, ``path.style.access``, ``endpoint.region`` /
  ``region``; per-bucket settings ``fs.s3a.bucket.<bucket>.<key>`` win;
* Azure (``abfs[s]``, ``az``): ``fs.azure.account.key.<account>.{dfs,blob}.core.windows.net``, SAS tokens
  (``fs.azure.sas.fixed.token.<account>...``, ``fs.azure.sas.<container>.<account>.blob...``), OAuth
  client credentials (``fs.azure.account.oauth2.client.{id,secret,endpoint}.<account>...``);
* GCS (``gs``): ``fs.gs.auth.service.account.json.keyfile`` (or ``google.cloud.auth...``).

Settings come from the session (``spark.hadoop.*`` Spark settings, and on classic sessions the live
Hadoop configuration), from per-call Hadoop keys (``DataFrameReader.option("fs.s3a.access.key", ...)``,
``DeltaTable.forPath(..., hadoopConf=...)``), and then the environment. Values are never logged.

Whether the executors read a table's files with Spark's own parquet scan or with deltalog's Arrow tasks
(:func:`native_io`): local tables always natively; object stores natively when the session has a Hadoop
file system for the scheme (``spark.deltalog.objectStoreIO`` = ``native`` / ``arrow`` / ``auto``), else
through Arrow tasks that open the files with obstore (the storage options travel with the task).

Example:
    >>> hadoop_to_storage_options({"fs.s3a.endpoint": "localhost:9000", "fs.s3a.connection.ssl.enabled": "false",
    ...                            "fs.s3a.access.key": "k"}, "s3a://bucket/t")
    {'AWS_ENDPOINT_URL': 'http://localhost:9000', 'AWS_ALLOW_HTTP': 'true', 'AWS_ACCESS_KEY_ID': 'k'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from deltalog.errors import InvalidArgumentError
from deltalog.storage.locations import scheme_of
from deltalog.storage.object_store import AZURE_SCHEMES, GCS_SCHEMES, OBJECT_SCHEMES, S3_SCHEMES

__all__ = [
    "IO_CONF",
    "hadoop_to_storage_options",
    "is_connect",
    "native_io",
    "remember_hadoop_conf",
    "session_hadoop_conf",
    "storage_options_for",
]

#: Session setting choosing how executors read object-store files: ``auto`` (default), ``native``, ``arrow``.
IO_CONF = "spark.deltalog.objectStoreIO"
_PREFIXES = ("fs.s3a.", "fs.azure.", "fs.gs.", "google.cloud.auth.")

_S3_KEYS = {
    "access.key": "AWS_ACCESS_KEY_ID",
    "secret.key": "AWS_SECRET_ACCESS_KEY",
    "session.token": "AWS_SESSION_TOKEN",
    "endpoint.region": "AWS_REGION",
    "region": "AWS_REGION",
}


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _s3(conf: Mapping[str, str], bucket: str) -> dict[str, str]:
    merged: dict[str, str] = {}
    for key, value in conf.items():
        if key.startswith("fs.s3a.") and not key.startswith("fs.s3a.bucket."):
            merged[key[len("fs.s3a."):]] = value
    per_bucket = f"fs.s3a.bucket.{bucket}."
    for key, value in conf.items():
        if key.startswith(per_bucket):
            merged[key[len(per_bucket):]] = value
    out: dict[str, str] = {}
    endpoint = merged.get("endpoint")
    ssl = not ("connection.ssl.enabled" in merged and not _truthy(merged["connection.ssl.enabled"]))
    if endpoint:
        if not re.match(r"^[a-z]+://", endpoint):
            endpoint = ("https://" if ssl else "http://") + endpoint
        out["AWS_ENDPOINT_URL"] = endpoint
    if (endpoint and endpoint.startswith("http://")) or not ssl:
        out["AWS_ALLOW_HTTP"] = "true"
    for key, option in _S3_KEYS.items():
        if merged.get(key):
            out[option] = merged[key]
    # Path-style requests are obstore's default. Hadoop's default path.style.access=false (virtual-hosted
    # requests) is in every live Hadoop configuration, set or not, so it asks for nothing: taken as a request it
    # turned an endpoint from the environment (AWS_ENDPOINT_URL, which Spark copies into fs.s3a.endpoint) into
    # bucket.127.0.0.1 host names. Virtual-hosted requests: AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true.
    if _truthy(merged.get("path.style.access", "")):
        out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    return out


def _azure(conf: Mapping[str, str], container: str, account: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not account:
        return out
    out["AZURE_STORAGE_ACCOUNT_NAME"] = account
    for domain in ("dfs.core.windows.net", "blob.core.windows.net"):
        host = f"{account}.{domain}"
        key = conf.get(f"fs.azure.account.key.{host}")
        if key:
            out["AZURE_STORAGE_ACCOUNT_KEY"] = key
        sas = conf.get(f"fs.azure.sas.fixed.token.{host}") or conf.get(f"fs.azure.sas.{container}.{host}")
        if sas:
            out["AZURE_STORAGE_SAS_KEY"] = sas
        client_id = conf.get(f"fs.azure.account.oauth2.client.id.{host}")
        if client_id:
            out["AZURE_CLIENT_ID"] = client_id
            secret = conf.get(f"fs.azure.account.oauth2.client.secret.{host}")
            if secret:
                out["AZURE_CLIENT_SECRET"] = secret
            endpoint = conf.get(f"fs.azure.account.oauth2.client.endpoint.{host}") or ""
            tenant = re.search(r"login\.microsoftonline\.com/([^/]+)/", endpoint)
            if tenant:
                out["AZURE_TENANT_ID"] = tenant[1]
    return out


def _gcs(conf: Mapping[str, str]) -> dict[str, str]:
    keyfile = conf.get("fs.gs.auth.service.account.json.keyfile") or conf.get(
        "google.cloud.auth.service.account.json.keyfile")
    return {"GOOGLE_SERVICE_ACCOUNT": keyfile} if keyfile else {}


def hadoop_to_storage_options(conf: Mapping[str, str], location: str) -> dict[str, str]:
    """Storage options for ``location`` from Hadoop settings (keys without the ``spark.hadoop.`` prefix).

    Example:
        >>> hadoop_to_storage_options(
        ...     {"fs.azure.account.key.acct.dfs.core.windows.net": "S3cret=="},
        ...     "abfss://data@acct.dfs.core.windows.net/t")
        {'AZURE_STORAGE_ACCOUNT_NAME': 'acct', 'AZURE_STORAGE_ACCOUNT_KEY': 'S3cret=='}
    """
    scheme = scheme_of(location)
    if scheme not in OBJECT_SCHEMES:
        return {}
    parts = urlsplit(location)
    if scheme in S3_SCHEMES:
        return _s3(conf, parts.netloc)
    if scheme in AZURE_SCHEMES:
        container, _, host = parts.netloc.partition("@")
        account = host.split(".", 1)[0] if host else ""
        return _azure(conf, container, account)
    if scheme in GCS_SCHEMES:
        return _gcs(conf)
    return {}  # pragma: no cover -- OBJECT_SCHEMES are the three above


def _active_session() -> Any:
    try:
        from pyspark.sql import SparkSession

        found = SparkSession.getActiveSession()
        if found is not None:
            return found
    except Exception:
        pass
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        return ConnectSession.getActiveSession()
    except Exception:
        return None


def session_hadoop_conf(spark: Any) -> dict[str, str]:
    """The object-store Hadoop settings of ``spark``: its ``spark.hadoop.*`` settings, and on classic
    sessions the live Hadoop configuration (settings made with ``hadoopConfiguration().set``).

    Example:
        >>> session_hadoop_conf(spark).get("fs.s3a.endpoint")                        # doctest: +SKIP
        'http://127.0.0.1:9000'
    """
    out: dict[str, str] = {}
    jsc = getattr(getattr(spark, "sparkContext", None), "_jsc", None) if not is_connect(spark) else None
    mapper = None
    if jsc is not None:  # the live Hadoop configuration (its defaults included) ...
        try:
            mapper = spark.sparkContext._jvm.com.fasterxml.jackson.databind.ObjectMapper()
        except Exception:
            mapper = None
        try:
            hconf = jsc.hadoopConfiguration()
            for prefix in _PREFIXES:
                props = _java_map(mapper, hconf.getPropsWithPrefix(prefix))
                out.update((prefix + key, value) for key, value in props.items())
        except Exception:
            pass
    try:  # ... overridden by the session's spark.hadoop.* settings (spark.conf.set at runtime included)
        items = None
        if jsc is not None:
            try:
                items = _java_map(mapper, spark._jsparkSession.conf().getAllAsJava())
            except Exception:
                items = None
        if items is None:
            from deltalog.spark.common.compat import session_conf

            items = session_conf(spark)
        for key, value in items.items():
            if key.startswith("spark.hadoop.") and key[len("spark.hadoop."):].startswith(_PREFIXES):
                out[key[len("spark.hadoop."):]] = str(value)
    except Exception:
        pass
    return out


def _java_map(mapper: Any, jmap: Any) -> dict[str, str]:
    """A ``java.util.Map`` of strings as a dict, in one py4j call: JSON written by ``mapper``, an
    ``ObjectMapper`` of the Jackson that Spark ships. Copying the map entry by entry through py4j takes two
    calls per key (the Hadoop defaults alone hold about a hundred ``fs.s3a.*`` keys: 50-70 ms per map, paid
    on every object-store operation); without ``mapper`` (or if it fails) that is what happens."""
    import json

    if mapper is not None:
        try:
            loaded = json.loads(mapper.writeValueAsString(jmap))
            if isinstance(loaded, dict):
                return {str(k): str(v) for k, v in loaded.items() if v is not None}
        except Exception:
            pass
    return {str(k): str(jmap.get(k)) for k in jmap.keySet().toArray()}


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no driver-side JVM).

    Example:
        >>> is_connect(object())
        False
    """
    return "connect" in type(spark).__module__


def hadoop_keys(options: Mapping[str, Any] | None) -> dict[str, str]:
    """The Hadoop settings among per-call options (``fs.*`` keys, ``spark.hadoop.`` prefix dropped).

    Example:
        >>> hadoop_keys({"fs.s3a.access.key": "k", "mergeSchema": "true"})
        {'fs.s3a.access.key': 'k'}
    """
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        k = str(key)
        if k.startswith("spark.hadoop."):
            k = k[len("spark.hadoop."):]
        if k.startswith(_PREFIXES) and value is not None:
            out[k] = str(value)
    return out


_REMEMBERED: dict[str, dict[str, str]] = {}


def remember_hadoop_conf(location: str, conf: Mapping[str, Any]) -> None:
    """Keep Hadoop settings given for one table (``DeltaTable.forPath(..., hadoopConf=...)``): later
    operations on that location in this process use them too.

    Example:
        >>> remember_hadoop_conf("s3a://bucket/t", {"fs.s3a.access.key": "k"})
        >>> storage_options_for("s3a://bucket/t", spark=object())["AWS_ACCESS_KEY_ID"]
        'k'
    """
    keys = hadoop_keys(conf)
    if keys:
        _REMEMBERED.setdefault(location.rstrip("/"), {}).update(keys)


def storage_options_for(
    location: str, options: Mapping[str, Any] | None = None, *, spark: Any = None
) -> dict[str, str]:
    """Storage options for an object-store ``location``: the session's Hadoop settings (``spark``, else
    the active session), overridden by per-call Hadoop keys in ``options``; ``{}`` for local paths.

    Example:
        >>> storage_options_for("/data/t")
        {}
    """
    if scheme_of(location) not in OBJECT_SCHEMES:
        return {}
    session = spark if spark is not None else _active_session()
    conf = session_hadoop_conf(session) if session is not None else {}
    conf.update(_REMEMBERED.get(location.rstrip("/"), {}))
    conf.update(hadoop_keys(options))
    return hadoop_to_storage_options(conf, location)


def native_io(spark: Any, location: str) -> bool:
    """Whether Spark's own parquet scan reads ``location``'s files. :data:`IO_CONF` decides: ``arrow`` --
    never (deltalog's Arrow tasks, also for local tables); ``native`` -- always (an object-store scheme
    then needs a Hadoop file system, else a named error says what to add); ``auto`` (default) -- local
    paths natively, object stores natively only on a classic session whose Hadoop knows a file system for
    the scheme (s3a, abfss and gs connectors, as clusters ship them).

    Example:
        >>> native_io(spark, "/data/t"), native_io(spark, "s3://bucket/t")          # doctest: +SKIP
        (True, False)
    """
    scheme = scheme_of(location)
    try:
        mode = str(spark.conf.get(IO_CONF, "auto")).strip().lower()
    except Exception:
        mode = "auto"
    if mode not in ("auto", "native", "arrow"):
        raise InvalidArgumentError(f"{IO_CONF}={mode!r}: use auto, native or arrow", table=location)
    if mode == "arrow":
        return False
    if scheme not in OBJECT_SCHEMES:
        return True
    has_fs = _has_hadoop_fs(spark, str(scheme))
    if mode == "native" and not has_fs:
        raise InvalidArgumentError(
            f"{IO_CONF}=native, but this Spark session has no Hadoop file system for {scheme}:// (add the connector "
            f"jars -- hadoop-aws for s3a, hadoop-azure for abfss, gcs-connector for gs -- and set "
            f"spark.hadoop.fs.{scheme}.impl), or set {IO_CONF}=arrow to read through deltalog's Arrow tasks",
            table=location)
    return has_fs


#: Whether a classic session's JVM has a Hadoop file system for a scheme, by (application id, scheme, the
#: configured ``fs.<scheme>.impl``): Hadoop answers "none" by raising, which costs about 70 ms through py4j and
#: would be paid by every read of an object-store table. The classes a running JVM can load do not change;
#: a different ``fs.<scheme>.impl`` setting is asked again.
_HADOOP_FS: dict[tuple[str, str, str | None], bool] = {}


def _has_hadoop_fs(spark: Any, scheme: str) -> bool:
    if is_connect(spark):
        try:
            return spark.conf.get(f"spark.hadoop.fs.{scheme}.impl", None) is not None
        except Exception:
            return False
    try:
        context = spark.sparkContext
        conf = context._jsc.hadoopConfiguration()
        key = (str(context.applicationId), scheme, conf.get(f"fs.{scheme}.impl"))
    except Exception:
        return False
    if key not in _HADOOP_FS:
        try:
            context._jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)
            _HADOOP_FS[key] = True
        except Exception:
            _HADOOP_FS[key] = False
    return _HADOOP_FS[key]
