"""delta-spark's ``DeltaTableBuilder`` and the protocol methods of ``DeltaTable``, committed by the kernel.

``DeltaTable.create(spark)`` / ``createIfNotExists`` / ``replace`` / ``createOrReplace`` return a
``DeltaTableBuilder`` (:class:`TableBuilder`, whose ``execute()`` :mod:`deltalog.spark.api.table` adds) with
delta-spark's methods (``location``, ``addColumn``, ``addColumns``,
``partitionedBy``, ``property``, ``comment``, ``execute``). ``execute()`` commits one version through a
kernel transaction (``CREATE TABLE``, ``REPLACE TABLE`` or ``CREATE OR REPLACE TABLE``, no data):

* table properties are validated and canonicalised by the kernel
  (:func:`deltalog.commands.properties.validate_properties`); ``delta.feature.<name>=supported`` adds
  the feature and ``delta.minReaderVersion`` / ``delta.minWriterVersion`` raise the protocol, neither
  is stored in the configuration; properties that need a feature upgrade the protocol; a CHECK
  constraint (``delta.constraints.<name>``) is accepted once its expression compiles against the schema
  (the new table holds no rows to check);
* a replace removes every file, keeps the table id and never lowers the protocol; the history goes on
  (the replaced versions stay readable); schema, partitioning, properties and comment are the new
  definition's only, and the clustering goes unless the new definition clusters (other domains stay), as
  in delta-spark; replacing a missing table is refused (by path: ``DELTA_CANNOT_REPLACE_MISSING_TABLE``, by
  name: Spark's ``TABLE_OR_VIEW_NOT_FOUND``);
* ``tableName`` registers the table in the session's catalog (``USING delta``; managed unless a
  ``location`` is given); an existing catalog Delta table is replaced at its location.

Column types are DDL strings (``"INT"``, ``"decimal(10,2)"``, ``"array<string>"``), parsed by Spark, or
``pyspark.sql.types`` objects; a column comment is stored in the field's ``comment`` metadata, as
delta-spark stores it.

Example:
    >>> from deltalog.spark import DeltaTable
    >>> dt = (DeltaTable.create(spark).location("/data/events")
    ...       .addColumn("id", "BIGINT", nullable=False).addColumn("day", "DATE")
    ...       .partitionedBy("day").property("delta.appendOnly", "true").execute())   # doctest: +SKIP
    >>> dt.upgradeTableProtocol(1, 3)                                                   # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from deltalog.arrow.write import TableExistsError, check_partition_columns
from deltalog.commands.clustering import CLUSTERING_DOMAIN, clustering_domain
from deltalog.commands.constraints import compile_check
from deltalog.commands.properties import raise_versions, validate_properties
from deltalog.errors import InvalidArgumentError, TableNotFoundError, UnsupportedFeatureError
from deltalog.protocol.actions import Format, Metadata, Protocol
from deltalog.protocol.schema import parse_schema
from deltalog.spark.columns.identity_generator import IdentityGenerator, identity_field_metadata, type_error
from deltalog.spark.common.arguments import unsupported_operation
from deltalog.spark.common.core import open_table
from deltalog.txn.generated import generated_metadata
from deltalog.txn.operations import CreateTable, UpgradeProtocol
from deltalog.txn.transaction import start_transaction
from deltalog.txn.writer_features import upgrade_protocol

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table

__all__ = ["DeltaColumnBuilder", "IdentityGenerator", "TableBuilder", "add_feature_support", "text_type",
           "upgrade_table_protocol"]

_MODES = ("create", "createIfNotExists", "replace", "createOrReplace")
_VERSION_KEYS = ("delta.minReaderVersion", "delta.minWriterVersion")
_PATH_NAME = re.compile(r"\s*delta\s*\.\s*`(.+)`\s*", re.IGNORECASE | re.DOTALL)  # delta.`/path`


@dataclass(frozen=True)
class _ReplaceTable(CreateTable):
    """``REPLACE TABLE`` (delta-spark's name for a replace that requires the table to exist)."""

    NAME: ClassVar[str] = "REPLACE TABLE"

    @property
    def name(self) -> str:
        """``REPLACE TABLE``."""
        return self.NAME


def _parse_type(spark: Any, text: str) -> Any:
    """A DDL type string as a ``pyspark.sql.types.DataType``, parsed by Spark (classic or Connect)."""
    parse = getattr(spark, "_parse_ddl", None)
    if parse is not None:  # Spark Connect: the server parses
        return parse(text)
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(text)


def _check_type(dtype: Any, column: str, *, top: bool = True) -> None:
    """Refuse ``CHAR`` / ``VARCHAR`` inside structs, arrays and maps (a top-level one is a ``string`` column
    whose length the writes check: :func:`text_type`)."""
    from pyspark.sql.types import ArrayType, CharType, MapType, StructType, VarcharType

    if isinstance(dtype, (CharType, VarcharType)) and not top:
        raise InvalidArgumentError(
            f"column {column!r}: CHAR/VARCHAR inside a struct, array or map is not supported (deltalog checks the "
            "length of top-level CHAR/VARCHAR columns only); use STRING there"
        )
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            _check_type(f.dataType, f"{column}.{f.name}", top=False)
    elif isinstance(dtype, ArrayType):
        _check_type(dtype.elementType, column, top=False)
    elif isinstance(dtype, MapType):
        _check_type(dtype.keyType, column, top=False)
        _check_type(dtype.valueType, column, top=False)


def text_type(dtype: Any, metadata: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """A column's type and metadata as the table stores them: ``CHAR(n)`` / ``VARCHAR(n)`` become ``string``
    with the declared type in Spark's ``__CHAR_VARCHAR_TYPE_STRING`` metadata (the writes check the length).

    Example:
        >>> from pyspark.sql.types import VarcharType                                    # doctest: +SKIP
        >>> text_type(VarcharType(5))                                                    # doctest: +SKIP
        (StringType(), {'__CHAR_VARCHAR_TYPE_STRING': 'varchar(5)'})
    """
    from pyspark.sql.types import CharType, StringType, VarcharType

    from deltalog.txn.constraints import CHAR_VARCHAR_KEY

    meta = dict(metadata or {})
    if isinstance(dtype, (CharType, VarcharType)):
        return StringType(), {**meta, CHAR_VARCHAR_KEY: dtype.simpleString()}
    return dtype, meta


def _type_name(dtype: Any) -> str:
    """A type's name as Spark's ``DataType.typeName`` gives it: ``integer``, ``decimal(10,2)``, ``array``."""
    value = dtype.jsonValue()
    return value if isinstance(value, str) else str(dtype.typeName())


def _identity(name: str, dtype: Any, generator: IdentityGenerator, *, always: bool) -> dict[str, Any]:
    """The field metadata of identity column ``name``; a type other than ``BIGINT`` is refused as delta-spark
    refuses it (``DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE``, an ``UnsupportedOperationException``)."""
    from pyspark.sql.types import LongType

    if not isinstance(dtype, LongType):
        raise unsupported_operation(
            f"DataType {_type_name(dtype)} is not supported for IDENTITY columns. Column {name!r}: declare it "
            "BIGINT (LongType)", condition="DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE", sql_state="428H2",
            feature="identityColumns")
    return identity_field_metadata(name, dtype, generator, always=always)


class DeltaColumnBuilder:
    """delta-spark's column builder (``DeltaTable.columnBuilder(spark, "price")``): ``dataType``,
    ``nullable``, ``comment`` and ``build()`` give a ``StructField`` for
    :meth:`TableBuilder.addColumns`; ``generatedAlwaysAs`` and the identity methods make generated and
    identity columns.

    Example:
        >>> col = DeltaTable.columnBuilder(spark, "price").dataType("decimal(10,2)").nullable(False).build()
        ... # doctest: +SKIP
        >>> DeltaTable.create(spark).location("/t").addColumns([col]).execute()         # doctest: +SKIP
    """

    def __init__(self, spark: Any, colName: str) -> None:
        if not isinstance(colName, str):
            raise type_error("Column name must be str.", colName)
        self._spark = spark
        self._name = colName
        self._type: Any = None
        self._nullable = True
        self._comment: str | None = None
        self._identity: tuple[IdentityGenerator, bool] | None = None
        self._generation: str | None = None

    def dataType(self, dataType: Any) -> DeltaColumnBuilder:
        """The column's type: a DDL string or a ``pyspark.sql.types.DataType``.

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("bigint")                    # doctest: +SKIP
        """
        from pyspark.sql.types import DataType

        if not isinstance(dataType, (str, DataType)):
            raise type_error("Column data type must be str or DataType.", dataType)
        self._type = _parse_type(self._spark, dataType) if isinstance(dataType, str) else dataType
        _check_type(self._type, self._name)
        return self

    def nullable(self, nullable: bool) -> DeltaColumnBuilder:
        """Whether the column may hold nulls (default true).

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("long").nullable(False)     # doctest: +SKIP
        """
        if not isinstance(nullable, bool):
            raise type_error("Column nullable must be bool.", nullable)
        self._nullable = nullable
        return self

    def comment(self, comment: str) -> DeltaColumnBuilder:
        """The column's comment.

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("long").comment("key")      # doctest: +SKIP
        """
        if not isinstance(comment, str):
            raise type_error("Column comment must be str.", comment)
        self._comment = comment
        return self

    def generatedAlwaysAs(self, expression: str) -> DeltaColumnBuilder:
        """A generated column: its value is ``expression`` (Spark SQL over the row's other columns), computed on
        every write.

        Example:
            >>> DeltaTable.columnBuilder(spark, "y").dataType("int").generatedAlwaysAs("year(ts)")  # doctest: +SKIP
        """
        if not isinstance(expression, str):
            raise type_error("Column generation expression must be str.", expression)
        self._generation = expression
        return self

    def generatedAlwaysAsIdentity(self, start: int = 1, step: int = 1) -> DeltaColumnBuilder:
        """An identity column whose values are always generated (``GENERATED ALWAYS AS IDENTITY``).

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("long").generatedAlwaysAsIdentity()  # doctest: +SKIP
        """
        self._identity = (IdentityGenerator(start, step), True)
        return self

    def generatedByDefaultAsIdentity(self, start: int = 1, step: int = 1) -> DeltaColumnBuilder:
        """An identity column whose values are generated unless a write provides them
        (``GENERATED BY DEFAULT AS IDENTITY``).

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("long").generatedByDefaultAsIdentity(10, 5)
            ... # doctest: +SKIP
        """
        self._identity = (IdentityGenerator(start, step), False)
        return self

    def build(self) -> Any:
        """The ``pyspark.sql.types.StructField``.

        Example:
            >>> DeltaTable.columnBuilder(spark, "id").dataType("long").build().name        # doctest: +SKIP
            'id'
        """
        from pyspark.sql.types import StructField

        if self._type is None:
            raise InvalidArgumentError(
                f"The data type of the column {self._name} is not provided: call dataType(...) before build()")
        metadata: dict[str, Any] = {"comment": self._comment} if self._comment is not None else {}
        if self._identity is not None:
            if self._generation is not None:
                raise InvalidArgumentError(
                    "[DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION] IDENTITY column cannot be specified with a "
                    f"generated column expression. Column {self._name!r}: keep generatedAlwaysAs or the identity")
            if self._identity[0].step == 0:
                raise InvalidArgumentError(
                    f"[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0. Column {self._name!r}: "
                    "give a positive or negative step")
            metadata.update(_identity(self._name, self._type, self._identity[0], always=self._identity[1]))
        elif self._generation is not None:
            metadata.update(generated_metadata(self._generation))
        dtype, metadata = text_type(self._type, metadata)
        return StructField(self._name, dtype, self._nullable, metadata)


class TableBuilder:
    """Builds a table definition and commits it with :meth:`commit_definition` (see the module docstring). The
    base of delta-spark's ``DeltaTableBuilder`` (:mod:`deltalog.spark.api.table`), whose ``execute()`` returns
    the table as a ``DeltaTable``; made by ``DeltaTable.create(spark)``, ``createIfNotExists``, ``replace`` and
    ``createOrReplace``.

    Example:
        >>> (DeltaTable.createIfNotExists(spark).location("/data/t")
        ...  .addColumns(df.schema).execute())                                          # doctest: +SKIP
        DeltaTable('/data/t')
    """

    def __init__(self, spark: Any, mode: str, *, managed: bool = False) -> None:
        if mode not in _MODES:
            raise InvalidArgumentError(f"unknown builder mode {mode!r}; valid: {list(_MODES)}")
        self._spark = spark
        self._mode = mode
        self._location: str | None = None
        self._comment: str | None = None
        self._fields: list[dict[str, Any]] = []
        self._partitions: list[str] = []
        self._clustering: list[str] = []
        self._properties: dict[str, str] = {}
        self._name: str | None = None
        self._path_name: str | None = None  # tableName("delta.`/path`"): a path-based table
        self._managed = managed  # a catalog table in the warehouse (commitInfo's isManaged)

    def __repr__(self) -> str:
        return f"DeltaTableBuilder({self._mode}, location={self._location!r})"

    def tableName(self, identifier: str) -> Self:
        """The table's catalog name: ``execute()`` registers it (``USING delta``) in the session's catalog,
        at ``location`` when given, else at the managed location under ``spark.sql.warehouse.dir``. As in
        delta-spark, ``delta.`/path``` names the path-based table at ``/path`` (no catalog entry); a
        ``location`` given with it must be that path.

        Example:
            >>> DeltaTable.create(spark).tableName("events").addColumn("id", "long").execute()  # doctest: +SKIP
            DeltaTable('/spark-warehouse/events')
        """
        if not isinstance(identifier, str):
            raise type_error("Identifier must be str.", identifier)
        found = _PATH_NAME.fullmatch(identifier)
        if found is not None:
            self._path_name, self._name = found.group(1).replace("``", "`"), None
            return self
        from deltalog.spark.catalog.entries import parse_name

        parse_name(identifier)  # validates
        self._name, self._path_name = identifier, None
        return self

    def location(self, location: str) -> Self:
        """The table's directory.

        Example:
            >>> DeltaTable.create(spark).location("/data/events")                       # doctest: +SKIP
        """
        if not isinstance(location, str):
            raise type_error("Location must be str.", location)
        self._location = location
        return self

    def comment(self, comment: str) -> Self:
        """The table's description (``metaData.description``).

        Example:
            >>> DeltaTable.create(spark).location("/t").comment("raw events")           # doctest: +SKIP
        """
        if not isinstance(comment, str):
            raise type_error("Table comment must be str.", comment)
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> Self:
        """Add a column: ``dataType`` is a DDL string or a ``pyspark.sql.types.DataType``. An
        :class:`IdentityGenerator` as ``generatedAlwaysAs`` / ``generatedByDefaultAs`` makes a ``BIGINT``
        identity column (``GENERATED ALWAYS`` / ``BY DEFAULT AS IDENTITY``); a string ``generatedAlwaysAs``
        (``"year(ts)"``) makes a generated column, computed on every write.

        Example:
            >>> builder.addColumn("price", "decimal(10,2)", nullable=False, comment="EUR")  # doctest: +SKIP
            >>> builder.addColumn("id", "bigint", generatedAlwaysAs=IdentityGenerator(start=1, step=1))
            ... # doctest: +SKIP
        """
        from pyspark.sql.types import DataType

        # delta-spark's checks, in its order (the type is parsed before the other arguments are looked at)
        if not isinstance(colName, str):
            raise type_error("Column name must be str.", colName)
        if not isinstance(dataType, (str, DataType)):
            raise type_error("Column data type must be str or DataType.", dataType)
        dtype = _parse_type(self._spark, dataType) if isinstance(dataType, str) else dataType
        _check_type(dtype, colName)
        if not isinstance(nullable, bool):
            raise type_error("Column nullable must be bool.", nullable)
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ValueError(f"generatedByDefaultAs and generatedAlwaysAs cannot both be set. Column {colName!r}: "
                             "give one of them")
        identity: tuple[IdentityGenerator, bool] | None = None
        if isinstance(generatedAlwaysAs, IdentityGenerator):
            identity = (generatedAlwaysAs, True)
        elif generatedAlwaysAs is not None and not isinstance(generatedAlwaysAs, str):
            raise type_error("Generated always as expression must be str or IdentityGenerator.", generatedAlwaysAs)
        elif generatedByDefaultAs is not None:
            if not isinstance(generatedByDefaultAs, IdentityGenerator):
                raise type_error("Generated by default expression must be IdentityGenerator.", generatedByDefaultAs)
            identity = (generatedByDefaultAs, False)
        if identity is not None and identity[0].step == 0:
            raise ValueError(f"Column identity generation requires step to be non-zero. Column {colName!r}: give a "
                             "positive or negative step")
        if comment is not None and not isinstance(comment, str):
            raise type_error("Column comment must be str.", comment)
        metadata: dict[str, Any] = {"comment": comment} if comment is not None else {}
        if identity is not None:
            metadata.update(_identity(colName, dtype, identity[0], always=identity[1]))
        elif isinstance(generatedAlwaysAs, str):
            metadata.update(generated_metadata(generatedAlwaysAs))
        dtype, metadata = text_type(dtype, metadata)
        self._fields.append(
            {"name": colName, "type": dtype.jsonValue(), "nullable": nullable, "metadata": metadata}
        )
        return self

    def addColumns(self, cols: Any) -> Self:
        """Add every field of a ``pyspark.sql.types.StructType`` (or a list of ``StructField``), with its
        nullability and metadata (a ``comment`` included).

        Example:
            >>> builder.addColumns(df.schema)                                             # doctest: +SKIP
        """
        from pyspark.sql.types import StructField, StructType

        if isinstance(cols, list):
            for c in cols:
                if not isinstance(c, StructField):
                    raise type_error("Column in existing schema must be StructField.", c)
            cols = StructType(cols)
        if not isinstance(cols, StructType):
            raise type_error("Schema must be StructType or a list of StructField.", cols)
        for f in cols.fields:
            _check_type(f.dataType, f.name)
            dtype, metadata = text_type(f.dataType, f.metadata)
            self._fields.append(StructField(f.name, dtype, f.nullable, metadata).jsonValue())
        return self

    def partitionedBy(self, *cols: Any) -> Self:
        """Partition columns, as names or one list of names.

        Example:
            >>> builder.partitionedBy("day", "country")                                    # doctest: +SKIP
        """
        names = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        for c in names:
            if not isinstance(c, str):
                raise type_error("Partitioning column must be str.", c)
        self._partitions = names
        return self

    def clusterBy(self, *cols: Any) -> Self:
        """Liquid clustering columns, as names or one list of names (see
        :mod:`deltalog.commands.clustering`); not together with :meth:`partitionedBy`.

        Example:
            >>> builder.clusterBy("day", "user_id")                                       # doctest: +SKIP
        """
        names = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        for c in names:
            if not isinstance(c, str):
                raise type_error("Clustering column must be str.", c)
        self._clustering = names
        return self

    def property(self, key: str, value: str) -> Self:
        """A table property (``delta.*`` keys are validated at ``execute()``).

        Example:
            >>> builder.property("delta.enableChangeDataFeed", "true")                   # doctest: +SKIP
        """
        if not isinstance(key, str) or not isinstance(value, str):
            raise type_error("Key and value of property must be string.", key, value)
        self._properties[key] = value
        return self

    def commit_definition(self) -> str:
        """Create / replace the table in one commit; returns its location (``DeltaTableBuilder.execute`` wraps
        it in a ``DeltaTable``).

        Example:
            >>> TableBuilder(spark, "create").location("/t").addColumn("id", "long").commit_definition()
            ... # doctest: +SKIP
            '/t'
        """
        if self._name is not None:
            return self._execute_named(self._name)
        if self._path_name is not None:
            if self._location is not None and self._location != self._path_name:
                raise InvalidArgumentError(
                    "[DELTA_CREATE_TABLE_IDENTIFIER_LOCATION_MISMATCH] Creating path-based Delta table with a "
                    f"different location isn't supported. Identifier: delta.`{self._path_name}`, Location: "
                    f"{self._location}. Give the path once: tableName(\"delta.`path`\") or location(path)",
                    table=self._path_name)
            self._location = self._path_name
        if self._location is None:
            raise InvalidArgumentError("[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] Table name or location has "
                                       "to be specified: call tableName(name) or location(path)")
        table = open_table(self._location)
        loc = table.location
        try:
            snapshot: Snapshot | None = table.snapshot()
        except TableNotFoundError:
            snapshot = None
        if snapshot is not None and self._mode == "create":
            raise TableExistsError(
                f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{loc}` already exists (version {snapshot.version}); "
                "use createIfNotExists, replace or createOrReplace",
                table=loc,
            )
        if snapshot is not None and self._mode == "createIfNotExists":
            return loc
        if snapshot is None and self._mode == "replace":
            raise TableNotFoundError(
                f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table delta.`{loc}` cannot be replaced as it does not "
                "exist. Use CREATE OR REPLACE TABLE to create the table. DeltaTable.createOrReplace creates it",
                table=loc,
            )
        if snapshot is None:
            _check_new_location(table)
        self._commit(table, snapshot)
        return loc

    def _execute_named(self, identifier: str) -> str:
        """``execute()`` for a catalog name: the table at the entry's location, registering a new entry."""
        from deltalog.spark.catalog.create import CreateSpec, register_table
        from deltalog.spark.catalog.entries import check_location, forget, lookup, parse_name, raw_sql

        name = parse_name(identifier)
        entry = lookup(self._spark, name)
        if entry is not None and not entry.is_delta:
            raise InvalidArgumentError(
                f"[DELTA_TABLE_ONLY_OPERATION] {identifier} exists and is not a Delta table (provider "
                f"{entry.provider})", table=identifier)
        if entry is not None:
            if self._mode == "create":
                raise TableExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table {identifier} already exists; use "
                                       "createIfNotExists, replace or createOrReplace", table=identifier)
            if self._mode in ("replace", "createOrReplace"):
                check_location(identifier, entry.location, self._location)
            self._location, self._name, self._managed = entry.location, None, entry.managed
            return self.commit_definition()
        if self._mode == "replace":  # Spark's check before delta-spark's command runs, in its words
            relation = ".".join(f"`{p}`" for p in (name.database or _current_database(self._spark), name.table))
            raise TableNotFoundError(
                f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {relation} cannot be found. Verify the spelling and "
                "correctness of the schema and catalog. REPLACE needs an existing table: DeltaTable.createOrReplace "
                "creates it", table=identifier)
        from deltalog.spark.common.core import spark_schema

        schema = parse_schema(json.dumps({"type": "struct", "fields": self._fields}), table=identifier)
        spec = CreateSpec(partitions=list(self._partitions), comment=self._comment)
        location, managed = register_table(self._spark, name, spark_schema(list(schema.fields)), spec, self._location)
        try:
            self._location, self._name, self._managed = location, None, managed
            result = self.commit_definition()
        except BaseException:
            raw_sql(self._spark, f"DROP TABLE IF EXISTS {name.sql()}")
            raise
        finally:
            forget(self._spark, name)
        return result

    def _commit(self, table: Table, snapshot: Snapshot | None) -> None:
        loc = table.location
        if not self._fields:
            raise InvalidArgumentError(
                "[DELTA_SCHEMA_NOT_PROVIDED] the table needs at least one column: use addColumn or addColumns",
                table=loc,
            )
        seen: set[str] = set()
        for f in self._fields:
            if f["name"].lower() in seen:
                raise InvalidArgumentError(f"column {f['name']!r} is given twice (names are case-insensitive)",
                                           table=loc)
            seen.add(f["name"].lower())
        schema = parse_schema(json.dumps({"type": "struct", "fields": self._fields}), table=loc)
        _check_partitions_exist(self._fields, self._partitions, loc)
        check_partition_columns(schema, self._partitions, loc)
        from deltalog.spark.common.conf import default_properties

        # spark.databricks.delta.properties.defaults.* apply to tables created, as in delta-spark
        props = validate_properties({**default_properties(self._spark), **self._properties}, allow_constraints=True)
        for key, sql in props.items():  # the new table holds no rows: a CHECK constraint only has to compile
            if key.startswith("delta.constraints."):
                compile_check(key[len("delta.constraints."):], sql, schema, table=loc)
        features = [k[len("delta.feature."):] for k in props if k.startswith("delta.feature.")]
        versions = {k: int(props[k]) for k in _VERSION_KEYS if k in props}
        conf = {k: v for k, v in props.items() if not k.startswith("delta.feature.") and k not in versions}
        now = time.time_ns() // 1_000_000
        metadata = Metadata(
            id=snapshot.metadata.id if snapshot is not None else str(uuid.uuid4()),
            format=Format(),
            schemaString=schema.to_json(),
            partitionColumns=tuple(self._partitions),
            configuration=conf,
            description=self._comment,
            createdTime=now,
        )
        kind = _ReplaceTable if self._mode == "replace" else CreateTable
        op = kind(
            partition_by=tuple(self._partitions),
            properties=props,
            description=self._comment,
            replace=self._mode == "createOrReplace" and snapshot is not None,
            managed=self._managed,
            cluster_by=tuple(self._clustering),
        )
        txn = start_transaction(table, op, snapshot=snapshot)
        if snapshot is not None and txn.snapshot is None:
            raise TableNotFoundError("the table disappeared while it was being replaced", table=loc)
        base = snapshot.protocol if snapshot is not None else None
        try:
            protocol = upgrade_protocol(base, metadata, extra_features=features)
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(exc.message, feature=exc.feature, table=loc) from None
        protocol = raise_versions(
            protocol, versions.get("delta.minReaderVersion"), versions.get("delta.minWriterVersion"), loc
        )
        if snapshot is not None:
            txn.remove_files(txn.scan_files())
        if self._clustering:
            txn.set_domain_metadata(CLUSTERING_DOMAIN, clustering_domain(
                schema, self._clustering, partition_columns=self._partitions, configuration=conf, table=loc))
        elif snapshot is not None and snapshot.domain_metadata(CLUSTERING_DOMAIN) is not None:
            # delta-spark's REPLACE drops the clustering (its one domain removed on replace); others stay
            txn.set_domain_metadata(CLUSTERING_DOMAIN, snapshot.domain_metadata(CLUSTERING_DOMAIN) or "{}",
                                    removed=True)
        txn.update_metadata(metadata)
        if protocol != base:
            txn.update_protocol(protocol)
        txn.commit()


def _current_database(spark: Any) -> str:
    """The session's current database (``default`` when Spark cannot say)."""
    try:
        return str(spark.catalog.currentDatabase())
    except Exception:  # a session without a catalog API (Connect stubs in tests)
        return "default"


def _check_partitions_exist(fields: list[dict[str, Any]], partitions: list[str], table: str) -> None:
    """A partition column the schema lacks is refused in delta-spark's words (``DELTA_COLUMN_NOT_FOUND_IN_SCHEMA``,
    with Spark's tree of the schema)."""
    names = {f["name"].lower() for f in fields}
    missing = [c for c in partitions if c.lower() not in names]
    if missing:
        from pyspark.sql.types import StructType

        from deltalog.spark.common.compat import tree_string

        tree = tree_string(StructType.fromJson({"type": "struct", "fields": fields}))
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column {missing[0]} in:\n{tree}"
            f"partition column {missing[0]!r} is not a column of the table: add it with addColumn or partition by "
            "one of the columns", table=table)


def _check_new_location(table: Table) -> None:
    """delta-spark refuses to create a table in a directory that holds other files."""
    root = table.store.full_path("")
    try:
        entries = [e for e in os.listdir(root) if e != "_delta_log"]
    except FileNotFoundError:
        return
    except NotADirectoryError:
        entries = [root]
    if entries:
        raise InvalidArgumentError(
            f"[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION] cannot create a table at {table.location}: the location "
            f"is not empty and not a Delta table (it holds {sorted(entries)[:3]})",
            table=table.location,
        )


# ------------------------------------------------------------------------------------------ protocol


def upgrade_table_protocol(table: Table, reader_version: int, writer_version: int) -> Protocol | None:
    """Raise the table's protocol to at least ``(reader_version, writer_version)`` in one ``UPGRADE
    PROTOCOL`` commit; returns the new protocol, or None when the table already has it. A version at or
    below the table's is kept as it is (never lowered, not an error), as delta-spark does.

    Example:
        >>> upgrade_table_protocol(deltalog.Table("/data/t"), 1, 3)                     # doctest: +SKIP
        Protocol(minReaderVersion=1, minWriterVersion=3, ...)
    """
    snapshot = table.snapshot()
    old = snapshot.protocol
    for name, value, limit in (("readerVersion", reader_version, 3), ("writerVersion", writer_version, 7)):
        if value > limit:
            raise InvalidArgumentError(f"{name} {value} is not supported (at most {limit})", table=table.location)
    new = raise_versions(old, max(reader_version, old.minReaderVersion), max(writer_version, old.minWriterVersion),
                          table.location)
    if new == old:
        return None
    txn = start_transaction(table, UpgradeProtocol(new_protocol=new.to_dict()), snapshot=snapshot)
    txn.update_protocol(new)
    txn.commit()
    return new


def add_feature_support(table: Table, feature_name: str) -> Protocol:
    """Add a table feature to the protocol (``SET TBLPROPERTIES delta.feature.<name> = supported``, as
    delta-spark does); returns the table's protocol afterwards. A name no Delta Lake feature has is refused
    with delta-spark's ``DELTA_UNSUPPORTED_FEATURES_IN_CONFIG`` (names match case-insensitively); features
    deltalog cannot write are refused.

    Example:
        >>> add_feature_support(deltalog.Table("/data/t"), "deletionVectors").minWriterVersion  # doctest: +SKIP
        7
    """
    from deltalog.commands.properties import set_properties
    from deltalog.txn.writer_features import FEATURES

    known = {name.lower(): name for name in FEATURES}
    name = known.get(feature_name.lower())
    if name is None:  # delta-spark's words (its DeltaTableFeatureException), then what deltalog knows
        raise UnsupportedFeatureError(
            "[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG] Table features configured in the following Spark configs or Delta "
            f"table properties are not recognized by this version of Delta Lake: delta.feature.{feature_name}. The "
            f"table feature {feature_name!r} is unknown to deltalog; known features: {', '.join(sorted(FEATURES))}",
            feature=feature_name, table=table.location)
    set_properties(table, {f"delta.feature.{name}": "supported"})
    return table.snapshot().protocol
