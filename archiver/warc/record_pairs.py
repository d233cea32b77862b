"""Pairs of records: each response (or revisit) and the request it answered, met in any order.

The crawl writes a request beside its response, of the same URL and the same WARC-Date
(DESIGN.md), the request naming the response in WARC-Concurrent-To. A pair that does not
hold so is damage: the request that stands with a response is not the one sent for it.

>>> from archiver.report import Report
>>> report, pairs = Report(), RecordPairs()
>>> pairs.response("<urn:r>", ("a.warc.gz", 0), "http://h/", "2026-01-01T00:00:00Z", report)
>>> pairs.request("<urn:r>", ("a.warc.gz", 90), "http://h/", "2025-01-01T00:00:00Z", report)
>>> report.examples["unpaired_record"][0].detail
'request for http://h/ dated 2025-01-01T00:00:00Z is paired with a response dated 2026-01-01T00:00:00Z'
>>> pairs.mispaired
{('a.warc.gz', 90)}
"""

from __future__ import annotations

from archiver.report import UNPAIRED_RECORD, Report

Key = tuple[str, int]
"""Where a record is: (file name, offset)."""


class RecordPairs:
    """The requests and responses of a scan still waiting for their other half."""

    def __init__(self) -> None:
        self._responses: dict[str, tuple[Key, str, str]] = {}
        """Response ids still waiting for their request: id -> (where, url, date)."""
        self._requests: dict[str, tuple[Key, str, str]] = {}
        """Requests whose response was not met yet: WARC-Concurrent-To -> (where, url, date)."""
        self.mispaired: set[Key] = set()
        """Requests paired with a response of another URL or date (reported): damage a repair
        fetches again."""

    def request(self, response_id: str, key: Key, url: str, date: str, report: Report) -> None:
        """A request record at ``key``, naming the response ``response_id``."""
        found = self._responses.pop(response_id, None) if response_id else None
        if found is None:
            self._requests[response_id or _where(key)] = (key, url, date)
        else:
            self._match(key, url, date, found[1], found[2], report)

    def response(self, record_id: str, key: Key, url: str, date: str, report: Report) -> None:
        """A response or revisit record at ``key``, of id ``record_id``."""
        found = self._requests.pop(record_id, None)
        if found is None:
            self._responses[record_id] = (key, url, date)
        else:
            self._match(found[0], found[1], found[2], url, date, report)

    def _match(self, key: Key, url: str, date: str, answered: str, answered_on: str, report: Report) -> None:
        """Check the request at ``key`` (of ``url``, ``date``) against its response's URL and date."""
        if answered != url:
            report.add(
                UNPAIRED_RECORD, _where(key), f"request for {url} is paired with a response for {answered}"
            )
        elif answered_on != date:
            report.add(
                UNPAIRED_RECORD,
                _where(key),
                f"request for {url} dated {date} is paired with a response dated {answered_on}",
            )
        else:
            return
        self.mispaired.add(key)

    def finish(self, report: Report) -> None:
        """Report each record whose other half never came."""
        for key, url, _date in self._requests.values():
            report.add(UNPAIRED_RECORD, _where(key), f"request for {url} has no response")
        for key, url, _date in self._responses.values():
            report.add(UNPAIRED_RECORD, _where(key), f"response for {url} has no request")
        self._requests.clear()
        self._responses.clear()


def _where(key: Key) -> str:
    return f"{key[0]}@{key[1]}"
