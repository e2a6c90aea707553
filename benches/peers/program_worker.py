#!/usr/bin/env python3
"""What a program worker costs (issue 56): the pipe's round trip of a tool call, and a
program's start from a warm worker, against the same program's evaluation with no calls.

Usage: benches/peers/program_worker.py [path/to/kiln]  (default target/release/kiln)

It starts `kiln __program-worker` as kiln's pool does (empty environment, the same limits),
answers each call at once, and reports medians. Each figure carries its baseline from the
same run: a program of N calls against one of no calls, a start from a warm worker against a
worker's cold start.
"""
import json, os, statistics, subprocess, sys, time

KILN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/kiln")
ENV = {"MIMALLOC_ARENA_RESERVE": "0"}


def start():
    p = subprocess.Popen([KILN, "__program-worker", str(512 << 20), "600", "16"], env=ENV,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/")
    assert "ready" in json.loads(p.stdout.readline())
    return p


def run(p, code, tools=("t",)):
    t0 = time.perf_counter()
    msg = {"run": {"code": code, "tools": list(tools), "max_parallel": 4, "deadline_ms": 60000}}
    p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
    calls = 0
    while True:
        m = json.loads(p.stdout.readline())
        if "call" in m:
            calls += 1
            reply = {"reply": {"id": m["call"]["id"], "result": {"Ok": 1}}}
            p.stdin.write((json.dumps(reply) + "\n").encode()); p.stdin.flush()
            continue
        elapsed = time.perf_counter() - t0
        p.stdin.close(); p.wait()
        return elapsed, calls, m


def median_of(n, f):
    return statistics.median(f() for _ in range(n))


N = 2000
with_calls = median_of(5, lambda: run(start(), f"let s = 0; for i in 0..{N} {{ s += t(#{{}}); }} s")[0])
no_calls = median_of(5, lambda: run(start(), f"let s = 0; for i in 0..{N} {{ s += 1; }} s")[0])
per_call_us = (with_calls - no_calls) / N * 1e6


def warm_start():
    p = start()  # started and ready before the clock: as the pool keeps it
    return run(p, "1")[0]


def cold_start():
    t0 = time.perf_counter()
    p = start()
    return time.perf_counter() - t0 + run(p, "1")[0]


warm = median_of(21, warm_start) * 1e3
cold = median_of(21, cold_start) * 1e3
print(json.dumps({
    "tool_call_round_trip_us": round(per_call_us, 1),
    "program_start_warm_ms": round(warm, 3),
    "program_start_cold_ms": round(cold, 3),
    "calls": N,
}))
