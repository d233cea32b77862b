"""MIME Sniffing's signatures: the type a body's first bytes name (WHATWG MIME Sniffing), an
image, audio or video whatever it was sent as (sniff_media, sniff_image), or any type for a
body whose answer named none (sniff_unknown: HTML first, then the other signatures, else text
or binary). When an answer is sniffed at all is media_types.py's to say.

>>> sniff_unknown(b"  <!DOCTYPE html><title>x</title>"), sniff_unknown(b"%PDF-1.4"), sniff_unknown(b"hi")
('text/html', 'application/pdf', 'text/plain')
"""

from __future__ import annotations

SNIFF_BYTES = 1445
"""Decoded bytes of a body its type is sniffed from (the "resource header" of MIME Sniffing)."""

_HTML_TAGS = (
    b"<!DOCTYPE HTML",
    b"<HTML",
    b"<HEAD",
    b"<SCRIPT",
    b"<IFRAME",
    b"<H1",
    b"<DIV",
    b"<FONT",
    b"<TABLE",
    b"<A",
    b"<STYLE",
    b"<TITLE",
    b"<B",
    b"<BODY",
    b"<BR",
    b"<P",
    b"<!--",
)
_TAG_END = b" >"
_SIZED = b"\xff" * 4 + b"\x00" * 4
"""The mask of a 4-byte tag, then a 4-byte size (any), as RIFF and FORM files begin."""
SIGNATURES: tuple[tuple[bytes, bytes, str], ...] = (
    # (pattern, mask, type): the byte patterns of MIME Sniffing's tables, in its order.
    (b"%PDF-", b"\xff" * 5, "application/pdf"),
    (b"%!PS-Adobe-", b"\xff" * 11, "application/postscript"),
    (b"\xfe\xff", b"\xff\xff", "text/plain"),
    (b"\xff\xfe", b"\xff\xff", "text/plain"),
    (b"\xef\xbb\xbf", b"\xff\xff\xff", "text/plain"),
    (b"\x00\x00\x01\x00", b"\xff" * 4, "image/x-icon"),
    (b"\x00\x00\x02\x00", b"\xff" * 4, "image/x-icon"),
    (b"BM", b"\xff\xff", "image/bmp"),
    (b"GIF87a", b"\xff" * 6, "image/gif"),
    (b"GIF89a", b"\xff" * 6, "image/gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP", _SIZED + b"\xff" * 6, "image/webp"),
    (b"\x89PNG\r\n\x1a\n", b"\xff" * 8, "image/png"),
    (b"\xff\xd8\xff", b"\xff" * 3, "image/jpeg"),
    (b"\x1aE\xdf\xa3", b"\xff" * 4, "video/webm"),
    (b".snd", b"\xff" * 4, "audio/basic"),
    (b"FORM\x00\x00\x00\x00AIFF", _SIZED + b"\xff" * 4, "audio/aiff"),
    (b"ID3", b"\xff" * 3, "audio/mpeg"),
    (b"OggS\x00", b"\xff" * 5, "application/ogg"),
    (b"MThd\x00\x00\x00\x06", b"\xff" * 8, "audio/midi"),
    (b"RIFF\x00\x00\x00\x00AVI ", _SIZED + b"\xff" * 4, "video/avi"),
    (b"RIFF\x00\x00\x00\x00WAVE", _SIZED + b"\xff" * 4, "audio/wave"),
    (b"\x1f\x8b\x08", b"\xff" * 3, "application/x-gzip"),
    (b"PK\x03\x04", b"\xff" * 4, "application/zip"),
    (b"Rar!\x1a\x07\x00", b"\xff" * 7, "application/x-rar-compressed"),
)
_BINARY = frozenset([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])


_Signature = tuple[int, int, int, str]
"""A signature as _matching() compares it: (length, pattern, mask as big-endian integers, type)."""


def _by_first_byte(signatures: tuple[tuple[bytes, bytes, str], ...]) -> dict[int, tuple[_Signature, ...]]:
    """``signatures`` (in their order) that a head beginning with each byte may match: most
    bodies (a page's ``<``) begin with a byte no signature does, and every body of a crawl is
    sniffed for images. A signature whose mask leaves its first byte open is under every byte."""
    table: dict[int, list[_Signature]] = {byte: [] for byte in range(256)}
    for pattern, mask, kind in signatures:
        signature = (len(pattern), int.from_bytes(pattern, "big"), int.from_bytes(mask, "big"), kind)
        for byte in range(256):
            if byte & mask[0] == pattern[0]:
                table[byte].append(signature)
    return {byte: tuple(found) for byte, found in table.items()}


def _matching(head: bytes, table: dict[int, tuple[_Signature, ...]]) -> str | None:
    """The type of the first signature of ``table`` (_by_first_byte()) that ``head`` matches."""
    if not head:
        return None
    for length, pattern, mask, kind in table[head[0]]:
        if len(head) >= length and int.from_bytes(head[:length], "big") & mask == pattern:
            return kind
    return None


def _is_mp4(head: bytes) -> bool:
    """MIME Sniffing's "matches the signature for MP4": an ftyp box naming an mp4 brand."""
    if len(head) < 12:
        return False
    size = int.from_bytes(head[:4], "big")
    if len(head) < size or size % 4 or head[4:8] != b"ftyp":
        return False
    if head[8:11] == b"mp4":
        return True
    return any(head[at : at + 3] == b"mp4" for at in range(16, size, 4))


_MEDIA = ("image/", "audio/", "video/", "application/ogg")
_ALL = _by_first_byte(SIGNATURES)
_MEDIA_ONLY = _by_first_byte(tuple(signature for signature in SIGNATURES if signature[2].startswith(_MEDIA)))
IMAGES = frozenset({"image/x-icon", "image/gif", "image/webp", "image/png", "image/jpeg"})
"""Images whose signature no text begins with (a BMP's is ``BM``, as "BMW" is)."""


def sniff_image(head: bytes) -> str | None:
    """The image type the first bytes of a body (``head``, decoded) have the signature of, of
    those no text begins with (IMAGES), or None.

    >>> sniff_image(b"\\x89PNG\\r\\n\\x1a\\n"), sniff_image(b"BMW")
    ('image/png', None)
    """
    kind = sniff_media(head)
    return kind if kind in IMAGES else None


def sniff_media(head: bytes) -> str | None:
    """The image, audio or video type the first bytes of a body (``head``, decoded) have the
    signature of (MIME Sniffing's tables), or None.

    >>> sniff_media(b"GIF89a"), sniff_media(b"<html>")
    ('image/gif', None)
    """
    return _matching(head, _MEDIA_ONLY) or ("video/mp4" if _is_mp4(head) else None)


def sniff_unknown(head: bytes) -> str:
    """The MIME type of a body whose answer named none, from its first bytes (``head``, decoded),
    by MIME Sniffing's "rules for identifying an unknown MIME type" as browsers apply them to a
    page (scripts may run): HTML first, then the other signatures, else text or binary."""
    head = head[:SNIFF_BYTES]
    start = len(head) - len(head.lstrip(b"\t\n\x0c\r "))
    upper = head[start : start + 16].upper()
    for tag in _HTML_TAGS:
        if upper.startswith(tag) and len(upper) > len(tag) and upper[len(tag)] in _TAG_END:
            return "text/html"
    if head[start : start + 5] == b"<?xml":
        return "text/xml"
    kind = _matching(head, _ALL)
    if kind is not None:
        return kind
    if _is_mp4(head):
        return "video/mp4"
    if any(byte in _BINARY for byte in head):
        return "application/octet-stream"
    return "text/plain"
