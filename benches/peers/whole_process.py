"""Whole-process loop cost: `kiln ask` (run log on) against a bare Python http.client loop and,
when benches/peers/.venv exists, pydantic-ai and openai-agents, all driving the same `kiln mock`
(OpenAI wire) on loopback. Per-round cost = (time of N rounds - time of 1 round) / (N - 1),
each the median of several whole-process runs measured in this same run.

Samples are interleaved (each sample runs every contender once, in turn), so a change in the
machine's load falls on all contenders alike.

Usage: whole_process.py KILN_BINARY [--rounds N] [--samples S] [--smoke]
Prints two markdown tables (per-round cost, one-round whole process).
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from mock_scenario import start_mock

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = HERE
VENV_PY = os.path.join(PEERS, ".venv", "bin", "python")


def contenders(kiln, tmp):
    scripts = os.path.join(tmp, "scripts")
    os.makedirs(scripts, exist_ok=True)
    with open(os.path.join(scripts, "bench.rhai"), "w") as f:
        f.write('agent("bench").provider("openai").model("m").tools(["calculator"])'
                '.max_iterations(1000);\n')
    workspace = os.path.join(tmp, "workspace")
    os.makedirs(workspace, exist_ok=True)
    # Whole replies, as the bare loop and the frameworks ask for them; then kiln ask's default.
    yield "kiln ask --no-stream (run log on)", lambda url: (
        [kiln, "ask", "bench", "go", "--no-stream", "--scripts", scripts, "--base-url", url],
        workspace)
    yield "kiln ask, streamed (run log on)", lambda url: (
        [kiln, "ask", "bench", "go", "--scripts", scripts, "--base-url", url], workspace)
    yield "bare Python loop (http.client)", lambda url: (
        [sys.executable, os.path.join(PEERS, "bare_loop.py"), url], tmp)
    if os.path.exists(VENV_PY):
        yield "pydantic-ai", lambda url: (
            [VENV_PY, os.path.join(PEERS, "pydantic_ai_loop.py"), url], tmp)
        yield "openai-agents", lambda url: (
            [VENV_PY, os.path.join(PEERS, "openai_agents_loop.py"), url], tmp)


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, cwd):
    """(wall, CPU) seconds of one whole-process run; CPU is the process's user + sys time."""
    started, cpu = time.perf_counter(), cpu_of_children()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    took = (time.perf_counter() - started, cpu_of_children() - cpu)
    if out.returncode != 0 or "All done." not in out.stdout:
        raise SystemExit(f"{cmd[0]} failed ({out.returncode}): {out.stdout[-500:]} {out.stderr[-2000:]}")
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--samples", type=int, default=9)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    a.kiln = os.path.abspath(a.kiln)
    if a.smoke:
        a.rounds, a.samples = 3, 1
    with tempfile.TemporaryDirectory() as tmp:
        mocks = {r: start_mock(a.kiln, r, tmp) for r in (1, a.rounds)}
        # The OpenAI wire's base URL.
        mocks = {r: (m, url + "/v1") for r, (m, url) in mocks.items()}
        try:
            everyone = list(contenders(a.kiln, tmp))
            runs = {(name, r): [] for name, _ in everyone for r in mocks}
            for name, command in everyone:
                for _, url in mocks.values():
                    timed(*command(url))  # warm-up (page cache, imports compiled)
            for _ in range(a.samples):
                for name, command in everyone:
                    for r, (_, url) in mocks.items():
                        runs[(name, r)].append(timed(*command(url)))
            rows = []
            for name, _ in everyone:
                times = {r: tuple(statistics.median(x[i] for x in runs[(name, r)]) for i in (0, 1))
                         for r in mocks}
                per_round = [(times[a.rounds][i] - times[1][i]) / (a.rounds - 1) for i in (0, 1)]
                rows.append((name, times[1], times[a.rounds], per_round))
        finally:
            for mock, _ in mocks.values():
                mock.kill()
                mock.wait()
    base = next(r for r in rows if r[0].startswith("bare Python"))
    print(f"Loop cost per round, whole process, median of {a.samples} "
          f"(per round = (T({a.rounds} rounds) - T(1 round)) / {a.rounds - 1}):\n")
    print(f"| contender | T(1 round) | T({a.rounds} rounds) | per round, wall | vs bare Python | "
          "per round, CPU of the process | vs bare Python |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, t1, tn, pr in rows:
        print(f"| {name} | {t1[0] * 1e3:.1f} ms | {tn[0] * 1e3:.1f} ms | {pr[0] * 1e3:.3f} ms | "
              f"{pr[0] / base[3][0]:.2f}x | {pr[1] * 1e3:.3f} ms | {pr[1] / base[3][1]:.2f}x |")
    kiln = rows[0]
    print(f"\nOne-round `kiln ask`, whole process (start, load, one model request, answer), "
          f"median of {a.samples}:\n")
    print("| contender | one round, wall | vs kiln ask | CPU of the process | vs kiln ask |")
    print("|---|---:|---:|---:|---:|")
    for name, t1, _, _ in rows:
        print(f"| {name} | {t1[0] * 1e3:.1f} ms | {t1[0] / kiln[1][0]:.2f}x | "
              f"{t1[1] * 1e3:.1f} ms | {t1[1] / kiln[1][1]:.2f}x |")


main()
