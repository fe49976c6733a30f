"""What the deployment tests ship to Spark's Python workers, made the way docs/deployment.md tells, but small:

* :func:`python_without` -- an interpreter that cannot import deltalog (nor the packages named): a virtual
  environment whose site-packages links every other package of this interpreter (pyspark, pyarrow, numpy,
  pandas, ...), as an executor or a Connect server whose Python has PySpark's packages but not deltalog's.
* :func:`deltalog_zip` -- deltalog alone, pure Python, as ``spark.submit.pyFiles`` / a pyfile artifact takes it
  (what ``pip wheel --no-deps .`` makes, renamed ``.zip``).
* :func:`deps_directory` -- a ``pip install --target`` directory of deltalog and the named packages, copied from
  this interpreter's (the tests leave pyarrow and numpy out: the executors' Python has them, and an archive
  of them would cost CI seconds to pack and unpack).
* :func:`packed_env` -- a virtual environment holding the same, as venv-pack makes it (its interpreter a link
  to the base Python, at the same path on every machine); a ``.pth`` file stands for the packages left out.
* :func:`tar_gz` -- an archive of a directory for ``spark.archives``, its files at the top (no ``./``).
* :func:`ship_deltalog` -- what the Spark Connect clients of the tests do first.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path
from typing import Any

import deltalog

SITE = Path(sysconfig.get_paths()["purelib"])
SOURCE = Path(deltalog.__file__).resolve().parent


def _site_of(env: Path) -> Path:
    return Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))


def _of(entry: str, names: tuple[str, ...]) -> bool:
    """Whether a site-packages entry belongs to one of ``names`` (its package, module, extension or metadata)."""
    return any(entry == n or entry.startswith((f"{n}-", f"{n}.")) for n in names)


def python_without(env: Path, *names: str) -> Path:
    """A virtual environment at ``env`` with every package of this interpreter but deltalog and ``names``
    (linked, not copied); its interpreter."""
    venv.EnvBuilder(symlinks=True, with_pip=False).create(env)
    site = _site_of(env)
    left_out = ("deltalog", "__editable__", *names)
    for entry in sorted(os.listdir(SITE)):
        if entry.endswith(".pth") or _of(entry, left_out) or entry == "__pycache__":
            continue
        (site / entry).symlink_to(SITE / entry)
    return env / "bin" / "python"


def _copy_deltalog(into: Path) -> None:
    """deltalog's package, with the bytecode this interpreter compiled of it (as pip installs it: compiled)."""
    shutil.copytree(SOURCE, into / "deltalog")


def deltalog_zip(path: Path) -> Path:
    """deltalog's package (pure Python) in a zip at ``path``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for f in sorted(SOURCE.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, str(Path("deltalog") / f.relative_to(SOURCE)))
    return path


def zip_of(path: Path, *names: str) -> Path:
    """This interpreter's packages ``names`` (with their native code) in a zip at ``path``, as ``zip -r``
    makes one (directories have entries of their own)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for entry in sorted(os.listdir(SITE)):
            if _of(entry, names) and not entry.endswith(".dist-info"):
                top = SITE / entry
                for f in [top, *sorted(top.rglob("*"))] if top.is_dir() else [top]:
                    if "__pycache__" not in f.parts:
                        z.write(f, str(f.relative_to(SITE)))
    return path


def deps_directory(path: Path, *names: str) -> Path:
    """deltalog and this interpreter's packages ``names`` in a directory at ``path``, laid out as
    ``pip install --target`` lays them."""
    path.mkdir(parents=True)
    _copy_deltalog(path)
    for entry in sorted(os.listdir(SITE)):
        if _of(entry, names) and not entry.endswith(".dist-info"):
            source = SITE / entry
            if source.is_dir():
                shutil.copytree(source, path / entry, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, path / entry)
    return path


def packed_env(path: Path, *names: str, rest: Path) -> Path:
    """A virtual environment at ``path`` holding deltalog and this interpreter's packages ``names``, as
    venv-pack packs one; the site-packages of ``rest`` (an environment of :func:`python_without`) stands for
    the other packages an environment would hold."""
    venv.EnvBuilder(symlinks=True, with_pip=False).create(path)
    site = _site_of(path)
    shutil.rmtree(site)
    deps_directory(site, *names)
    (site / "rest.pth").write_text(f"{_site_of(rest)}\n")
    return path


def tar_gz(path: Path, directory: Path) -> Path:
    """``directory``'s files in a ``.tar.gz`` at ``path``, at its top (``spark.archives`` unpacks it into a
    directory named by the ``#fragment``)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for entry in sorted(os.listdir(directory)):
            tar.add(directory / entry, arcname=entry)
    return path


def ship_deltalog(spark: Any) -> None:
    """In a Spark Connect client of the tests: ship deltalog with the session (``DELTALOG_SHIP`` names the zip of
    :func:`deltalog_zip`), whose server's Python has deltalog's dependencies but not deltalog
    (docs/deployment.md#spark-connect)."""
    path = os.environ.get("DELTALOG_SHIP")
    if path:
        spark.addArtifacts(path, pyfile=True)
