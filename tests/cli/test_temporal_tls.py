"""Temporal behind TLS, mTLS and an API key, as a user configures them (docs/deploy.md, "A Temporal
cluster"): Debian's nginx terminating TLS in front of a real Temporal dev server (tls_proxy.py),
one proxy wanting `authorization: Bearer KEY`, one wanting a client certificate signed by the
test's CA. `codeact run --temporal` goes through them with app_conf.yml's temporal.tls* and
temporal.api_key, its in-process worker too; a wrong key, a missing client certificate and an
untrusted CA each fail at once with an error naming the address and what to fix."""
import json
import os
import sys
import time
import uuid

import pytest
import requests

from dev_server import DevServer
from scripted_model import ScriptedModel
from tls_proxy import Certs, Nginx, free_port
from worker_process import FAST_DURABLE

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")
API_KEY = "tls-test-key-7f3a9c"
START = "/temporal.api.workflowservice.v1.WorkflowService/StartWorkflowExecution"
POLL = "/temporal.api.workflowservice.v1.WorkflowService/PollWorkflowTaskQueue"
# A model no test run reaches (its runs fail before their first model request).
UNUSED_MODEL = "openai-compatible:unused@http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def temporal(tmp_path_factory):
    server = DevServer(tmp_path_factory.mktemp("temporal"))
    yield server.start()
    server.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("certs"))


def grpc_proxy(directory, certs, upstream, extra="", location=""):
    """nginx on a free port: TLS with the test CA's server certificate, HTTP/2, every gRPC call
    passed to `upstream` in clear."""
    port = free_port()
    block = f"""  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {certs.server_cert};
    ssl_certificate_key {certs.server_key};
{extra}
    location / {{
{location}
      grpc_pass grpc://{upstream};
      grpc_read_timeout 300s;
      grpc_send_timeout 300s;
    }}
  }}"""
    return Nginx(directory, block, port).start()


@pytest.fixture(scope="module")
def key_proxy(tmp_path_factory, certs, temporal):
    """Wants `authorization: Bearer API_KEY` (Temporal Cloud's API keys travel so); 401 else."""
    proxy = grpc_proxy(tmp_path_factory.mktemp("nginx-key"), certs, temporal,
                       location=f'      if ($http_authorization != "Bearer {API_KEY}") {{ return 401; }}')
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def mtls_proxy(tmp_path_factory, certs, temporal):
    """Wants a client certificate signed by the test CA."""
    proxy = grpc_proxy(tmp_path_factory.mktemp("nginx-mtls"), certs, temporal,
                       extra=f"    ssl_client_certificate {certs.ca};\n    ssl_verify_client on;")
    yield proxy
    proxy.stop()


def app_conf(tmp_path, **temporal_keys):
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in temporal_keys.items())
    p = tmp_path / f"app_conf-{uuid.uuid4().hex[:6]}.yml"
    p.write_text(FAST_DURABLE + "temporal:\n" + lines)
    return str(p)


@pytest.fixture
def wid(cli):
    w = f"tls-{uuid.uuid4().hex[:8]}"
    yield w
    cli("sandbox", "rm", w, "--volume", timeout=120)


def run(cli, address, config, wid, model_flag, timeout=120):
    return cli("run", "--temporal", address, "--task-queue", f"q-{wid}", "--config", config, "--prompts", PROMPTS,
               "--model", model_flag, "--workflow-id", wid, "--json", "Say hello.", timeout=timeout)


def access_log(proxy):
    with open(os.path.join(proxy.dir, "access.log")) as f:
        return f.read()


def answered_through(proxy, cli, config, wid):
    model = ScriptedModel([{"content": "hello through the proxy"}])
    try:
        p = run(cli, proxy.address, config, wid, model.model_flag)
    finally:
        model.close()
    assert p.returncode == 0, f"stdout:\n{p.out}\nstderr:\n{p.err}\nnginx:\n{proxy.error_log()}"
    j = json.loads(p.out)
    assert j["output"] == "hello through the proxy" and j["durable"] is True and j["workflow_id"] == wid
    # The run's start and its worker's polls went through the proxy, answered (200).
    log = access_log(proxy)
    assert any(START in line and '" 200 ' in line for line in log.splitlines()), log
    assert POLL in log, log
    return p


def test_a_durable_run_goes_through_tls_with_an_api_key(cli, key_proxy, certs, tmp_path, wid):
    config = app_conf(tmp_path, tls_ca_file=certs.ca, api_key=API_KEY)  # tls implied
    p = answered_through(key_proxy, cli, config, wid)
    assert API_KEY not in p.out + p.err


def test_a_durable_run_goes_through_mtls(cli, mtls_proxy, certs, tmp_path, wid):
    config = app_conf(tmp_path, tls=True, tls_ca_file=certs.ca, tls_cert_file=certs.client_cert,
                      tls_key_file=certs.client_key, tls_server_name="localhost")
    answered_through(mtls_proxy, cli, config, wid)


def test_a_server_without_a_worker_reaches_temporal_through_mtls(mtls_proxy, certs, tmp_path):
    """`codeact server --no-worker` connects without the worker runner (as `run --no-worker` and
    `chat --no-worker` do): the other path that reads the TLS settings."""
    sys.path.insert(0, os.path.join(REPO, "tests", "server"))
    from server_process import ServerProcess
    config = app_conf(tmp_path, tls_ca_file=certs.ca, tls_cert_file=certs.client_cert,
                      tls_key_file=certs.client_key, tls_server_name="localhost")
    server = ServerProcess(mtls_proxy.address, f"q-{uuid.uuid4().hex[:6]}", config, no_worker=True).start()
    try:
        health = requests.get(server.url + "/health", timeout=30).json()
    finally:
        server.stop()
    assert health["temporal_connected"] is True, health
    assert "/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution" in access_log(mtls_proxy)


def test_doctor_says_temporal_is_reached_with_tls_and_a_key_and_never_prints_the_key(cli, key_proxy, certs,
                                                                                     tmp_path):
    config = app_conf(tmp_path, url=key_proxy.address, tls_ca_file=certs.ca, api_key=API_KEY)
    p = cli("doctor", env={"APP_CONFIG_PATH": config, "APP_PROMPTS_PATH": PROMPTS}, timeout=120)
    assert f"ok    Temporal at {key_proxy.address} (namespace default, TLS, API key)" in p.out, p.out
    assert API_KEY not in p.out + p.err
    config = app_conf(tmp_path, url=key_proxy.address, tls_ca_file=certs.ca, api_key="wrong-key")
    p = cli("doctor", env={"APP_CONFIG_PATH": config, "APP_PROMPTS_PATH": PROMPTS}, timeout=120)
    assert f"FAIL  Temporal (temporal.url): Temporal at {key_proxy.address} refused this client" in p.out, p.out
    assert p.returncode != 0


def failed_run(cli, proxy, config, wid):
    """`codeact run` through `proxy` that must fail before any model call: its stderr, after
    checking that it failed soon and said where."""
    model = ScriptedModel([{"content": "never asked"}])
    t0 = time.monotonic()
    try:
        p = run(cli, proxy.address, config, wid, model.model_flag, timeout=60)
    finally:
        model.close()
    elapsed = time.monotonic() - t0
    assert p.returncode != 0, p.out
    assert not model.requests
    assert proxy.address in p.err, p.err
    assert elapsed < 12, f"{elapsed:.1f}s: an error that waiting cannot fix should come at once\n{p.err}"
    return p.err


def test_a_wrong_api_key_fails_at_once_naming_the_address_and_the_key_setting(cli, key_proxy, certs, tmp_path,
                                                                               wid):
    err = failed_run(cli, key_proxy, app_conf(tmp_path, tls_ca_file=certs.ca, api_key="wrong-key-1234"), wid)
    assert f"Temporal at {key_proxy.address} refused this client (TLS, API key)" in err, err
    assert "check temporal.api_key (TEMPORAL_API_KEY)" in err, err
    assert "wrong-key-1234" not in err


def test_a_missing_client_certificate_fails_naming_the_address_and_the_cert_setting(cli, mtls_proxy, certs,
                                                                                     tmp_path, wid):
    err = failed_run(cli, mtls_proxy, app_conf(tmp_path, tls_ca_file=certs.ca), wid)
    assert f"Temporal at {mtls_proxy.address} (TLS) answered" in err, err
    assert "wants a client certificate" in err and "temporal.tls_cert_file (TEMPORAL_TLS_CERT)" in err, err


def test_an_untrusted_ca_fails_naming_the_address_and_the_ca_setting(cli, key_proxy, certs, tmp_path, wid):
    err = failed_run(cli, key_proxy, app_conf(tmp_path, tls_ca_file=certs.other_ca, api_key=API_KEY), wid)
    assert f"TLS with Temporal at {key_proxy.address} failed" in err, err
    assert "not signed by a CA this client trusts" in err and "temporal.tls_ca_file (TEMPORAL_TLS_CA)" in err, err


def test_an_unreadable_ca_file_or_a_cert_without_its_key_is_named_with_its_setting(cli, key_proxy, certs,
                                                                                     tmp_path, wid):
    missing = str(tmp_path / "no-such-ca.pem")
    p = run(cli, key_proxy.address, app_conf(tmp_path, tls_ca_file=missing), wid, UNUSED_MODEL, timeout=60)
    assert p.returncode != 0
    assert f"cannot read temporal.tls_ca_file (TEMPORAL_TLS_CA) {missing}" in p.err, p.err
    p = run(cli, key_proxy.address, app_conf(tmp_path, tls_cert_file=certs.client_cert), wid, UNUSED_MODEL,
            timeout=60)
    assert p.returncode != 0
    assert "temporal.tls_cert_file (TEMPORAL_TLS_CERT) is set" in p.err and "temporal.tls_key_file" in p.err, p.err
