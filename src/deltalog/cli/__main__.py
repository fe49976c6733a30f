"""``python -m deltalog.cli``: the ``deltalog`` command.

Example:
    $ python -m deltalog.cli describe /data/events
"""

from __future__ import annotations

from deltalog.cli import main

raise SystemExit(main())
