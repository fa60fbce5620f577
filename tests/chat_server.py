"""A chat endpoint on loopback, for the summarizers that call a model: OpenAI-compatible
``/chat/completions`` and Anthropic's ``/v1/messages``. The engine's tests call it directly,
the web's through stored runs and replays (a fixture of every test folder, through
``pytest_plugins`` in ``tests/conftest.py``). It can answer late (``delay`` seconds), with an
HTTP error (``status``) or with bytes that are no JSON (``raw``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

OPENAI_REPLY: dict[str, Any] = {
    "choices": [{"message": {"role": "assistant", "content": "Decided: fix parser.py (3 bugs)."}}]
}
ANTHROPIC_REPLY: dict[str, Any] = {
    "id": "msg_loopback",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "Decided: fix parser.py (3 bugs)."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1200, "output_tokens": 40},
}


class FakeChatServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions and an Anthropic /v1/messages endpoint."""

    requests: ClassVar[list[dict[str, Any]]] = []
    status = 200
    delay = 0.0
    raw: ClassVar[bytes | None] = None
    reply: ClassVar[Any] = OPENAI_REPLY
    anthropic_reply: ClassVar[Any] = ANTHROPIC_REPLY

    def do_POST(self) -> None:
        server = type(self)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.requests.append(
            {
                "path": self.path,
                "auth": self.headers.get("Authorization"),
                "api_key": self.headers.get("x-api-key"),
                "body": body,
            }
        )
        if server.delay:
            time.sleep(server.delay)
        reply = server.anthropic_reply if self.path.endswith("/messages") else server.reply
        payload = server.raw if server.raw is not None else json.dumps(reply).encode()
        try:
            self.send_response(server.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up waiting (a timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def chat_server() -> Iterator[str]:
    FakeChatServer.requests = []
    FakeChatServer.status = 200
    FakeChatServer.delay = 0.0
    FakeChatServer.raw = None
    FakeChatServer.reply = OPENAI_REPLY
    FakeChatServer.anthropic_reply = ANTHROPIC_REPLY
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatServer)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
