"""deltalog's version, in a module of its own so that every layer can name it (``commitInfo.engineInfo``); the
distribution's version is read from here too (``pyproject.toml``: ``[tool.setuptools.dynamic]``), so it is written once.

Example:
    >>> from deltalog.version import __version__
    >>> __version__.count(".")
    2
"""

__version__ = "0.1.0"
