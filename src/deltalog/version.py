"""deltalog's version, in a module of its own so that every layer can name it (``commitInfo.engineInfo``).

Example:
    >>> from deltalog.version import __version__
    >>> __version__.count(".")
    2
"""

__version__ = "0.1.0"
