"""`codeact server` behind the nginx config that docs/deploy.md shows (docs/examples/
nginx-codeact.conf, run as it is but for its name, certificate, ports): the page and its assets
load over HTTPS, a browser's login (Origin and Host through the proxy) works, and a run's event
stream reaches the client event by event, not buffered until the run ends. Real nginx, a real
server process with a worker, a Temporal dev server, Docker, a scripted model."""
import os
import re
import sys
import uuid

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from scripted_model import python_turn  # noqa: E402
from server_process import FAST_DURABLE, Client, ServerProcess, remove_created_sandboxes  # noqa: E402
from tls_proxy import Certs, Nginx, free_port  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
EXAMPLE = os.path.join(REPO, "docs", "examples", "nginx-codeact.conf")
KEY = "proxy-test-key-0123456789abcdef"


def proxied_config(port, certs, upstream):
    """The example with the values a deployment changes replaced; each must be there once."""
    text = open(EXAMPLE).read()
    for old, new in [("listen 443 ssl http2;", f"listen 127.0.0.1:{port} ssl http2;"),
                     ("server_name codeact.example.com;", "server_name 127.0.0.1;"),
                     ("/etc/ssl/codeact/fullchain.pem", certs.server_cert),
                     ("/etc/ssl/codeact/privkey.pem", certs.server_key),
                     ("proxy_pass http://127.0.0.1:8000;", f"proxy_pass {upstream};")]:
        assert text.count(old) == 1, f"{EXAMPLE} no longer has {old!r} once: update this test with it"
        text = text.replace(old, new)
    return text


@pytest.fixture
def proxied(tmp_path, temporal, model):
    """(https URL of the proxy, the CA that signed its certificate)."""
    config = tmp_path / "app_conf.yml"
    config.write_text(FAST_DURABLE + f"server:\n  api_keys:\n    - {{name: alice, key: {KEY}}}\n")
    server = ServerProcess(temporal, f"proxy-{uuid.uuid4().hex[:8]}", str(config), model=model.model_flag).start()
    certs = Certs(tmp_path / "certs")
    port = free_port()
    proxy = Nginx(tmp_path / "nginx", proxied_config(port, certs, server.url), port).start()
    try:
        yield f"https://127.0.0.1:{port}", certs.ca
    finally:
        proxy.stop()
        server.stop()
        remove_created_sandboxes()


def directives(text):
    """The config's lines without comments, blank lines and indentation."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def test_the_config_docs_deploy_md_shows_is_the_example_file_this_suite_runs():
    deploy = open(os.path.join(REPO, "docs", "deploy.md")).read()
    shown = re.search(r"```nginx\n(.*?)```", deploy, re.DOTALL)
    assert shown, "docs/deploy.md has no ```nginx block"
    assert directives(shown.group(1)) == directives(open(EXAMPLE).read())


def test_the_page_loads_and_a_browser_login_works_through_the_proxy(proxied):
    url, ca = proxied
    page = requests.get(url + "/", verify=ca, timeout=30)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assets = re.findall(r'(?:href|src)="(/assets/[^"]+)"', page.text)
    assert assets, page.text
    for asset in assets:
        r = requests.get(url + asset, verify=ca, timeout=30)
        assert r.status_code == 200 and r.content, asset
    # The page's login as a browser sends it: the Origin is the proxy's, which the server
    # accepts only when it sees the Host the browser sent (port included).
    s = requests.Session()
    r = s.post(url + "/v1/login", json={"api_key": KEY}, headers={"Origin": url}, verify=ca, timeout=30)
    assert r.status_code == 200, r.text
    me = s.get(url + "/v1/me", headers={"Origin": url}, verify=ca, timeout=30).json()
    assert me["principal"] == "alice" and me["auth"] == "cookie"


def test_a_runs_events_arrive_through_the_proxy_as_they_happen(proxied, model):
    url, ca = proxied
    model.turns = [python_turn("c1", "import time\nfor i in range(4):\n    print('tick', i, flush=True)\n"
                                     "    time.sleep(1)"),
                   {"content": "ticked"}]
    a = Client(url, KEY)
    a.s.verify = ca
    a.s.trust_env = False  # else $REQUESTS_CA_BUNDLE wins over the session's CA
    r = a.post("/v1/runs", {"task": "tick"}, timeout=120)
    assert r.status_code == 201, r.text
    times = []
    events = a.events(f"/v1/runs/{r.json()['id']}/events", until=lambda e: e[1] == "end", timeout=120,
                      arrivals=times)
    arrived = list(zip(times, events))
    outputs = [(t, d) for t, (_, kind, d) in arrived if kind == "cell_output"]
    result_at = [t for t, (_, kind, _) in arrived if kind == "cell_result"][0]
    assert "".join(d["text"] for _, d in outputs).count("tick") == 4, arrived
    # Buffered by the proxy, every event would come at the end at once.
    assert outputs[0][0] < result_at - 2, "the first line came with the result: the proxy buffered the stream"
    assert any(kind == "final" and d["text"] == "ticked" for _, kind, d in events), events
    assert events[-1][1] == "end"
