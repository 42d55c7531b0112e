"""Time travel from the command line (issue #15): `codeact sandbox history`, `rewind` and `fork`
on real sandboxes, as a user types them."""
import os
import sys
import subprocess
import uuid


def test_history_lists_each_cell_and_rewind_restores_variables_and_files_and_is_undone(cli,
                                                                                   sandbox):
    cli("sandbox", "exec", sandbox, "--exec-id", "load",
        "rows = [1, 2, 3]\nopen('/output/report.txt', 'w').write('good')", check=0)
    cli("sandbox", "exec", sandbox, "total = sum(rows)", check=0)
    p, j = cli.json("sandbox", "exec", sandbox, "--json",
                    "rows.clear()\nopen('/output/report.txt', 'w').write('broken')", check=0)
    assert j["checkpoint"] == 3

    p = cli("sandbox", "history", sandbox, check=0)
    lines = p.out.splitlines()
    assert lines[0].split()[:3] == ["N", "CELL", "TIME"]
    assert "load" in lines[1] and "rows; /output/report.txt" in lines[1]
    assert "total" in lines[2]
    assert lines[3].startswith("*")  # the current one
    assert "kept: all" in p.out
    p, h = cli.json("sandbox", "history", sandbox, "--json", check=0)
    assert [c["n"] for c in h["checkpoints"]] == [1, 2, 3] and h["current"] == 3
    assert h["checkpoints"][0]["execution_id"] == "load"
    assert h["checkpoints"][0]["files_changed"] == ["/output/report.txt"]

    p = cli("sandbox", "rewind", sandbox, "--to", "2", check=0)
    assert f"sandbox {sandbox} is at checkpoint 2" in p.out
    assert f"undo: codeact sandbox rewind {sandbox} --to 3" in p.out
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "(rows, total)", check=0)
    assert j["result"] == "([1, 2, 3], 6)"
    assert cli("sandbox", "read", sandbox, "/output/report.txt", check=0).out == "good"
    # Undo: back to the broken state, which was kept.
    cli("sandbox", "rewind", sandbox, "--to", "3", check=0)
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "rows", check=0)
    assert j["result"] == "[]"
    assert cli("sandbox", "read", sandbox, "/output/report.txt", check=0).out == "broken"


def test_rewind_survives_docker_kill_and_refuses_a_checkpoint_that_does_not_exist(cli, sandbox):
    cli("sandbox", "exec", sandbox, "x = 'first'", check=0)
    cli("sandbox", "exec", sandbox, "x = 'second'", check=0)
    cli("sandbox", "rewind", sandbox, "--to", "1", check=0)
    subprocess.run(["docker", "kill", f"codeact-{sandbox}"], check=True, capture_output=True)
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "x", check=0)
    assert j["result"] == "'first'"
    p, h = cli.json("sandbox", "history", sandbox, "--json", check=0)
    assert [c["n"] for c in h["checkpoints"]] == [1, 2, 3]
    p = cli("sandbox", "rewind", sandbox, "--to", "42")
    assert p.returncode == 3 and "there is no checkpoint 42" in p.err
    p = cli("sandbox", "rewind", sandbox, "--to", "0")
    assert p.returncode == 2


def test_fork_starts_an_independent_sandbox_from_a_checkpoint(cli, sandbox):
    cli("sandbox", "exec", sandbox, "data = {'a': 1}", check=0)
    cli("sandbox", "exec", sandbox,
        "data['b'] = 2\nopen('/output/notes.txt', 'w').write('from parent')", check=0)
    cli("sandbox", "exec", sandbox, "data['c'] = 3", check=0)
    child = f"clifork-{uuid.uuid4().hex[:8]}"
    try:
        p = cli("sandbox", "fork", sandbox, "--at", "2", "--id", child, check=0)
        assert p.out.strip() == child
        assert f"starts from checkpoint 2 of {sandbox}" in p.err and "data" in p.err
        p, j = cli.json("sandbox", "exec", child, "--json", "data", check=0)
        assert j["result"] == "{'a': 1, 'b': 2}"
        assert cli("sandbox", "read", child, "/output/notes.txt", check=0).out == "from parent"
        # Independent: a change in one is invisible in the other.
        cli("sandbox", "exec", child, "data['child'] = True", check=0)
        p, j = cli.json("sandbox", "exec", sandbox, "--json", "sorted(data)", check=0)
        assert j["result"] == "['a', 'b', 'c']"
        cli("sandbox", "exec", sandbox, "data.clear()", check=0)
        p, j = cli.json("sandbox", "exec", child, "--json", "sorted(data)", check=0)
        assert j["result"] == "['a', 'b', 'child']"
        p, h = cli.json("sandbox", "history", child, "--json", check=0)
        assert h["checkpoints"][0]["forked_from"] == f"{sandbox}@2"
        # The same fork again is its recorded result; another source into the same id is refused.
        p, j = cli.json("sandbox", "fork", sandbox, "--at", "2", "--id", child, "--json", check=0)
        assert j["sandbox"]["id"] == child and j["source_checkpoint"] == 2
        p, j = cli.json("sandbox", "exec", child, "--json", "sorted(data)", check=0)
        assert j["result"] == "['a', 'b', 'child']"
        p = cli("sandbox", "fork", sandbox, "--at", "1", "--id", child)
        assert p.returncode != 0 and "already exists" in p.err
        p = cli("sandbox", "fork", sandbox, "--at", "99", "--id", child + "-x")
        assert p.returncode == 3 and "there is no checkpoint 99" in p.err
        p, listed = cli.json("sandbox", "ls", "--json", check=0)
        assert child + "-x" not in [s["id"] for s in listed]  # nothing left behind
    finally:
        cli("sandbox", "rm", child, "--volume")


def test_a_fork_of_a_large_state_copies_it_inside_the_engine(cli, sandbox):
    # 96 MB in a variable and 64 MB under /output: the forking process never holds them (they
    # were once sent through it as one tar), and the copier container goes when it is done.
    cli("sandbox", "exec", sandbox,
        "import hashlib, os\nbig = os.urandom(96 << 20)\n"
        "open('/output/big.bin', 'wb').write(big[:64 << 20])\n"
        "digest = hashlib.sha256(big).hexdigest()", check=0)
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "digest", check=0)
    digest = j["result"]
    child = f"clifork-{uuid.uuid4().hex[:8]}"
    # The peak memory of the fork process, measured by a small parent: a child forked from this
    # test process would count its copy of the test's memory until it execs.
    measure = ("import os, subprocess, sys\n"
               "p = subprocess.Popen(sys.argv[1:])\n"
               "_, status, usage = os.wait4(p.pid, 0)\n"
               "print(usage.ru_maxrss)\n"
               "sys.exit(os.waitstatus_to_exitcode(status))")
    p = subprocess.run([sys.executable, "-c", measure, cli.bin, "sandbox", "fork", sandbox, "--at",
                        "1", "--id", child], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    max_rss_kib = int(p.stdout.split()[-1])
    try:
        # Far below the 160 MB the fork moved (a fork of a small state peaks at ~16 MiB).
        assert max_rss_kib < 48 << 10, f"the fork held {max_rss_kib} KiB"
        p, j = cli.json("sandbox", "exec", child, "--json",
                        "(hashlib.sha256(big).hexdigest(), "
                        "open('/output/big.bin', 'rb').read() == big[:64 << 20])", check=0)
        assert j["result"] == f"({digest}, True)"  # digest is the repr of a str
        left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=io.codeact.fork-copy"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert left == []
    finally:
        cli("sandbox", "rm", child, "--volume")
