#!/usr/bin/env bash
# Install what the tests need, then run the whole suite, in parallel.
#   - the package with its test extras (pytest, ruff, mypy...)
#   - Playwright's Python driver, and Debian's Chromium for the browser test
#     (installed with apt-get when missing and we are root)
#   - Debian's redis-server for the crawl node tests (the same way); the tests start
#     their own on a free port, with no persistence
#   - pywb, cdxj-indexer and py-wacz in their own virtual environment
#     (.cache/interop-venv), made on first use by tests/test_interop.py
#   - ReplayWeb.page (the replaywebpage npm package) unpacked in .cache/replaywebpage,
#     for the WACZ replay test: its prebuilt ui.js and sw.js are all it needs, so the
#     package alone is fetched (npm pack), not the dependencies of its desktop app
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q -e ".[test]"

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
            >/dev/null 2>&1 || echo "warning: could not install chromium" >&2
    fi
fi

if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) \
            >/dev/null 2>&1 || echo "warning: could not install redis-server" >&2
    fi
fi

REPLAYWEBPAGE=replaywebpage@2.5.3
RWP_DIR=.cache/replaywebpage
if ! grep -qs "\"version\": \"${REPLAYWEBPAGE#*@}\"" "$RWP_DIR/package/package.json"; then
    if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm) >/dev/null 2>&1 || true
    fi
    rm -rf "$RWP_DIR" && mkdir -p "$RWP_DIR"
    (cd "$RWP_DIR" && npm pack --silent "$REPLAYWEBPAGE" >/dev/null 2>&1 && tar xzf replaywebpage-*.tgz \
        && rm -f replaywebpage-*.tgz) || echo "warning: could not install $REPLAYWEBPAGE" >&2
fi

python3 -m ruff check archiver tests benchmarks examples
python3 -m ruff format --check archiver tests benchmarks examples
python3 -m mypy archiver   # --strict, from pyproject.toml
(cd tests && python3 -m mypy --config-file mypy.ini .)   # the tests, less strictly
# One pytest process per CPU, up to 4 (each test file stays in one process: --dist loadfile);
# most tests wait on servers, browsers and timeouts, not on the CPU.
# One worker more than the CPUs (up to four): many tests wait on timers, servers, signals or a
# browser's renders rather than on the CPU (on 2 CPUs, 3 workers took 11 min 50 s, 2 took 13 min 50).
workers=$(python3 -c 'import os; n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(); print(max(2, min(4, (n or 1) + 1)))')
# Only the plugins the suite is written for: pytest plugins installed elsewhere on the machine
# (pytest-benchmark refuses to start under xdist, pytest-randomly reorders) are not loaded.
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python3 -m pytest -p xdist.plugin -p pytest_asyncio.plugin \
    -p pytest_aiohttp.plugin -n "$workers" --dist loadfile "$@"
