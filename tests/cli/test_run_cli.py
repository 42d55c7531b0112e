"""`codeact run` as a user types it, against a local server speaking the OpenAI chat-completions
protocol (streamed, as the live view asks for) that scripts the model's turns."""
import json
import os
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")


class ScriptedModel:
    """Answers each chat-completions request with the next scripted assistant message."""

    def __init__(self, turns):
        self.turns = list(turns)
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                if not model.turns:
                    self.send_response(500)
                    self.end_headers()
                    return
                message = model.turns.pop(0)
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


@pytest.fixture
def run_id(cli):
    rid = f"clitest-run-{uuid.uuid4().hex[:8]}"
    yield rid
    cli("sandbox", "rm", rid, "--volume")


def test_run_direct_json_has_answer_files_and_usage(cli, run_id):
    model = ScriptedModel([
        python_turn("call_1", "answer = 6 * 7\nopen('/output/answer.txt', 'w').write(str(answer))\nanswer"),
        {"content": "The answer is 42 (saved in /output/answer.txt)."},
    ])
    try:
        p, j = cli.json("run", "--no-durable", "--model", model.model_flag, "--prompts", PROMPTS,
                        "--workflow-id", run_id, "--json", "Compute 6*7 and save it.", check=0)
    finally:
        model.close()
    assert j["output"] == "The answer is 42 (saved in /output/answer.txt)."
    assert j["workflow_id"] is None
    assert j["sandbox_id"] == run_id
    assert j["files"] == ["/output/answer.txt"]
    assert j["usage"]["requests"] == 2 and j["usage"]["input_tokens"] == 100
    # The live view (stderr with --json) showed the step, the cell and its result.
    assert "step 1" in p.err and "execute_python" in p.err and "result: 42" in p.err
    # The model saw the cell's result and, from the seed's prompt, the sandbox it works in.
    assert len(model.requests) == 2
    second = json.dumps(model.requests[1]["messages"])
    assert "result: 42" in second and run_id in second
    # The file is in the sandbox's volume after the run.
    p, cell = cli.json("sandbox", "exec", run_id, "--json", "open('/output/answer.txt').read()", check=0)
    assert cell["result"] == "'42'"


def test_run_without_json_shows_the_run_live_and_ends_with_the_answer(cli, run_id):
    model = ScriptedModel([
        python_turn("call_1", "print('working')\n1/0"),
        python_turn("call_2", "print('fixed')"),
        {"content": "Done."},
    ])
    try:
        p = cli("run", "--no-durable", "--model", model.model_flag, "--prompts", PROMPTS, "--workflow-id", run_id,
                "Divide.", check=0)
    finally:
        model.close()
    assert "working" in p.out and "ZeroDivisionError" in p.out and "fixed" in p.out
    assert p.out.rstrip().endswith("── answer\nDone.")
    assert "ZeroDivisionError" in json.dumps(model.requests[1]["messages"])


def test_durable_mode_is_not_in_this_build_and_says_so(cli):
    p = cli("run", "some task")
    assert p.returncode == 2
    assert "Temporal worker" in p.err and "--no-durable" in p.err
    # A list flag before the task does not swallow it.
    p = cli("run", "--packages", "numpy,pandas", "some task")
    assert p.returncode == 2 and "Temporal worker" in p.err, p.err


def test_no_model_configured_names_the_variable_and_the_flag(cli, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
                        "APP_CONFIG_PATH", "APP_PROMPTS_PATH")}
    env["HOME"] = str(tmp_path)
    p = subprocess.run([cli.bin, "run", "--no-durable", "task"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "OPENAI_API_KEY" in p.stderr and "--model" in p.stderr
