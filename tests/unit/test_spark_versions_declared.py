"""What pyproject.toml promises about Spark versions is what the version lanes test (scripts/spark_lanes.py)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _lanes() -> dict[str, list[str]]:
    spec = importlib.util.spec_from_file_location("spark_lanes", ROOT / "scripts" / "spark_lanes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LANES  # type: ignore[no-any-return]


def _pyspark(extra: str) -> Requirement:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra]
    return next(r for r in map(Requirement, extras) if r.name == "pyspark")


def test_every_lane_is_declared_and_nothing_older() -> None:
    declared = _pyspark("spark").specifier
    for minor, requirements in _lanes().items():
        pinned = next(r for r in map(Requirement, requirements) if r.name == "pyspark")
        version = next(iter(pinned.specifier)).version
        assert version in declared, f"lane {minor} runs pyspark {version}, which deltalog[spark] ({declared}) excludes"
    assert "3.4.4" not in declared and "5.0.0" not in declared


def test_the_35_extra_pins_what_its_lane_installs() -> None:
    lane = _lanes()["3.5"]
    declared = _pyspark("spark35").specifier
    assert "3.5.9" in declared and "4.0.0" not in declared
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark35"]
    assert "pandas<3" in lane and "pandas<3" in extras
