"""Bodies as stored versus bodies as parsed: content types and bounded decoding.

WARC records keep bodies as the server sent them (gzip stays gzip). Parsing
needs the decoded bytes, and a hostile server can send a small gzip that
inflates to gigabytes, so decoding stops at a limit.

>>> import gzip
>>> decode_payload(gzip.compress(b"hello"), "gzip", limit=3)
b'hel'
"""

from __future__ import annotations

import codecs
import functools
import zlib

DEFAULT_DECODE_LIMIT = 32 * 1024 * 1024
_CHUNK = 64 * 1024
_ANY_BYTES = bytes(range(256))


def mime_type(content_type: str | None) -> str:
    """The bare MIME type of a Content-Type header value, lowercased ('' if none)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    decoder = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    while pending and len(out) < limit:
        out += decoder.decompress(pending, limit - len(out))
        pending = decoder.unconsumed_tail
        if decoder.eof:
            rest = decoder.unused_data
            # Concatenated gzip members (rare but legal) continue the stream.
            if rest and wbits == 16 + zlib.MAX_WBITS:
                decoder = zlib.decompressobj(wbits)
                pending = rest
            else:
                break
    return bytes(out[:limit])


def decode_payload(raw: bytes, content_encoding: str | None, limit: int = DEFAULT_DECODE_LIMIT) -> bytes:
    """The payload with its Content-Encoding undone, at most ``limit`` bytes.

    Unknown encodings and corrupt streams give back what decoded cleanly (or
    the raw bytes when nothing did): parsing then finds what links it can.
    """
    encodings = [e.strip().lower() for e in (content_encoding or "").split(",") if e.strip()]
    data = raw
    for encoding in reversed(encodings):
        try:
            if encoding in ("gzip", "x-gzip"):
                data = _inflate(data, 16 + zlib.MAX_WBITS, limit)
            elif encoding == "deflate":
                try:
                    data = _inflate(data, zlib.MAX_WBITS, limit)
                except zlib.error:
                    data = _inflate(data, -zlib.MAX_WBITS, limit)
            elif encoding == "identity":
                continue
            else:
                return data[:limit]
        except zlib.error:
            return data[:limit]
    return data[:limit]


@functools.lru_cache(maxsize=256)
def known_encoding(name: str | None) -> str | None:
    """The canonical codec name of ``name``, None if Python has no such codec or it cannot
    read a document: not a text encoding (base64, rot13), or failing on bytes it cannot
    decode even when told to replace them (idna, punycode).

    >>> known_encoding("Latin1"), known_encoding("base64"), known_encoding("idna")
    ('iso8859-1', None, None)
    """
    if not name:
        return None
    try:
        codec = codecs.lookup(name)
        _ANY_BYTES.decode(codec.name, "replace")
    except (LookupError, UnicodeError):
        return None
    return codec.name
