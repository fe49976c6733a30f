"""Writes docs/conformance.md: every table of ../shared/conformance and what deltalog made of it.

    python scripts/conformance_report.py > docs/conformance.md
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from checks import CORPUS, check_table, load_expected

#: The tests that prove each feature deltalog writes (read support is proven by the corpus below).
WRITE_PROOF = {
    "appendOnly": "tests/unit/test_write.py, tests/unit/test_transaction.py",
    "invariants": "tests/unit/test_constraints.py",
    "checkConstraints": "tests/unit/test_constraint_commands.py, tests/spark/sql/test_spark_sql.py",
    "changeDataFeed": "tests/unit/test_changes.py, tests/spark/reads/test_spark_cdf.py",
    "deletionVectors": "tests/unit/test_deletion_vectors.py, tests/spark/dml/test_spark_dml.py",
    "timestampNtz": "tests/unit/test_write.py",
    "inCommitTimestamp": "tests/unit/test_write_properties.py",
    "domainMetadata": "tests/unit/test_write_properties.py, tests/unit/test_checkpoint_writer.py",
    "vacuumProtocolCheck": "tests/unit/test_vacuum.py",
    "identityColumns": "tests/unit/test_identity.py, tests/spark/columns/test_spark_identity.py",
    "generatedColumns": "tests/unit/test_generated.py, tests/spark/columns/test_spark_generated.py",
    "columnMapping": "tests/unit/test_column_mapping.py, tests/spark/test_spark_column_mapping.py",
    "allowColumnDefaults": "tests/unit/test_defaults.py, tests/spark/columns/test_spark_defaults.py",
    "v2Checkpoint": "tests/unit/test_checkpoint_v2.py, tests/unit/test_checkpoint_writer.py",
    "clustering": "tests/unit/test_clustering.py, tests/spark/layout/test_spark_clustering.py",
    "typeWidening": "tests/unit/test_type_widening.py, tests/spark/test_spark_type_widening.py",
    "typeWidening-preview": "tests/unit/test_type_widening.py, tests/spark/test_spark_type_widening.py "
                            "(copies of the corpus table Delta 3.3 widened)",
    "rowTracking": "tests/unit/test_row_tracking.py, tests/spark/test_spark_row_tracking.py",
    "checkpointProtection": "tests/unit/test_drop_feature.py",
    "variantType": "tests/unit/test_variant.py, tests/spark/test_spark_variant.py",
    "geospatial": "tests/unit/test_geospatial.py, tests/spark/test_spark_geospatial.py",
    "icebergCompatV1": "tests/unit/test_iceberg_compat.py",
    "icebergCompatV2": "tests/unit/test_iceberg_compat.py, tests/spark/test_spark_uniform_enable.py (and a copy of "
                       "the corpus table delta-spark wrote)",
    "variantType-preview": "tests/unit/test_variant.py, tests/spark/test_spark_variant.py (copies of the corpus "
                           "table)",
}


#: Why the features deltalog does not write are refused.
WHY_NOT = {
    "catalogManaged": "refused: the catalog that owns the table ratifies its commits, and deltalog reads and "
                      "commits through storage only",
    "variantShredding": "refused: deltalog writes variants unshredded only; reads put shredded files back "
                        "together (tests/unit/test_variant_shredding.py, tests/spark/test_spark_variant_shredding.py)",
    "variantShredding-preview": "as `variantShredding`",
}


def writer_features_section() -> str:
    """Read / write support per table feature, from deltalog.txn.writer_features."""
    from deltalog.commands.drop_feature import REMOVABLE_FEATURES
    from deltalog.txn.writer_features import FEATURES, INACTIVE_ONLY_WRITER_FEATURES, SUPPORTED_WRITER_FEATURES

    lines = ["## Table features: read and write\n",
             "*read ✓*: tables with the feature are read (the corpus below proves it); *read ✗*: they are "
             "refused naming the feature. *write ✓*: deltalog commits to tables that use "
             "it, keeping the feature's rules; *only while inactive*: the table may list the feature but not use "
             "it; *✗*: commits are refused naming the feature (a readable table stays readable). *drop ✓*: "
             "`Table.drop_feature` / `dropFeatureSupport` / `ALTER TABLE ... DROP FEATURE` removes it "
             "(tests/unit/test_drop_feature.py, tests/spark/api/test_spark_drop_feature.py).\n",
             "| feature | read | write | drop | write tests |", "|---|---|---|---|---|"]
    from deltalog.protocol.features import SUPPORTED_READER_FEATURES

    for name in sorted(FEATURES, key=str.lower):
        read = "✓" if not FEATURES[name].reader or name in SUPPORTED_READER_FEATURES else "✗"
        if name in SUPPORTED_WRITER_FEATURES:
            write = "✓"
        elif name in INACTIVE_ONLY_WRITER_FEATURES:
            write = "only while inactive"
        else:
            write = "✗"
        drop = "✓" if name in REMOVABLE_FEATURES else ""
        lines.append(f"| `{name}` | {read} | {write} | {drop} | {WRITE_PROOF.get(name, '') or WHY_NOT.get(name, '')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    expected = load_expected()
    if not expected:
        print(f"conformance corpus not found at {CORPUS}", file=sys.stderr)
        return 1
    rows = []
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    for name in sorted(expected):
        try:
            outcome = check_table(name, expected[name])
            status, detail = outcome.status, outcome.detail
            checked = ", ".join(sorted(set(outcome.checked)))
        except Exception as exc:  # the report lists failures instead of stopping
            status, detail, checked = "FAILED", f"{type(exc).__name__}: {exc}", ""
        counts[status] += 1
        detail = detail.replace("|", "\\|").replace("\n", " ")[:160]
        rows.append(f"| `{name}` | {status} | {checked} | {detail} |")
    took = time.perf_counter() - start
    print("# Conformance\n")
    print("Generated by `scripts/conformance_report.py` (`make docs`); do not edit by hand.\n")
    print(f"Corpus: `../shared/conformance`, {len(expected)} tables listed in `EXPECTED.json`. "
          f"Passed: {counts['passed']}, refused with the named unsupported feature: {counts['refused']}, "
          f"failed: {counts['FAILED']}. Checked in {took:.1f} s.\n")
    print("*passed* means every fact EXPECTED.json states was checked and matched (including "
          "`must_error` tables, which must fail with the right deltalog error); *refused* means the table "
          "needs a reader feature deltalog does not implement yet and opening it raised "
          "`UnsupportedFeatureError` naming that feature.\n")
    print("Where deltalog deliberately departs from an upstream answer (each is written in the test):\n")
    print("- `kernel-rs-golden/canonicalized-paths-*`: the add uses a bare absolute path and the remove "
          "the `file:` URI of the same file; deltalog canonicalizes paths, so 0 files are live, as "
          "EXPECTED.json's spec-correct fact says (both upstream kernels still report 1).")
    print("- `kernel-rs-golden/data-reader-partition-values`: its `expected/` parquet was produced by Spark "
          "in the America/Los_Angeles session zone; deltalog reads zone-less partition timestamps as "
          "UTC (as Delta Kernel and kernel-rs do), and the test shifts that one expected column by 7 h.")
    print("- `kernel-rs-data/crc-full`: its `.crc` claims 10 files that no commit adds; deltalog verifies "
          "checksums on load and reports the contradiction (naming the `.crc`); with "
          "`verify_checksums=False` every log-derived fact holds.")
    print("- `delta-spark/*dv*` tables name their deletion-vector files with a Spark test-only prefix "
          "(`test%dv%prefix-deletion_vector_<uuid>.bin`); when the protocol's file name is absent deltalog "
          "accepts the single file in that directory whose name ends with it.\n")
    print(writer_features_section())
    print("| table | result | facts checked | detail |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0 if counts["FAILED"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
