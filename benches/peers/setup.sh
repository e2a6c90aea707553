#!/usr/bin/env bash
# Installs the Python peers of the loop benchmark (pinned) into benches/peers/.venv.
# Used by benches/run_all.sh; the venv is not committed.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
    "pydantic-ai-slim[openai]==2.68.0" \
    "openai-agents==0.24.0"
.venv/bin/python -c "import pydantic_ai, agents; print('peers:', 'pydantic-ai', pydantic_ai.__version__, '/ openai-agents', agents.__version__)"
