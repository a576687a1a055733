"""A registry shaped like the ARD peer kit, on a real loopback port: it answers `POST /search` by asking its own
upstream registry (a fresh request: the query and page size, no federation headers) and answers with two
top-level fields an ARD search response does not have (`query`, `totalResults`); its health probe is `/health`.

    with PeerKit() as kit:
        kit.upstream = "http://127.0.0.1:8001"
        ...
        assert kit.searches == 1
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

FORWARD_TIMEOUT = 20.0  # bounds a loop the registry under test fails to stop


class PeerKit:
    def __init__(self) -> None:
        self.upstream: str | None = None
        self.searches = 0  # POST /search requests received
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> PeerKit:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the kit answers a search: its upstream's results (none without one), and its own extra fields."""
        with self._lock:
            self.searches += 1
        results: list[Any] = []
        if self.upstream is not None:
            forwarded = {"query": body.get("query"), "pageSize": body.get("pageSize", 10), "federation": "auto"}
            try:
                response = httpx.post(f"{self.upstream}/search", json=forwarded, timeout=FORWARD_TIMEOUT)
                results = response.json().get("results", []) if response.status_code == 200 else []
            except (httpx.HTTPError, ValueError):
                results = []
        return {"query": body.get("query"), "totalResults": len(results), "results": results}


def _handler(kit: PeerKit) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads `PeerKit.searches`."""

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path.rstrip("/") == "/search":
                self._send(200, kit.answer(body))
            else:
                self._send(404, {"error": "not found"})

    return Handler
