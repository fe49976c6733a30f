"""Google Cloud Storage: no emulator is reachable here, so the configuration mapping and the shape of
the requests deltalog makes are checked against a local HTTP endpoint that records them (``GOOGLE_BASE_URL``)
and answers like GCS's XML API: a conditional create carries ``x-goog-if-generation-match: 0``, a create
that finds the object gets 412 and becomes ``FileExistsError``, listing starts after a key, and
credentials come from a service-account key file."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deltalog.errors import StoragePermissionError
from deltalog.storage import store_for

pytestmark = pytest.mark.objectstore


class Recorder:
    """Answers like GCS's XML API for one bucket held in memory; records every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.objects: dict[str, bytes] = {}
        self.refuse = False
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorder.requests.append({"method": self.command, "path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()}})
                key = self.path.split("?", 1)[0].split("/", 2)[-1]
                status, data, extra = recorder.respond(self.command, key, self.headers, body)
                self.send_response(status)
                for k, v in {"ETag": '"e1"', "Content-Length": str(len(data)), **extra}.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def respond(self, method: str, key: str, headers: Any, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        from urllib.parse import unquote

        key = unquote(key)
        if self.refuse:
            return 403, b"<Error><Code>AccessDenied</Code></Error>", {}
        if method == "PUT":
            if headers.get("x-goog-if-generation-match") == "0" and key in self.objects:
                return 412, b"<Error><Code>PreconditionFailed</Code></Error>", {}
            self.objects[key] = body
            return 200, b"", {}
        if method == "GET" and key in self.objects:
            return 200, self.objects[key], {"Last-Modified": "Wed, 25 Nov 2026 00:00:00 GMT"}
        if method == "GET" and "list-type=2" in "".join(r["path"] for r in self.requests[-1:]):
            return 200, b"<ListBucketResult></ListBucketResult>", {"Content-Type": "application/xml"}
        return 404, b"<Error><Code>NoSuchKey</Code></Error>", {}


@pytest.fixture
def gcs(tmp_path: Path) -> Iterator[tuple[Recorder, dict[str, str]]]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    recorder = Recorder()
    key_file = tmp_path / "service-account.json"
    key_file.write_text(json.dumps({
        "type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": pem,
        "client_email": "deltalog@p.iam.gserviceaccount.com", "token_uri": recorder.url + "/token",
    }))
    options = {"GOOGLE_BASE_URL": recorder.url, "GOOGLE_SERVICE_ACCOUNT": str(key_file), "allow_http": "true",
               "max_retries": "0"}
    yield recorder, options
    recorder.server.shutdown()
    recorder.server.server_close()


def test_commits_are_conditional_creates_signed_with_the_service_account(
    gcs: tuple[Recorder, dict[str, str]]
) -> None:
    recorder, options = gcs
    store = store_for("gs://bucket/tables/t", options=options)
    store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    put = recorder.requests[-1]
    assert put["method"] == "PUT" and put["path"].startswith("/bucket/tables")
    assert put["headers"]["x-goog-if-generation-match"] == "0"
    assert put["headers"]["authorization"].startswith("Bearer ")
    with pytest.raises(FileExistsError):
        store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    store.write("_delta_log/_last_checkpoint", b"{}", overwrite=True)
    assert "x-goog-if-generation-match" not in recorder.requests[-1]["headers"]


def test_listing_starts_after_a_key(gcs: tuple[Recorder, dict[str, str]]) -> None:
    recorder, options = gcs
    store = store_for("gcs://bucket/tables/t2", options=options)
    assert list(store.list_from("_delta_log/00000000000000000010")) == []
    listing = recorder.requests[-1]["path"]
    assert "list-type=2" in listing and "start-after=" in listing and "prefix=tables%2Ft2%2F_delta_log%2F" in listing


def test_refused_requests_are_named(gcs: tuple[Recorder, dict[str, str]]) -> None:
    recorder, options = gcs
    recorder.refuse = True
    store = store_for("gs://bucket/tables/t3", options=options)
    with pytest.raises(StoragePermissionError, match="check the credentials"):
        store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
