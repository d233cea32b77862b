"""Encode small, valid PNG, GIF and JPEG images from a seeded random generator, with the stdlib only.

The pixels are real content (gradients with noise, blocky mosaics), so every byte is
image data a decoder reads, not padding; sizes land in the 1-10 KB range of a site's
thumbnails, icons and badges.
"""

from __future__ import annotations

import random
import struct
import zlib


def png_image(rng: random.Random, width: int, height: int) -> bytes:
    """An RGB PNG: a colour gradient with per-pixel noise (noise keeps zlib from shrinking it to nothing)."""
    red, green, blue = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter type "None" for every row
        noise = rng.randbytes(width * 3)
        for x in range(width):
            rows.append((red + x * 4 + noise[3 * x]) & 0xFF)
            rows.append((green + y * 4 + noise[3 * x + 1]) & 0xFF)
            rows.append((blue + (x + y) * 2 + (noise[3 * x + 2] >> 2)) & 0xFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(bytes(rows), 6))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


GIF_COLOURS = 128
GIF_CLEAR = GIF_COLOURS
GIF_END = GIF_COLOURS + 1
GIF_LITERALS_PER_CLEAR = 100
"""Literal codes between clear codes: keeps the LZW table below 256 entries, so every code is 8 bits."""


def gif_image(rng: random.Random, width: int, height: int) -> bytes:
    """A GIF89a of 128 colours in "uncompressed" LZW: literal 8-bit codes with a clear code every 100."""
    palette = bytearray()
    for index in range(GIF_COLOURS):
        palette += bytes(((index * 2) & 0xFF, rng.randrange(256), (255 - index * 2) & 0xFF))
    stripes = [rng.randrange(GIF_COLOURS) for _ in range(height)]
    noise = rng.randbytes(width * height)
    pixels = bytearray()
    for y in range(height):
        for x in range(width):
            pixels.append((stripes[y] + x // 3 + (noise[y * width + x] & 3)) % GIF_COLOURS)
    codes = bytearray()
    for start in range(0, len(pixels), GIF_LITERALS_PER_CLEAR):
        codes.append(GIF_CLEAR)
        codes += pixels[start : start + GIF_LITERALS_PER_CLEAR]
    codes.append(GIF_END)
    blocks = bytearray()
    for start in range(0, len(codes), 255):
        block = codes[start : start + 255]
        blocks += bytes((len(block),)) + block
    screen = struct.pack("<HHBBB", width, height, 0xF6, 0, 0)  # global table of 2**(6+1) colours
    image = struct.pack("<BHHHHB", 0x2C, 0, 0, width, height, 0)
    # LZW minimum code size 7 (128 colours): codes start at 8 bits wide.
    return b"GIF89a" + screen + bytes(palette) + image + b"\x07" + bytes(blocks) + b"\x00;"


# Huffman tables of our own (any valid canonical code is allowed): 6 codes of 3 bits, 3 of 4 bits.
# None is all ones, which baseline decoders reject.
_CODE_LENGTHS = (0, 0, 6, 3) + (0,) * 12
_DC_SYMBOLS = tuple(range(9))  # difference categories 0-8
_AC_SYMBOLS = (0x00, 0x01, 0x02, 0x03, 0x04, 0x11, 0x12, 0x21, 0x31)  # EOB, then (run << 4 | size)
_QUANT = bytes(min(255, 4 + index // 2) for index in range(64))
_MAX_AC_PER_BLOCK = 8


def _canonical_codes(symbols: tuple[int, ...]) -> dict[int, tuple[int, int]]:
    """symbol -> (code, length) for the canonical Huffman code of _CODE_LENGTHS."""
    codes: dict[int, tuple[int, int]] = {}
    code, position = 0, 0
    for length, count in enumerate(_CODE_LENGTHS, start=1):
        for _ in range(count):
            codes[symbols[position]] = (code, length)
            code += 1
            position += 1
        code <<= 1
    return codes


_DC_CODES = _canonical_codes(_DC_SYMBOLS)
_AC_CODES = _canonical_codes(_AC_SYMBOLS)


def _bits(value: int, length: int) -> str:
    return format(value, f"0{length}b") if length else ""


def _magnitude_bits(value: int) -> str:
    """The bits JPEG stores after a coefficient's category: its value, negatives as value - 1."""
    size = abs(value).bit_length()
    return _bits(value if value >= 0 else value + (1 << size) - 1, size)


def _dc_bits(difference: int) -> str:
    code, length = _DC_CODES[abs(difference).bit_length()]
    return _bits(code, length) + _magnitude_bits(difference)


def _ac_bits(rng: random.Random) -> str:
    """The AC coefficients of one block, run-length coded, ending in EOB."""
    parts = []
    for _ in range(rng.randint(0, _MAX_AC_PER_BLOCK)):
        symbol = rng.choice(_AC_SYMBOLS[1:])
        size = symbol & 0x0F
        coefficient = rng.randint(1 << (size - 1), (1 << size) - 1) * rng.choice((1, -1))
        parts.append(_bits(*_AC_CODES[symbol]) + _magnitude_bits(coefficient))
    return "".join(parts) + _bits(*_AC_CODES[0x00])  # at most 8 runs of 4: never reaches position 63


_DC_SPREAD = 24
"""Block brightness varies by up to this much around the image's own level."""
_DC_BITS = {difference: _dc_bits(difference) for difference in range(-2 * _DC_SPREAD, 2 * _DC_SPREAD + 1)}
_AC_PATTERNS = 32


def jpeg_image(rng: random.Random, width: int, height: int) -> bytes:
    """A baseline greyscale JPEG: 8x8 blocks of random brightness around a level, with a few AC coefficients.

    Blocks draw their AC coefficients from 32 patterns made per image, which keeps
    encoding cheap; the brightness still makes every block's bits differ.
    """
    patterns = [_ac_bits(rng) for _ in range(_AC_PATTERNS)]
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    base = rng.randint(-90, 90)
    levels = [base + byte % (2 * _DC_SPREAD + 1) - _DC_SPREAD for byte in rng.randbytes(blocks)]
    choices = rng.randbytes(blocks)
    # DC values are coded as the difference from the previous block's (the first: from 0).
    bits = (
        _dc_bits(levels[0])
        + patterns[choices[0] % _AC_PATTERNS]
        + "".join(
            _DC_BITS[level - previous] + patterns[choice % _AC_PATTERNS]
            for level, previous, choice in zip(levels[1:], levels, choices[1:], strict=False)
        )
    )
    bits += "1" * (-len(bits) % 8)  # pad the last byte with one bits
    scan = int(bits, 2).to_bytes(len(bits) // 8, "big").replace(b"\xff", b"\xff\x00")
    return b"".join(
        (
            b"\xff\xd8",
            _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
            _segment(0xDB, b"\x00" + _QUANT),
            _segment(0xC0, struct.pack(">BHHBBBB", 8, height, width, 1, 1, 0x11, 0)),
            _segment(0xC4, b"\x00" + bytes(_CODE_LENGTHS) + bytes(_DC_SYMBOLS)),
            _segment(0xC4, b"\x10" + bytes(_CODE_LENGTHS) + bytes(_AC_SYMBOLS)),
            _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00"),
            scan,
            b"\xff\xd9",
        )
    )


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes((0xFF, marker)) + struct.pack(">H", len(payload) + 2) + payload
