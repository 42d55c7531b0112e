"""The man page (docs/man/codeact.1, installed as man1/codeact.1.gz) stays true to the CLI: every
command `codeact --help` lists, and every subcommand of those, is described in it, and it renders
without groff warnings."""

import re
import subprocess
from pathlib import Path

import pytest

MAN_PAGE = Path(__file__).resolve().parents[2] / "docs" / "man" / "codeact.1"


def subcommands(cli, *path):
    """The names under "SUBCOMMANDS:" in `codeact PATH... --help` (CLI11's layout)."""
    out = cli(*path, "--help", check=0).out
    match = re.search(r"^SUBCOMMANDS:\n((?:  .*\n?)+)", out, re.MULTILINE | re.IGNORECASE)
    if not match:
        return []
    return [line.split()[0] for line in match.group(1).splitlines() if line.strip()]


def man_text():
    # roff escapes a hyphen as \-; compare against the plain words.
    return MAN_PAGE.read_text().replace("\\-", "-")


def test_every_command_of_help_has_an_entry_in_the_man_page(cli):
    commands = subcommands(cli)
    assert {"run", "worker", "chat", "server", "sandbox", "doctor"} <= set(commands), commands
    entries = set(re.findall(r'^\.TP\n\.BI? "?([a-z][a-z-]*)', man_text(), re.MULTILINE))
    missing = [c for c in commands if c not in entries]
    assert not missing, f"commands of `codeact --help` without an entry in {MAN_PAGE}: {missing}"


@pytest.mark.parametrize("command", ["sandbox", "volume", "image", "mcp", "model"])
def test_every_subcommand_is_named_in_its_commands_entry(cli, command):
    names = subcommands(cli, command)
    assert names, f"`codeact {command} --help` lists no subcommands"
    entry = re.search(r'^\.TP\n\.BI? "?' + command + r'\b(.*?)(?=^\.TP\n|^\.SH )', man_text(),
                      re.MULTILINE | re.DOTALL)
    assert entry, f"no entry for {command}"
    missing = [n for n in names if not re.search(r"\b" + re.escape(n) + r"\b", entry.group(1))]
    assert not missing, f"`codeact {command}` subcommands missing from its man entry: {missing}"


def test_man_page_renders_without_warnings():
    done = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN_PAGE)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
