"""What an answer is taken as: its Content-Type read as browsers read it, or its body sniffed.

Content-Type headers are read by the Fetch standard's "extract a MIME type": every
Content-Type field, each split at commas outside quotes; the last valid type wins, with
the charset of an earlier one only while the type stays the same; ``*/*`` counts for
nothing. A charset in double quotes is unquoted; one in single quotes keeps them (and so
names no encoding browsers know).

An answer whose Content-Type names no type (none, an empty or invalid one,
``unknown/unknown``, ``application/unknown``) has its body sniffed, as browsers do
(WHATWG MIME Sniffing, "rules for identifying an unknown MIME type": mime_sniffing.py). Its
``X-Content-Type-Options: nosniff`` makes it text/plain, as Chromium takes it, never a
page; but an image, audio or video is still taken as one, as Chromium decodes them from
their bytes whatever their type. A type the server named is never sniffed to another, but
for an image sent as HTML or plain text: a page shows it in an <img> whatever its type.

>>> extract_mime_type(["text/html;charset=gbk", "text/html", "*/*"])
MediaType(essence='text/html', charset='gbk')
>>> extract_mime_type(["text/html; charset='utf-8'"]).charset
"'utf-8'"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import NamedTuple

from archiver.mime_sniffing import IMAGES, sniff_image, sniff_media, sniff_unknown

UNKNOWN_TYPES = frozenset({"", "unknown/unknown", "application/unknown"})
"""Essences that name no type: the body is sniffed (``*/*`` is dropped when the header is read)."""

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_QUOTED_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*\Z")
_WHITESPACE = "\t\n\r "


class MediaType(NamedTuple):
    """A Content-Type as read: its essence (``type/subtype``, lowercased; '' if none) and charset."""

    essence: str
    charset: str | None


NO_TYPE = MediaType("", None)


def _quoted(text: str, at: int) -> tuple[str, int]:
    """The HTTP quoted-string starting at ``text[at]`` (a '"'), unescaped, and where it ends."""
    value: list[str] = []
    at += 1
    while at < len(text):
        char = text[at]
        if char == '"':
            return "".join(value), at + 1
        if char == "\\" and at + 1 < len(text):
            at += 1
            char = text[at]
        value.append(char)
        at += 1
    return "".join(value), at


@lru_cache(maxsize=1024)
def parse_mime_type(value: str) -> MediaType | None:
    """One MIME type by Fetch's "parse a MIME type" (its essence and charset); None if invalid.

    >>> parse_mime_type(' Text/HTML ; Charset="utf\\\\-8" ; charset=x'), parse_mime_type("html")
    (MediaType(essence='text/html', charset='utf-8'), None)
    """
    text = value.strip(_WHITESPACE)
    slash = text.find("/")
    if slash == -1:
        return None
    semicolon = text.find(";", slash)
    kind = text[:slash]
    subtype = text[slash + 1 : semicolon if semicolon != -1 else len(text)].rstrip(_WHITESPACE)
    if not _TOKEN.match(kind) or not _TOKEN.match(subtype):
        return None
    essence = f"{kind}/{subtype}".lower()
    charset: str | None = None
    at = semicolon
    while at != -1 and at < len(text) and charset is None:
        at += 1
        while at < len(text) and text[at] in _WHITESPACE:
            at += 1
        name_end = at
        while name_end < len(text) and text[name_end] not in ";=":
            name_end += 1
        name = text[at:name_end].lower()
        if name_end >= len(text):
            break
        if text[name_end] == ";":
            at = name_end
            continue
        at = name_end + 1
        if at < len(text) and text[at] == '"':
            parameter, at = _quoted(text, at)
            at = text.find(";", at)
        else:
            end = text.find(";", at)
            parameter = text[at : end if end != -1 else len(text)].rstrip(_WHITESPACE)
            at = end
            if not parameter:
                continue
        if name == "charset" and _QUOTED_VALUE.match(parameter):
            charset = parameter  # the first charset parameter counts, a later one is ignored
    return MediaType(essence, charset)


def header_values(value: str) -> list[str]:
    """A header's values as Fetch's "get, decode, and split" gives them: split at commas
    outside double quotes, each stripped."""
    if '"' not in value:
        return [part.strip(_WHITESPACE) for part in value.split(",")]
    values: list[str] = []
    start = at = 0
    while at < len(value):
        if value[at] == '"':
            at = _quoted(value, at)[1]
            continue
        if value[at] == ",":
            values.append(value[start:at].strip(_WHITESPACE))
            start = at + 1
        at += 1
    values.append(value[start:].strip(_WHITESPACE))
    return values


def extract_mime_type(values: Iterable[str]) -> MediaType:
    """Fetch's "extract a MIME type" from the values of a response's Content-Type fields (each
    field may hold several, split at commas): NO_TYPE if none is valid."""
    found = NO_TYPE
    essence: str | None = None
    charset: str | None = None
    for field in values:
        for value in header_values(field) if "," in field else (field,):
            parsed = parse_mime_type(value)
            if parsed is None or parsed.essence == "*/*":
                continue
            if parsed.essence != essence:
                essence, charset = parsed.essence, parsed.charset
            elif parsed.charset is not None:
                charset = parsed.charset
            found = MediaType(parsed.essence, charset)
    return found


@lru_cache(maxsize=1024)
def read_content_type(content_type: str | None) -> MediaType:
    """The MediaType of one Content-Type value (several fields joined with commas read alike).

    >>> read_content_type("text/plain, text/html;charset=latin1")
    MediaType(essence='text/html', charset='latin1')
    """
    return extract_mime_type((content_type,)) if content_type else NO_TYPE


def content_type_field(headers: Iterable[tuple[str, str]]) -> str | None:
    """The Content-Type fields of ``headers`` as one value (joined with commas, as HTTP allows),
    or None if there is none: what read_content_type() reads."""
    values = [value for name, value in headers if name.lower() == "content-type"]
    if not values:
        return None
    return values[0] if len(values) == 1 else ", ".join(values)


def nosniff(headers: Iterable[tuple[str, str]]) -> bool:
    """Whether ``X-Content-Type-Options`` forbids sniffing (its first value is "nosniff")."""
    for name, value in headers:
        if name.lower() == "x-content-type-options":
            return header_values(value)[0].lower() == "nosniff"
    return False


MISLABELLED_IMAGE_TYPES = frozenset({"text/html", "text/plain"})
"""Types servers send images as by mistake (a script that makes an image and names no type gets
its server's default): a body of one that is an image is taken as the image (sniff_image())."""


DOWNLOAD_TYPE = "application/octet-stream"
"""What a page sent as an attachment (is_attachment()) is taken as: a file a browser saves, never
shows; its links lead nowhere a reader goes."""
_NAVIGATED_TYPES = frozenset({"text/html", "application/xhtml+xml"})
"""Types a browser meets only as a page it goes to, where Content-Disposition counts: an image,
a stylesheet or a script sent as an attachment is used by its page all the same."""


def is_attachment(headers: Iterable[tuple[str, str]]) -> bool:
    """True if the response's Content-Disposition makes a browser save it rather than show it
    (RFC 6266, as Chromium reads it: ``attachment``, or any other type but ``inline``; a field
    that starts with a parameter, or is empty, is inline).

    >>> is_attachment([("Content-Disposition", "Attachment; filename=x.pdf")])
    True
    >>> is_attachment([("Content-Disposition", "inline")]), is_attachment([("content-disposition", "name=a")])
    (False, False)
    """
    value = next((v for k, v in headers if k.lower() == "content-disposition"), None)
    if value is None:
        return False
    kind = value.partition(";")[0].strip(_WHITESPACE).lower()
    return bool(kind) and kind != "inline" and "=" not in kind and _TOKEN.match(kind) is not None


def sniffable(essence: str) -> bool:
    """Whether an answer sent as the MIME type ``essence`` may be taken as another from its body:
    it names none, or one images are mislabelled as (see sniffed_as())."""
    return essence in UNKNOWN_TYPES or essence in MISLABELLED_IMAGE_TYPES


def may_be_taken_as(sent: str, taken: str) -> bool:
    """Whether an answer sent as the MIME type ``sent`` may have been taken as ``taken``: the same,
    or a type sniffed_as() gives such an answer.

    >>> may_be_taken_as("text/html", "image/png"), may_be_taken_as("text/html", "application/pdf")
    (True, False)
    """
    if sent == taken or sent in UNKNOWN_TYPES or taken == DOWNLOAD_TYPE:
        return True
    return sent in MISLABELLED_IMAGE_TYPES and taken in IMAGES


def needs_sniffing(headers: list[tuple[str, str]]) -> bool:
    """Whether a response's type may be taken from its body: its Content-Type names none (under
    ``nosniff`` too), or one images are mislabelled as (see sniffed_as()), or it is sent as an
    attachment. Cheap: no body is read."""
    return sniffable(read_content_type(content_type_field(headers)).essence) or is_attachment(headers)


def sniffed_as(headers: list[tuple[str, str]], head: bytes) -> str | None:
    """The type a response is taken as from its body's first decoded bytes (``head``), where
    needs_sniffing(); None where it is taken as the type it names.

    Of no type: sniff_unknown(), or under ``X-Content-Type-Options: nosniff`` what Chromium makes
    of it: text/plain (never a page), unless its bytes are an image, audio or video, which
    Chromium decodes from its bytes whatever its type (sniff_media()). Sent as HTML or plain
    text, an image is taken as the image: a page shows it in an <img>, nosniff or not (Chromium
    opened alone shows plain text's image as an image too, and HTML's as HTML).

    A page sent as an attachment (is_attachment()) is a download: DOWNLOAD_TYPE, neither parsed
    nor shown as a page in the mirror, as a browser saves it and shows nothing."""
    essence = read_content_type(content_type_field(headers)).essence
    if essence in MISLABELLED_IMAGE_TYPES:
        sniffed = sniff_image(head)
    elif not sniffable(essence):
        sniffed = None
    elif nosniff(headers):
        sniffed = sniff_media(head) or "text/plain"
    else:
        sniffed = sniff_unknown(head)
    if (sniffed or essence) in _NAVIGATED_TYPES and is_attachment(headers):
        return DOWNLOAD_TYPE
    return sniffed


def with_charset(essence: str, content_type: str | None) -> str:
    """``essence`` (a type a body was sniffed as) with the charset ``content_type`` gives, if any
    and if ``essence`` is text: Fetch's "extract a MIME type" keeps the charset of a type that
    names nothing to go by (``unknown/unknown; charset=koi8-r``), and a browser reads the
    sniffed page in it (HTML's "transport layer specified" encoding). A Content-Type that is no
    MIME type gives none.

    >>> with_charset("text/html", "unknown/unknown; charset=koi8-r"), with_charset("text/html", ";charset=x")
    ('text/html; charset=koi8-r', 'text/html')
    """
    charset = read_content_type(content_type).charset
    if charset is None or not essence.startswith("text/"):
        return essence
    if not _TOKEN.match(charset):
        charset = '"' + charset.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{essence}; charset={charset}"


def effective_content_type(headers: list[tuple[str, str]], head: Callable[[], bytes]) -> str | None:
    """The Content-Type a response is taken as: the one it sent (its fields as one value),
    else, where its type is unknown and may be sniffed, the type its body's first bytes say
    (``head`` gives up to mime_sniffing.SNIFF_BYTES of the decoded body; called only then), with the charset
    its Content-Type gave. An empty body says nothing: its type stays unknown, as the crawl
    takes it (warc/capture.py: Capture.sniffed_type()).

    >>> effective_content_type([], lambda: b"<html><p>hi"), effective_content_type([], lambda: b"")
    ('text/html', None)
    """
    content_type = content_type_field(headers)
    body = head() if needs_sniffing(headers) else b""
    sniffed = sniffed_as(headers, body) if body else None
    return with_charset(sniffed, content_type) if sniffed is not None else content_type


def as_taken(content_type: str | None, recorded: str | None) -> str | None:
    """The Content-Type a stored answer was taken as, from its header and the MIME type the
    manifest recorded: the header, unless the crawl took its body as another type, sniffed
    (then that type, with the header's charset)."""
    if recorded and read_content_type(content_type).essence != recorded:
        return with_charset(recorded, content_type)
    return content_type
