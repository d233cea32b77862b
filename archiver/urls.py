"""URLs as browsers read them (WHATWG URL parsing) and their hosts: pure functions, no I/O.

>>> normalize_url("HTTP://Example.COM:80/a/./b/../c?q=1#top")
'http://example.com/a/c?q=1'
"""

from __future__ import annotations

import functools
import re

import ada_url

from archiver.encodings import hole_byte, query_encodings
from archiver.errors import BadURL

DEFAULT_PORTS = {"http": 80, "https": 443}
FETCHABLE_SCHEMES = frozenset(DEFAULT_PORTS)

# An absolute URL the WHATWG parser gives back as it is: http(s), a lowercase ASCII host
# whose last label is no number (the parser reads such a host as IPv4) and has no
# punycode to check, or an IPv4 address in dotted decimal; a port that is not the
# default, a path and query of characters it leaves alone (no "%", no dot segment), no
# empty query, no fragment. The common case, checked by one regex instead of a call into
# the parser (tests compare the two). Each part reads its characters once: a host of
# thousands of letters that then fails took time squared with the last label written as
# [a-z0-9-]*[a-z-][a-z0-9-]* (tried at every split).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_CANONICAL = re.compile(
    rf"(https?)://(?:(?:[a-z0-9-]++\.)*+[0-9]*+[a-z-][a-z0-9-]*+|{_OCTET}(?:\.{_OCTET}){{3}})"
    r"(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]+)?"
)
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
ASCII_WHITESPACE = " \t\n\f\r"
"""What HTML strips around a URL attribute's value and splits a srcset on (the standard's ASCII
whitespace): str.strip() and str.isspace() take U+00A0, U+3000... too, which a browser keeps as
part of the URL (``src="x.png&nbsp;"`` asks for ``/x.png%C2%A0``)."""
_HEX_LABEL = re.compile(r"0x[0-9a-f]*")
# A relative reference that resolves by concatenation: a path (and query) of characters
# the parser leaves alone, no ":" (a scheme), no "%", "\\", whitespace or dot segment.
_SIMPLE_REFERENCE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=@/]+(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]+)?")


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
_QUERY_BYTES = [
    f"%{byte:02X}" if byte <= 0x20 or byte > 0x7E or chr(byte) in "\"#<>'" else chr(byte)
    for byte in range(256)
]
"""How each byte of an encoded query is written: the special-query percent-encode set of the URL standard."""


def _is_canonical(url: str) -> bool:
    match = _CANONICAL.fullmatch(url)
    if match is None:
        return False
    scheme, port, path = match.groups()
    host = url[len(scheme) + 3 : url.find("/", len(scheme) + 3)].rpartition(":")[0 if port else 2]
    if _HEX_LABEL.fullmatch(host.rpartition(".")[2]) or "xn--" in host:
        return False
    if "/." in path and any(segment in (".", "..") for segment in path.split("/")):
        return False
    return port is None or (int(port) != DEFAULT_PORTS[scheme] and int(port) <= 65535)


def url_folder(url: str) -> str:
    """``url`` up to the last slash of its path: what any reference with a path of its own
    resolves against, whatever the rest of the URL (a URL without a path has the folder /).

    >>> url_folder("http://h/a/b.html?x=/y#z"), url_folder("http://h?q")
    ('http://h/a/', 'http://h/')
    """
    host_start, path_start, end = _parts_at(url)
    if path_start == end:
        return url[:end] + "/"
    return url[: url.rindex("/", path_start, end) + 1]


def _parts_at(url: str) -> tuple[int, int, int]:
    """Where the host, the path and the query or fragment of an absolute ``url`` start."""
    scheme_end = url.find("://")
    host_start = scheme_end + 3 if scheme_end != -1 else 0
    end = len(url)
    for mark in ("?", "#"):
        at = url.find(mark, host_start, end)
        if at != -1:
            end = at
    path_start = url.find("/", host_start, end)
    return host_start, end if path_start == -1 else path_start, end


@functools.lru_cache(maxsize=256)
def _canonical_base(base: str) -> bool:
    return _is_canonical(base)


def reference_text(value: str) -> str:
    r"""A reference as the WHATWG parser reads it: C0 controls and spaces around it stripped,
    tabs and newlines inside it removed (``java\tscript:`` is ``javascript:``).

    >>> reference_text(" \x01 /a\n/b\t ")
    '/a/b'
    """
    value = value.strip(_C0_AND_SPACE)
    if "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\t", "").replace("\n", "").replace("\r", "")
    return value


def query_encoded(reference: str, encoding: str | None) -> str:
    """``reference``, a link of a document read in ``encoding``, with the characters past ASCII
    of its query percent-encoded as a browser encodes them there (the WHATWG URL standard's
    encoding override): their bytes in that encoding (encodings.query_encodings()), a character
    it cannot write as ``%26%23`` its number ``%3B`` (``&#233;``). Its path and fragment are left
    to the URL parser, which writes them in UTF-8, as it writes any query of a UTF-8 document.

    >>> query_encoded("/café?q=café#é", "windows-1252"), query_encoded("?q=café", "cp1251")
    ('/café?q=caf%E9#é', '?q=caf%26%23233%3B')
    """
    if encoding is None or reference.isascii():
        return reference
    head, hash_sign, fragment = reference.partition("#")
    path, question_mark, query = head.partition("?")
    if not question_mark or query.isascii():
        return reference
    codecs = query_encodings(encoding)
    if not codecs:
        return reference
    query = _NOT_ASCII.sub(lambda run: _percent_encoded(run.group(), codecs), query)
    return f"{path}?{query}{hash_sign}{fragment}"


def _percent_encoded(text: str, codecs: tuple[str, ...]) -> str:
    """``text`` (past ASCII) encoded in the first of ``codecs`` that can write each character."""
    try:
        return "".join(_QUERY_BYTES[byte] for byte in text.encode(codecs[0]))
    except UnicodeEncodeError:
        return "".join(_percent_encoded_character(character, codecs) for character in text)


def _percent_encoded_character(character: str, codecs: tuple[str, ...]) -> str:
    for codec in codecs:
        try:
            encoded = character.encode(codec)
        except UnicodeEncodeError:
            hole = hole_byte(character, codec)  # U+0081 is %81 in windows-1252, which has no 0x81
            if hole is None:
                continue
            encoded = hole
        return "".join(_QUERY_BYTES[byte] for byte in encoded)
    return f"%26%23{ord(character)}%3B"


def _simple_join(base: str, reference: str) -> str | None:
    """``reference`` resolved against ``base`` (a URL this module gave) when that is plain
    concatenation after leading ``../`` and ``./``, else None: the links pages are made of,
    without a call into the parser (tests compare the two)."""
    if not _SIMPLE_REFERENCE.fullmatch(reference) or reference.startswith("//") or not _canonical_base(base):
        return None
    if reference[0] == "/":
        if "/." in reference and _has_dot_segment(reference):
            return None
        host_start, path_start, _end = _parts_at(base)
        return base[:path_start] + reference
    folder = url_folder(base)
    if reference[0] == ".":  # leading dot segments, as pages write them
        origin_end = _parts_at(base)[1]
        while reference.startswith(("../", "./")):
            if reference[1] == "/":
                reference = reference[2:]
                continue
            reference = reference[3:]
            parent = folder.rfind("/", 0, len(folder) - 1)
            if parent >= origin_end:
                folder = folder[: parent + 1]
        if not reference or reference[0] == "/":
            return None
    if "." in reference and _has_dot_segment(reference):
        return None
    return folder + reference


def _has_dot_segment(reference: str) -> bool:
    return any(segment in (".", "..") for segment in reference.partition("?")[0].split("/"))


def normalize_url(url: str, base: str | None = None) -> str:
    """The URL a browser requests for ``url`` (resolved against ``base`` if given).

    WHATWG URL parsing, as browsers do it (the ada-url package: the parser of
    Node.js): scheme and host lowercased, IDNA, IPv4 and IPv6 in canonical
    form, the default port dropped, dot segments removed, characters a URL
    cannot hold percent-encoded; everything else kept as written (``//`` in a
    path, ``%7E``, the order of a query, an empty query: ``x?`` is another URL
    than ``x``, and a browser asks for ``x?``). What no request carries is
    dropped: the fragment, a user name and password. Raises BadURL for
    anything that is not an absolute http or https URL.

    >>> normalize_url("../x y", "http://h/a/b/")
    'http://h/a/x%20y'
    >>> normalize_url("images//a.png?#top", "HTTP://Example.COM:80/p/")
    'http://example.com/p/images//a.png?'

    Characters no URI holds (RFC 3986) that the parser leaves are escaped (_NOT_IN_URIS):

    >>> normalize_url("http://h/a|[b]?q={c}^`d|%zz")
    'http://h/a%7C%5Bb%5D?q=%7Bc%7D%5E%60d%7C%25zz'
    """
    if base is None:
        if _is_canonical(url):
            return url
    elif (simple := _simple_join(base, url)) is not None:
        return simple
    try:
        href = ada_url.join_url(base, url) if base is not None else ada_url.normalize_url(url)
    except ValueError:
        raise BadURL(url, _why_not(url)) from None
    if not href.startswith(("http://", "https://")):
        raise BadURL(url, "not an http or https URL")
    href = href.partition("#")[0]
    host_start, path_start, _end = _parts_at(href)
    if "@" in href[host_start:path_start]:
        parsed = ada_url.URL(href)
        parsed.username = ""
        parsed.password = ""
        href = parsed.href
        host_start, path_start, _end = _parts_at(href)
    if _NOT_IN_URIS.search(href, path_start):
        href = href[:path_start] + _NOT_IN_URIS.sub(_escaped_character, href[path_start:])
    return href


_NOT_IN_URIS = re.compile(r"[|\[\]{}^`\\]|%(?![0-9A-Fa-f]{2})")
"""What the WHATWG parser leaves in a path or query that RFC 3986 allows in no URI: a WARC
record's Target-URI must be one (WARC 1.1, 5.4), and Chromium itself escapes ``|`` in a path,
so a page it renders asked for /a%7C where its link said /a|. Escaped, as wget and Heritrix
escape them, the crawl keys, requests and records one URI for both; servers read either alike."""


def _escaped_character(match: re.Match[str]) -> str:
    return f"%{ord(match[0]):02X}"


_ESCAPED_NOT_IN_URIS = re.compile(r"%(?:7C|5B|5D|7B|7D|5E|60|5C)|%25(?![0-9A-Fa-f]{2})", re.IGNORECASE)


def earlier_form(url: str) -> str | None:
    """The URL a snapshot of an earlier version keeps for ``url`` (normalize_url()'s): the
    characters no URI holds were kept as the page wrote them before they were escaped. None if
    that is ``url`` itself. A lookup that misses ``url`` tries it: normalize_url() never gives
    such a URL now, so the row found is an earlier version's of the same URL.

    >>> earlier_form("http://h/a%7C%5Bb%5D?q=%7Bc%7D%5E%60d%7C%25zz%2541"), earlier_form("http://h/a")
    ('http://h/a|[b]?q={c}^`d|%zz%2541', None)
    """
    if "%" not in url:
        return None
    host_end = _parts_at(url)[1]
    earlier = url[:host_end] + _ESCAPED_NOT_IN_URIS.sub(lambda m: chr(int(m[0][1:3], 16)), url[host_end:])
    return earlier if earlier != url else None


def is_earlier_form(url: str) -> bool:
    """True if ``url``, as a snapshot keeps it, holds a character normalize_url() now escapes
    (it was kept by an earlier version: see earlier_form())."""
    return _NOT_IN_URIS.search(url, _parts_at(url)[1]) is not None


def _why_not(url: str) -> str:
    """What is wrong with a URL the parser refused, in a few words."""
    scheme, colon, rest = reference_text(url).partition(":")
    if colon and scheme.lower() in FETCHABLE_SCHEMES and not rest.strip("/\\"):
        return "no host"
    return "not a valid URL"


def absolute_url(reference: str, base: str) -> str | None:
    """``reference`` resolved against ``base`` as a browser would, fragment kept, any scheme;
    None if it does not parse. For links written out absolute (the mirror's, to what it lacks).

    >>> absolute_url("b#f", "http://h/a"), absolute_url("http://[x", "http://h/")
    ('http://h/b#f', None)
    """
    try:
        return ada_url.join_url(base, reference)
    except ValueError:
        return None


def try_normalize(url: str, base: str | None = None) -> str | None:
    """Like normalize_url, but None for URLs we cannot fetch (mailto:, bad hosts...)."""
    try:
        return normalize_url(url, base)
    except (BadURL, ValueError):
        return None


def header_url(value: str) -> str:
    """A URL reference from a received header (a Location), as browsers read its bytes.

    The fetcher keeps a received header as one character per byte (latin-1).
    A server that writes a path in UTF-8 means those characters, so the bytes
    are read as UTF-8 when they are UTF-8 (read as latin-1 and encoded again,
    /café became /caf%C3%83%C2%A9); any other byte past ASCII is
    percent-encoded as it is.

    >>> header_url("/caf\\xc3\\xa9"), header_url("/caf\\xe9"), header_url("/plain")
    ('/café', '/caf%E9', '/plain')
    """
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:  # not one character per byte: not as received
        return value
    if raw.isascii():
        return value
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(byte) if byte < 0x80 else f"%{byte:02X}" for byte in raw)


def host_of(url: str) -> str:
    """The host (with a non-default port) of a normalised URL.

    >>> host_of("http://h:8/a?b"), host_of("https://h?q")
    ('h:8', 'h')
    """
    host_start, path_start, _end = _parts_at(url)
    return url[host_start:path_start]


def origin_of(url: str) -> str:
    """The scheme, host and port of a normalised URL: what one robots.txt is for (RFC 9309 2.3:
    http://h and https://h have one each).

    >>> origin_of("https://h/a?b"), origin_of("http://h:8080?q")
    ('https://h', 'http://h:8080')
    """
    return f"{url.partition('://')[0]}://{host_of(url)}"


def url_host(name: str) -> str:
    """A host name as URLs hold it once parsed: lowercase ASCII, IDNA labels in punycode; ``name``
    lowercased if it is no host a URL can hold.

    >>> url_host("Bücher.Example"), url_host("[::1]")
    ('xn--bcher-kva.example', '[::1]')
    """
    if not name.startswith("[") and any(mark in name for mark in "/\\?#@:"):
        return name.lower()
    normalized = try_normalize(f"http://{name}/")
    return host_of(normalized) if normalized else name.lower()


def readable_url(url: str) -> str:
    """A normalised URL as a person writes it: its host's IDNA labels in Unicode, its path and
    query with percent-encoded UTF-8 decoded (an escape of another byte, or of a character that
    ends a part, stays); ``url`` itself when it has neither.

    >>> readable_url("http://xn--bcher-kva.example/caf%C3%A9?q=%E9&r=a%26b")
    'http://bücher.example/café?q=%E9&r=a%26b'
    """
    if "xn--" not in url and "%" not in url:
        return url
    host_start, path_start, _end = _parts_at(url)
    host = url[host_start:path_start]
    if "xn--" in host:
        name, colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not colon or not port.isdigit():
            name, colon, port = host, "", ""
        host = ada_url.idna_to_unicode(name) + colon + port  # a label that is no punycode stays
    rest = _PERCENT_RUN.sub(_decoded_run, url[path_start:]) if "%" in url[path_start:] else url[path_start:]
    return url[:host_start] + host + rest


_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_KEPT_ESCAPED = frozenset("%/?#&=;+ ")


def _decoded_run(match: re.Match[str]) -> str:
    """A run of percent escapes, decoded where it is whole UTF-8 of characters that end no part."""
    escaped = match.group()
    try:
        text = bytes.fromhex(escaped.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return escaped
    if any(character in _KEPT_ESCAPED or not character.isprintable() for character in text):
        return escaped
    return text
