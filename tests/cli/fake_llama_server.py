#!/usr/bin/env python3
"""A stand-in for llama.cpp's `llama-server`, for the `codeact model` tests: installed where
codeact keeps the built server, it takes the same flags, answers /health (503 while "loading",
as the real one does, then 200) and writes the arguments it was started with to args.json next
to itself. The real server is driven by the opt-in suite tests/real_model/."""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "args.json"), "w") as f:
    json.dump(args, f)
if os.environ.get("FAKE_LLAMA_FAIL"):
    print("error: failed to load model (the test asked for it)", flush=True)
    sys.exit(1)
port = int(args[args.index("--port") + 1])
alias = args[args.index("--alias") + 1]
ready_at = time.monotonic() + 1.0


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            loading = time.monotonic() < ready_at
            body = {"error": {"code": 503, "message": "Loading model"}} if loading \
                else {"status": "ok"}
            self.reply(503 if loading else 200, body)
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": alias, "object": "model"}]})
        else:
            self.reply(404, {"error": {"code": 404, "message": "File Not Found"}})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


print(f"main: server is listening on http://127.0.0.1:{port}", flush=True)
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
