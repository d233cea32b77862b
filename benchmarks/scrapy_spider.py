"""The crawl a Python user would write with Scrapy: follow a site's links and requisites, keep each
exchange as WARC records with warcio. No mirror. crawl_bench.py runs it in a virtual environment of
its own (Scrapy is never a dependency of archiver):

    SCRAPY_VENV/bin/python benchmarks/scrapy_spider.py http://HOST:PORT/index.html OUT --concurrency 16

It follows what archiver follows (links of a, area, iframe, frame; requisites of link, img src and
srcset, picture source, script, video, audio, track, embed, object, input type=image; CSS url() and
@import, in <style>, style attributes and stylesheets), within the seed's host for links and on any
host for requisites. Redirects are recorded hop by hop and followed as links (Scrapy's own redirect
middleware would keep only the last answer); 429, 502, 503 and 504 are tried again as archiver does,
every other answer is archived as sent. robots.txt is not asked for (wget runs with robots=off too).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response, TextResponse
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_NAME = "site.warc.gz"
"""The WARC file under OUT (crawlcounts.py reads OUT/site.warc.gz)."""
LINKS = "a::attr(href), area::attr(href), iframe::attr(src), frame::attr(src)"
REQUISITES = (
    "link::attr(href), img::attr(src), script::attr(src), source::attr(src), video::attr(src), "
    "video::attr(poster), audio::attr(src), track::attr(src), embed::attr(src), object::attr(data), "
    "input[type=image]::attr(src)"
)
SRCSETS = "img::attr(srcset), source::attr(srcset)"
STYLES = "style::text, [style]::attr(style)"
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""", re.I)
HTML_TYPES = (b"text/html", b"application/xhtml+xml")


def css_urls(text: str) -> list[str]:
    """url() and @import targets of a piece of CSS."""
    return [first or second for first, second in CSS_URL.findall(text)]


class ArchiveSpider(scrapy.Spider):
    """Crawls one site from a seed, writing every answer as a WARC response and request record."""

    name = "archive"

    def __init__(self, seed: str, warc: WARCWriter, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.seed = seed
        self.host = urlsplit(seed).netloc
        self.warc = warc
        self.seen: set[str] = {seed}
        """URLs requested already: Scrapy's dupefilter would drop them too, but only after each
        request went through the spider middlewares (Python docs pages hold thousands of links)."""

    async def start(self):  # type: ignore[no-untyped-def]
        yield scrapy.Request(self.seed, callback=self.parse)

    def start_requests(self):  # type: ignore[no-untyped-def]  # Scrapy before 2.13
        yield scrapy.Request(self.seed, callback=self.parse)

    def parse(self, response: Response):  # type: ignore[no-untyped-def]
        self.archive(response)
        location = response.headers.get(b"Location")
        if 300 <= response.status < 400 and location:
            yield self.follow(response, location.decode("latin-1"))
            return
        content_type = (response.headers.get(b"Content-Type") or b"").split(b";")[0].strip().lower()
        if not isinstance(response, TextResponse) or response.status >= 400:
            return
        if content_type in HTML_TYPES:
            found = [(url, False) for url in response.css(LINKS).getall()]
            found += [(url, True) for url in response.css(REQUISITES).getall()]
            for srcset in response.css(SRCSETS).getall():
                found += [(part.strip().split(" ")[0], True) for part in srcset.split(",") if part.strip()]
            for style in response.css(STYLES).getall():
                found += [(url, True) for url in css_urls(style)]
        elif content_type == b"text/css":
            found = [(url, True) for url in css_urls(response.text)]
        else:
            return
        for url, requisite in found:
            absolute = urldefrag(response.urljoin(url.strip())).url
            parts = urlsplit(absolute)
            if absolute in self.seen or parts.scheme not in ("http", "https"):
                continue
            if requisite or parts.netloc == self.host:
                self.seen.add(absolute)
                yield scrapy.Request(absolute, callback=self.parse)

    def follow(self, response: Response, location: str) -> scrapy.Request:
        """The request for where a redirect points (a link like any other: the dupefilter drops
        a URL requested already)."""
        target = urldefrag(response.urljoin(location)).url
        self.seen.add(target)
        return scrapy.Request(target, callback=self.parse)

    def archive(self, response: Response) -> None:
        """The exchange as a response record and a request record, as warcio's users write them."""
        status = f"{response.status} {_reason(response.status)}"
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, values in response.headers.items()
            for value in values
        ]
        http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
        record = self.warc.create_warc_record(
            response.url, "response", payload=io.BytesIO(response.body), http_headers=http
        )
        self.warc.write_record(record)
        request = response.request
        assert request is not None
        path = urlsplit(request.url)
        request_line = (path.path or "/") + (f"?{path.query}" if path.query else "")
        request_headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, values in request.headers.items()
            for value in values
        ]
        request_http = StatusAndHeaders(
            f"{request.method} {request_line} HTTP/1.1", request_headers, is_http_request=True
        )
        self.warc.write_record(
            self.warc.create_warc_record(
                request.url,
                "request",
                http_headers=request_http,
                warc_headers_dict={"WARC-Concurrent-To": record.rec_headers.get_header("WARC-Record-ID")},
            )
        )


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def main() -> int:
    """Crawl the seed into OUT/site.warc.gz."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed")
    parser.add_argument("output", type=Path)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    with open(args.output / WARC_NAME, "wb") as out:
        warc = WARCWriter(out, gzip=True, warc_version="1.1")
        process = CrawlerProcess(
            {
                "LOG_LEVEL": "WARNING",
                "ROBOTSTXT_OBEY": False,
                "CONCURRENT_REQUESTS": args.concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
                "DOWNLOAD_DELAY": 0,
                "REDIRECT_ENABLED": False,
                "HTTPERROR_ALLOW_ALL": True,
                "RETRY_HTTP_CODES": [429, 502, 503, 504],
                "TELNETCONSOLE_ENABLED": False,
                "USER_AGENT": "scrapy-bench",
            }
        )
        process.crawl(ArchiveSpider, seed=args.seed, warc=warc)
        process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
