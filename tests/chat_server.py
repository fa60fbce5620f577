"""An OpenAI-compatible chat endpoint on loopback, for the LLM summarizer: the engine's tests
call it directly, the web's through stored runs and replays (a fixture of every test folder,
through ``pytest_plugins`` in ``tests/conftest.py``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest


class FakeChatServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions endpoint on loopback."""

    requests: ClassVar[list[dict[str, Any]]] = []
    status = 200
    reply: ClassVar[Any] = {
        "choices": [
            {"message": {"role": "assistant", "content": "Decided: fix parser.py (3 bugs)."}}
        ]
    }

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        payload = json.dumps(type(self).reply).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def chat_server() -> Iterator[str]:
    FakeChatServer.requests = []
    FakeChatServer.status = 200
    server = HTTPServer(("127.0.0.1", 0), FakeChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
