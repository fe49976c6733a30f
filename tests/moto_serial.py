"""moto's S3/DynamoDB server, answering one request at a time.

AWS S3 applies a conditional create (``If-None-Match: *``) atomically: of two racing PUTs of one key exactly
one succeeds. moto's threaded server checks for the key and then stores the object without a lock, so two
racing writers can both be told they created it -- the suite's process-race tests caught it handing out one
Delta version to two writers (one commit silently replaced). Serialising the requests gives the emulator the
atomicity the real service has; everything else is moto's own server (same app, same request handler).

Run as ``python tests/moto_serial.py -H 127.0.0.1 -p PORT`` (``tests/emulators.py`` does).
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto.server sets it (presigned URLs name it)
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with lock:  # the whole request, body included, as one step
            return list(app(environ, start_response))

    run_simple(args.host, args.port, serial, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
