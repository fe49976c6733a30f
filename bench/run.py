"""Runs every benchmark and prints ratios against the anchors measured in the same run.

    make bench            (or: python bench/run.py [--quick])
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES = [
    ("log_load.py", ["--files", "100000", "--commits", "50"], ["--files", "20000", "--commits", "10"]),
    ("checkpoint_write.py", ["--files", "1000000"], ["--files", "100000"]),
    ("commit_rate.py", ["--commits", "200", "--adds", "5"], ["--commits", "50", "--adds", "5"]),
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="smaller tables")
    args = p.parse_args()
    status = 0
    for script, full, quick in BENCHES:
        if not (HERE / script).exists():
            continue
        cmd = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
        print(f"$ {' '.join(cmd[1:])}", flush=True)
        status |= subprocess.call(cmd)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
