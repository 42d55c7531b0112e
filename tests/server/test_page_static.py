"""The page's files as `codeact server` will serve them (src/server/page/): they load and run
under the server's Content-Security-Policy (no inline script, style or handler is refused), and
no code path hands a string to the HTML parser.

The page here is served by Python's http.server without the /v1 API: it is expected to say that
it cannot reach the server, which shows that its modules ran. The page with the real API is
tests/server/test_page_e2e.py's job."""

import os
import re

from conftest import PAGE


def _page_files(ext):
    return [os.path.join(PAGE, f) for f in sorted(os.listdir(PAGE)) if f.endswith(ext)]


def test_page_runs_under_the_content_security_policy(browser, static_server, artifacts):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("browser")  # drop what earlier tests logged
    browser.get(static_server + "/")
    banner = browser.find_element("id", "banner")
    WebDriverWait(browser, 10).until(lambda d: banner.is_displayed())
    assert "Cannot reach the server" in banner.text and "/v1/me" in banner.text
    # The stylesheet applied (a CSP refusal would leave the banner unstyled).
    assert browser.execute_script(
        "return getComputedStyle(document.getElementById('banner')).position") == "fixed"
    logs = browser.get_log("browser")
    refused = [e["message"] for e in logs
               if "Content Security Policy" in e["message"] or "Refused" in e["message"]]
    assert refused == []
    # Only the missing API may fail (GET /v1/me answers 404 here).
    errors = [e["message"] for e in logs if e["level"] == "SEVERE" and "/v1/me" not in e["message"]]
    assert errors == []
    browser.save_screenshot(os.path.join(artifacts, "page-no-api.png"))


def test_html_has_no_inline_script_style_or_handler():
    for path in _page_files(".html"):
        html = open(path, encoding="utf-8").read()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\sstyle\s*=", html, re.I), path
        assert not re.search(r"<style", html, re.I), path
        assert not re.search(r"\son[a-z]+\s*=", html, re.I), path
        assert not re.search(r"(?:src|href)\s*=\s*\"(?:https?:)?//", html, re.I), path


def test_scripts_never_parse_strings_as_html():
    forbidden = ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "setAttribute('style'", "DOMParser", "createContextualFragment",
                 "srcdoc", "http://", "https://"]
    for path in _page_files(".js"):
        source = open(path, encoding="utf-8").read()
        code = "\n".join(line for line in source.splitlines()
                         if not line.lstrip().startswith("//"))
        for word in forbidden:
            assert word not in code, f"{os.path.basename(path)} uses {word}"
