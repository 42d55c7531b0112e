"""`codeact run` as a user types it, against a local server speaking the OpenAI chat-completions
protocol (streamed, as the live view asks for) that scripts the model's turns."""
import json
import os
import re
import subprocess
import uuid

import pytest

from scripted_model import ScriptedModel, python_turn

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")


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


def test_run_shows_a_cells_output_as_it_prints_and_not_again_with_the_result(cli, run_id):
    model = ScriptedModel([
        python_turn("call_1", "import sys, time\nprint('tick 1')\ntime.sleep(0.5)\nprint('tick 2')\n"
                              "print('careful', file=sys.stderr)\n6 * 7"),
        {"content": "Done."},
    ])
    try:
        p = cli("run", "--no-durable", "--model", model.model_flag, "--prompts", PROMPTS, "--workflow-id", run_id,
                "Tick.", check=0)
    finally:
        model.close()
    # The live lines, then the result without the stdout/stderr blocks already shown.
    assert "    │ tick 1\n    │ tick 2\n" in p.out, p.out
    assert "    ! careful\n" in p.out, p.out
    assert "stdout:" not in p.out and "stderr:" not in p.out, p.out
    assert "result: 42" in p.out, p.out
    # The model read them in the result.
    second = json.dumps(model.requests[1]["messages"])
    assert "tick 2" in second and "careful" in second


def test_no_model_configured_names_the_variable_and_the_flag(cli, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
                        "APP_CONFIG_PATH", "APP_PROMPTS_PATH")}
    env["HOME"] = str(tmp_path)
    p = subprocess.run([cli.bin, "run", "--no-durable", "task"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "OPENAI_API_KEY" in p.stderr and "--model" in p.stderr


def test_run_disk_limits_the_sandbox_and_a_full_disk_reaches_the_model(cli, run_id):
    model = ScriptedModel([
        python_turn("call_1", "open('/output/big', 'wb').write(b'x' * (64 << 20))"),
        {"content": "The disk is full."},
    ])
    try:
        p, j = cli.json("run", "--no-durable", "--model", model.model_flag, "--prompts", PROMPTS,
                        "--workflow-id", run_id, "--disk", "32m", "--keep-sandbox", "--json", "Fill it.", check=0)
    finally:
        model.close()
    assert j["output"] == "The disk is full."
    # The model read the error with the limit in it.
    second = json.dumps(model.requests[1]["messages"])
    assert "No space left on device" in second and "limited to 32m" in second, second
    p, info = cli.json("sandbox", "ls", "--json")
    assert [s["disk"] for s in info if s["id"] == run_id] == ["32m"], info
    p = cli("run", "--no-durable", "--model", model.model_flag, "--disk", "tiny", "x")
    assert p.returncode == 2 and "--disk tiny" in p.err, p.err


def test_version_names_the_release_and_the_commit_it_was_built_from(cli):
    p = subprocess.run([cli.bin, "--version"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        release = re.search(r"project\(codeact VERSION (\S+)", f.read()).group(1)
    m = re.fullmatch(r"codeact (\S+) \((\S+)\)\n", p.stdout)
    assert m, p.stdout
    assert m.group(1) == release
    assert release in open(os.path.join(REPO, "CHANGELOG.md")).read(), "the release has its CHANGELOG entry"
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        assert m.group(2) == "unknown"
    else:
        assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?", m.group(2)), m.group(2)
        assert m.group(2).startswith(head.stdout.strip()), f"built from {m.group(2)}, the checkout is at {head.stdout}"
