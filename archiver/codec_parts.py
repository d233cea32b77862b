"""What the Encoding standard's codecs written here share (big5.py, euc_jp.py, iso_2022_jp.py,
web_codecs.py): handing a byte sequence that makes no character, or a character an encoding
has no bytes for, to Python's error handler of the name given ("strict", "replace",
archiver.encodings' own), and a codec made of a decoding and an encoding function.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from collections.abc import Callable
from typing import Any, cast

Decoded = Callable[[bytes, str, bool], tuple[str, int]]
"""(data, errors, final) -> the text read and how many bytes of ``data`` it took: a sequence cut
at the end of ``data`` waits for its next piece unless ``final``."""
Encoded = Callable[[str, str], bytes]
"""(text, errors) -> its bytes."""
_ASCII_BYTES = re.compile(rb"[\x00-\x7f]+")
_RUNS = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]+")
"""A text's runs of ASCII, and of the rest: table_encoded() writes each run at once."""


def undecoded(name: str, errors: str, data: bytes, start: int, end: int, reason: str) -> tuple[str, int]:
    """What the ``errors`` handler gives for bytes ``start`` to ``end`` of ``data`` that make no
    character of codec ``name``, and where reading goes on."""
    replacement, end = codecs.lookup_error(errors)(UnicodeDecodeError(name, data, start, end, reason))
    return str(replacement), end


def unencoded(name: str, errors: str, text: str, at: int, reason: str) -> bytes:
    """The bytes the ``errors`` handler gives for ``text[at]``, which codec ``name`` has no bytes for."""
    replacement, _ = codecs.lookup_error(errors)(UnicodeEncodeError(name, text, at, at + 1, reason))
    return replacement if isinstance(replacement, bytes) else replacement.encode("ascii")


Sequence = Callable[[bytes, int, bool], "tuple[str | None, int] | None"]
"""(data, at, final) -> the character of the sequence whose first byte (past ASCII) is at ``at``
and where it ends, None and where the error ends if it makes none, or None alone when it is cut
at the end of ``data`` and more may come (not ``final``)."""


Pairs = tuple[re.Pattern[bytes], dict[bytes, str]]
"""(a run of two-byte sequences, what each reads as): sequences_decoded() reads such a run at once."""


def sequences_decoded(
    name: str, data: bytes, errors: str, final: bool, sequence: Sequence, pairs: Pairs | None = None
) -> tuple[str, int]:
    """``data`` read by codec ``name``: runs of ASCII as they are, each other sequence as
    ``sequence`` reads it, one that makes no character as the ``errors`` handler gives it; and
    how many bytes were read (a sequence cut at the end waits for the next piece).

    With ``pairs``, a run of two-byte sequences is looked up at once, up to the first the table
    has not (which ``sequence`` reads): what ``sequence`` would read of each, a Python step
    per run instead of per character."""
    out: list[str] = []
    at, size = 0, len(data)
    while at < size:
        if data[at] < 0x80:
            run = _ASCII_BYTES.match(data, at)
            assert run is not None  # data[at] is ASCII
            out.append(run.group().decode("ascii"))
            at = run.end()
            continue
        if pairs is not None and (run := pairs[0].match(data, at)) is not None:
            read = list(map(pairs[1].get, _two_at_a_time(run.group())))
            known = read.index(None) if None in read else len(read)
            out += cast(list[str], read[:known])  # the Nones are past known
            at += 2 * known
            if known == len(read):
                continue
        found = sequence(data, at, final)
        if found is None:
            break  # the rest of the sequence is still to come
        character, end = found
        if character is None:
            character, end = undecoded(name, errors, data, at, end, "illegal multibyte sequence")
        out.append(character)
        at = end
    return "".join(out), at


def _two_at_a_time(run: bytes) -> list[bytes]:
    return [run[at : at + 2] for at in range(0, len(run), 2)]


def table_encoded(
    name: str, written: dict[str, bytes], text: str, errors: str, reason: str, single_below: int = 0x80
) -> bytes:
    """``text`` written by codec ``name``: a code point below ``single_below`` as its byte, any
    other as ``written`` has it, or else as the ``errors`` handler gives it (``reason``).

    Runs of ASCII and of other characters are written at once; a text holding a character that
    ``written`` has not (or one below ``single_below`` past ASCII) is written a character at a
    time, where the handler is asked."""
    if text.isascii():
        return text.encode("ascii")
    with contextlib.suppress(KeyError):  # a character it has no bytes for: one at a time
        return b"".join(
            run.encode("ascii") if run.isascii() else b"".join(map(written.__getitem__, run))
            for run in _RUNS.findall(text)
        )
    out = bytearray()
    for at, character in enumerate(text):
        code = ord(character)
        if code < single_below:
            out.append(code)
        elif (sequence := written.get(character)) is not None:
            out += sequence
        else:
            out += unencoded(name, errors, text, at, reason)
    return bytes(out)


def stateless_codec(name: str, decoded: Decoded, encoded: Encoded) -> codecs.CodecInfo:
    """The codec ``name`` that reads with ``decoded`` and writes with ``encoded``; its incremental
    decoder keeps a cut sequence until the next piece comes."""

    class IncrementalEncoder(codecs.IncrementalEncoder):
        def encode(self, text: str, final: bool = False) -> bytes:
            return encoded(text, self.errors)

    class IncrementalDecoder(codecs.BufferedIncrementalDecoder):
        def _buffer_decode(self, data: Any, errors: str, final: bool) -> tuple[str, int]:
            return decoded(bytes(data), errors, final)

    return codecs.CodecInfo(
        lambda text, errors="strict": (encoded(text, errors), len(text)),
        lambda data, errors="strict": decoded(bytes(data), errors, True),
        name=name,
        incrementalencoder=IncrementalEncoder,
        incrementaldecoder=IncrementalDecoder,
    )


def shift_jis_sequence(pointer: int) -> bytes:
    """The two bytes Shift_JIS writes for ``pointer`` of index jis0208 (the standard's "index
    Shift_JIS pointer" read backwards): EUC-JP's characters are read through cp932 with it.

    >>> shift_jis_sequence(0), shift_jis_sequence(7807)
    (b'\\x81@', b'\\xea\\xa4')
    """
    row, column = divmod(pointer, 188)
    return bytes([row + (0x81 if row < 0x1F else 0xC1), column + (0x40 if column < 0x3F else 0x41)])
