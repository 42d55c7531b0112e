"""The model of the chaos runs: a ScriptedModel that reads the conversation, as a real model
would, and asks for cell 1, 2, ... CELLS in turn, asking for a cell again (a new tool call) when
the last result says it did not complete (its kernel or container was killed under it), and
answers ANSWER after the last one. A cell that raised PossiblyAppliedError at its host call (the
worker died while the call ran) did change the state before it: the next attempt only makes the
call again. Its answer depends only on the conversation, so a model
request retried after a crash gets the same answer.

Cell n (tool call id "c<n>-<attempt>") changes the sandbox in every way the suite checks:
    ledger      its line appended to a list in the kernel's state (rolled back with the state;
                a cell applied twice shows twice)
    counter     incremented (the state again)
    file_<n>    written with content only cell n writes
    record()    an MCP tool on the host that appends "<sandbox id> <tool call id>" to a log
                (a call made twice for one execution shows twice)
"""
import hashlib
import json
import os
import re

from scripted_model import ScriptedModel, python_turn

CELLS = 4
ANSWER = f"All {CELLS} cells ran."
_CALL_ID = re.compile(r"^c(\d+)-(\d+)$")


def payload(n):
    return f"cell {n} payload\n" * 400


def cell_code(n, call_id, seconds, applied=False):
    """Cell n. `applied`: its last attempt raised at record() after changing the state (the host
    call's connection closed: PossiblyAppliedError); a failed cell keeps what it did, so this
    attempt only makes the call again and finishes, as a model reading the error would."""
    changes = "" if applied else (
        f"ledger = globals().get('ledger', []) + ['cell {n}']\n"
        "counter = globals().get('counter', 0) + 1\n"
        f"open('/output/file_{n}.txt', 'w').write({payload(n)!r})\n")
    return (
        "import os, time\n"
        + changes +
        f"tool = record(text=os.environ.get('CODEACT_SANDBOX_ID', '?') + ' {call_id}')\n"
        f"time.sleep({seconds})\n"
        f"'done {n}'")


def next_turn(messages, seconds):
    """The turn for a conversation: the next cell, the same cell again, or the answer."""
    calls = {}  # tool call id -> (cell, attempt)
    last = None  # (cell, attempt, result text) of the last tool result
    applied = set()  # cells one of whose attempts raised at record() after changing the state
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                got = _CALL_ID.match(c.get("id", ""))
                if got:
                    calls[c["id"]] = (int(got.group(1)), int(got.group(2)))
        elif m.get("role") == "tool" and m.get("tool_call_id") in calls:
            n, attempt = calls[m["tool_call_id"]]
            content = m.get("content")
            last = (n, attempt, content if isinstance(content, str) else json.dumps(content))
            # "cell K raised PossiblyAppliedError" (K counts the sandbox's cells, not n): that
            # attempt committed its changes, so later attempts of cell n only make the call.
            if " raised PossiblyAppliedError" in last[2]:
                applied.add(n)
    if last is None:
        n, attempt = 1, 0
    elif f"result: 'done {last[0]}'" in last[2]:
        n, attempt = last[0] + 1, 0
    else:
        n, attempt = last[0], last[1] + 1
    if n > CELLS:
        return {"content": ANSWER}
    call_id = f"c{n}-{attempt}"
    return python_turn(call_id, cell_code(n, call_id, seconds, n in applied))


class ChaosModel(ScriptedModel):
    def __init__(self, cell_seconds=0.5):
        super().__init__([], respond=lambda body: next_turn(body.get("messages", []), cell_seconds))


def expected_state_check():
    """Python for `codeact sandbox exec`: what the suite checks in a finished run's sandbox."""
    files = ", ".join(f"sha256(open('/output/file_{n}.txt', 'rb').read()).hexdigest() == "
                      f"{hashlib.sha256(payload(n).encode()).hexdigest()!r}"
                      for n in range(1, CELLS + 1))
    return f"from hashlib import sha256\n(ledger, counter, [{files}])"


def expected_state():
    return repr(([f"cell {n}" for n in range(1, CELLS + 1)], CELLS, [True] * CELLS))


def tool_log_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()
