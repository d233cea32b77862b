#!/usr/bin/env bash
# Install what the tests need, then run the whole suite.
#   - the package with its test extras (pytest, ruff, mypy...)
#   - Playwright's Python driver, and Debian's Chromium for the browser test
#     (installed with apt-get when missing and we are root)
#   - pywb and cdxj-indexer in their own virtual environment (.cache/interop-venv),
#     made on first use by tests/test_interop.py
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q -e ".[test]"

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
            >/dev/null 2>&1 || echo "warning: could not install chromium" >&2
    fi
fi

python3 -m ruff check archiver tests benchmarks examples
python3 -m ruff format --check archiver tests benchmarks examples
python3 -m mypy archiver   # --strict, from pyproject.toml
python3 -m pytest "$@"
