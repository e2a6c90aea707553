"""What waiting costs kiln: its CPU per model round against a provider that answers at once and
against one that takes its time, per wire format, early and late in a long conversation.

The provider here is an independent implementation, not kiln's own mock code: Python's
`http.server` speaking OpenAI Chat Completions, Anthropic Messages and Ollama's /api/chat over
HTTP/1.1 keep-alive (one TCP connection for a whole run), answering each round with a
calculator call, then the answer, after a configurable delay. kiln mock is measured next to it
as the fast baseline it has always been.

Two measures, both of the kiln process alone:
- per round, whole run: (CPU(N rounds) - CPU(1 round)) / (N - 1), user + sys from wait4, each
  the median of several runs, interleaved so a change in load falls on all alike;
- early and late (the independent server only): when request k arrives, the server reads the
  kiln process's CPU so far from /proc (every thread's schedstat, in nanoseconds), so each
  round's CPU is the difference between two requests. Early is the median round of rounds 2-50,
  late of the last 50: hundreds of samples per figure.

Usage: slow_server.py KILN_BINARY [--rounds N] [--samples S] [--delays MS,MS] [--smoke]
       slow_server.py --serve [--port P]   (only the server, for trying by hand)
Prints markdown tables.
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from mock_scenario import start_mock

WIRES = ("openai", "anthropic", "ollama")
HERE = os.path.dirname(os.path.abspath(__file__))


class Watch:
    """The kiln process being measured, and its CPU at each request the server answered."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pid = None
        self.samples = []

    def start(self, pid):
        with self.lock:
            self.pid, self.samples = pid, []

    def sample(self):
        with self.lock:
            pid = self.pid
        if pid is None:
            return
        ns = process_cpu_ns(pid)
        if ns is not None:
            with self.lock:
                self.samples.append(ns)

    def rounds(self):
        """The CPU of each round: from one request to the next, in nanoseconds."""
        with self.lock:
            s = list(self.samples)
        return [b - a for a, b in zip(s, s[1:])]


def process_cpu_ns(pid):
    """The CPU every live thread of `pid` has run for, in nanoseconds (schedstat's first field)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


WATCH = Watch()


def reply(wire, rounds_total, done, model):
    """The provider's answer to a request that holds `done` earlier assistant turns."""
    call = done + 1 < rounds_total
    expression = f"{done} * 3 + 1"
    if wire == "openai":
        if call:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{done}", "type": "function",
                "function": {"name": "calculator",
                             "arguments": json.dumps({"expression": expression})}}]}
        else:
            message = {"role": "assistant", "content": "All done."}
        return {"id": f"chatcmpl-{done}", "object": "chat.completion", "created": 0,
                "model": model, "choices": [{"index": 0, "message": message,
                                             "finish_reason": "tool_calls" if call else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    if wire == "anthropic":
        content = ([{"type": "tool_use", "id": f"toolu_{done}", "name": "calculator",
                     "input": {"expression": expression}}] if call
                   else [{"type": "text", "text": "All done."}])
        return {"id": f"msg_{done}", "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": "tool_use" if call else "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
    message = {"role": "assistant", "content": "" if call else "All done."}
    if call:
        message["tool_calls"] = [{"function": {"name": "calculator",
                                               "arguments": {"expression": expression}}}]
    return {"model": model, "created_at": "2026-12-05T00:00:00Z", "message": message,
            "done": True, "done_reason": "stop", "total_duration": 1000,
            "prompt_eval_count": 10, "eval_count": 5}


class Handler(http.server.BaseHTTPRequestHandler):
    """`POST /d{delay_ms}/r{rounds}/...` on each wire's route."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        WATCH.sample()
        parts = self.path.strip("/").split("/")
        try:
            delay_ms, rounds = int(parts[0][1:]), int(parts[1][1:])
            route = "/" + "/".join(parts[2:])
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
        except (ValueError, IndexError) as e:
            return self.answer(400, {"error": {"message": f"bad request: {e}"}})
        wire = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic",
                "/api/chat": "ollama"}.get(route)
        if wire is None:
            return self.answer(404, {"error": {"message": f"no route {route}"}})
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if delay_ms:
            time.sleep(delay_ms / 1000)
        self.answer(200, reply(wire, rounds, done, body.get("model", "m")))

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def project(tmp, rounds):
    scripts = os.path.join(tmp, "scripts")
    os.makedirs(scripts, exist_ok=True)
    with open(os.path.join(scripts, "bench.rhai"), "w") as f:
        f.write(f'agent("bench").provider("openai").model("m").tools(["calculator"])'
                f'.max_iterations({rounds + 10});\n')
    workspace = os.path.join(tmp, "workspace")
    os.makedirs(workspace, exist_ok=True)
    return scripts, workspace




def cpu_of_children():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measured_run(cmd, workspace, env=None):
    """One whole-process run: (CPU seconds of the process, per-round CPU samples in ns)."""
    before = cpu_of_children()
    proc = subprocess.Popen(cmd, cwd=workspace, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    WATCH.start(proc.pid)
    out, err = proc.communicate()
    rounds = WATCH.rounds()
    WATCH.start(None)
    cpu = cpu_of_children() - before
    if proc.returncode != 0 or "All done." not in out:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {out[-500:]} {err[-2000:]}")
    return cpu, rounds


def command(kiln, scripts, client, wire, base_url):
    """The command line of one run: `kiln ask`, or the bare loop (OpenAI's wire only)."""
    if client == "bare":
        return [sys.executable, os.path.join(HERE, "bare_loop.py"), base_url]
    return [kiln, "ask", "bench", "go", "--no-stream", "--quiet", "--scripts", scripts,
            "--provider", wire, "--base-url", base_url]


def wire_url(base, wire):
    return base + ("/v1" if wire == "openai" else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kiln", nargs="?")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--delays", default="0,50", help="the server's delays to measure, in ms")
    ap.add_argument("--wires", default=",".join(WIRES))
    ap.add_argument("--smoke", action="store_true", help="3 rounds, 1 sample: a check it runs")
    ap.add_argument("--serve", action="store_true", help="only serve, on --port, until killed")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    if a.serve:
        server, url = serve(a.port)
        print(f"serving on {url} (POST /d<delay ms>/r<rounds>/v1/chat/completions, "
              "/v1/messages or /api/chat)", flush=True)
        threading.Event().wait()
    if not a.kiln:
        ap.error("KILN_BINARY is needed unless --serve")
    kiln = os.path.abspath(a.kiln)
    if a.smoke:
        a.rounds, a.samples = 3, 1
    delays = [int(d) for d in a.delays.split(",")]
    wires = a.wires.split(",")
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-bench", OPENAI_API_KEY="sk-bench")
    with tempfile.TemporaryDirectory() as tmp:
        scripts, workspace = project(tmp, a.rounds)
        server, url = serve(0)
        mocks = {r: start_mock(kiln, r, tmp) for r in (1, a.rounds)}
        # (client, wire, delay in ms; None is kiln mock)
        contenders = [("kiln", w, None) for w in wires]
        contenders += [("kiln", w, d) for d in delays for w in wires]
        if "openai" in wires:
            contenders += [("bare", "openai", None)] + [("bare", "openai", d) for d in delays]

        def run(c, r):
            client, wire, delay = c
            base = mocks[r][1] if delay is None else f"{url}/d{delay}/r{r}"
            return measured_run(command(kiln, scripts, client, wire, wire_url(base, wire)),
                                workspace, env)

        try:
            cpu = {(c, r): [] for c in contenders for r in (1, a.rounds)}
            per_round = {c: [] for c in contenders}
            for c in contenders:  # warm-up: page cache, the run log's database
                run(c, 1)
            for _ in range(a.samples):
                for c in contenders:
                    for r in (1, a.rounds):
                        took, rounds = run(c, r)
                        cpu[(c, r)].append(took)
                        if r == a.rounds and c[2] is not None:
                            per_round[c].append(rounds[1:])  # from request 2 on
        finally:
            server.shutdown()
            for mock, _ in mocks.values():
                mock.kill()
                mock.wait()
    report(a, contenders, cpu, per_round, delays)


def report(a, contenders, cpu, per_round, delays):
    n = a.rounds

    def whole(c):
        return (statistics.median(cpu[(c, n)]) - statistics.median(cpu[(c, 1)])) / (n - 1)

    def label(c):
        client, _, delay = c
        who = "kiln ask" if client == "kiln" else "bare Python loop (http.client)"
        return f"{who} | " + ("kiln mock" if delay is None else f"independent, {delay} ms")

    print(f"CPU per model round of the client process, whole run (`kiln ask --no-stream "
          f"--quiet`, run log on; per round = (CPU({n} rounds) - CPU(1 round)) / {n - 1}, "
          f"medians of {a.samples} runs):\n")
    print("| wire | client | server | per round, CPU | vs the same client at 0 ms |")
    print("|---|---|---|---:|---:|")
    for c in contenders:
        zero = (c[0], c[1], delays[0])
        ratio = f"{whole(c) / whole(zero):.2f}x" if (zero, n) in cpu else "-"
        print(f"| {c[1]} | {label(c)} | {whole(c) * 1e3:.3f} ms | {ratio} |")
    if n < 4:
        return
    window = min(50, (n - 1) // 2)
    print(f"\nOne round's CPU against the independent server, read from /proc at each request: "
          f"early (rounds 2-{window + 1}) and late (the last {window}), the median round of "
          f"{a.samples} runs x {window} rounds:\n")
    print("| wire | client | delay | early round | late round | late / early |")
    print("|---|---|---:|---:|---:|---:|")
    for c in contenders:
        if c[2] is None:
            continue
        runs = per_round[c]
        early = statistics.median(x for r in runs for x in r[:window])
        late = statistics.median(x for r in runs for x in r[-window:])
        who = "kiln ask" if c[0] == "kiln" else "bare Python loop"
        print(f"| {c[1]} | {who} | {c[2]} ms | {early / 1e3:.0f} us | {late / 1e3:.0f} us | "
              f"{late / early:.2f}x |")


main()
