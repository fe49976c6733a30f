"""Object-store emulators the suite starts on 127.0.0.1: moto's S3 (and DynamoDB) server and azurite.

Each runs as a child process on a free port for the whole session (fixtures in ``tests/conftest.py``);
tests get a fresh bucket prefix or container so they never see each other's objects. Azurite comes from
npm (``make test`` installs it under ``.tools/``; ``AZURITE`` may name another ``azurite-blob``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
ACCESS_KEY, SECRET_KEY, REGION = "deltalog-test-key", "deltalog-test-secret", "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before listening on {port}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@dataclass
class Emulator:
    """A running emulator: ``endpoint`` URL and the storage options deltalog (and delta-rs) use with it."""

    name: str
    endpoint: str
    proc: subprocess.Popen[bytes]
    workdir: str
    log: Any
    options: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_moto() -> Emulator:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="deltalog-moto-")
    log = open(os.path.join(workdir, "moto.log"), "wb")  # noqa: SIM115 -- lives as long as the process
    launcher = str(ROOT / "tests" / "moto_serial.py")  # moto's server with atomic conditional creates
    proc = subprocess.Popen([sys.executable, launcher, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    wait_for_port(port, proc, "moto server")
    endpoint = f"http://127.0.0.1:{port}"
    options = {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true",
    }
    return Emulator("moto", endpoint, proc, workdir, log, options)


def azurite_binary() -> str | None:
    explicit = os.environ.get("AZURITE")
    if explicit:
        return explicit
    local = ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


def start_azurite() -> Emulator:
    binary = azurite_binary()
    if binary is None:
        raise FileNotFoundError("azurite-blob not found (make test installs it from scripts/azurite with npm ci)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="deltalog-azurite-")
    log = open(os.path.join(workdir, "azurite.log"), "wb")  # noqa: SIM115 -- lives as long as the process
    proc = subprocess.Popen([binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", workdir,
                             "--skipApiVersionCheck", "--silent", "--loose"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    wait_for_port(port, proc, "azurite")
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    # What delta-rs and obstore users write for azurite: the emulator switch, and its address in the
    # environment (object_store reads AZURITE_BLOB_STORAGE_URL; child processes inherit it).
    os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
    options = {
        "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY,
        "AZURE_STORAGE_USE_EMULATOR": "true",
    }
    return Emulator("azurite", endpoint, proc, workdir, log, options)


def s3_client(emulator: Emulator) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=emulator.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION)


def new_bucket(emulator: Emulator) -> str:
    name = f"b-{uuid.uuid4().hex[:16]}"
    s3_client(emulator).create_bucket(Bucket=name)
    return name


def new_container(emulator: Emulator) -> str:
    from azure.storage.blob import BlobServiceClient

    name = f"c-{uuid.uuid4().hex[:16]}"
    conn = (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={emulator.endpoint};")
    BlobServiceClient.from_connection_string(conn).create_container(name)
    return name


class IgnoringProxy:
    """An HTTP proxy in front of moto that drops ``If-None-Match`` from every request: an S3-compatible
    store that ignores conditional writes, as some do. Runs in a thread of the test process."""

    def __init__(self, target: str) -> None:
        import http.client
        import http.server
        import threading
        from urllib.parse import urlsplit

        upstream = urlsplit(target)
        host, port = upstream.hostname or "127.0.0.1", upstream.port or 80

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("if-none-match", "host", "connection")}
                conn = http.client.HTTPConnection(host, port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                head = self.command == "HEAD"  # a HEAD answer keeps the object's Content-Length
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection") and (head or k.lower() != "content-length"):
                        self.send_header(k, v)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
