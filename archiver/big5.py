"""Big5 as the WHATWG Encoding standard (and every browser) reads and writes it: its index big5 is
Big5 with the HKSCS-2008 characters, where Python's big5hkscs lacks some (0x87 0x7A, U+3875, and
191 more, read as U+FFFD) and reads a few of the first rows otherwise (0xA1 0x45 is U+2027, not
U+2022). Written, a character is the Big5 of its first pointer past HKSCS's own rows (the
standard's "index Big5 pointer"): a character only HKSCS has is no byte of Big5 to a browser.

A lead and a byte that make no character are one error, the byte read again when it is ASCII.
0x88 0x62, 0x88 0x64, 0x88 0xA3 and 0x88 0xA5 are two code points each (U+00CA U+0304...), as the
standard says and Python's big5hkscs reads them (Chromium 156 dies of SIGILL on a page holding one).

>>> import archiver.encodings  # registers it
>>> b"\\x87\\x7a\\xa1\\x45\\xa4\\xa4".decode("web-big5") == "\\u3875\\u2027\\u4e2d"
True
>>> "\\u4e2d\\u2027".encode("web-big5")
b'\\xa4\\xa4\\xa1E'
"""

from __future__ import annotations

import codecs
import functools
import re

from archiver.codec_parts import sequences_decoded, stateless_codec, table_encoded

NAME = "web-big5"

_READ_OTHERWISE = """
877a:3875 877b:21d53 877c:2369e 877d:26021 877e:3eec 87a1:258de 87a2:3af5 87a3:7afc 87a4:9f97
87a5:24161 87a6:2890d 87a7:231ea 87a8:20a8a 87a9:2325e 87aa:430a 87ab:8484 87ac:9f96 87ad:942f
87ae:4930 87af:8613 87b0:5896 87b1:974a 87b2:9218 87b3:79d0 87b4:7a32 87b5:6660 87b6:6a29
87b7:889d 87b8:744c 87b9:7bc5 87ba:6782 87bb:7a2c 87bc:524f 87bd:9046 87be:34e6 87bf:73c4
87c0:25db9 87c1:74c6 87c2:9fc7 87c3:57b3 87c4:492f 87c5:544c 87c6:4131 87c7:2368e 87c8:5818
87c9:7a72 87ca:27b65 87cb:8b8f 87cc:46ae 87cd:26e88 87ce:4181 87cf:25d99 87d0:7bae 87d1:224bc
87d2:9fc8 87d3:224c1 87d4:224c9 87d5:224cc 87d6:9fc9 87d7:8504 87d8:235bb 87d9:40b4 87da:9fca
87db:44e1 87dc:2adff 87dd:62c1 87de:706e 87df:9fcb 8e69:7bb8 8e6f:7c06 8e7e:7cce 8eab:7dd2
8eb4:7e1d 8ecd:8005 8ed0:8028 8f57:83c1 8f69:84a8 8f6e:840f 8fcb:89a6 8fcc:89a9 8ffe:8d77
906d:90fd 907a:92b9 90dc:975c 90f1:97ff 91bf:9f16 9244:8503 92af:5159 92b0:515b 92b1:515d
92b2:515e 92c8:936e 92d1:7479 9447:6d67 94ca:799b 95d9:9097 9644:975d 96ed:701e 96fc:5b28
9b76:7201 9b78:77d7 9b7b:7e87 9bc6:99d6 9bde:91d4 9bec:60de 9bf6:6fb6 9c42:8f36 9c53:4fbb
9c62:71df 9c68:9104 9c6b:9df0 9c77:83cf 9cbc:5c10 9cbd:79e3 9cd0:5a67 9d57:8f0b 9d5a:7b51
9dc4:62d0 9ea9:6062 9eef:75f9 9efd:6c4a 9f60:9b2e 9f66:9f17 9fcb:50ed 9fd8:5f0c a063:880f
a077:62ce a0d5:7468 a0df:7162 a0e4:7250 a145:2027 a14e:fe51 a1c2:af a1e3:ff5e a1f2:2295
a1f3:2299 a241:2215 a242:fe68 a244:ffe5 a246:ffe0 a247:ffe1 a3c0:2400 a3c1:2401 a3c2:2402
a3c3:2403 a3c4:2404 a3c5:2405 a3c6:2406 a3c7:2407 a3c8:2408 a3c9:2409 a3ca:240a a3cb:240b
a3cc:240c a3cd:240d a3ce:240e a3cf:240f a3d0:2410 a3d1:2411 a3d2:2412 a3d3:2413 a3d4:2414
a3d5:2415 a3d6:2416 a3d7:2417 a3d8:2418 a3d9:2419 a3da:241a a3db:241b a3dc:241c a3dd:241d
a3de:241e a3df:241f a3e0:2421 a3e1:20ac c6cf:5ef4 c6d3:65e0 c6d5:7676 c6d7:96b6 c6de:3003
c6df:4edd fa5f:5029 fa66:507d fabd:5305 fac5:5344 fad5:537f fb48:5605 fbb8:5a77 fbf3:5e75
fbf9:5ed0 fc4f:5f58 fc6c:60a4 fcb9:6490 fce2:6674 fcf1:675e fdb7:6c9c fdb8:6e1d fdbb:6e2f
fdf1:716e fe52:732a fe6f:745c feaa:74e9 fedd:7809
"""
"""Two-byte sequences (hex) whose character (hex) the standard's index big5 has where Python's
big5hkscs reads none or another, as Chromium reads them."""
HKSCS_POINTERS = (0xA1 - 0x81) * 157
"""Pointers below this (leads 0x81-0xA0) are HKSCS's rows, which the encoder never writes."""
LAST_POINTER_CHARACTERS = frozenset("\u2550\u255e\u2561\u256a\u5341\u5345")
"""Characters written at their last pointer, not their first (the standard's exception)."""


def _pointer(lead: int, trail: int) -> int | None:
    if 0x40 <= trail <= 0x7E:
        return (lead - 0x81) * 157 + trail - 0x40
    if 0xA1 <= trail <= 0xFE:
        return (lead - 0x81) * 157 + trail - 0x62
    return None


@functools.cache
def _index() -> tuple[dict[bytes, str], dict[str, bytes]]:
    """Two-byte Big5 sequences and their characters, both ways (written: at the index Big5
    pointer of each)."""
    otherwise = {
        bytes.fromhex(pair): chr(int(code, 16))
        for pair, _, code in (entry.partition(":") for entry in _READ_OTHERWISE.split())
    }
    read: dict[bytes, str] = {}
    written: dict[str, bytes] = {}
    for lead in range(0x81, 0xFF):
        for trail in range(0x40, 0xFF):
            pointer = _pointer(lead, trail)
            if pointer is None:
                continue
            sequence = bytes([lead, trail])
            character = otherwise.get(sequence)
            if character is None:
                try:
                    character = sequence.decode("big5hkscs")
                except UnicodeDecodeError:
                    continue
            read[sequence] = character
            if pointer >= HKSCS_POINTERS and len(character) == 1:
                if character in LAST_POINTER_CHARACTERS:
                    written[character] = sequence
                else:
                    written.setdefault(character, sequence)
    return read, written


_PAIRS = re.compile(rb"(?:[\x81-\xfe][\x40-\x7e\xa1-\xfe])+")
"""A run of leads and trails (or errors, which _sequence() reads)."""


def _decoded(data: bytes, errors: str, final: bool) -> tuple[str, int]:
    """``data`` read (and how many bytes of it: a lead at its end waits unless ``final``)."""
    return sequences_decoded(NAME, data, errors, final, _sequence, (_PAIRS, _index()[0]))


def _sequence(data: bytes, at: int, final: bool) -> tuple[str | None, int] | None:
    """The character of the sequence at ``at`` (a byte past ASCII) and where it ends (see
    codec_parts.Sequence): a lead and its trail, or one byte that is no lead."""
    if not 0x81 <= data[at] <= 0xFE:
        return None, at + 1
    if at + 1 == len(data) and not final:
        return None  # its trail is still to come
    if at + 1 == len(data) or data[at + 1] < 0x80:
        character = _index()[0].get(data[at : at + 2])  # an ASCII byte after the lead is read again
        return character, at + 1 + (character is not None)
    return _index()[0].get(data[at : at + 2]), at + 2


def _encoded(text: str, errors: str) -> bytes:
    return table_encoded(NAME, _index()[1], text, errors, "not in Big5")


def codec_info(_name: str = "big5") -> codecs.CodecInfo:
    """The codec (registered by archiver.encodings under NAME)."""
    return stateless_codec(NAME, _decoded, _encoded)
