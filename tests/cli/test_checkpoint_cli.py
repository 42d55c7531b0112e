"""Time travel from the command line (issue #15): `codeact sandbox history`, `rewind` and `fork`
on real sandboxes, as a user types them."""
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
