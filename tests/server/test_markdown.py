"""The page's Markdown renderer (src/server/page/markdown.js) in headless Chromium: hostile model
text renders inert (no script, no event handler, no off-origin image, no href but http(s)/mailto),
ordinary Markdown renders as a reader expects, and pathological input stays fast.

Each check runs the real module in a real browser page (tests/server/harness.html, served with
the page's files by conftest.static_server); screenshots go to tests/server/artifacts/ or
$CODEACT_TEST_ARTIFACTS."""

import os
import random
import time

import pytest

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    '<img src=x onerror="window.pwned=1">',
    "<script>window.pwned=1</script>",
    "<svg onload=window.pwned=1><script>window.pwned=1</script></svg>",
    "<iframe src=javascript:window.pwned=1></iframe>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](jav&#x61;script:alert(1))",
    "[x](jav&#97;script:alert(1))",
    "[x](javascript&colon;alert(1))",
    "[x](java\tscript:window.pwned=1)",
    "[x](java\\tscript:window.pwned=1)",
    "[x](\x01javascript:window.pwned=1)",
    "[x]( javascript:window.pwned=1 )",
    "[x](<javascript:window.pwned=1>)",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html,<script>window.pwned=1</script>)",
    "[x](data:text/html;base64,PHNjcmlwdD53aW5kb3cucHduZWQ9MTwvc2NyaXB0Pg==)",
    "[x](%6Aavascript:alert(1))",
    "<javascript:window.pwned=1>",
    "![a](https://evil.example/x.png)",
    "![a](//evil.example/x.png)",
    "![a](http://127.0.0.2/x.png)",
    '![a](x" onerror="window.pwned=1)',
    "![a](javascript:window.pwned=1)",
    "![a](data:image/svg+xml,<svg onload=window.pwned=1>)",
    "[a](https://ok.example) <a href=javascript:1>",
    "[a [b] c](https://ok.example/nested)",
    "[[x](javascript:alert(1))](https://ok.example)",
    "[x](https://ok.example \"t\" onclick=\"window.pwned=1\")",
    '[x](https://ok.example "a\\" onmouseover=\\"window.pwned=1")',
    "**<b onmouseover=window.pwned=1>bold</b>**",
    "`<img src=x onerror=window.pwned=1>`",
    "```html\n<script>window.pwned=1</script>\n```",
    "| a | b |\n|---|---|\n| <img src=x onerror=window.pwned=1> | [x](javascript:1) |",
    "> <script>window.pwned=1</script>\n> [q](javascript:window.pwned=1)",
    "- [l](javascript:window.pwned=1)\n  - ![i](https://evil.example/i.png)",
    "# <img src=x onerror=window.pwned=1>",
    "&lt;script&gt;window.pwned=1&lt;/script&gt;",
    "&#60;img src=x onerror=window.pwned=1&#62;",
    "<a href=\"javascript:window.pwned=1\">click</a>",
    "<style>body{display:none}</style><form action=https://evil.example><input></form>",
]


def _render(driver, text, **options):
    return driver.execute_script(
        "return window.harness.render(arguments[0], arguments[1])", text, options)


def _assert_no_alert(driver):
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
        text = alert.text
        alert.dismiss()
        pytest.fail(f"a script of the model's text ran: alert({text!r})")
    except NoAlertPresentException:
        pass


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_inert(harness, text):
    r = _render(harness, text)
    assert r["violations"] == [], f"{text!r} rendered as {r['html']}"
    time.sleep(0.05)  # an <img onerror> would have fired by now
    _assert_no_alert(harness)
    assert harness.execute_script("return window.pwned") is None


def test_hostile_html_is_shown_as_text(harness):
    r = _render(harness, "<script>window.pwned=1</script> and <img src=x onerror=alert(1)>")
    assert "<script>window.pwned=1</script>" in r["text"]
    assert "<img src=x onerror=alert(1)>" in r["text"]
    assert "<script" not in r["html"] and "<img" not in r["html"]


def test_unsafe_links_become_plain_text(harness):
    for text in ("[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))",
                 "[x](jav&#x61;script:alert(1))", "[x](java\tscript:alert(1))",
                 "[x](vbscript:msgbox(1))", "[x](data:text/html,hi)"):
        r = _render(harness, text)
        assert "<a" not in r["html"], f"{text!r} became a link: {r['html']}"
        assert r["text"].startswith("x"), r["text"]


def test_external_image_is_not_loaded_but_its_alt_text_is_shown(harness):
    r = _render(harness, "see ![the chart](https://evil.example/x.png)")
    assert "<img" not in r["html"]
    assert "[image: the chart]" in r["text"]
    link = harness.find_element("css selector", "#out a.md-img-blocked")
    assert link.get_attribute("href") == "https://evil.example/x.png"


def test_same_origin_api_image_and_sandbox_paths_load(harness, static_server):
    r = _render(harness, "![plot](/v1/sessions/s-1/files/output/plot.png?inline=1)")
    assert r["violations"] == []
    img = harness.find_element("css selector", "#out img")
    assert img.get_attribute("src") == (
        static_server + "/v1/sessions/s-1/files/output/plot.png?inline=1")
    assert img.get_attribute("alt") == "plot"
    # A sandbox path goes through options.sandboxUrl (the page maps it to the session's files).
    html = harness.execute_script("""
        const out = document.getElementById('out');
        out.replaceChildren(window.harness.renderMarkdown(
            '![fig](</output/a b.png>) and [data](/workspace/d.csv)',
            {sandboxUrl: (p, inline) => '/v1/sessions/s-2/files' +
                p.split('/').map(encodeURIComponent).join('/') + (inline ? '?inline=1' : '')}));
        return out.innerHTML;""")
    base = static_server + "/v1/sessions/s-2/files"
    assert f'src="{base}/output/a%20b.png?inline=1"' in html
    assert f'href="{base}/workspace/d.csv"' in html


def test_ordinary_markdown_renders(harness, artifacts):
    text = "\n".join([
        "# Sales report",
        "",
        "Some **bold**, *italic*, __strong__, _em_, ~~gone~~ and `inline code`; snake_case_name "
        "stays plain. *A note with a **key** word* and ***both***.",
        "",
        "## Steps",
        "",
        "1. Load the data",
        "2. Plot it",
        "   - with matplotlib",
        "   - and *labels*",
        "3. Save",
        "",
        "- a [link](https://example.com/a?b=1&c=2 \"title\")",
        "- <https://example.org/auto> and https://example.net/bare.",
        "- mail <someone@example.com>",
        "",
        "* [ ] to do",
        "* [x] done",
        "",
        "> a quote",
        "",
        "```python",
        "import pandas as pd",
        "def total(xs):  # a comment",
        "    return sum(xs) + 0x1F + 2.5e3  # numbers",
        "s = 'text' + \"more\" + f'{x}'",
        "```",
        "",
        "| name | value |",
        "|:-----|------:|",
        "| a    | 1     |",
        "| b    | 2     |",
        "",
        "---",
        "",
        "Setext heading",
        "--------------",
        "",
        "line one",
        "line two",
    ])
    r = _render(harness, text)
    assert r["violations"] == []
    q = lambda sel: harness.find_elements("css selector", "#out " + sel)  # noqa: E731
    assert [h.text for h in q("h1")] == ["Sales report"]
    assert [h.text for h in q("h2")] == ["Steps", "Setext heading"]
    assert [e.text for e in q("strong")] == ["bold", "strong", "key", "both"]
    assert [e.text for e in q("em")] == ["italic", "em", "A note with a key word", "both",
                                         "labels"]
    assert q("em > strong")[0].text == "key" and q("em > strong")[1].text == "both"
    assert [e.text for e in q("del")] == ["gone"]
    assert "snake_case_name" in r["text"]
    assert [e.text for e in q("p > code")] == ["inline code"]
    ol = q("ol")[0]
    assert [li.text.split("\n")[0] for li in ol.find_elements("css selector", ":scope > li")] == [
        "Load the data", "Plot it", "Save"]
    assert [li.text for li in q("ol > li > ul > li")] == ["with matplotlib", "and labels"]
    links = {a.text: a for a in q("a")}
    a = links["link"]
    assert a.get_attribute("href") == "https://example.com/a?b=1&c=2"
    assert a.get_attribute("title") == "title"
    assert a.get_attribute("target") == "_blank"
    assert "noopener" in a.get_attribute("rel").split()
    assert links["https://example.org/auto"].get_attribute("href") == "https://example.org/auto"
    assert links["https://example.net/bare"].get_attribute("href") == "https://example.net/bare"
    assert links["someone@example.com"].get_attribute("href") == "mailto:someone@example.com"
    assert [li.text for li in q("li.md-task")] == ["\u2610 to do", "\u2611 done"]
    assert q("blockquote")[0].text == "a quote"
    code = q("pre.md-code code.language-python")[0]
    kinds = {}
    for span in code.find_elements("css selector", "span"):
        kinds.setdefault(span.get_attribute("class"), []).append(span.text)
    assert {"import", "as", "def", "return"} <= set(kinds["tok-kw"])
    assert {"'text'", '"more"', "f'{x}'"} <= set(kinds["tok-str"])
    assert "# a comment" in kinds["tok-com"]
    assert {"0x1F", "2.5e3"} <= set(kinds["tok-num"])
    assert kinds["tok-fn"] == ["total"]
    assert "sum" in kinds["tok-builtin"]
    assert q("th.align-left")[0].text == "name" and q("td.align-right")[0].text == "1"
    assert len(q("tbody tr")) == 2
    assert len(q("hr")) == 1
    assert len(q("p br")) >= 1  # "line one\nline two": a chat keeps the line break
    harness.save_screenshot(os.path.join(artifacts, "markdown-light.png"))
    harness.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "dark"}]})
    harness.save_screenshot(os.path.join(artifacts, "markdown-dark.png"))


def test_highlighting_keeps_the_code_exactly(harness):
    sources = [
        "x = '''multi\nline''' # c\nprint(\"a\\\"b\")\n@decorator\nclass A: pass\n",
        "unterminated = 'abc\nnext = 1_000.5j\n",
        "for f in *.txt; do echo \"$f ${HOME}\" 'x' # c\ndone\n",
        "<script>alert(1)</script>",
        "".join(random.Random(7).choice("abc'\"#\n\\ 0x9.e_@$") for _ in range(3000)),
    ]
    for lang in ("python", "bash", "unknown"):
        for src in sources:
            got = harness.execute_script("""
                const d = document.createElement('pre');
                d.append(window.harness.highlight(arguments[0], arguments[1]));
                return [d.textContent, d.querySelectorAll('script, img').length];""", src, lang)
            assert got == [src, 0], (lang, src[:80])


def _fuzz_cases(n, seed):
    rng = random.Random(seed)
    atoms = ["*", "**", "_", "__", "~~", "`", "```", "[", "]", "(", ")", "![", "<", ">", "&",
             "&#x61;", "&#0;", "\\", "\n", "\n\n", "- ", "1. ", "> ", "# ", "|", "---", "\t",
             "javascript:", "JAVASCRIPT:", "java\tscript:", "data:", "vbscript:", "http://",
             "https://evil.example/", "mailto:", "//evil.example", "onerror=", "<img src=x ",
             "<script>", "</script>", "\"", "'", " ", "a", "b", "x.png", "window.pwned=1"]
    for _ in range(n):
        yield "".join(rng.choice(atoms) for _ in range(rng.randint(1, 40)))


def test_fuzzed_hostile_text_renders_inert(harness):
    cases = list(_fuzz_cases(600, seed=20261202))
    bad = harness.execute_script("""
        const bad = [];
        for (const text of arguments[0]) {
          let r;
          try { r = window.harness.render(text); }
          catch (e) { bad.push([text, 'threw ' + e]); continue; }
          if (r.violations.length) bad.push([text, r.violations.join('; ')]);
        }
        return bad;""", cases)
    assert bad == []
    time.sleep(0.2)
    _assert_no_alert(harness)
    assert harness.execute_script("return window.pwned") is None


PATHOLOGICAL = {
    "openers without closers": "*a _b **c __d `e [f " * 8000,
    "nested brackets": "[" * 30000 + "x" + "](y)" * 3000,
    "link destinations": "[a](b(" * 20000,
    "titles": '[a](b "' * 20000 + "[a](b (" * 20000,
    "angle destinations": "[a](<" * 30000,
    "code spans": "`" * 5000 + "x" + "``" * 5000,
    "escaped backticks": "\\``a" * 20000,
    "spaces before a break": " " * 100000 + "x\n",
    "nested quotes and lists": ">" * 5000 + " " + "- " * 5000 + "x",
    "many lines": "- item *a*\n  more `b`\n\n" * 20000,
    "long url": "https://example.com/" + ")" * 50000,
    "entities": "&#x61;&amp;&nosuch;" * 20000,
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_text_renders_fast(harness, name):
    text = PATHOLOGICAL[name]
    started = time.monotonic()
    r = _render(harness, text)
    elapsed = time.monotonic() - started
    assert r["violations"] == []
    # The renderer's own time (checking and sending the DOM back to the test takes longer).
    assert r["ms"] < 2500, f"{name}: rendering {len(text)} characters took {r['ms']:.0f} ms"
    assert elapsed < 60
