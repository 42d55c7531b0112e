"""Fixtures of the page's browser tests: the page's files served on 127.0.0.1 by Python's
http.server, and headless Chromium driven by Selenium; and what the server's tests share: a
Temporal dev server per test module and a scripted model per test.

The server lays the page out as `codeact server` does (index.html at /, the other files of
src/server/page/ at /assets/NAME, with its Content-Security-Policy) and serves this directory's
harness files at /__test__/ without that policy, so the Markdown tests check the renderer
itself, not the CSP behind it."""

import functools
import http.server
import os
import shutil
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from dev_server import DevServer  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402
PAGE = os.path.normpath(os.path.join(HERE, "../../src/server/page"))
CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
CHROMIUM = os.environ.get("CODEACT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CODEACT_CHROMEDRIVER", "/usr/bin/chromedriver")


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".css": "text/css", ".html": "text/html"}

    def translate_path(self, path):
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path.startswith("/__test__/"):
            rel, root = path[len("/__test__/"):], HERE
        elif path.startswith("/assets/"):
            rel, root = path[len("/assets/"):], PAGE
        elif path in ("/", "/index.html"):
            rel, root = "index.html", PAGE
        else:  # the API is not here: 404
            return os.path.join(PAGE, "__no_such_file__")
        full = os.path.normpath(os.path.join(root, rel))
        if full != root and not full.startswith(root + os.sep):
            return os.path.join(root, "__outside__")
        return full

    def end_headers(self):
        if not self.path.startswith("/__test__/"):
            self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def static_server():
    """Base URL ("http://127.0.0.1:PORT") of the page's files; port 0 picks a free port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def artifacts():
    path = os.environ.get("CODEACT_TEST_ARTIFACTS") or os.path.join(HERE, "artifacts")
    os.makedirs(path, exist_ok=True)
    return path


def _require_browser():
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed in this Python (scripts/deps: selenium)")
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(binary):
            pytest.skip(f"{binary} is not installed (Debian packages chromium, chromium-driver)")


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (one for the session); console messages are kept for get_log."""
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1200,900", "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def harness(browser, static_server):
    """The harness page loaded: window.harness has the page's modules."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "light"}]})
    browser.get(static_server + "/__test__/harness.html")
    WebDriverWait(browser, 10).until(
        lambda d: d.execute_script("return window.harnessReady === true"))
    return browser


@pytest.fixture(scope="module")
def temporal(tmp_path_factory):
    """A Temporal dev server for the test module: its address."""
    server = DevServer(tmp_path_factory.mktemp("temporal"))
    yield server.start()
    server.stop()


@pytest.fixture
def model():
    """A local OpenAI-compatible model whose turns the test sets (model.turns)."""
    m = ScriptedModel([])
    yield m
    m.close()
