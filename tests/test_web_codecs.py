"""The web's codecs the crawl reads pages in where Python's read otherwise (archiver/web_codecs.py)."""

from __future__ import annotations

import codecs
import importlib
import itertools
import random

import pytest

from archiver import codec_parts, iso_2022_jp, web_codecs
from archiver.encodings import WEB_ERRORS


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


@pytest.mark.parametrize(
    ("codec", "sequence", "pairs"), [("euc_jp", "_at_lead", "_PAIRS"), ("big5", "_sequence", "_PAIRS")]
)
def test_runs_of_two_byte_sequences_read_as_each_sequence_reads(
    codec: str, sequence: str, pairs: str
) -> None:
    # Runs of pairs are looked up at once, up to the first the table lacks; each sequence alone
    # goes through the standard's steps: the same text, errors and bytes read, cut or whole.
    module = importlib.import_module(f"archiver.{codec}")
    table = module.jis0208()[0] if codec == "euc_jp" else module._index()[0]
    known = list(table)
    odd = [
        b"\x80",
        b"\x8e",
        b"\x8f",
        b"\xa1",
        b"\xff",
        b"\x81\x40",
        b"\xfe\xfe",
        b"\x8e\xa1",
        b"\x8f\xa2\xaf",
        b"a",
    ]
    rng = random.Random(13)
    for _ in range(4000):
        data = b"".join(rng.choice(known) if rng.random() < 0.7 else rng.choice(odd) for _ in range(12))
        for final in (True, False):
            at_once = codec_parts.sequences_decoded(
                "x", data, "replace", final, getattr(module, sequence), (getattr(module, pairs), table)
            )
            one_by_one = codec_parts.sequences_decoded("x", data, "replace", final, getattr(module, sequence))
            assert at_once == one_by_one, data


@pytest.mark.parametrize("name", ["web-shift_jis", "web-euc-jp", "web-big5"])
def test_a_text_is_written_whole_as_it_is_written_a_character_at_a_time(name: str) -> None:
    # Whole, runs of ASCII and of other characters are written at once (a character the codec
    # has not, one at a time): the same bytes as each character written alone.
    pool = "a<p>\\~\x80\x81\u00a5\u203e\u2212\uff0d\uff71\u00e9\U0001f600\u3042\u65e5\u7e8a\u6e2c\u4e2d\u20ac"
    rng = random.Random(17)
    for _ in range(4000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 16)))
        alone = b"".join(character.encode(name, "xmlcharrefreplace") for character in text)
        assert text.encode(name, "xmlcharrefreplace") == alone, text


@pytest.mark.parametrize("name", ["gb18030", "gbk"])
def test_gb_codecs_translate_only_texts_that_hold_what_they_change(name: str) -> None:
    # What Python's gb18030 reads otherwise than the standard is translated; a text holding none
    # of those characters is left as Python's codec reads and writes it.
    special = "".join(chr(code) for code in web_codecs._GB18030_READ)
    pool = "a\u4e2d\u6587\u3000\u20ac" + special
    rng = random.Random(19)
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 12)))
        data = text.encode("gb18030")
        assert data.decode(f"web-{name}") == data.decode("gb18030").translate(web_codecs._GB18030_READ), data
        written = text.translate(web_codecs._GB18030_WRITTEN).encode("gb18030")
        if "\ue5e5" in text or (
            name == "gbk" and ("\u20ac" in text or web_codecs._FOUR_BYTES.search(written))
        ):
            continue  # written otherwise by the standard (see web_codecs._TRANSLATED)
        assert text.encode(f"web-{name}", "strict") == written, text


@pytest.mark.parametrize("name", ["web-gb18030", "web-gbk"])
def test_gb_codecs_read_a_text_in_pieces_as_they_read_it_whole(name: str) -> None:
    # A four-byte sequence begun and broken at the end (0xA1 0x30 then 0x0F) is one U+FFFD for its
    # lead, the bytes after it read again: Python's decoder, given the end in pieces, dropped them.
    assert codecs.getincrementaldecoder(name)(WEB_ERRORS).decode(b"\xa10\x0f", True) == "\ufffd0\x0f"
    pieces = [b"\xa1", b"0", b"\x0f", b"\x81\x30", b"\x81\x30\x81\x30", b"ab", b"\xd6\xd0", b"\x80", b"\xff"]
    rng = random.Random(23)
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 10)))
        decoder = codecs.getincrementaldecoder(name)(WEB_ERRORS)
        cuts = sorted(rng.sample(range(len(data) + 1), min(3, len(data) + 1)))
        read = "".join(decoder.decode(data[start:end]) for start, end in itertools.pairwise([0, *cuts]))
        read += decoder.decode(data[cuts[-1] :], True)
        assert read == data.decode(name, WEB_ERRORS), data
