#!/bin/sh
# A kiln agent over A2A, offline, both ways: `kiln mock` plays the model, `kiln serve` makes the
# agents of tests/fixtures/a2a A2A agents, curl calls one as another framework would, and a kiln
# agent calls it as a tool through a2a_agent(...). Run from the repository root:
#   sh examples/a2a/demo.sh        (KILN=path/to/kiln to use another binary)
set -eu
kiln=${KILN:-kiln}
work=$(mktemp -d)
mock='' serve=''
trap 'kill $mock $serve 2>/dev/null; rm -rf "$work"' EXIT

# The first line a server prints ends with its address.
address() {
    n=0
    until [ -s "$1" ]; do
        n=$((n + 1))
        [ "$n" -lt 100 ] || { echo "no address in $1" >&2; exit 1; }
        sleep 0.1
    done
    head -n 1 "$1" | awk '{print $NF}'
}

"$kiln" mock tests/fixtures/a2a/scenario.json --port 0 > "$work/mock.out" &
mock=$!
model=$(address "$work/mock.out")
OPENAI_BASE_URL="$model/v1" OPENAI_API_KEY=unused "$kiln" serve --scripts tests/fixtures/a2a \
    --bind 127.0.0.1:0 --db "$work/serve.db" --no-console > "$work/serve.out" 2> "$work/serve.err" &
serve=$!
url=$(address "$work/serve.out")

# 1. Another framework's client: the agent card, then a message (JSON-RPC binding).
curl -sf "$url/a2a/helper/.well-known/agent-card.json" | grep -q '"name":"helper"'
curl -sf "$url/a2a/helper" -H 'A2A-Version: 1.0' -d '{"jsonrpc": "2.0", "id": 1,
  "method": "SendMessage", "params": {"message": {"messageId": "m1", "role": "ROLE_USER",
  "parts": [{"text": "Quick question"}]}}}' > "$work/task.json"
grep -q '"state":"TASK_STATE_COMPLETED"' "$work/task.json"
grep -q 'A quick answer.' "$work/task.json"
echo "A2A server: the helper answered: A quick answer."

# 2. A kiln agent calling it as a tool (its "model" is a script planner).
cat > "$work/caller.rhai" <<RHAI
a2a_agent("helper").url("$url/a2a/helper").description("Answers questions");
agent("caller").provider("script").tools(["a2a:helper"]).capabilities(["a2a:helper"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" {
            return #{ tool_calls: [#{ name: "a2a__helper", args: #{ message: last.content } }] };
        }
        #{ text: \`the helper said: \${last.content.answer}\` }
    });
RHAI
"$kiln" ask caller "Quick question" --scripts "$work" --db "$work/caller.db" | tee "$work/asked.txt"
grep -q 'the helper said: A quick answer.' "$work/asked.txt"
