"""The web's codecs the crawl reads pages in where Python's read otherwise (archiver/web_codecs.py)."""

from __future__ import annotations

import random

import pytest

from archiver import iso_2022_jp


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'\x1b(Ja\\b~c\x1b$BF|K\\-!"!\x1b(B', "a\u00a5b\u203ec\u65e5\u672c\u2460\u25c6"),
        (b"\x1b$BF|\x7f!K\\\x1b(Bx", "\u65e5\ufffd\uff09\ufffdx"),  # 0x7F leads nothing
        (b"\x1b$BF|K\x1b(Bx", "\u65e5\ufffdx"),  # a pair cut by ESC
        (b"ab\x0ecd\x80", "ab\ufffdcd\ufffd"),  # SO and a byte past ASCII
    ],
)
def test_iso_2022_jp_reads_runs_as_the_standard_reads_each_byte(data: bytes, text: str) -> None:
    assert data.decode("web-iso-2022-jp", "replace") == text
    decoder = iso_2022_jp._Decoder("replace")
    assert (
        "".join(decoder.decode(data[at : at + 1]) for at in range(len(data))) + decoder.decode(b"", True)
        == text
    )


def test_iso_2022_jp_reads_a_page_whole_as_it_reads_it_a_byte_at_a_time() -> None:
    # Whole, runs of ASCII, Roman and JIS X 0208 pairs are read at once; a byte at a time, each
    # pair goes through the standard's steps: the same text, and the same state after each piece.
    pieces = [b"\x1b(B", b"\x1b(J", b"\x1b(I", b"\x1b$@", b"\x1b$B", b"\x1b", b"\x1bx", b"\x0e", b"\x0f"]
    pieces += [b"\\~", b"abc", b"\x80", b"F|K\\", b"-!", b"\x7f!", b"!", b"12", b" \n", b"t~", b"\x21\x21"]
    rng = random.Random(7)
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        whole = iso_2022_jp._Decoder("replace")
        by_byte = iso_2022_jp._Decoder("replace")
        cut = rng.randrange(len(data) + 1)
        first = "".join(by_byte.decode(data[at : at + 1]) for at in range(cut))
        assert whole.decode(data[:cut]) == first, data
        assert whole.getstate() == by_byte.getstate(), data
        rest = "".join(by_byte.decode(data[at : at + 1]) for at in range(cut, len(data)))
        assert whole.decode(data[cut:], True) == rest + by_byte.decode(b"", True), data


@pytest.mark.parametrize("encoder", [iso_2022_jp._Encoder, iso_2022_jp._KeptEncoder])
def test_iso_2022_jp_writes_a_page_whole_as_it_writes_it_a_character_at_a_time(encoder) -> None:
    # Whole, runs of ASCII and of JIS X 0208 characters are written at once; a character at a
    # time, each goes through the standard's steps: the same bytes, and the same state after.
    pool = "a \n\\~\x1b\x0e\x0f\x7f\u00a5\u203e\u2212\uff0d\uff61\uff71\uff9e\uff9f"
    pool += "\u2460\u00e9\U0001f600\u3042\u65e5\u7e8a"
    rng = random.Random(11)
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 16)))
        whole, by_character = encoder("replace"), encoder("replace")
        cut = rng.randrange(len(text) + 1)
        first = bytearray()
        for at in range(cut):
            by_character._encode_one(text, at, first)
        assert whole.encode(text[:cut]) == bytes(first), text
        assert whole.getstate() == by_character.getstate(), text
        rest = bytearray()
        for at in range(cut, len(text)):
            by_character._encode_one(text, at, rest)
        rest += by_character.encode("", True)  # back to ASCII at the end
        assert whole.encode(text[cut:], True) == bytes(rest), text
