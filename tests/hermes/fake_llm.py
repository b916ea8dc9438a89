"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 for driving real Hermes agents.

It records every request body and answers from a script: each answer is either
text or a tool call; when the script runs out it answers "done".
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeChatServer:
    """``with FakeChatServer() as server:`` serves on ``server.base_url`` until the block ends."""

    def __init__(self):
        self.requests: list[dict] = []
        self._script: deque[dict] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-llm", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def reply_text(self, text: str) -> None:
        with self._lock:
            self._script.append({"content": text})

    def reply_tool_call(self, name: str, arguments: dict) -> None:
        with self._lock:
            self._script.append({"tool": name, "arguments": json.dumps(arguments)})

    def chat_requests(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if "messages" in r]

    def __enter__(self) -> "FakeChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_answer(self) -> dict:
        with self._lock:
            return self._script.popleft() if self._script else {"content": "done"}

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                self._send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                if not self.path.endswith("/chat/completions"):
                    self._send_json({"error": {"message": "not found"}}, status=404)
                    return
                answer = server._next_answer()
                if body.get("stream"):
                    self._stream(answer)
                else:
                    self._send_json(_completion(answer))

            def _send_json(self, payload, status=200):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, answer):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in _chunks(answer):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def make_agent(llm: FakeChatServer, session_id: str, platform: str = "cli", user_id: str | None = None,
               session_db=None):
    """A real Hermes ``AIAgent`` whose model is ``llm`` (with ``session_db``, a gateway's session database)."""
    from run_agent import AIAgent

    return AIAgent(base_url=llm.base_url, api_key="sk-test", model="fake-model", quiet_mode=True,
                   skip_context_files=True, skip_memory=True, session_id=session_id, platform=platform,
                   user_id=user_id, max_iterations=4, session_db=session_db)


def last_user_content(request: dict) -> str:
    """The text of the last user message a chat request sent to the model."""
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def _message(answer: dict) -> tuple[dict, str]:
    if "tool" in answer:
        call = {"id": f"call_{int(time.time() * 1e6)}", "type": "function",
                "function": {"name": answer["tool"], "arguments": answer["arguments"]}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {"role": "assistant", "content": answer["content"]}, "stop"


def _completion(answer: dict) -> dict:
    message, finish = _message(answer)
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _chunks(answer: dict) -> list[dict]:
    message, finish = _message(answer)
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": "fake-model"}
    if "tool_calls" in message:
        call = message["tool_calls"][0]
        delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                                      "function": call["function"]}]}
    else:
        delta = {"role": "assistant", "content": message["content"]}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
    ]
