"""Codecs that read (and write) encodings as the WHATWG Encoding standard does where Python's codec
of the same name reads otherwise, each named ``web-`` + the standard's name; archiver.encodings
registers them and gives their names (web_codec()). Every other encoding of the standard is read
by Python's own codec, checked byte by byte against Chromium.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import re
from collections.abc import Callable
from typing import Any

from archiver import big5, euc_jp, iso_2022_jp
from archiver.codec_parts import shift_jis_sequence, stateless_codec, table_encoded, undecoded, unencoded

_WEB_TABLES = {
    "windows-1255": ("cp1255", {0xCA: "\u05ba"}),
    "koi8-u": ("koi8-u", {0xAE: "\u045e", 0xBE: "\u040e"}),
}
"""The single-byte encodings of the standard whose index has characters Python's codec of the
same name lacks or reads otherwise, with those bytes: windows-1255's 0xCA (HEBREW POINT HOLAM
HASER FOR VAV, which Python reads as nothing), KOI8-U's 0xAE and 0xBE (the standard's KOI8-U is
KOI8-RU, with ў and Ў where Python has box-drawing signs). A codec named ``web-`` + the
encoding's name reads and writes them as browsers do; the bytes 0x80-0x9F no encoding assigns
are left to WEB_ERRORS, as in the other windows- encodings."""


def _web_table_codec(name: str) -> codecs.CodecInfo:
    python_codec, characters = _WEB_TABLES[name]
    table = [bytes([byte]).decode(python_codec, "replace") for byte in range(256)]
    for byte, character in characters.items():
        table[byte] = character
    decoding_table = "".join("\ufffe" if character == "\ufffd" else character for character in table)
    encoding_table = codecs.charmap_build(decoding_table)

    return stateless_codec(
        f"web-{name}",
        lambda data, errors, _final: codecs.charmap_decode(data, errors, decoding_table),
        lambda text, errors: codecs.charmap_encode(text, errors, encoding_table)[0],
    )


_GB18030_2022 = dict(
    zip(
        "\ue78d\ue78e\ue78f\ue790\ue791\ue792\ue793\ue794\ue795\ue796"
        "\ue81e\ue826\ue82b\ue82c\ue832\ue843\ue854\ue864",
        "\ufe10\ufe12\ufe11\ufe13\ufe14\ufe15\ufe16\ufe17\ufe18\ufe19"
        "\u9fb4\u9fb5\u9fb6\u9fb7\u9fb8\u9fb9\u9fba\u9fbb",
        strict=True,
    )
)
"""Characters of GB18030-2022 that Python's gb18030 (of 2005) reads as private-use code points:
the standard (and Chromium) reads bytes A6D9...FEA0 as these, as they read their four-byte forms."""
_GB18030_READ = str.maketrans({**_GB18030_2022, "\ue5e5": "\u3000", "\ue7c7": "\u1e3f", "\u1e3f": "\ue7c7"})
"""What Python's gb18030 reads that the standard's gb18030 decoder reads otherwise: _GB18030_2022,
A3A0 (U+3000, as A1A1), and A8BC and 81 35 F4 37, whose characters it swaps."""
_GB18030_WRITTEN = str.maketrans(
    {std: pua for pua, std in _GB18030_2022.items()} | {"\ue7c7": "\u1e3f", "\u1e3f": "\ue7c7"}
)
"""What the standard's encoder writes in the bytes Python's gb18030 gives another character."""


_TRANSLATED = {
    "gbk": ("gb18030", _GB18030_READ, _GB18030_WRITTEN),
    "gb18030": ("gb18030", _GB18030_READ, _GB18030_WRITTEN),
}
"""Encodings of the standard read as a Python codec reads them, then some characters translated
(and written translated back first): GBK and GB18030, both GB18030 of 2022 to the standard
(_GB18030_READ), but GBK writes the euro sign as 0x80 and no four-byte sequence (a character
it has not is &#...; in a query, as Chromium writes it), and neither writes U+E5E5. Byte 0x80
is left to WEB_ERRORS."""


_FOUR_BYTES = re.compile(rb"[\x81-\xfe][\x30-\x39][\x81-\xfe][\x30-\x39]")
"""A four-byte sequence of GB18030, found wherever one is: a two-byte sequence's second byte is
never a digit, so no other bytes read so."""


def _any_of(table: dict[int, Any]) -> re.Pattern[str]:
    """A pattern that finds any character ``table`` (of str.maketrans()) changes."""
    return re.compile("[" + "".join(re.escape(chr(code)) for code in table) + "]")


def _translated_codec(name: str) -> codecs.CodecInfo:
    python_name, read, written_as = _TRANSLATED[name]
    python = codecs.lookup(python_name)
    reads_otherwise, writes_otherwise = (_any_of(table) for table in (read, written_as))

    def written(text: str, errors: str) -> bytes:
        if text.isascii():
            return text.encode("ascii")
        if "\ue5e5" not in text and (name != "gbk" or "\u20ac" not in text):
            # Most text: Python's codec writes it whole, as the standard would (for GBK, when no
            # character took four bytes).
            with contextlib.suppress(UnicodeEncodeError):
                translated = text.translate(written_as) if writes_otherwise.search(text) else text
                whole = python.encode(translated, "strict")[0]
                if name != "gbk" or not _FOUR_BYTES.search(whole):
                    return whole
        out = bytearray()
        for at, character in enumerate(text):
            if name == "gbk" and character == "\u20ac":
                out += b"\x80"
                continue
            sequence = b""
            if character != "\ue5e5":  # the standard writes no bytes for it (A3A0 reads as U+3000)
                sequence = python.encode(character.translate(written_as), "ignore")[0]
            if not sequence or (name == "gbk" and len(sequence) == 4):  # GBK writes no four bytes
                sequence = unencoded(f"web-{name}", errors, text, at, "not in it")
            out += sequence
        return bytes(out)

    def encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
        return written(text, errors), len(text)

    def decode(data: Any, errors: str = "strict") -> tuple[str, int]:
        text, size = python.decode(data, errors)
        return read_standard(text), size

    def read_standard(text: str) -> str:
        # str.translate() looks up every character in its table: 20 ms for 80,000 (a page);
        # most pages hold none of the few it changes, which a search tells in C.
        return text.translate(read) if reads_otherwise.search(text) else text

    class IncrementalEncoder(codecs.IncrementalEncoder):
        def encode(self, text: str, final: bool = False) -> bytes:
            return written(text, self.errors)

    class IncrementalDecoder(codecs.IncrementalDecoder):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors)
            self._python = python.incrementaldecoder(errors)

        def decode(self, data: Any, final: bool = False) -> str:
            text = str(self._python.decode(data, False))
            if final:
                # What is held at the end (a four-byte sequence begun) is read as decode() reads
                # it: given it as the end, Python's decoder drops all after an error in it, where
                # the standard reads the lead alone as U+FFFD and the bytes after it again.
                held = self._python.getstate()[0]
                self._python.reset()
                text += python.decode(held, self.errors)[0]
            return read_standard(text)

        def reset(self) -> None:
            self._python.reset()

    return codecs.CodecInfo(
        encode,
        decode,
        name=f"web-{name}",
        incrementalencoder=IncrementalEncoder,
        incrementaldecoder=IncrementalDecoder,
    )


_SHIFT_JIS_RUN = re.compile(rb"(?:[\x00-\x80\xa1-\xdf]++|[\x81-\x9f\xe0-\xfc][\x00-\xff])*+")
"""Bytes Python's cp932 reads as the standard's Shift_JIS does: ASCII, 0x80, half-width katakana
and two-byte sequences, up to a byte that is neither (0xA0 or 0xFD-0xFF, which cp932 reads as
private-use characters U+F8F0-U+F8F3 and the standard, Chromium too, as errors) or a lead with
nothing after it. Single bytes are taken a run at a time and nothing is given back (++, *+): a
page is matched ten times faster than a byte at a time."""


SHIFT_JIS_LEADS = frozenset([*range(0x81, 0xA0), *range(0xE0, 0xFD)])


def _shift_jis_decoded(data: bytes, errors: str, final: bool) -> tuple[str, int]:
    """``data`` read as the standard's Shift_JIS (and how many bytes of it: a lead at its end
    waits unless ``final``): Windows' (cp932), but for the bytes no character starts with."""
    out: list[str] = []
    at, size = 0, len(data)
    while True:
        run = _SHIFT_JIS_RUN.match(data, at)
        assert run is not None  # it matches nothing at worst
        if run.end() > at:
            out.append(codecs.decode(data[at : run.end()], "cp932", errors))
        at = run.end()
        if at == size or (at + 1 == size and data[at] in SHIFT_JIS_LEADS and not final):
            return "".join(out), at  # done, or a lead whose trail is still to come
        replacement, at = undecoded("cp932", errors, data, at, at + 1, "illegal multibyte sequence")
        out.append(replacement)


SHIFT_JIS_UNWRITTEN = range(8272, 8836)
"""Pointers of index jis0208 the standard's Shift_JIS encoder passes over (the NEC-selected IBM
rows, 0xED40-0xEEFC): a character there and in IBM's rows (0xFA40...) is written as IBM's, as
Chromium writes it, where Python's cp932 writes NEC's."""
SHIFT_JIS_PRIVATE = range(8836, 10716)
"""Pointers read as private-use characters (0xF040-0xF9FC, U+E000...), which no character is
written as."""
SHIFT_JIS_POINTERS = 11104
"""Pointers of index jis0208 (0x8140-0xFC4B)."""
_SHIFT_JIS_SPECIAL = {"\u00a5": b"\x5c", "\u203e": b"\x7e", "\u2212": "\uff0d".encode("cp932")}
"""Characters the standard's Shift_JIS encoder writes before it looks in its index."""


@functools.cache
def _shift_jis_written() -> dict[str, bytes]:
    """Each character the standard's Shift_JIS encoder writes, and its bytes: its first pointer in
    index jis0208 outside SHIFT_JIS_UNWRITTEN (cp932 writes some characters the index lacks, as
    ¢ or 〜, and others at other pointers)."""
    written: dict[str, bytes] = {chr(code): bytes([code - 0xFF61 + 0xA1]) for code in range(0xFF61, 0xFFA0)}
    for pointer in range(SHIFT_JIS_POINTERS):
        if pointer in SHIFT_JIS_UNWRITTEN or pointer in SHIFT_JIS_PRIVATE:
            continue
        sequence = shift_jis_sequence(pointer)
        try:
            written.setdefault(sequence.decode("cp932"), sequence)
        except UnicodeDecodeError:
            continue
    return written | _SHIFT_JIS_SPECIAL


def _shift_jis_encoded(text: str, errors: str) -> bytes:
    # U+0080 is written as its byte too, as the standard's encoder writes it.
    return table_encoded("web-shift_jis", _shift_jis_written(), text, errors, "not in Shift_JIS", 0x81)


def _shift_jis_codec(_name: str = "shift_jis") -> codecs.CodecInfo:
    return stateless_codec("web-shift_jis", _shift_jis_decoded, _shift_jis_encoded)


WEB_CODECS: dict[str, Callable[[str], codecs.CodecInfo]] = {
    **dict.fromkeys(_WEB_TABLES, _web_table_codec),
    **dict.fromkeys(_TRANSLATED, _translated_codec),
    "euc-jp": euc_jp.codec_info,
    "shift_jis": _shift_jis_codec,
    "big5": big5.codec_info,
    "iso-2022-jp": iso_2022_jp.codec_info,
    "iso-2022-jp-kept": iso_2022_jp.codec_info,
}
"""The encodings of the standard read through a codec of this module (``web-`` + its name)."""


def find(name: str) -> codecs.CodecInfo | None:
    """The codec called ``name`` (as codecs.lookup() normalises it: ``web_euc_jp``), if one of these."""
    for web_name, make in WEB_CODECS.items():
        if name == f"web_{web_name}".replace("-", "_"):
            return make(web_name)
    return None
