"""A local server speaking the OpenAI chat-completions protocol (plain and streamed) that scripts
the model's turns. The answer to a request is chosen by how many assistant messages the request
already holds, so a request retried after a crash gets the same answer as the first attempt."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedModel:
    """Answers request k (k = assistant messages already in it) with turns[k]. `on_request(k, body)`
    runs before the answer is sent (it may sleep, or kill something); `delays[k]` seconds are
    waited before answering turn k. A turn {"http_status": 400, "message": "..."} is answered with
    that status and an OpenAI error body; a request past the turns gets a bare 500. `respond`, when
    given, chooses the turn instead: respond(body) -> turn, or None for the 500 (a model that
    reads the conversation, e.g. to run a cell again whose result was lost)."""

    def __init__(self, turns, on_request=None, delays=None, respond=None):
        self.turns = list(turns)
        self.respond = respond
        self.requests = []
        self.headers = []  # the HTTP headers of each request
        self.on_request = on_request
        self.delays = dict(delays or {})
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                model.headers.append(dict(self.headers))
                k = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
                if model.on_request:
                    model.on_request(k, body)
                if k in model.delays:
                    time.sleep(model.delays[k])
                message = (model.respond(body) if model.respond
                           else model.turns[k] if k < len(model.turns) else None)
                if message is None:
                    self.send_response(500)
                    self.end_headers()
                    return
                if "http_status" in message:
                    data = json.dumps({"error": {"message": message.get("message", "refused"),
                                                 "type": "invalid_request_error"}}).encode()
                    self.send_response(message["http_status"])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
                if not body.get("stream"):
                    out = {"id": "c", "object": "chat.completion", "created": 0, "model": "scripted",
                           "choices": [{"index": 0, "message": {"role": "assistant", **message},
                                        "finish_reason": finish}], "usage": usage}
                    data = json.dumps(out).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                delta = {"role": "assistant"}
                if message.get("content"):
                    delta["content"] = message["content"]
                if message.get("tool_calls"):
                    delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
                chunks = [
                    {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                    {"choices": [], "usage": usage},
                ]
                payload = "".join(
                    "data: " + json.dumps(dict(c, id="c", object="chat.completion.chunk", created=0, model="scripted"))
                    + "\n\n" for c in chunks) + "data: [DONE]\n\n"
                data = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def model_flag(self):
        return f"openai-compatible:scripted@http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def python_turn(call_id, code):
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function",
                                             "function": {"name": "execute_python",
                                                          "arguments": json.dumps({"code": code})}}]}
