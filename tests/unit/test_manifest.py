"""Symlink manifests (``GENERATE symlink_format_manifest``) from the kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.manifest import generate_symlink_manifest
from deltalog.errors import UnsupportedFeatureError


def test_unpartitioned_manifest_lists_every_live_file_once(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": [1, 2]}))
    deltalog.write_table(tmp_path, pa.table({"id": [3]}), mode="append")
    deltalog.write_table(tmp_path, pa.table({"id": [4]}), mode="overwrite")
    res = generate_symlink_manifest(deltalog.Table(tmp_path))
    assert res.version == 2 and res.manifests == ["_symlink_format_manifest/manifest"]
    lines = (tmp_path / "_symlink_format_manifest" / "manifest").read_text().splitlines()
    live = deltalog.Table(tmp_path).snapshot().add_files().column("path").to_pylist()
    assert lines == ["file:" + os.path.join(str(tmp_path), p) for p in live]
    # an older version on request, and the newer manifest replaced whole
    assert len(generate_symlink_manifest(deltalog.Table(tmp_path), version=1).manifests) == 1
    assert len((tmp_path / "_symlink_format_manifest" / "manifest").read_text().splitlines()) == 2


def test_partition_directories_are_escaped_and_stale_ones_removed(tmp_path: Path) -> None:
    data = pa.table({"id": [1, 2, 3], "p": ["a/b", None, "c"]})
    deltalog.write_table(tmp_path, data, partition_by=["p"])
    res = generate_symlink_manifest(deltalog.Table(tmp_path))
    assert res.manifests == [
        "_symlink_format_manifest/p=__HIVE_DEFAULT_PARTITION__/manifest",
        "_symlink_format_manifest/p=a%2Fb/manifest",
        "_symlink_format_manifest/p=c/manifest",
    ]
    deltalog.write_table(tmp_path, pa.table({"id": [9], "p": ["c"]}), mode="overwrite")
    res = generate_symlink_manifest(deltalog.Table(tmp_path))
    assert res.manifests == ["_symlink_format_manifest/p=c/manifest"] and len(res.deleted) == 2
    assert sorted(os.listdir(tmp_path / "_symlink_format_manifest")) == ["p=c"]


def test_empty_table_gets_an_empty_manifest(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": pa.array([], pa.int64())}))
    generate_symlink_manifest(deltalog.Table(tmp_path))
    assert (tmp_path / "_symlink_format_manifest" / "manifest").read_text() == ""


def test_deletion_vectors_are_refused(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": list(range(10))}),
                         properties={"delta.enableDeletionVectors": "true"})
    deltalog.Table(tmp_path).delete([("id", "<", 3)])
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors") as err:
        generate_symlink_manifest(deltalog.Table(tmp_path))
    assert err.value.feature == "deletionVectors" and not (tmp_path / "_symlink_format_manifest").exists()
