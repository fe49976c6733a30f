"""Columns whose values the table defines: generated columns (:mod:`.generated`), default values
(:mod:`.defaults`) and identity columns (:mod:`.identity` for writers, :mod:`.identity_generator` for
delta-spark's ``IdentityGenerator``) -- the rules reads (generated partition filters), writes, DML and DDL
share.

May import: the kernel and :mod:`deltalog.spark.common`.
"""
