"""`codeact run` with a real model: Qwen2.5-Coder served by llama.cpp (`codeact model local`),
on small data tasks, durable and in-process. Each answer and file is checked against values this
test computes itself. Opt-in (`scripts/test.sh --real-model`): the first run installs the model,
and each task takes a minute or two on 2 cores.

The summary at the end gives the pass rate, the time per task and the server's generation speed
(tokens per second, from its log)."""
import csv
import io
import json
import random
import re
import time
import uuid

import pytest

RESULTS = []


def primes_below(n):
    sieve = [True] * n
    sieve[0:2] = [False, False]
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = [False] * len(sieve[i * i::i])
    return [i for i, p in enumerate(sieve) if p]


def sales_rows(seed):
    rng = random.Random(seed)
    regions = ["North", "South", "East", "West"]
    return [(region, month, rng.randrange(100, 1000))
            for month in range(1, 7) for region in regions]


def numbers_in(text):
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)}


def task_primes(cli, sid):
    want = sum(primes_below(1000))
    task = ("What is the sum of all prime numbers below 1000? Compute it with Python, then "
            "answer with the number.")

    def check(out):
        assert want in numbers_in(out), f"expected {want} in the answer"
    return task, check


def task_mean(cli, sid):
    values = [3, 8, 15, 22, 40]
    want = f"{sum(values) / len(values):g}"
    task = (f"Compute the mean of the numbers {', '.join(map(str, values[:-1]))} and "
            f"{values[-1]} with Python and answer with it.")

    def check(out):
        assert want in out, f"expected {want} in the answer"
    return task, check


def task_squares_file(cli, sid):
    want = sum(n * n for n in range(1, 21))
    task = ("Write a CSV file /output/squares.csv with the header line n,square and one row for "
            "each n from 1 to 20 (square is n*n). Then tell me the sum of the square column.")

    def check(out):
        assert want in numbers_in(out), f"expected {want} in the answer"
        p = cli("sandbox", "read", sid, "/output/squares.csv", check=0)
        rows = list(csv.reader(io.StringIO(p.out)))
        assert [c.strip() for c in rows[0]] == ["n", "square"], rows[:2]
        assert [(int(n), int(s)) for n, s in rows[1:]] == [(n, n * n) for n in range(1, 21)]
    return task, check


def task_sales_region(cli, sid):
    rows = sales_rows(seed=sid)
    totals = {}
    for region, _, amount in rows:
        totals[region] = totals.get(region, 0) + amount
    region, total = max(totals.items(), key=lambda kv: kv[1])
    data = "region,month,amount\n" + "".join(f"{r},{m},{a}\n" for r, m, a in rows)
    cli("sandbox", "write", sid, "/output/sales.csv", input=data.encode(), check=0)
    task = ("The file /output/sales.csv has the columns region, month and amount. Which region "
            "has the largest total amount, and what is that total? Load it with pandas.")

    def check(out):
        assert region in out and total in numbers_in(out), \
            f"expected {region} and {total} in the answer"
    return task, check


TASKS = {"primes": task_primes, "mean": task_mean, "squares_file": task_squares_file,
         "sales_region": task_sales_region}


@pytest.mark.parametrize("mode", ["durable", "in-process"])
@pytest.mark.parametrize("name", list(TASKS))
def test_task(cli, local_model, name, mode):
    sid = f"real-{name.replace('_', '-')}-{uuid.uuid4().hex[:6]}"
    cli("sandbox", "start", "--id", sid, check=0)
    try:
        task, check = TASKS[name](cli, sid)
        args = ["run", "--model", local_model["model"], "--workflow-id", sid, "--json",
                "--keep-sandbox", "--max-requests", "8"]
        if mode == "in-process":
            args.append("--no-durable")
        t0 = time.monotonic()
        p = cli(*args, task, timeout=1200)
        seconds = time.monotonic() - t0
        result = json.loads(p.out) if p.returncode == 0 and p.out.strip() else {}
        out = result.get("output") or ""
        entry = {"task": name, "mode": mode, "seconds": seconds, "ok": False,
                 "usage": result.get("usage"), "answer": out[:300]}
        RESULTS.append(entry)
        assert p.returncode == 0, f"codeact run failed: {p.err[-3000:]}"
        check(out)
        entry["ok"] = True
    finally:
        cli("sandbox", "rm", sid, "--volume")


def tokens_per_second(log_path):
    """The generation speeds llama-server logged ("eval time = ... tokens per second")."""
    try:
        text = open(log_path, errors="replace").read()
    except OSError:
        return []
    return [float(x) for x in re.findall(
        r"(?<!prompt )eval time =.*?([\d.]+) tokens per second", text)]


@pytest.fixture(scope="session", autouse=True)
def summary(local_model):
    yield
    if not RESULTS:
        return
    passed = sum(r["ok"] for r in RESULTS)
    speeds = tokens_per_second(local_model["log"])
    print(f"\n== real model {local_model['model']}")
    for r in RESULTS:
        print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['task']:13} {r['mode']:10} "
              f"{r['seconds']:6.1f}s  usage {r['usage']}")
    print(f"  pass rate {passed}/{len(RESULTS)}; mean {sum(r['seconds'] for r in RESULTS) / len(RESULTS):.1f}s "
          f"per task")
    if speeds:
        print(f"  generation {sum(speeds) / len(speeds):.1f} tokens/s (mean of {len(speeds)} "
              f"requests in the server log)")
