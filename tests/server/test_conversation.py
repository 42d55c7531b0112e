"""The page's conversation view (src/server/page/conversation.js) in headless Chromium, fed the
events of docs/server.md as the stream delivers them: finished turns then a replayed stream show
each turn once, a cell shows its code highlighted, its streamed output, result, duration,
figures and files, and untrusted text anywhere (model text, cell output, file names, tool
arguments) stays text. No server is involved: the events are handed to the view directly."""

import json
import os

HOSTILE = "<img src=x onerror=window.pwned=1><script>window.pwned=1</script>"


def _feed(driver, events, turns=None, pending=None, keep=False):
    """Renders `turns` then `events` ([type, data] pairs) into a fresh conversation (`keep`: into
    the last one)."""
    return driver.execute_async_script("""
        const [turns, events, pending, keep, done] = arguments;
        const conv = keep ? window.harness.lastConversation
            : window.harness.conversation('s-test');
        window.harness.lastConversation = conv;
        if (!keep) conv.reset();
        if (turns) conv.loadTurns(turns);
        if (pending) conv.addPending(pending);
        for (const [type, data] of events) conv.handle(type, data);
        // text_delta renders a little later: wait until nothing is queued.
        const check = () => (conv.renderQueued.size ? setTimeout(check, 20)
            : done(window.harness.violations(document.getElementById('conv'), true)));
        check();
        """, turns, events, pending, keep)


def _q(driver, selector):
    return driver.find_elements("css selector", "#conv " + selector)


CELL_EVENTS = [
    ["status", {"status": "running", "sandbox_id": "s-test"}],
    ["user_message", {"text": "plot the sales", "turn": 2}],
    ["step", {"step": 1}],
    ["text_delta", {"step": 1, "delta": "Let me **load** "}],
    ["text_delta", {"step": 1, "delta": "the data. " + HOSTILE}],
    ["cell", {"step": 1, "tool_call_id": "c1", "language": "python",
              "code": "import pandas as pd\nprint('hi')  # say hi\nx = 42\n"}],
    ["cell_output", {"tool_call_id": "c1", "stream": "stdout", "text": "hi\n"}],
    ["cell_output", {"tool_call_id": "c1", "stream": "stdout", "text": HOSTILE + "\n"}],
    ["cell_output", {"tool_call_id": "c1", "stream": "stderr", "text": "DeprecationWarning: x\n"}],
    ["cell_result", {"tool_call_id": "c1", "ok": True, "text": "42", "duration_ms": 1234,
                     "images": ["/output/plot.png"], "files": ["/output/plot.png",
                                                           "/output/sales.csv"]}],
    ["cell", {"step": 2, "tool_call_id": "c2", "language": "python", "code": "1/0"}],
    ["cell_result", {"tool_call_id": "c2", "ok": False, "duration_ms": 3,
                     "text": "Traceback (most recent call last):\n"
                             "ZeroDivisionError: division by zero",
                     "images": [], "files": []}],
    ["tool_call", {"step": 3, "tool_call_id": "t1", "tool_name": "install_packages",
                   "args": {"packages": [HOSTILE]}}],
    ["tool_result", {"tool_call_id": "t1", "tool_name": "install_packages", "ok": True,
                     "text": "installed " + HOSTILE}],
    ["sandbox", {"sandbox_id": "s-test", "resumed": True}],
    ["files", {"files": [{"path": "/output/sales.csv", "size": 2048, "mtime": 1},
                         {"path": "/output/../../../v1/logout", "size": 1, "mtime": 1},
                         {"path": "/output/" + HOSTILE + ".png", "size": 5, "mtime": 1}]}],
    ["usage", {"step": 3, "input_tokens": 100, "output_tokens": 20}],
    ["usage", {"step": 4, "input_tokens": 50, "output_tokens": 10}],
    ["text", {"step": 4, "text": "The plot is ![plot](/output/plot.png). [evil](javascript:x)"}],
    ["final", {"text": "The plot is ![plot](/output/plot.png). [evil](javascript:x)", "turn": 2}],
    ["status", {"status": "idle"}],
]

FIRST_TURN = {"task": "first " + HOSTILE, "output": "**done** " + HOSTILE,
              "files": ["/output/a.csv"], "usage": {"input_tokens": 10, "output_tokens": 5},
              "error": None}

REPLAYED_FIRST_TURN = [
    ["status", {"status": "running"}],
    ["user_message", {"text": "first " + HOSTILE, "turn": 1}],
    ["step", {"step": 1}],
    ["status", {"status": "running", "message": "a status between the turn's events"}],
    ["text", {"step": 1, "text": "Running it."}],
    ["cell", {"step": 1, "tool_call_id": "c0", "language": "python", "code": "pass"}],
    ["cell_result", {"tool_call_id": "c0", "ok": True, "text": "", "images": [], "files": []}],
    ["usage", {"step": 1, "input_tokens": 7, "output_tokens": 3}],
    ["step", {"step": 2}],
    ["text", {"step": 2, "text": FIRST_TURN["output"]}],
    ["files", {"files": [{"path": "/output/a.csv", "size": 1, "mtime": 1}]}],
    ["final", {"text": FIRST_TURN["output"]}],
]


def _blocks(turn):
    """The classes of the assistant's blocks of `turn`, in order."""
    return [e.get_attribute("class") for e in
            turn.find_elements("css selector", ".assistant-body > *")]


def test_turns_then_replayed_stream_show_each_turn_once(harness):
    violations = _feed(harness, REPLAYED_FIRST_TURN + CELL_EVENTS, turns=[FIRST_TURN])
    assert violations == []
    turns = _q(harness, "article.turn")
    assert [t.get_attribute("data-turn") for t in turns] == ["1", "2"]
    assert turns[0].find_element("css selector", ".user-text").text == "first " + HOSTILE
    # The replayed steps and cell go before the answer, files and usage that `turns` gave; the
    # last step's text (the answer) is not repeated.
    assert _blocks(turns[0]) == [
        "md assistant-text", "cell ok", "md assistant-text answer", "files"]
    assert turns[0].find_element("css selector", ".usage").text == "tokens: 10 in, 5 out"
    assert turns[0].get_attribute("aria-busy") is None
    assert turns[1].find_element("css selector", ".user-text").text == "plot the sales"
    assert harness.execute_script("return window.pwned") is None


def test_turns_not_replayed_keep_what_turns_say(harness):
    assert _feed(harness, CELL_EVENTS, turns=[FIRST_TURN]) == []
    first = _q(harness, "article.turn")[0]
    assert _blocks(first) == ["md assistant-text answer", "files"]
    assert first.find_element("css selector", ".answer strong").text == "done"


def test_cell_shows_code_output_result_duration_figures_and_files(harness, static_server,
                                                                  artifacts):
    assert _feed(harness, CELL_EVENTS, turns=[FIRST_TURN]) == []
    cells = _q(harness, "article:nth-of-type(2) details.cell")
    assert len(cells) == 3
    ok, failed, tool = cells
    assert ok.get_attribute("open") == "true"
    assert "ok" in ok.get_attribute("class").split()
    assert ok.find_element("css selector", ".cell-state").text == "done"
    assert ok.find_element("css selector", ".cell-duration").text == "1.23 s"
    kws = [s.text for s in ok.find_elements("css selector", ".cell-code .tok-kw")]
    assert kws == ["import", "as"]
    assert ok.find_element("css selector", ".cell-code .tok-com").text == "# say hi"
    stdout = ok.find_element("css selector", ".cell-output .stream-stdout")
    assert stdout.text == "hi\n" + HOSTILE
    stderr = ok.find_element("css selector", ".cell-output .stream-stderr")
    assert stderr.text == "DeprecationWarning: x"
    assert ok.find_element("css selector", ".result-text").text == "42"
    img = ok.find_element("css selector", "figure img")
    assert img.get_attribute("src") == (
        static_server + "/v1/sessions/s-test/files/output/plot.png?inline=1")
    links = [a.get_attribute("href") for a in ok.find_elements("css selector", ".files a")]
    assert links == [static_server + "/v1/sessions/s-test/files/output/sales.csv"]
    assert "failed" in failed.get_attribute("class").split()
    assert failed.find_element("css selector", ".cell-state").text == "error"
    assert "ZeroDivisionError" in failed.find_element("css selector", ".traceback").text
    assert tool.get_attribute("open") is None  # other tools start collapsed
    assert HOSTILE in tool.find_element("css selector", ".cell-code").get_attribute("textContent")
    result = tool.find_element("css selector", ".result-text").get_attribute("textContent")
    assert result == "installed " + HOSTILE
    harness.execute_script("document.getElementById('out').hidden = true")
    harness.save_screenshot(os.path.join(artifacts, "conversation-light.png"))
    harness.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "dark"}]})
    harness.save_screenshot(os.path.join(artifacts, "conversation-dark.png"))


def test_streamed_text_final_answer_files_usage_and_notes(harness, static_server):
    assert _feed(harness, CELL_EVENTS) == []
    turn = _q(harness, "article.turn")[-1]
    texts = turn.find_elements("css selector", ".assistant-text")
    # The streamed step, then the last step's text, which is the answer: shown once.
    assert len(texts) == 2
    assert texts[0].find_element("css selector", "strong").text == "load"
    assert HOSTILE in texts[0].text
    assert "answer" in texts[1].get_attribute("class").split()
    answer_img = texts[1].find_element("css selector", "img")
    assert answer_img.get_attribute("src") == (
        static_server + "/v1/sessions/s-test/files/output/plot.png?inline=1")
    assert texts[1].find_elements("css selector", "a") == []  # javascript: is text
    files = [a for a in turn.find_elements("css selector", ":scope > .msg .files a")]
    assert [a.text for a in files][-1].startswith("/output/" + HOSTILE)
    assert files[-1].get_attribute("href").startswith(
        static_server + "/v1/sessions/s-test/files/output/%3Cimg%20src%3Dx")
    # A path with .. segments is shown, not linked (the URL would leave the file API).
    dotted = [e for e in turn.find_elements("css selector", ".files .file")
              if e.text.startswith("/output/../")]
    assert [e.tag_name for e in dotted] == ["span"]
    assert turn.find_element("css selector", ".usage").text == "tokens: 150 in, 30 out"
    assert "restored after a crash" in turn.find_element("css selector", ".note-warn").text
    assert turn.get_attribute("aria-busy") is None  # the turn is over


def test_pending_message_is_adopted_by_its_echo(harness):
    events = [["user_message", {"text": "hello", "turn": 1}],
              ["final", {"text": "hi!", "turn": 1}]]
    assert _feed(harness, events, pending="hello") == []
    turns = _q(harness, "article.turn")
    assert len(turns) == 1
    assert "pending" not in turns[0].get_attribute("class").split()
    assert turns[0].get_attribute("data-turn") == "1"
    assert turns[0].find_element("css selector", ".answer").text == "hi!"


def test_error_event_ends_the_turn(harness):
    events = [["user_message", {"text": "go", "turn": 1}], ["step", {"step": 1}],
              ["error", {"message": "model: " + HOSTILE}]]
    assert _feed(harness, events) == []
    turn = _q(harness, "article.turn")[0]
    assert turn.find_element("css selector", ".note-error").text == "Error: model: " + HOSTILE
    assert turn.get_attribute("aria-busy") is None
    assert json.loads(harness.execute_script("return JSON.stringify(window.pwned ?? null)")) is None


def test_streamed_deltas_end_as_the_whole_text_rendered(harness):
    text = "".join(f"## Part {k}\n\nSome **bold** and `code` {k}.\n\n" for k in range(300))
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    events = [["user_message", {"text": "stream", "turn": 1}], ["step", {"step": 1}]]
    events += [["text_delta", {"step": 1, "delta": p}] for p in pieces]
    assert _feed(harness, events) == []
    streamed = _q(harness, ".assistant-text")[0].get_attribute("innerHTML")
    whole = harness.execute_script("""
        const d = document.createElement('div');
        d.append(window.harness.renderMarkdown(arguments[0]));
        return d.innerHTML;""", text)
    assert streamed == whole
    assert len(_q(harness, ".assistant-text h2")) == 300


# The order `codeact server` sends a turn in (seen from the real server): the stream's status
# says idle before the turn's first step, and the turn's files (paths alone) follow its answer.
SERVER_ORDER = [
    ["status", {"status": "starting"}],
    ["sandbox", {"resumed": False, "sandbox_id": "s-1"}],
    ["status", {"status": "running"}],
    ["user_message", {"text": "compute 6*7", "turn": 1}],
    ["status", {"status": "idle"}],
    ["step", {"step": 1}],
    ["usage", {"input_tokens": 50, "output_tokens": 10, "step": 1}],
    ["cell", {"code": "print(6 * 7)", "language": "python", "step": 1, "tool_call_id": "c1"}],
]
SERVER_ORDER_END = [
    ["cell_result", {"duration_ms": 8, "files": [], "images": [], "ok": True,
                     "text": "stdout:\n42\n", "tool_call_id": "c1"}],
    ["step", {"step": 2}],
    ["text", {"step": 2, "text": "It is **42**."}],
    ["usage", {"input_tokens": 50, "output_tokens": 10, "step": 2}],
    ["final", {"text": "It is **42**."}],
    ["files", {"files": ["/output/plot.png"]}],
]


def test_the_servers_order_of_events_one_turn_busy_until_its_answer(harness, static_server):
    assert _feed(harness, SERVER_ORDER) == []
    assert harness.execute_script("return window.harness.lastConversation.busy()") is True
    assert _feed(harness, SERVER_ORDER_END, keep=True) == []
    turns = _q(harness, "article.turn")
    assert len(turns) == 1
    turn = turns[0]
    assert harness.execute_script("return window.harness.lastConversation.busy()") is False
    assert turn.get_attribute("aria-busy") is None
    assert turn.find_element("css selector", ".answer strong").text == "42"
    link = turn.find_element("css selector", ".files a")
    assert link.text == "/output/plot.png"
    assert link.get_attribute("href") == static_server + "/v1/sessions/s-test/files/output/plot.png"
    assert turn.find_element("css selector", ".usage").text == "tokens: 100 in, 20 out"


def test_files_after_a_replayed_answer_are_not_listed_twice(harness):
    turns = [{"task": "compute 6*7", "output": "It is **42**.", "files": ["/output/plot.png"],
              "usage": {"input_tokens": 100, "output_tokens": 20}, "error": None}]
    assert _feed(harness, SERVER_ORDER + SERVER_ORDER_END, turns=turns) == []
    turn = _q(harness, "article.turn")
    assert len(turn) == 1
    assert len(turn[0].find_elements("css selector", ".files")) == 1
    assert len(turn[0].find_elements("css selector", ".answer")) == 1
    assert turn[0].find_element("css selector", ".usage").text == "tokens: 100 in, 20 out"
