"""Snapshots written directly with WarcFiles and Manifest, for mirror tests without a crawl."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.warc.capture import Capture
from archiver.warc.dom import RenderedDom, dom_record
from archiver.warc.files import WarcFiles

MOMENT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def payload_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


class SnapshotBuilder:
    """A snapshot folder filled capture by capture: ``snap.page(url, html)``."""

    def __init__(self, root: Path, seeds: tuple[str, ...] = ("http://site.test/",)) -> None:
        self.root = root
        self.seeds = seeds
        (root / "warc").mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest.open(root / "manifest.sqlite3")
        self.warcs = WarcFiles(root / "warc", prefix="test", max_size=10**9, clock=lambda: MOMENT)

    def capture(
        self, url: str, body: bytes, headers: list[tuple[str, str]], status: int = 200, **row: object
    ) -> ManifestRow:
        path = url.split("://", 1)[1].partition("/")[2]
        capture = Capture(
            url=url,
            date=MOMENT,
            request_line=f"GET /{path} HTTP/1.1",
            request_headers=[("Host", url.split("/")[2])],
            status_line=f"{status} {'OK' if status == 200 else 'Status'}",
            http_version="HTTP/1.1",
            response_headers=[*headers, ("Content-Length", str(len(body)))],
            body=io.BytesIO(body),
            body_length=len(body),
            payload_digest=payload_digest(body),
            ip_address="127.0.0.1",
        )
        written = self.warcs.write_capture(capture)
        content_type = dict((k.lower(), v) for k, v in headers).get("content-type", "")
        values: dict[str, object] = dict(
            url=url,
            found_by="link",
            depth=1,
            outcome="fetched",
            tries=1,
            status=status,
            content_type=content_type.split(";")[0].strip() or None,
            length=len(body),
            payload_digest=written.payload_digest,
            fetched_at=written.date,
            warc_file=written.warc_file,
            warc_offset=written.offset,
            warc_length=written.length,
            record_type=written.record_type,
        )
        values.update(row)
        result = ManifestRow(**values)
        self.manifest.upsert(result)
        return result

    def page(
        self,
        url: str,
        markup: str | bytes,
        content_type: str = "text/html",
        status: int = 200,
        gzipped: bool = False,
        title: str | None = None,
    ) -> ManifestRow:
        body = markup.encode("utf-8") if isinstance(markup, str) else markup
        headers = [("Content-Type", content_type)]
        if gzipped:
            body = gzip.compress(body, mtime=0)  # the same bytes every time
            headers.append(("Content-Encoding", "gzip"))
        return self.capture(url, body, headers, status, title=title)

    def file(self, url: str, body: bytes, content_type: str, gzipped: bool = False) -> ManifestRow:
        return self.page(url, body, content_type, gzipped=gzipped)

    def redirect(self, url: str, to: str, status: int = 301) -> ManifestRow:
        row = self.capture(url, b"", [("Location", to)], status)
        redirected = ManifestRow(
            **{**row.__dict__, "outcome": "redirected", "redirect_to": to, "content_type": None}
        )
        self.manifest.upsert(redirected)
        return redirected

    def rendered(self, page: ManifestRow, html: str, *, claimed: bool = True) -> tuple[str, int, int]:
        """Store ``html`` as the rendered DOM of ``page`` (and, if ``claimed``, note it in its row)."""
        dom = RenderedDom(page.url, MOMENT, html.encode("utf-8"), None)
        location = self.warcs.write_member(dom_record(dom, self.warcs.make_id()))
        if claimed:
            self.manifest.set_render(page.url, "always", None, location)
        return location

    def other(self, url: str, outcome: str, reason: str, parent: str | None = None) -> None:
        self.manifest.upsert(
            ManifestRow(url=url, found_by="link", depth=1, outcome=outcome, reason=reason, parent=parent)
        )

    def close(self) -> Path:
        self.warcs.close()
        self.manifest.resolve_redirects()
        self.manifest.close()
        crawl = {
            "archiver_version": "0.1.0",
            "settings": {"seeds": list(self.seeds), "scope": "host", "output": str(self.root)},
            "started": "2026-01-02T03:04:05Z",
            "finished": "2026-01-02T03:05:00Z",
            "stats": {"fetched": 3, "bytes": 1234},
        }
        (self.root / "crawl.json").write_text(json.dumps(crawl), encoding="utf-8")
        return self.root
