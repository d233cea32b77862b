#!/usr/bin/env bash
# Archive the local demo site end to end, with no internet:
# serve examples/site, crawl it, verify the snapshot, and say where to browse it.
set -euo pipefail
cd "$(dirname "$0")"
PORT="${PORT:-8765}"
OUT="${1:-out/demo-snapshot}"

python3 serve_site.py "$PORT" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
    sleep 0.1
done

rm -rf "$OUT"
archiver crawl "http://127.0.0.1:$PORT/" -o "$OUT"
archiver verify "$OUT"
echo
echo "Browse the snapshot: open $(cd "$OUT" && pwd)/index.html"
echo "or run: archiver serve $OUT"
