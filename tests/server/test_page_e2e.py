"""The chat page against the real `codeact server`, in headless Chromium: a real server process
with a worker in it (tests/server/server_process.py), a Temporal dev server, Docker sandboxes and
a local OpenAI-compatible server scripting the model (tests/cli/scripted_model.py). Each test
does what a person at the page does and asserts what they would see; screenshots go to
tests/server/artifacts/ (or $CODEACT_TEST_ARTIFACTS).

Run against the server of 2026-12-02 07:00 (the lead's working tree, with this page served by a
local proxy in front of it since that build embedded no page), 7 of 9 pass; two fail on the
server's side of docs/server.md: test_a_cells_figure_is_shown_inline (cell_result.images is []
although the cell wrote /output/plot.png) and test_stop_cancels_the_running_turn_and_the_session_
goes_on (POST .../cancel ends the whole session as cancelled: the next message is not answered).
"""

import os
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from scripted_model import python_turn  # noqa: E402

try:  # the API tests' launcher (tests/server/server_process.py, which comes with the server)
    from server_process import BIN, FAST_DURABLE, Client, ServerProcess  # noqa: E402
except ImportError:
    pytest.skip("tests/server/server_process.py (the server's API tests) is not here yet",
                allow_module_level=True)

KEY = "page-key-" + uuid.uuid4().hex
# A 2x2 PNG the scripted cell writes as a figure.
PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAEklEQVR42mP8z8Dwn4EIwDiqEAD+"
           "pQQBlkV4VwAAAABJRU5ErkJggg==")
HOSTILE = ("<img src=x onerror=window.pwned=1> <script>window.pwned=1</script> "
           "[click](javascript:window.pwned=1) ![x](https://evil.example/x.png)")

if not os.path.exists(BIN):
    pytest.skip(f"{BIN} is not built", allow_module_level=True)
# The page is the one embedded in that binary at build time (src/server/page/).


def text_turn(text):
    return {"content": text}


@pytest.fixture
def server(temporal, model, tmp_path):
    config = tmp_path / "app_conf.yml"
    config.write_text(FAST_DURABLE + "server:\n  api_keys:\n    - {name: page, key: %s}\n" % KEY)
    s = ServerProcess(temporal, f"page-{uuid.uuid4().hex[:8]}", str(config),
                      model=model.model_flag).start()
    yield s
    # The sessions the browser made (the page's own; Client did not see them): removed with
    # their sandboxes and volumes.
    api = Client(s.url, KEY)
    for session in api.get("/v1/sessions").json().get("sessions", []):
        api.delete(f"/v1/sessions/{session['id']}?volume=true")
    code = s.stop()
    assert code == 0, s.stderr()


def wait(driver, cond, timeout=120, what=""):
    from selenium.webdriver.support.ui import WebDriverWait

    from selenium.common.exceptions import TimeoutException

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(
            lambda d: cond(), message=what)
    except TimeoutException:
        # What the page showed, for the failure report.
        print("waited for", what, "; the page showed:",
              driver.find_element("tag name", "body").text[-3000:],
              [e["message"][:300] for e in driver.get_log("browser")][-10:])
        raise


def q(driver, selector):
    return driver.find_elements("css selector", selector)


def login(driver, server):
    # Sign-ins outlive a server (the sessions file) and cookies are per host, not per port: each
    # test's server would find the last test's sign-in. Start signed out.
    driver.get(server.url + "/health")
    driver.delete_all_cookies()
    driver.get(server.url + "/")
    wait(driver, lambda: driver.find_element("id", "login-view").is_displayed(), 30, "login form")
    key = driver.find_element("id", "login-key")
    key.send_keys("not-the-key\n")
    wait(driver, lambda: driver.find_element("id", "login-error").is_displayed(), 30, "error")
    assert driver.find_element("id", "login-error").text == "That key was not accepted."
    key.send_keys(KEY + "\n")
    wait(driver, lambda: driver.find_element("id", "app-view").is_displayed(), 30, "app")
    assert KEY not in driver.current_url
    assert "codeact_session" not in driver.execute_script("return document.cookie")


def send(driver, text):
    box = driver.find_element("id", "composer-input")
    box.send_keys(text)
    box.send_keys("\n")


def answers(driver):
    return q(driver, "#conversation .answer")


def session_id(driver):
    url = driver.current_url
    assert "#/sessions/" in url, url
    return url.split("#/sessions/", 1)[1]


def csp_violations(driver):
    return [e["message"] for e in driver.get_log("browser")
            if "Content Security Policy" in e["message"] or "Refused" in e["message"]]


def test_login_then_a_turn_shows_its_cell_files_and_answer(browser, server, model,
                                                                  artifacts):
    model.turns = [
        python_turn("c1", "import base64\nprint(6 * 7)\nopen('/output/plot.png', 'wb').write("
                    f"base64.b64decode('{PNG_B64}'))\n"),
        text_turn("## The answer\n\nIt is **42**; see `plot.png`."),
    ]
    browser.get_log("browser")
    login(browser, server)
    send(browser, "compute 6*7")
    wait(browser, lambda: "#/sessions/" in browser.current_url, 60, "session URL")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "the answer")
    # The answer may come from the session's turns before the stream replays the cell.
    cell = wait(browser, lambda: q(browser, "#conversation details.cell.ok"), 60, "the cell")[0]
    assert "42" in cell.text
    assert cell.find_element("css selector", ".cell-state").text == "done"
    assert cell.find_element("css selector", ".cell-duration").text.endswith("ms")
    answer = answers(browser)[0]
    assert answer.find_element("css selector", "h2").text == "The answer"
    assert answer.find_element("css selector", "strong").text == "42"
    sid = session_id(browser)
    assert sid in [a.get_attribute("href").split("#/sessions/")[1]
                   for a in q(browser, ".session-link")]
    # The turn's files: a download link that answers the file as an attachment (the cookie).
    link = wait(browser, lambda: q(browser, "#conversation .files a"), 60, "the files")[0]
    assert link.text == "/output/plot.png"
    href = link.get_attribute("href")
    got = browser.execute_async_script("""
        fetch(arguments[0]).then(r => arguments[1]([r.status,
            r.headers.get('Content-Disposition') || ''])); """, href)
    assert got[0] == 200 and got[1].startswith("attachment")
    wait(browser, lambda: browser.find_element("id", "status-pill").text == "ready", 60, "ready")
    assert csp_violations(browser) == []
    browser.save_screenshot(os.path.join(artifacts, "e2e-turn.png"))


def test_a_cells_figure_is_shown_inline(browser, server, model):
    model.turns = [
        python_turn("c1", "import base64\nopen('/output/plot.png', 'wb').write("
                    f"base64.b64decode('{PNG_B64}'))\n"),
        text_turn("drawn"),
    ]
    login(browser, server)
    send(browser, "draw")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "the answer")
    img = wait(browser, lambda: q(browser, "#conversation .cell-figure img"), 30,
               "the cell's figure (cell_result.images)")[0]
    assert img.get_attribute("src").endswith("/files/output/plot.png?inline=1")
    wait(browser, lambda: browser.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth", img) == 2, 30, "loaded")


def test_reload_and_a_second_tab_show_the_whole_conversation_and_keep_streaming(
        browser, server, model):
    model.turns = [text_turn("first answer"),
                   python_turn("c1", "import time\ntime.sleep(6)\nprint('slept')"),
                   text_turn("second answer")]
    login(browser, server)
    send(browser, "one")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "first answer")
    send(browser, "two")
    wait(browser, lambda: q(browser, "#conversation details.cell.running"), 120, "running cell")
    browser.refresh()  # mid-turn
    wait(browser, lambda: len(answers(browser)) == 2, 180, "second answer after the reload")
    texts = [a.text for a in answers(browser)]
    assert texts == ["first answer", "second answer"]
    assert [t.text for t in q(browser, "#conversation .user-text")] == ["one", "two"]
    assert "slept" in q(browser, "#conversation details.cell")[0].text
    url = browser.current_url
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    try:
        browser.get(url)
        wait(browser, lambda: len(answers(browser)) == 2, 60, "the second tab")
        assert [a.text for a in answers(browser)] == texts
        # The answers come with the session (GET /v1/sessions/{id}); the cells with the
        # stream's replay of the finished turns, which may follow a moment later.
        cells = wait(browser, lambda: q(browser, "#conversation details.cell"), 60,
                     "the second tab's cell (the stream's replay)")
        assert len(cells) == 1 and "slept" in cells[0].text
    finally:
        browser.close()
        browser.switch_to.window(first)


def test_upload_then_the_next_cell_reads_the_file(browser, server, model, tmp_path):
    model.turns = [text_turn("ready"),
                   python_turn("c1", "print(open('numbers.csv').read().upper())"),
                   text_turn("read it")]
    login(browser, server)
    send(browser, "get ready")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "first answer")
    f = tmp_path / "numbers.csv"
    f.write_text("a,b\n1,2\n")
    browser.find_element("id", "upload-input").send_keys(str(f))
    wait(browser, lambda: any("Uploaded /output/numbers.csv" in n.text
                              for n in q(browser, "#conversation .note")), 60, "upload note")
    send(browser, "read numbers.csv")
    wait(browser, lambda: len(answers(browser)) == 2, 180, "second answer")
    assert "A,B" in q(browser, "#conversation details.cell")[0].text


def test_hostile_model_text_is_shown_inert(browser, server, model):
    model.turns = [text_turn(HOSTILE)]
    browser.get_log("browser")
    login(browser, server)
    send(browser, "say something nasty")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "the answer")
    answer = answers(browser)[0]
    assert "<script>window.pwned=1</script>" in answer.text
    assert answer.find_elements("css selector", "img, script") == []
    hrefs = [a.get_attribute("href") for a in answer.find_elements("css selector", "a")]
    assert hrefs == ["https://evil.example/x.png"]  # the image, as a link, not loaded
    time.sleep(0.5)
    assert browser.execute_script("return window.pwned") is None
    assert csp_violations(browser) == []


def test_stop_cancels_the_running_turn_and_the_session_goes_on(browser, server, model):
    model.turns = [python_turn("c1", "x = 5\nimport time\ntime.sleep(60)"),
                   python_turn("c2", "print(x * 2)"), text_turn("ten")]
    login(browser, server)
    send(browser, "slow")
    stop = browser.find_element("id", "stop-button")
    wait(browser, lambda: q(browser, "#conversation details.cell.running") and stop.is_enabled(),
         120, "a running cell and Stop")
    stop.click()
    wait(browser, lambda: not stop.is_enabled(), 120, "the turn stopped")
    send(browser, "go on")
    wait(browser, lambda: any(a.text == "ten" for a in answers(browser)), 180, "the next answer")


def test_connection_lost_banner_then_reconnect(browser, server, model):
    model.turns = [text_turn("before"), text_turn("after")]
    login(browser, server)
    send(browser, "one")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "first answer")
    port = server.url.rsplit(":", 1)[1]
    server.kill()
    banner = browser.find_element("id", "banner")
    wait(browser, banner.is_displayed, 30, "the banner")
    assert "Connection lost" in banner.text
    server.args[server.args.index("--listen") + 1] = "127.0.0.1:" + port
    server.start()
    # The restarted server still knows the sign-in: the page reconnects by itself, without the
    # login form, and shows the session again.
    wait(browser, lambda: not banner.is_displayed(), 90, "the banner to go")
    assert not browser.find_element("id", "login-error").is_displayed()
    wait(browser, lambda: len(answers(browser)) == 1, 60, "the session again")
    send(browser, "two")
    wait(browser, lambda: [a.text for a in answers(browser)] == ["before", "after"], 180,
         "the answer after the reconnect, once")


def test_delete_removes_the_session_and_its_sandbox(browser, server, model):
    import subprocess

    model.turns = [python_turn("c1", "1"), text_turn("done")]
    login(browser, server)
    send(browser, "make a sandbox")
    wait(browser, lambda: len(answers(browser)) == 1, 180, "the answer")
    sid = session_id(browser)
    browser.execute_script("window.confirm = () => true")
    browser.execute_script("""
        const a = [...document.querySelectorAll('.session-link')]
            .find(a => a.href.endsWith('/' + arguments[0]));
        a.parentNode.querySelector('.session-delete').click();""", sid)
    wait(browser, lambda: browser.current_url.endswith("#/"), 60, "back to a new chat")
    hrefs = "return [...document.querySelectorAll('.session-link')].map(a => a.href)"
    wait(browser, lambda: all(not h.endswith(sid) for h in browser.execute_script(hrefs)), 60,
         "gone from the list")
    assert subprocess.run(["docker", "inspect", f"codeact-{sid}"], capture_output=True).returncode != 0


def test_a_write_without_the_csrf_token_is_refused(browser, server, model):
    login(browser, server)
    status = browser.execute_async_script("""
        fetch('/v1/sessions', {method: 'POST', headers: {'Content-Type': 'application/json'},
                               body: '{}'}).then(r => arguments[0](r.status));""")
    assert status == 403


def test_fork_here_opens_a_session_with_the_turns_before_and_the_question_to_ask_again(
        browser, server, model):
    model.turns = [python_turn("c1", "x = 1"), text_turn("one"),
                   python_turn("c2", "x += 1\nprint(x)"), text_turn("two")]
    login(browser, server)
    send(browser, "set x")
    wait(browser, lambda: [a.text for a in answers(browser)] == ["one"], 180, "the first answer")
    send(browser, "add one")
    wait(browser, lambda: [a.text for a in answers(browser)] == ["one", "two"], 180,
         "the second answer")
    source = session_id(browser)
    # Each cell says which checkpoint its commit made; a cell whose live output came before its
    # code is one block, not two (found by this test: a second block stayed "running").
    cells = q(browser, "#conversation details.cell")
    assert [c.get_attribute("data-checkpoint") for c in cells] == ["1", "2"], \
        [(c.get_attribute("class"), c.get_attribute("innerText")[:80]) for c in cells]
    q(browser, "#conversation article.turn[data-turn='2'] .fork-button")[0].click()
    wait(browser, lambda: session_id(browser) != source, 60, "the fork opened")
    wait(browser, lambda: [a.text for a in answers(browser)] == ["one"], 60, "turn 1 only")
    box = browser.find_element("id", "composer-input")
    assert box.get_attribute("value") == "add one"
    box.send_keys("\n")  # asked again as it was (the server test checks the fork's state)
    wait(browser, lambda: [a.text for a in answers(browser)] == ["one", "two"], 180,
         "the fork's answer")
    assert session_id(browser) != source
    assert csp_violations(browser) == []
