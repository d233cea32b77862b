"""EUC-JP as the WHATWG Encoding standard (and every browser) reads and writes it: JIS X 0208 with
the NEC and IBM rows Windows added (its index jis0208, the one Shift_JIS reads), where Python's
euc_jp has JIS X 0208 alone, so ① (AD A1) or 髙 (FC E2) read as U+FFFD, and ～ (A1 C1) as 〜.

A two-byte character is the Shift_JIS (cp932) character of the same index pointer; JIS X 0212
(three bytes, after 0x8F) is Python's; half-width katakana follow 0x8E. A lead and a byte that
make no character are one error, the byte read again when it is ASCII.

>>> import archiver.encodings  # registers it
>>> b"\\xad\\xa1\\xfc\\xe2\\xa1\\xc1".decode("web-euc-jp") == "\\u2460\\u9ad9\\uff5e"
True
>>> "\\u2460\\u9ad9".encode("web-euc-jp")
b'\\xad\\xa1\\xfc\\xe2'
"""

from __future__ import annotations

import codecs
import functools
import re

from archiver.codec_parts import sequences_decoded, shift_jis_sequence, stateless_codec, table_encoded

NAME = "web-euc-jp"


def _pointer_character(pointer: int) -> str | None:
    """The character of index jis0208 at ``pointer`` (below 8836), read through Shift_JIS."""
    try:
        return shift_jis_sequence(pointer).decode("cp932")
    except UnicodeDecodeError:
        return None


@functools.cache
def jis0208() -> tuple[dict[bytes, str], dict[str, bytes]]:
    """Two-byte EUC-JP sequences and their characters, both ways (the first pointer of a
    character is the one written, as the standard's "index pointer")."""
    read: dict[bytes, str] = {}
    written: dict[str, bytes] = {}
    for pointer in range(94 * 94):
        character = _pointer_character(pointer)
        if character is None:
            continue
        sequence = bytes([pointer // 94 + 0xA1, pointer % 94 + 0xA1])
        read[sequence] = character
        written.setdefault(character, sequence)
    return read, written


_PAIRS = re.compile(rb"(?:[\xa1-\xfe][\xa1-\xfe])+")
"""A run of two-byte sequences of index jis0208 (or errors, which _sequence() reads)."""


def _decoded(data: bytes, errors: str, final: bool) -> tuple[str, int]:
    """``data`` read (and how many bytes of it: a sequence cut at its end waits unless ``final``)."""
    return sequences_decoded(NAME, data, errors, final, _at_lead, (_PAIRS, jis0208()[0]))


def _at_lead(data: bytes, at: int, final: bool) -> tuple[str | None, int] | None:
    """The character of the sequence at ``at`` (a byte past ASCII) and where it ends (see
    codec_parts.Sequence)."""
    byte = data[at]
    if byte not in (0x8E, 0x8F) and not 0xA1 <= byte <= 0xFE:
        return None, at + 1
    need = 3 if byte == 0x8F else 2
    if at + need > len(data) and not final and all(b >= 0x80 for b in data[at + 1 :]):
        return None  # the rest of the sequence is still to come
    return _sequence(data, at, jis0208()[0])


def _sequence(data: bytes, at: int, read: dict[bytes, str]) -> tuple[str | None, int]:
    """The character of the sequence at ``at`` (a lead byte) and where it ends; None and where the
    error ends (before an ASCII byte, which is read again) if it makes none."""
    lead = data[at]
    trail = data[at + 1] if at + 1 < len(data) else None
    if trail is None or trail < 0x80:
        return None, at + 1
    if lead == 0x8E:
        return (chr(0xFF61 + trail - 0xA1) if 0xA1 <= trail <= 0xDF else None), at + 2
    if lead == 0x8F:
        third = data[at + 2] if at + 2 < len(data) else None
        if not 0xA1 <= trail <= 0xFE or third is None or third < 0x80:
            return None, at + 2
        try:
            return data[at : at + 3].decode("euc_jp"), at + 3
        except UnicodeDecodeError:
            return None, at + 3
    return read.get(data[at : at + 2]), at + 2


@functools.cache
def _written() -> dict[str, bytes]:
    """Each character EUC-JP writes, and its bytes: index jis0208's two-byte characters, and what
    the standard's encoder writes before it looks there (¥ as 0x5C, ‾ as 0x7E, half-width
    katakana after 0x8E, U+2212 as U+FF0D)."""
    written = jis0208()[1]
    katakana = {chr(code): bytes([0x8E, code - 0xFF61 + 0xA1]) for code in range(0xFF61, 0xFFA0)}
    return {**written, "\u00a5": b"\x5c", "\u203e": b"\x7e", **katakana, "\u2212": written["\uff0d"]}


def _encoded(text: str, errors: str) -> bytes:
    return table_encoded(NAME, _written(), text, errors, "not in EUC-JP")


def codec_info(_name: str = "euc-jp") -> codecs.CodecInfo:
    """The codec (registered by archiver.encodings under NAME)."""
    return stateless_codec(NAME, _decoded, _encoded)
