"""The comparison for benches/serve_load.rs: N concurrent pydantic-ai `Agent.run` calls under
`asyncio.gather` against `kiln mock`, the same 5-round tool loop (scenario.json here).

    kiln mock benches/compare/scenario.json --port 0   # prints its URL
    pip install "pydantic-ai-slim[openai]"
    python3 benches/compare/pydantic_ai_load.py URL 1000

Added latency per round = (the run's time - the time inside its model HTTP requests) / 5; the
framework runs in this process, so its peak RSS is this process's.
"""
import asyncio, contextvars, json, resource, sys, time
import httpx2 as httpx
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base, runs = sys.argv[1], int(sys.argv[2])
ROUNDS = 5
model_time = {}
# Which run a model request belongs to (inherited by the tasks a run starts).
run_key = contextvars.ContextVar("run", default=None)

async def main():
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=runs), timeout=600)
    client = AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-load", http_client=http, max_retries=0)
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model)

    @agent.tool_plain
    def step(n: int) -> dict:
        """One step"""
        return {"n": n, "ok": True}

    orig = http.send
    async def timed_send(request, *a, **kw):
        t = time.perf_counter()
        resp = await orig(request, *a, **kw)
        await resp.aread()
        key = run_key.get()
        model_time[key] = model_time.get(key, 0.0) + time.perf_counter() - t
        return resp
    http.send = timed_send

    async def one(i):
        run_key.set(f"run{i}")
        t = time.perf_counter()
        try:
            r = await agent.run(f"go {i}")
            ok = r.output == "All done."
        except Exception as e:
            print("error:", repr(e)[:200], file=sys.stderr)
            ok = False
        took = time.perf_counter() - t
        return ok, (took - model_time.get(f"run{i}", 0.0)) * 1000 / ROUNDS

    # One run at a time first (after a warm-up run), then all at once.
    await one(10_000)
    seq = []
    for i in range(max(runs // 50, 2)):
        seq.append((await one(30_000 + i))[1])
    t0 = time.perf_counter()
    res = await asyncio.gather(*(one(i) for i in range(runs)))
    wall = time.perf_counter() - t0
    added = sorted(a for ok, a in res if ok)
    seq.sort()
    pct = lambda v, p: v[min(len(v) - 1, round((len(v) - 1) * p))]
    print(json.dumps({
        "runs": runs, "errors": sum(1 for ok, _ in res if not ok), "wall_s": wall,
        "runs_per_s": len(added) / wall, "added_ms_per_round_p50": pct(added, 0.5),
        "added_ms_per_round_p99": pct(added, 0.99),
        "alone_added_ms_per_round_p50": pct(seq, 0.5), "alone_added_ms_per_round_p99": pct(seq, 0.99),
        "runs_with_timed_model_requests": len(model_time),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))

asyncio.run(main())
