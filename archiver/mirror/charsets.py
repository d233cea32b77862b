"""Keeping a document in its own encoding while its links are edited.

Pages in an ASCII-compatible encoding (UTF-8, Latin-1, Shift_JIS, GBK...) are
edited as bytes read one character per byte: markup is ASCII in all of them,
so it is found by position and every other byte is kept exactly. Others
(UTF-16, ISO-2022) are decoded, edited, and encoded back.

>>> View("日本".encode("shift_jis"), "shift_jis").to_text("\x93\xfa")
'日'
"""

from __future__ import annotations

import codecs
import functools
import re

from archiver import iso_2022_jp
from archiver.encodings import WEB_ERRORS

_STATEFUL_CODECS = ("utf-16", "utf-32", "utf-7", "iso2022", "web-iso-2022", "hz")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
_WRITTEN_AS = {iso_2022_jp.NAME: iso_2022_jp.KEPT_NAME}
"""The codec a document read in a codec is written back in, where the standard's writer would
write some characters otherwise than they were read (ISO-2022-JP's half-width katakana)."""


class View:
    """The document as a str to edit, and the conversions between it and real text.

    For an ASCII-compatible encoding the str is the bytes read as Latin-1 (one
    character per byte), so markup is found by position and the rest is kept
    exactly; otherwise it is the decoded text.
    """

    def __init__(self, body: bytes, encoding: str, query_encoding: str | None = None) -> None:
        """``query_encoding``: the one the document's links' queries are written in, if it is
        not ``encoding`` (a rendered DOM is kept as UTF-8, its queries in its page's encoding)."""
        self.encoding = encoding
        self.query_encoding = query_encoding or encoding
        self.as_bytes = not codecs.lookup(encoding).name.startswith(_STATEFUL_CODECS)
        if self.as_bytes:
            self.text = body.decode("latin-1")
            return
        try:
            self.text = body.decode(encoding, errors="surrogateescape")
        except UnicodeDecodeError:  # bytes it cannot keep (an odd byte of UTF-16): replaced
            self.text = body.decode(encoding, errors="replace")

    def scanned(self, view: str) -> str:
        r"""A piece of the view as a scan for ASCII syntax must read it, offsets kept: in an
        encoding whose characters of two bytes may end with an ASCII byte (Shift_JIS, Big5, GBK:
        the second byte of ソ is 0x5C, a backslash), each byte of such a character made 0x80.

        >>> View(b"", "shift_jis").scanned("url(\x83\\)") == "url(\x80\x80)"
        True
        """
        if not self.as_bytes or view.isascii() or not _ascii_inside_characters(self.encoding):
            return view
        data = view.encode("latin-1")
        text = data.decode(self.encoding, "surrogateescape")
        encoding = self.encoding
        try:
            scanned = _NOT_ASCII.sub(
                lambda m: "\x80" * len(m.group().encode(encoding, "surrogateescape")), text
            )
        except UnicodeEncodeError:  # a character read that is written no more (Big5's HKSCS rows)
            scanned = _masked(data, encoding)
        return scanned if len(scanned) == len(view) else view

    def to_text(self, view: str) -> str:
        """Real text of a piece of the view (an attribute value, a URL)."""
        return view.encode("latin-1").decode(self.encoding, WEB_ERRORS) if self.as_bytes else view

    def from_text(self, text: str) -> str:
        """A piece of real text as it goes into the view (in the document's encoding)."""
        if not self.as_bytes:
            return text
        return text.encode(self.encoding, "xmlcharrefreplace").decode("latin-1")

    def encode(self, view: str) -> bytes:
        """The bytes of the (edited) view."""
        if self.as_bytes:
            return view.encode("latin-1")
        codec = _WRITTEN_AS.get(codecs.lookup(self.encoding).name, self.encoding)
        try:
            return view.encode(codec, "surrogateescape")
        except UnicodeEncodeError:
            return view.encode(codec, "xmlcharrefreplace")


def _masked(data: bytes, encoding: str) -> str:
    """``data`` read one character per byte, each byte of a character of ``encoding`` made 0x80,
    found by reading it a byte at a time (View.scanned, for what its encoder does not write back:
    a browser writes no character that only Big5's HKSCS rows hold, though it reads them).

    >>> _masked(b"\\x87z(\\x88b\\x81\\\\", "web-big5")
    '\\x80\\x80(\\x80\\x80\\x80\\\\'
    """
    decoder = codecs.getincrementaldecoder(encoding)("surrogateescape")
    out: list[str] = []
    pending = 0
    for byte in data:
        text = decoder.decode(bytes([byte]))
        if not text:
            pending += 1  # a lead, its character still to come
        elif byte < 0x80 and text[-1] == chr(byte):
            out.append("\x80" * pending + chr(byte))  # ASCII read on its own, after any lead it ended
        else:
            out.append("\x80" * (pending + 1))
        if text:
            pending = 0
    return "".join(out) + "\x80" * pending


@functools.lru_cache(maxsize=64)
def _ascii_inside_characters(encoding: str) -> bool:
    """Whether a character of ``encoding`` may be written with an ASCII byte after its first."""
    for lead in range(0x81, 0xFF):
        for trail in (0x40, 0x5C, 0x61, 0x7A):
            try:
                if len(bytes((lead, trail)).decode(encoding)) == 1:
                    return True
            except UnicodeDecodeError:
                continue
    return False
