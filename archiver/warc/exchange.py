"""A capture as WARC records: its request and response records, or a revisit, encoded.

Pure CPU work on values: a worker process can encode a capture's records
before the writer chooses the WARC file they go in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from archiver.warc import records
from archiver.warc.capture import Capture
from archiver.warc.records import warc_date

TRANSFER_ENCODING_RENAMED = "X-Archiver-Transfer-Encoding"
CONTENT_LENGTH_RENAMED = "X-Archiver-Content-Length"


def archived_headers(headers: list[tuple[str, str]], body_length: int | None = None) -> list[tuple[str, str]]:
    """Response headers as stored: the body is de-chunked, so Transfer-Encoding is renamed; and
    a Content-Length other than ``body_length``, the length of the body stored (one cut short:
    the peer closed, the timeout or --max-file-size ended it) is renamed too. Replay tools send
    a record's Content-Length as it is (pywb's raw ``id_`` replay, and any replay of a body it
    does not rewrite): bytes the record does not hold would leave every client waiting for them.

    Content-Encoding stays: the body is stored still compressed.

    >>> archived_headers([("Content-Length", "1000"), ("Transfer-Encoding", "chunked")], 24)
    [('X-Archiver-Content-Length', '1000'), ('X-Archiver-Transfer-Encoding', 'chunked')]
    >>> archived_headers([("Content-Length", "24")], 24)
    [('Content-Length', '24')]
    """

    def stored_name(name: str, value: str) -> str:
        lowered = name.lower()
        if lowered == "transfer-encoding":
            return TRANSFER_ENCODING_RENAMED
        if lowered == "content-length" and body_length is not None and value.strip() != str(body_length):
            return CONTENT_LENGTH_RENAMED
        return name

    return [(stored_name(name, value), value) for name, value in headers]


@dataclass(frozen=True)
class Exchange:
    """A capture's response and request records, encoded before a WARC file is chosen."""

    response_id: str
    """The response record's WARC-Record-ID (the request names it in WARC-Concurrent-To)."""
    response: bytes
    """The response record as one gzip member."""
    request: bytes


def _common_fields(capture: Capture) -> records.Fields:
    fields = [("WARC-Date", warc_date(capture.date))]
    if capture.ip_address:
        fields.append(("WARC-IP-Address", capture.ip_address))
    return fields


def response_head(capture: Capture) -> bytes:
    """The HTTP head of the response of ``capture`` as stored (see archived_headers)."""
    return records.http_head(
        f"{capture.http_version} {capture.status_line}",
        archived_headers(capture.response_headers, capture.body_length),
    )


def request_record(capture: Capture, response_id: str, record_id: str | None = None) -> bytes:
    """The request record of ``capture`` (a gzip member), concurrent to ``response_id``."""
    fields = [
        *_common_fields(capture),
        ("WARC-Type", "request"),
        ("WARC-Record-ID", record_id or records.new_record_id()),
        ("WARC-Target-URI", capture.url),
        ("WARC-Payload-Digest", records.EMPTY_PAYLOAD_DIGEST),
        ("WARC-Concurrent-To", response_id),
    ]
    return records.encode_record(
        fields,
        records.REQUEST_TYPE,
        records.http_head(capture.request_line, capture.request_headers, "utf-8"),
    )


def revisit_record(capture: Capture, record_id: str, refers_to_uri: str, refers_to_date: str) -> bytes:
    """A revisit record for ``capture``, whose payload is stored at ``refers_to_uri``: headers only."""
    fields = [
        *_common_fields(capture),
        ("WARC-Type", "revisit"),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", capture.url),
        ("WARC-Profile", records.REVISIT_PROFILE),
        ("WARC-Refers-To-Target-URI", refers_to_uri),
        ("WARC-Refers-To-Date", refers_to_date),
        ("WARC-Payload-Digest", capture.payload_digest),
    ]
    return records.encode_record(fields, records.RESPONSE_TYPE, response_head(capture))


def not_modified_record(capture: Capture, record_id: str) -> bytes:
    """The server-not-modified revisit of a 304 (``capture.not_modified``): the 304's own head,
    referring to the stored response whose payload (``capture.payload_digest``) it confirmed."""
    answer = capture.not_modified
    assert answer is not None
    fields = [
        *_common_fields(capture),
        ("WARC-Type", "revisit"),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", capture.url),
        ("WARC-Profile", records.NOT_MODIFIED_PROFILE),
        ("WARC-Refers-To-Target-URI", answer.refers_to_uri),
        ("WARC-Refers-To-Date", answer.refers_to_date),
        ("WARC-Payload-Digest", capture.payload_digest),
    ]
    head = records.http_head(f"{capture.http_version} {answer.status_line}", archived_headers(answer.headers))
    return records.encode_record(fields, records.RESPONSE_TYPE, head)


def response_fields(capture: Capture, record_id: str) -> records.Fields:
    """The WARC fields of the response record of ``capture`` (digests and length come later)."""
    fields = [*_common_fields(capture), ("WARC-Payload-Digest", capture.payload_digest)]
    if capture.truncated:
        fields.append(("WARC-Truncated", capture.truncated))
    return [
        *fields,
        ("WARC-Type", "response"),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", capture.url),
    ]


def encode_exchange(capture: Capture, make_id: Callable[[], str] = records.new_record_id) -> Exchange:
    """The response and request records of ``capture``, encoded; reads its body to the end.

    Pure CPU work on values: a worker process can do it before the writer appends.
    A 304 (``capture.not_modified``) is its server-not-modified revisit.
    """
    response_id = make_id()
    if capture.not_modified is not None:
        response = not_modified_record(capture, response_id)
        return Exchange(response_id, response, request_record(capture, response_id, make_id()))
    response = records.encode_record(
        response_fields(capture, response_id), records.RESPONSE_TYPE, response_head(capture), capture.body
    )
    return Exchange(response_id, response, request_record(capture, response_id, make_id()))
