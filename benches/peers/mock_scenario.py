"""`kiln mock` serving the benches' conversation: a calculator call each round, then "All done."."""

import json
import os
import subprocess


def start_mock(kiln, rounds, tmp):
    """kiln mock (every wire) with a conversation of `rounds` rounds: (process, base URL)."""
    turns = [{"tool_calls": [{"name": "calculator", "args": {"expression": f"{i} * 3 + 1"}}]}
             for i in range(rounds - 1)]
    turns.append({"text": "All done."})
    path = os.path.join(tmp, f"scenario-{rounds}.json")
    with open(path, "w") as f:
        json.dump({"loop": True, "require_auth": False, "turns": turns}, f)
    mock = subprocess.Popen([kiln, "mock", path, "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = mock.stdout.readline().strip().rsplit(" ", 1)[-1]
    assert url.startswith("http://127.0.0.1:"), url
    return mock, url
