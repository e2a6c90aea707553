#!/usr/bin/env bash
# Instructions a `kiln serve` run costs, counted by callgrind: steadier than CPU time, which
# moves by a tenth from one pass to the next on a shared machine (BENCHMARKS.md, issue 63).
#
# The serve_load scenario (5 rounds, a tool call in each but the last, against `kiln mock`),
# driven by CONCURRENCY keep-alive clients (Python's standard library, in another process).
# The server runs 100 runs and then 500 under callgrind; the difference over 400 is a run's
# count, the start and the shutdown cancelling out. With the bare proxy's binary (the
# serve_load bench's own, `KILN_BARE_PROXY`) it counts the floor the same way.
#
#   benches/compare/serve_instructions.sh [KILN_BINARY] [FLOOR_BINARY]
#
# Defaults: target/release/kiln, and no floor. Needs valgrind and python3. CONCURRENCY (20)
# and KEEP (a folder to keep the callgrind files in) from the environment.
set -euo pipefail

kiln=${1:-target/release/kiln}
floor=${2:-}
concurrency=${CONCURRENCY:-20}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

for tool in valgrind python3 callgrind_annotate; do
    command -v "$tool" > /dev/null || { echo "serve_instructions: $tool is needed" >&2; exit 2; }
done
[ -x "$kiln" ] || { echo "serve_instructions: no kiln binary at $kiln (cargo build --release)" >&2; exit 2; }

python3 - "$work/scenario.json" <<'PY'
import json, sys
turns = [{"tool_calls": [{"name": "step", "args": {"n": i}}]} for i in range(1, 5)]
turns.append({"text": "All done."})
json.dump({"by_round": True, "record": False, "turns": turns}, open(sys.argv[1], "w"))
PY

# The first line a server prints ends with its URL.
url_of() {
    for _ in $(seq 600); do
        if [ -s "$1" ]; then head -1 "$1" | awk '{print $NF}'; return; fi
        sleep 0.2
    done
    echo "serve_instructions: $1 printed no address" >&2
    exit 1
}

"$kiln" mock "$work/scenario.json" --port 0 > "$work/mock.out" 2> /dev/null &
mock=$(url_of "$work/mock.out")
mkdir "$work/scripts"
cat > "$work/scripts/load.rhai" <<RHAI
tool("step").description("One step").param("n", "int").handler(|a| #{ n: a.n, ok: true });
agent("load").provider("openai").model("m").base_url("$mock/v1").tools(["step"]).max_iterations(6);
RHAI

# Runs `runs` requests against $1's URL from $concurrency clients; fails on a wrong answer.
load() {
    python3 - "$1" "$2" "$concurrency" <<'PY'
import http.client, json, sys, threading, urllib.parse
url, runs, conc = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
left, bad, lock = [runs], [0], threading.Lock()
def client():
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    while True:
        with lock:
            if left[0] <= 0:
                return
            left[0] -= 1
            i = left[0]
        body = json.dumps({"model": "load", "messages": [{"role": "user", "content": f"go {i}"}]})
        c.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        answer = json.loads(c.getresponse().read())
        if answer["choices"][0]["message"]["content"] != "All done.":
            bad[0] += 1
threads = [threading.Thread(target=client) for _ in range(conc)]
for t in threads: t.start()
for t in threads: t.join()
sys.exit(1 if bad[0] else 0)
PY
}

# The instructions of one server process (its command in "$@") over `runs` runs.
count() {
    local runs=$1 out="$work/callgrind.$1.$RANDOM"
    shift
    OPENAI_API_KEY=sk-bench KILN_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$@" > "$work/server.out" 2> "$work/server.err" &
    local pid=$!
    load "$(url_of "$work/server.out")" "$runs"
    kill -TERM "$pid"
    wait "$pid" || true
    rm -f "$work/server.out"
    [ -n "${KEEP:-}" ] && cp "$out" "$KEEP/"
    callgrind_annotate "$out" 2> /dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'
}

# A run's instructions: (500 runs - 100 runs) / 400.
per_run() {
    local small large
    small=$(count 100 "$@")
    large=$(count 500 "$@")
    echo $(( (large - small) / 400 ))
}

serve=("$kiln" serve --bind 127.0.0.1:0 --no-stdlib --scripts "$work/scripts" --db "$work/kiln.db"
    --max-runs "$concurrency" --queue "$concurrency" --run-timeout 0 --max-connections 4096)
k=$(per_run "${serve[@]}")
echo "kiln serve: $k instructions a run ($concurrency clients)"
if [ -n "$floor" ]; then
    f=$(KILN_BARE_PROXY=$mock per_run "$floor")
    echo "bare proxy: $f instructions a run"
    python3 -c "print(f'kiln against the floor: {$k / $f:.2f}x')"
fi
