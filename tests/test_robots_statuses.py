"""What each status of a robots.txt answer gives, fetched from a raw server as the crawl reads its
status line (as Chromium does: four digits, zeros before, one or two digits): its rules (2xx),
none (3xx it cannot follow or gives up, 4xx but 429), or nothing of the host until it answers
(5xx, 429, no final answer, and a code outside 100-599, which RFC 9110 has a client read as a 5xx)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import manifest_rows
from raw_server import RawRequest, RawServer
from repairs import run_archiver

from archiver.robots_answer import RULES, UNAVAILABLE, UNREACHABLE
from archiver.scope import ROBOTS, ROBOTS_UNREACHABLE
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED
from archiver.verify.verifier import verify_snapshot

RULES_TEXT = b"User-agent: *\nDisallow: /kept-out\n"
"""The body of every robots.txt answer here: read as its rules, it keeps /kept-out out."""

ANSWERS = {
    # status line the robots.txt is answered with: what the crawl reads from it
    b"HTTP/1.1 200 OK": RULES,
    b"HTTP/1.1 299 Odd": RULES,
    b"HTTP/1.1 0200 OK": RULES,
    b"HTTP/1.1 300 Multiple Choices": UNAVAILABLE,
    b"HTTP/1.1 304 Not Modified": UNAVAILABLE,
    b"HTTP/1.1 302 Found": UNAVAILABLE,  # no Location: a redirect that leads nowhere
    b"HTTP/1.1 404 Not Found": UNAVAILABLE,
    b"HTTP/1.1 0404 Not Found": UNAVAILABLE,
    b"HTTP/1.1 499 Odd": UNAVAILABLE,
    b"HTTP/1.1 429 Too Many Requests": UNREACHABLE,
    b"HTTP/1.1 500 Internal Server Error": UNREACHABLE,
    b"HTTP/1.1 599 Odd": UNREACHABLE,
    b"HTTP/1.1 0 Zero": UNREACHABLE,
    b"HTTP/1.1 020 Odd": UNREACHABLE,
    b"HTTP/1.1 20x": UNREACHABLE,
    b"HTTP/1.1 99 Odd": UNREACHABLE,
    b"HTTP/1.1 600 Odd": UNREACHABLE,
    b"HTTP/1.1 999 Odd": UNREACHABLE,
    b"HTTP/1.1 1000 Odd": UNREACHABLE,
    b"HTTP/1.1 2000 OK": UNREACHABLE,
    b"HTTP/1.1 4040 Odd": UNREACHABLE,
    b"HTTP/1.1 99999999999999 Odd": UNREACHABLE,
    b"HTTP/1.1 101 Switching Protocols": UNREACHABLE,  # no upgrade was asked: no HTTP answer
}


def _site(robots: dict[str, bytes]) -> RawServer:
    """A raw server of two pages, / linking to /kept-out, whose robots.txt (and the URLs it
    redirects to) get the whole answers ``robots`` gives by path."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path in robots:
            writer.write(robots[request.path])
            return False
        body = b'<a href="/kept-out">kept out?</a>' if request.path == "/" else b"in"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body))
        writer.write(body)
        return True

    return RawServer(handler)


def _answer(status_line: bytes, *fields: bytes) -> bytes:
    """A whole answer of ``status_line``, ``fields`` and RULES_TEXT, framed by its length."""
    head = b"\r\n".join(
        (status_line, *fields, b"Content-Type: text/plain", b"Content-Length: %d" % len(RULES_TEXT))
    )
    return head + b"\r\n\r\n" + RULES_TEXT


async def _crawled_behind(
    robots: dict[str, bytes], run_crawl, verified: bool = False, **options
) -> tuple[str, dict, dict, str]:
    """The crawl of a _site() whose robots.txt answers are ``robots``: its base URL, the rows of
    its pages and of what it fetched for crawlers, by URL, and its log; with ``verified``, archiver
    verify passes on its snapshot."""
    server = await _site(robots).start()
    base = server.url("")
    try:
        result = await run_crawl(server.url("/"), max_tries=1, timeout=2.0, sitemaps=False, **options)
    finally:
        await server.close()
    root = result.snapshot.root
    if verified:
        report = verify_snapshot(root)
        assert report.ok, report.render_text(str(root))
    log = (root / "logs" / "crawl.log").read_text()
    return base, manifest_rows(root), manifest_rows(root, for_crawlers=True), log


def _read_as(base: str, rows: dict) -> str:
    """What the crawl read its robots.txt as, by what it did with the site's two pages."""
    home, kept_out = rows[base + "/"], rows.get(base + "/kept-out")
    if (home.outcome, home.reason) == (SKIPPED, ROBOTS_UNREACHABLE):
        return UNREACHABLE
    assert home.outcome == FETCHED, home
    assert kept_out is not None, rows
    if (kept_out.outcome, kept_out.reason) == (SKIPPED, ROBOTS):
        return RULES
    assert kept_out.outcome == FETCHED, kept_out
    return UNAVAILABLE


@pytest.mark.parametrize("status_line", ANSWERS, ids=[line.decode() for line in ANSWERS])
async def test_each_status_of_a_robots_txt_is_read_as_rfc_9309_and_rfc_9110_read_it(status_line, run_crawl):
    """A status outside 100-599 (``020``, ``2000``) was read by its place among the numbers: one
    under 100 gave its body's rules, though no server said the body holds them; RFC 9110 has a
    client read such a status as a server error, which keeps the host out until it answers."""
    base, rows, kept, log = await _crawled_behind({"/robots.txt": _answer(status_line)}, run_crawl)
    assert _read_as(base, rows) == ANSWERS[status_line]
    if ANSWERS[status_line] == UNREACHABLE and not status_line.startswith(b"HTTP/1.1 101"):
        assert kept[base + "/robots.txt"].status is not None  # the answer is kept, whatever its status
        # The warning says why, a status outside 100-599 among the reasons (not "a server error").
        assert "out of reach (a server error, a status outside 100-599, or no answer)" in log


async def test_a_robots_txt_with_no_final_answer_keeps_its_host_out(run_crawl):
    """An interim answer and then the close: no final answer came, as with no answer at all."""
    interim_only = {"/robots.txt": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n"}
    base, rows, _, _ = await _crawled_behind(interim_only, run_crawl)
    assert _read_as(base, rows) == UNREACHABLE


def _chain(hops: int) -> dict[str, bytes]:
    """/robots.txt redirecting ``hops`` times, to /r1, /r2..., the last answering its rules."""
    paths = ["/robots.txt", *(f"/r{hop}" for hop in range(1, hops + 1))]
    answers = {
        path: _answer(b"HTTP/1.1 301 Moved Permanently", b"Location: " + to.encode())
        for path, to in zip(paths, paths[1:], strict=False)
    }
    answers[paths[-1]] = _answer(b"HTTP/1.1 200 OK")
    return answers


def _loop() -> dict[str, bytes]:
    """/robots.txt redirecting to /r1, /r2 and back to /robots.txt."""
    answers = _chain(2)
    answers["/r2"] = _answer(b"HTTP/1.1 302 Found", b"Location: /robots.txt")
    return answers


async def test_a_robots_txt_redirected_five_times_gives_the_rules_it_leads_to(run_crawl):
    """RFC 9309 2.3.1.2: a crawler follows at least five redirects of a robots.txt, and the
    rules it reaches apply to the first host."""
    base, rows, kept, _ = await _crawled_behind(_chain(5), run_crawl)
    assert _read_as(base, rows) == RULES
    assert kept[base + "/robots.txt"].outcome == REDIRECTED and kept[base + "/r5"].status == 200


async def test_a_robots_txt_is_followed_through_five_redirects_whatever_max_redirects_says(run_crawl):
    """RFC 9309 2.3.1.2 asks a crawler to follow at least five redirects of a robots.txt: with
    --max-redirects 2 the chain was given up at its third hop and the host crawled with no rules,
    /kept-out archived against the site's word."""
    base, rows, kept, _ = await _crawled_behind(_chain(5), run_crawl, verified=True, max_redirects=2)
    assert _read_as(base, rows) == RULES
    assert [kept[base + path].outcome for path in ("/robots.txt", "/r1", "/r4")] == [REDIRECTED] * 3
    assert kept[base + "/r5"].status == 200


@pytest.mark.parametrize("robots", [_chain(6), _loop()], ids=["six-redirects", "loop"])
async def test_a_robots_txt_past_five_redirects_or_in_a_loop_has_no_rules(robots, run_crawl):
    """More than five redirects in a row (past --max-redirects too), or a loop: RFC 9309 lets a
    crawler take the robots.txt as unavailable, as Google reads it: everything allowed, as for a
    404. The hop given up is recorded as failed, and verify passes on what was archived."""
    base, rows, kept, _ = await _crawled_behind(robots, run_crawl, verified=True, max_redirects=2)
    assert _read_as(base, rows) == UNAVAILABLE
    given_up = [row for row in kept.values() if row.outcome == FAILED]
    assert len(given_up) == 1 and given_up[0].reason in ("redirect loop", "too many redirects (more than 5)")
    assert base + "/r6" not in kept


async def test_a_resumed_crawl_uses_a_robots_txt_that_said_there_is_none_by_a_3xx(run_crawl, tmp_path):
    """A robots.txt answered by a 3xx that leads nowhere said there are no rules, as a 404 does:
    a crawl resumed within its day uses that answer, as it uses a 404's, and asks it no more."""
    server = await _site({"/robots.txt": _answer(b"HTTP/1.1 302 Found")}).start()
    try:
        first = await run_crawl(server.url("/"), max_pages=1, sitemaps=False)
        await run_crawl(server.url("/"), output=first.snapshot.root, resume=True, sitemaps=False)
        assert server.hits("/robots.txt") == 1
        assert manifest_rows(first.snapshot.root)[server.url("/kept-out")].outcome == FETCHED
    finally:
        await server.close()


@pytest.mark.parametrize("robots", [_chain(5), _chain(6), _loop()], ids=["five", "six", "loop"])
async def test_a_rebuilt_manifest_gives_a_robots_txt_redirected_the_rows_the_crawl_wrote(
    robots, run_crawl, tmp_path
):
    """crawl --resume --repair wrote a robots.txt's hops from the WARC files alone: each found by
    a link at depth 1, and the hop the crawl gave up at a redirect to a URL with no row, a chain
    that ends nowhere, for which verify failed the snapshot the crawl had left complete."""
    server = await _site(robots).start()
    try:
        result = await run_crawl(server.url("/"), max_tries=1, timeout=2.0, sitemaps=False, max_redirects=2)
        root = result.snapshot.root
        before = manifest_rows(root, for_crawlers=True)
        for path in root.glob("manifest.sqlite3*"):
            path.unlink()
        repaired = await asyncio.to_thread(
            run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet"
        )
    finally:
        await server.close()
    assert repaired.returncode == 0, repaired.stderr
    after = manifest_rows(root, for_crawlers=True)
    facts = ("outcome", "reason", "found_by", "depth", "parent", "redirect_to")
    assert {url: [getattr(row, name) for name in facts] for url, row in after.items()} == {
        url: [getattr(row, name) for name in facts] for url, row in before.items()
    }
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
