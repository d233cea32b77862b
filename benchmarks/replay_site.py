"""A small site of awkward answers, for benchmarks/replay_check.py: every byte of each answer is
written by hand on the socket.

    python3 benchmarks/replay_site.py PORT

Its pages: a header line of 50 KB, header values in bytes that are not UTF-8, URLs
with spaces and characters outside ASCII, a chunked and gzip-encoded page, a body cut
short of its Content-Length, redirects, a page with an ETag that answers 304 to a
conditional request (for a re-archive with --previous), one that changes at each
fetch, and one whose identical image is stored as a revisit.
"""

from __future__ import annotations

import gzip
import socketserver
import sys
import time
import urllib.parse

INDEX = """<!doctype html><html><head><title>Awkward</title>
<link rel="stylesheet" href="/style.css"></head><body>
<a href="/big-header">big header</a> <a href="/latin1-header">latin-1 header</a>
<a href="/with space/page.html">space</a> <a href="/café/naïve.html">non-ASCII</a>
<a href="/gzip-chunked">gzip chunked</a> <a href="/cut">cut short</a>
<a href="/moved">moved</a> <a href="/etag">etag</a> <a href="/changing">changing</a>
<a href="/query?b=2&amp;a=1">query</a> <a href="/dir/">dir</a>
<img src="/a.png"><img src="/b.png"><img src="/img%20one.png"><img src="/odd|[x]^.png?v={1}|`">
</body></html>"""
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def page(title: str) -> bytes:
    return f"<!doctype html><title>{title}</title><p>{title}</p><a href='/'>home</a>".encode()


def answer(status: str, headers: list[tuple[bytes, bytes]], body: bytes, length: int | None = None) -> bytes:
    lines = [b"HTTP/1.1 " + status.encode(), *(name + b": " + value for name, value in headers)]
    if not any(name.lower() in (b"transfer-encoding", b"content-length") for name, _ in headers):
        lines.append(b"Content-Length: " + str(len(body) if length is None else length).encode())
    return b"\r\n".join([*lines, b"Connection: close", b"", b""]) + body


def html(body: bytes, *extra: tuple[bytes, bytes]) -> bytes:
    return answer("200 OK", [(b"Content-Type", b"text/html; charset=utf-8"), *extra], body)


def chunked(data: bytes) -> bytes:
    parts = [data[i : i + 100] for i in range(0, len(data), 100)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def route(path: str, headers: dict[str, str]) -> bytes:
    plain = urllib.parse.unquote(path.split("?", 1)[0])
    if plain == "/":
        return html(INDEX.encode())
    if plain == "/style.css":
        return answer(
            "200 OK", [(b"Content-Type", b"text/css")], b"body { background: url('/bg%20image.png') }"
        )
    if plain in ("/a.png", "/b.png", "/img one.png", "/bg image.png", "/odd|[x]^.png"):
        return answer("200 OK", [(b"Content-Type", b"image/png")], PNG)
    if plain == "/big-header":
        return html(page("Big header"), (b"X-Big", b"a" * 50_000))
    if plain == "/latin1-header":
        return html(
            page("Latin-1 header"),
            (b"X-Name", b"caf\xe9 \xff\xfe"),
            (b"Content-Disposition", b'inline; filename="r\xe9sum\xe9.html"'),
        )
    if plain in ("/with space/page.html", "/café/naïve.html", "/dir/"):
        return html(page(plain))
    if plain == "/query":
        return html(page("Query"))
    if plain == "/gzip-chunked":
        body = chunked(gzip.compress(page("Gzip chunked") * 20))
        return answer(
            "200 OK",
            [
                (b"Content-Type", b"text/html"),
                (b"Content-Encoding", b"gzip"),
                (b"Transfer-Encoding", b"chunked"),
            ],
            body,
        )
    if plain == "/cut":
        return html(page("Cut") + b" " * 200)[:-150]  # its Content-Length says 150 bytes more
    if plain == "/moved":
        return answer(
            "301 Moved Permanently", [(b"Location", b"/dir/"), (b"Content-Type", b"text/html")], b""
        )
    if plain == "/etag":
        if headers.get("if-none-match") == '"v1"':
            return answer("304 Not Modified", [(b"ETag", b'"v1"')], b"", length=0)
        return html(page("ETag"), (b"ETag", b'"v1"'), (b"Last-Modified", b"Mon, 02 Jan 2026 00:00:00 GMT"))
    if plain == "/changing":
        return html(page(f"Changing {time.time_ns()}"))
    return answer("404 Not Found", [(b"Content-Type", b"text/plain")], b"not found")


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        request = self.rfile.readline(65536).decode("latin-1").split()
        headers = {}
        while (line := self.rfile.readline(65536)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if len(request) >= 2:
            self.wfile.write(route(request[1], headers))


def main() -> None:
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), Handler) as server:
        print(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
