"""What every part of the Spark engine shares, and nothing else: the lowest floor of ``deltalog.spark``.

Owns: deltalog's errors as PySpark exceptions (:mod:`.errors`), storage options and Hadoop settings for
object stores (:mod:`.storage`), session settings resolved once (:mod:`.conf`), the kernel's table and
snapshot worded as delta-spark words its errors, Delta types as Spark types and option parsing
(:mod:`.core`), Spark's own ``sql`` for deltalog's internal statements (:mod:`.statements`), time
instants (:mod:`.instants`), the Python data sources a session registers (:mod:`.sources`), the recorded
state of PySpark's reader and writer objects (:mod:`.recorded`), bounded stores of what plans reuse
(:mod:`.kept`), columns and observations built with few Py4J round trips (:mod:`.jvm_calls`) and which
PySpark runs, with the calls whose spelling differs between the supported versions (:mod:`.compat`, the only
module that reads the version).

May import: the kernel and pyspark; no other ``deltalog.spark`` package.
"""
