"""A small OpenAI-compatible /chat/completions server on 127.0.0.1 for LLM reranker tests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    """Answers every POST /v1/chat/completions with `reply` (a string, or a callable of the
    request body), after `delay` seconds, with HTTP `status`. Requests are kept in `received`."""

    def __init__(self) -> None:
        self.reply = "[]"
        self.status = 200
        self.delay = 0.0
        self.received: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.received.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                time.sleep(server.delay)
                text = server.reply(body) if callable(server.reply) else server.reply
                payload = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})
                data = (payload if server.status == 200 else "internal error").encode()
                try:
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()
