"""Delta tables in Spark's session catalog: table names, catalog entries and their lookup
(:mod:`.entries`), the catalog entry of a new table (:mod:`.create`), ``DESCRIBE DETAIL``'s frame
(:mod:`.detail`), cloning into a catalog name (:mod:`.clone`) and the SQL dialect the names are read
with (:mod:`.dialect`). Both the ``DeltaTable`` API and the SQL front end build on it.

May import: the kernel and :mod:`deltalog.spark.common`.
"""
