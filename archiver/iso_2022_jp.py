"""ISO-2022-JP as the WHATWG Encoding standard (and every browser) reads it, where Python's
iso2022_jp reads otherwise: half-width katakana after ESC ( I, the NEC and IBM rows of index
jis0208 (①), an escape sequence it does not know or one that outputs nothing before the next
(each an error, U+FFFD, where Python's passes ESC through or reads nothing), and a byte out of
its set's range (an error, where Python's reads two bytes as one character or loses them).
It writes as the standard does too: half-width katakana as full-width ones, ¥ and ‾ in JIS X
0201 Roman, the NEC and IBM rows, where Python's writes &#...; for them.

>>> import archiver.encodings  # registers it
>>> b"a\\x1b(I12\\x1b$B-!\\x1b(Bb".decode("web-iso-2022-jp") == "a\\uff71\\uff72\\u2460b"
True
>>> b"a\\x1bxb".decode("web-iso-2022-jp", "replace")
'a\\ufffdxb'
>>> "\\u65e5\\uff71x\\u00a5".encode("web-iso-2022-jp")
b'\\x1b$BF|%"\\x1b(Bx\\x1b(J\\\\\\x1b(B'
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from typing import Any

from archiver import euc_jp
from archiver.codec_parts import undecoded, unencoded

NAME = "web-iso-2022-jp"
KEPT_NAME = "web-iso-2022-jp-kept"
"""The codec that writes half-width katakana as they were read (the mirror's, for a document it
writes back), not as full-width ones as the standard (a browser writing a query) does."""
ASCII, ROMAN, KATAKANA, LEAD, TRAIL, ESCAPE_START, ESCAPE = range(7)
"""The decoder's states (the standard's)."""
_ESCAPES = {
    (0x28, 0x42): ASCII,
    (0x28, 0x4A): ROMAN,
    (0x28, 0x49): KATAKANA,
    (0x24, 0x40): LEAD,
    (0x24, 0x42): LEAD,
}
"""(ESC's next two bytes) -> the state they switch to."""


class _Decoder(codecs.IncrementalDecoder):
    """The standard's ISO-2022-JP decoder, its state kept from one piece of input to the next."""

    def __init__(self, errors: str = "strict") -> None:
        super().__init__(errors)
        self.reset()

    def reset(self) -> None:
        self.state = self.output_state = ASCII
        self.lead = 0
        self.output = False

    def getstate(self) -> tuple[bytes, int]:
        return b"", (self.state << 16) | (self.output_state << 12) | (self.lead << 1) | self.output

    def setstate(self, state: tuple[bytes, int]) -> None:
        flags = state[1]
        self.state, self.output_state = flags >> 16, (flags >> 12) & 0xF
        self.lead, self.output = (flags >> 1) & 0xFF, bool(flags & 1)

    def decode(self, data: Any, final: bool = False) -> str:
        data = bytes(data)
        out: list[str] = []
        at = 0
        pending: list[int] = []  # bytes to read again (the standard's "prepend")
        while pending or at < len(data):
            if pending:
                byte, start = pending.pop(), at
            else:
                ran = self._run(data, at, out)
                if ran:
                    at = ran
                    continue
                byte, start = data[at], at
                at += 1
            character = self._step(byte, pending)
            if character is _ERROR:
                out.append(self._error(data, start, max(at, start + 1)))
            elif character:
                out.append(str(character))
        if final:
            state, lead = self.state, self.lead
            if state in (TRAIL, ESCAPE_START, ESCAPE):  # a sequence the end cut short
                out.append(self._error(data, max(len(data) - 1, 0), len(data)))
            if state == ESCAPE:  # its first byte is read again, in the state before the escape
                self.state, self.lead, self.output = self.output_state, 0, False
                character = self._step(lead, pending)
                if character is _ERROR:
                    out.append(self._error(data, max(len(data) - 1, 0), len(data)))
                elif character:
                    out.append(str(character))
            self.reset()
        return "".join(out)

    def _run(self, data: bytes, at: int, out: list[str]) -> int:
        """Read at once the run of plain bytes from ``at`` that the state reads one way (ASCII or
        Roman characters, or pairs of JIS X 0208, all of them in its index) onto ``out``, as _step()
        would read them one by one; returns where the run ends, or 0 for none. A page is mostly such
        runs: read a byte at a time, a 100 KB page took 0.1 to 0.15 s."""
        state = self.state
        if state in (ASCII, ROMAN):
            found = _SINGLE_RUN.match(data, at)
            if found is None:
                return 0
            text = found.group().decode("ascii")
            out.append(text.translate(_ROMAN) if state == ROMAN else text)
        elif state == LEAD:
            found = _PAIR_RUN.match(data, at)
            if found is None:
                return 0
            run = found.group().translate(_TO_EUC)
            index = euc_jp.jis0208()[0]
            characters = [index.get(run[pair : pair + 2]) for pair in range(0, len(run), 2)]
            if None in characters:
                return 0  # one not in the index: read a byte at a time, its error where it is
            out.append("".join(characters))  # type: ignore[arg-type]
            self.lead = data[found.end() - 2]
        else:
            return 0
        self.output = False
        return found.end()

    def _error(self, data: bytes, start: int, end: int) -> str:
        """The error handler's text for bytes ``start``-``end`` of ``data`` (as near as they are in
        it: a sequence begun in an earlier piece is told by its last byte here, or by ESC)."""
        data = data or b"\x1b"
        start = min(start, len(data) - 1)
        end = min(max(end, start + 1), len(data))
        return undecoded(NAME, self.errors, data, start, end, "illegal sequence")[0]

    def _step(self, byte: int, pending: list[int]) -> object:
        """Read ``byte``: its character, '' for none yet, or _ERROR (bytes to read again go on
        ``pending``, the last to read first)."""
        state = self.state
        if state in (ASCII, ROMAN, KATAKANA, LEAD) and byte == 0x1B:
            self.state = ESCAPE_START
            return ""
        if state == ASCII:
            self.output = False
            return chr(byte) if byte < 0x80 and byte not in (0x0E, 0x0F) else _ERROR
        if state == ROMAN:
            self.output = False
            if byte == 0x5C:
                return "\u00a5"
            if byte == 0x7E:
                return "\u203e"
            return chr(byte) if byte < 0x80 and byte not in (0x0E, 0x0F) else _ERROR
        if state == KATAKANA:
            self.output = False
            return chr(0xFF61 - 0x21 + byte) if 0x21 <= byte <= 0x5F else _ERROR
        if state == LEAD:
            self.output = False
            if 0x21 <= byte <= 0x7E:
                self.lead, self.state = byte, TRAIL
                return ""
            return _ERROR
        if state == TRAIL:
            if byte == 0x1B:
                self.state = ESCAPE_START
                return _ERROR
            self.state = LEAD
            if 0x21 <= byte <= 0x7E:
                character = euc_jp.jis0208()[0].get(bytes([self.lead + 0x80, byte + 0x80]))
                return character if character is not None else _ERROR
            return _ERROR
        if state == ESCAPE_START:
            if byte in (0x24, 0x28):
                self.lead, self.state = byte, ESCAPE
                return ""
            pending.append(byte)
            self.output, self.state = False, self.output_state
            return _ERROR
        lead, self.lead = self.lead, 0  # ESCAPE
        switched = _ESCAPES.get((lead, byte))
        if switched is not None:
            self.state = self.output_state = switched
            output, self.output = self.output, True
            return _ERROR if output else ""
        pending += [byte, lead] if byte < 0x80 else [lead]  # Chromium reads no byte past ASCII again
        self.output, self.state = False, self.output_state
        return _ERROR


_ERROR = object()
_SINGLE_RUN = re.compile(rb"[\x00-\x0d\x10-\x1a\x1c-\x7f]+")
"""Bytes the ASCII and Roman states read as one character each (not ESC, SO or SI)."""
_ROMAN = {0x5C: "\u00a5", 0x7E: "\u203e"}
"""What JIS X 0201 Roman reads otherwise than ASCII."""
_PAIR_RUN = re.compile(rb"(?:[\x21-\x7e][\x21-\x7e])+")
"""Pairs of bytes the lead state reads as JIS X 0208 characters."""
_TO_EUC = bytes((byte + 0x80) & 0xFF for byte in range(256))
"""A JIS X 0208 pair as EUC-JP writes it: the keys of euc_jp's index."""

_KATAKANA = {chr(code): unicodedata.normalize("NFKC", chr(code)) for code in range(0xFF61, 0xFFA0)}
_KATAKANA.update({"\uff9e": "\u309b", "\uff9f": "\u309c"})
"""Half-width katakana -> the full-width ones they are written as (the standard's index
ISO-2022-JP katakana: their compatibility forms, but the sound marks' own characters)."""
_ESC_ASCII, _ESC_ROMAN, _ESC_JIS0208 = b"\x1b(B", b"\x1b(J", b"\x1b$B"


class _Encoder(codecs.IncrementalEncoder):
    """The standard's ISO-2022-JP encoder, its state kept from one piece of text to the next."""

    kept_katakana = False
    """Whether half-width katakana are written as such (after ESC ( I), as the standard reads them
    but never writes them: KEPT_NAME's writer, which gives back the bytes of a document read."""

    def __init__(self, errors: str = "strict") -> None:
        super().__init__(errors)
        self.state = ASCII

    def reset(self) -> None:
        self.state = ASCII

    def getstate(self) -> int:
        return self.state

    def setstate(self, state: int | str) -> None:
        self.state = int(state)

    def encode(self, text: str, final: bool = False) -> bytes:
        """The standard's encoder, a character at a time (_encode_one()); a run that only writes
        its bytes (ASCII in the ASCII or Roman state, JIS X 0208 characters in the lead state) is
        written at once, after the escape to its state."""
        out = bytearray()
        pairs = _pairs(self.kept_katakana)
        for run in _CHARACTER_RUNS.finditer(text):
            kind = run.lastgroup
            if kind == "plain":
                if self.state not in (ASCII, ROMAN):  # in Roman, these are written as in ASCII
                    out += _ESC_ASCII
                    self.state = ASCII
                out += run.group().encode("ascii")
                continue
            if kind == "wide" and (written := run.group().translate(pairs)).isascii():
                if self.state != LEAD:
                    out += _ESC_JIS0208
                    self.state = LEAD
                out += written.encode("ascii")
                continue
            for at in range(run.start(), run.end()):  # one of them is written otherwise
                self._encode_one(text, at, out)
        if final and self.state != ASCII:
            out += _ESC_ASCII
            self.state = ASCII
        return bytes(out)

    def _encode_one(self, text: str, at: int, out: bytearray) -> None:
        """Write ``text[at]`` to ``out`` as the standard's encoder does."""
        character = text[at]
        code = ord(character)
        roman_ascii = code < 0x80 and character not in "\\~"
        if code < 0x80 and character not in "\x0e\x0f\x1b":
            if self.state == ROMAN and roman_ascii:
                out.append(code)
                return
            if self.state != ASCII:
                out += _ESC_ASCII
                self.state = ASCII
            out.append(code)
            return
        if character in "\u00a5\u203e":
            if self.state != ROMAN:
                out += _ESC_ROMAN
                self.state = ROMAN
            out.append(0x5C if character == "\u00a5" else 0x7E)
            return
        if self.kept_katakana and character in _KATAKANA:
            if self.state != KATAKANA:
                out += b"\x1b(I"
                self.state = KATAKANA
            out.append(code - 0xFF61 + 0x21)
            return
        wanted = _KATAKANA.get(character, "\uff0d" if character == "\u2212" else character)
        sequence = euc_jp.jis0208()[1].get(wanted) if code >= 0x80 else None
        if sequence is None:
            if self.state != ASCII:
                out += _ESC_ASCII
                self.state = ASCII
            # ESC, SO and SI, which would switch the reader's state, are an error of U+FFFD.
            shown, start = ("\ufffd", 0) if code < 0x80 else (text, at)
            out += unencoded(NAME, self.errors, shown, start, "not in ISO-2022-JP")
            return
        if self.state != LEAD:
            out += _ESC_JIS0208
            self.state = LEAD
        out += bytes([sequence[0] - 0x80, sequence[1] - 0x80])


_CHARACTER_RUNS = re.compile(
    r"(?P<plain>[\x00-\x0d\x10-\x1a\x1c-\x5b\x5d-\x7d\x7f]+)|(?P<wide>[^\x00-\x7f]+)|.", re.DOTALL
)
"""Runs of ASCII but ESC, SO, SI, backslash and tilde (written alike in the ASCII and Roman
states), runs of other characters, and each of those five alone."""


@functools.cache
def _pairs(kept_katakana: bool) -> dict[int, str]:
    """A str.translate() table: each character _Encoder writes as a JIS X 0208 pair in the lead
    state -> that pair as ASCII text. What it leaves out stays as it is, past ASCII: ¥ and ‾
    (Roman), half-width katakana when they are kept, and what ISO-2022-JP cannot write."""
    table = {
        ord(character): bytes(byte - 0x80 for byte in sequence).decode("ascii")
        for character, sequence in euc_jp.jis0208()[1].items()
        if ord(character) >= 0x80 and character not in "\u00a5\u203e"
    }
    for half in _KATAKANA:  # written as the full-width ones (or, kept, after ESC ( I)
        table.pop(ord(half), None)
    if not kept_katakana:
        table.update((ord(half), table[ord(full)]) for half, full in _KATAKANA.items() if ord(full) in table)
    table.pop(0x2212, None)
    if 0xFF0D in table:
        table[0x2212] = table[0xFF0D]  # − is written as －
    return table


class _KeptEncoder(_Encoder):
    kept_katakana = True


def _decoded(data: bytes, errors: str = "strict") -> tuple[str, int]:
    return _Decoder(errors).decode(data, True), len(data)


def codec_info(name: str = "iso-2022-jp") -> codecs.CodecInfo:
    """The codec (registered by archiver.encodings under NAME, and its writer that keeps half-width
    katakana under KEPT_NAME)."""
    kept = name == KEPT_NAME.removeprefix("web-")
    encoder = _KeptEncoder if kept else _Encoder
    return codecs.CodecInfo(
        lambda text, errors="strict": (encoder(errors).encode(text, True), len(text)),
        lambda data, errors="strict": _decoded(bytes(data), errors),
        name=KEPT_NAME if kept else NAME,
        incrementalencoder=encoder,
        incrementaldecoder=_Decoder,
    )
