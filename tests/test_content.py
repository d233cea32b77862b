"""The one bounded decoder (content.Decoding): every Content-Encoding a server may send."""

from __future__ import annotations

import gzip
import zlib

import brotlicffi
import pytest

from archiver.content import CHUNK, Decoding, bounded_document, decode_body, decode_payload, mime_type
from archiver.links import charset_from_content_type
from archiver.media_types import MediaType, effective_content_type, extract_mime_type
from archiver.mime_sniffing import SIGNATURES, sniff_unknown
from archiver.paths import url_to_path


def gzip_compress(data: bytes) -> bytes:
    """gzip with no time in its header: the same bytes, so the same test ids, in every process."""
    return gzip.compress(data, mtime=0)


TEXT = b"<html><body>" + b"<p>hello</p>" * 500 + b"</body></html>"


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        (TEXT, None),
        (TEXT, ""),
        (TEXT, "identity"),
        (gzip_compress(TEXT), "gzip"),
        (gzip_compress(TEXT), "X-GZIP"),
        (zlib.compress(TEXT), "deflate"),
        (raw_deflate(TEXT), "deflate"),
        (brotlicffi.compress(TEXT), "br"),
        (gzip_compress(gzip_compress(TEXT)), "gzip, gzip"),
        (brotlicffi.compress(gzip_compress(TEXT)), "gzip, br"),
        (gzip_compress(TEXT) + b"\0\0\0garbage", "gzip"),
        (gzip_compress(TEXT), "identity, gzip"),
    ],
)
def test_every_encoding_decodes_whole(raw: bytes, encoding: str | None) -> None:
    decoded = decode_body(raw, encoding)
    assert decoded == (TEXT, False, None)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "gzip, gzip"])
def test_fed_a_byte_at_a_time(encoding: str) -> None:
    raw = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotlicffi.compress}.get(
        encoding, lambda data: gzip_compress(gzip_compress(data))
    )(TEXT)
    decoding = Decoding((raw[i : i + 1] for i in range(len(raw))), encoding, limit=1 << 20)
    assert b"".join(decoding) == TEXT
    assert decoding.problem is None and not decoding.cut


@pytest.mark.parametrize(
    ("raw", "encoding", "body", "problem"),
    [
        (b"plain text sent as gzip", "gzip", b"plain text sent as gzip", "not gzip data: kept as received"),
        (b"plain", "deflate", b"plain", "not deflate data: kept as received"),
        (b"plain", "br", b"plain", "not br data: kept as received"),
        (
            b"\x28\xb5\x2f\xfd",
            "zstd",
            b"\x28\xb5\x2f\xfd",
            "unknown Content-Encoding 'zstd': kept as received",
        ),
        (gzip_compress(b"x"), "gzip, compress", gzip_compress(b"x"), "unknown Content-Encoding 'compress'"),
        (gzip_compress(TEXT)[:-5], "gzip", None, "corrupt gzip data"),
        (brotlicffi.compress(TEXT)[:-1], "br", None, "corrupt br data"),
        (b"", "gzip", b"", None),
        (
            b"plain",
            ", ".join(["gzip"] * 5000),
            b"plain",
            "5000 Content-Encodings, more than 8: kept as received",
        ),
        (gzip_compress(b"x"), "gzip, " + "identity, " * 5000, b"x", None),
    ],
)
def test_wrong_unknown_and_corrupt_encodings_are_said(raw, encoding, body, problem) -> None:
    decoded = decode_body(raw, encoding)
    if body is not None:
        assert decoded.body == body
    else:
        assert TEXT.startswith(decoded.body) and len(decoded.body) > 1000
    assert (decoded.problem or "").startswith(problem or "") and bool(decoded.problem) == bool(problem)


def test_a_body_in_gzip_is_its_first_member_as_chromium_reads_it() -> None:
    """Chromium ignores what follows a body's first gzip member (measured: a page of two members
    shows the first), as it does any bytes past the end of a stream; a corrupt member after it is
    no problem then. A gzipped file (a sitemap.xml.gz) is read as gunzip reads it: every member."""
    good = gzip_compress(b"first ")
    bad = bytearray(gzip_compress(b"second" * 100))
    bad[20] ^= 0xFF
    decoded = decode_body(good + bytes(bad), "gzip")
    assert (decoded.body, decoded.problem) == (b"first ", None)
    second = gzip_compress(b"second")
    assert decode_body(good + second, "gzip").body == b"first "
    assert b"".join(Decoding([good + second], "gzip", 99, gzip_members=True)) == b"first second"
    members = Decoding([good + bytes(bad)], "gzip", 1 << 20, gzip_members=True)
    assert b"".join(members).startswith(b"first ") and (members.problem or "").startswith("corrupt gzip data")


def bomb(coding: str, size: int) -> bytes:
    """``size`` zero bytes, compressed by ``coding``, made a chunk at a time."""
    if coding == "br":
        return brotlicffi.compress(bytes(size), quality=5)
    compressor = zlib.compressobj(
        9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS
    )
    block = bytes(1 << 20)
    return b"".join(compressor.compress(block) for _ in range(size >> 20)) + compressor.flush()


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_bomb_stops_at_the_limit_and_says_so(coding: str) -> None:
    raw = bomb(coding, 256 << 20)
    assert len(raw) < 1 << 20
    decoding = Decoding((raw[i : i + 8192] for i in range(0, len(raw), 8192)), coding, limit=1 << 20)
    pieces = list(decoding)
    assert sum(map(len, pieces)) == 1 << 20 and decoding.cut and decoding.problem is None
    assert max(map(len, pieces)) <= 2 * CHUNK  # brotli may pass its output limit a little


def test_nested_bomb_is_bounded_at_every_stage() -> None:
    # gzip of a gzip bomb: the outer stage is small, the inner one is the bomb.
    raw = gzip_compress(bomb("gzip", 512 << 20))
    decoding = Decoding((raw,), "gzip, gzip", limit=100_000)
    assert len(b"".join(decoding)) == 100_000 and decoding.cut


def test_exact_limit_is_not_cut() -> None:
    assert decode_body(gzip_compress(b"abc"), "gzip", limit=3) == (b"abc", False, None)
    assert decode_payload(gzip_compress(b"abcd"), "gzip", limit=3) == b"abc"


@pytest.mark.parametrize(
    ("body", "mime", "kept"),
    [
        (b"<a href=x>" * 10, "text/html", b"<a href=x>" * 3),
        (b"<p>" + b"x" * 100, "text/html", None),
        (b"a{b:url(x)}" * 10, "text/css", b"a{b:url(x)}" * 3 + b"a{b:"),
        (b"a{b:URL(x)}" * 2 + b"a{b:url(x)}" * 8, "text/css", b"a{b:URL(x)}" * 2 + b"a{b:url(x)}a{b:"),
    ],
)
def test_documents_are_read_up_to_max_markup(body, mime, kept, monkeypatch) -> None:
    monkeypatch.setattr("archiver.content.MAX_MARKUP", 3)
    assert bounded_document(body, mime) == ((kept, True) if kept else (body, False))


@pytest.mark.parametrize(
    ("fields", "essence", "charset"),
    [
        (["text/html; charset=utf-8"], "text/html", "utf-8"),
        ([' Text/HTML ;CHARSET="koi8-r"'], "text/html", "koi8-r"),
        (["text/html; charset='koi8-r'"], "text/html", "'koi8-r'"),  # no label browsers know
        (['text/html; charset="a\\"b"'], "text/html", 'a"b'),
        (["text/html; charset=gbk; charset=utf-8"], "text/html", "gbk"),  # the first one counts
        (["text/html;charset=gbk", "text/html"], "text/html", "gbk"),  # kept: same type
        (["text/html;charset=gbk, text/html"], "text/html", "gbk"),
        (["text/html;charset=gbk", "text/html;charset=utf-8"], "text/html", "utf-8"),
        (["text/html;charset=gbk", "text/plain", "text/html"], "text/html", None),  # type changed
        (["text/css", "*/*"], "text/css", None),
        (["text/plain", "nonsense"], "text/plain", None),
        (['text/html;x=",";charset=gbk'], "text/html", "gbk"),  # a comma in quotes splits nothing
        (['text/html;;; =;charset="koi8-r'], "text/html", "koi8-r"),  # empty ones skipped, quote unclosed
        (["text/html" + ";a=b" * 10_000 + ";charset=koi8-r"], "text/html", "koi8-r"),
        (["text/html; charset = koi8-r"], "text/html", None),  # "charset " is no parameter name
        (["text/html; charset="], "text/html", None),
        (["text /html"], "", None),
        ([""], "", None),
        (["*/*"], "", None),
        (["html"], "", None),
        (["text/"], "", None),
        ([], "", None),
    ],
)
def test_content_type_is_read_as_fetch_extracts_a_mime_type(fields, essence, charset):
    assert extract_mime_type(fields) == MediaType(essence, charset)
    joined = ", ".join(fields) or None
    assert (mime_type(joined), charset_from_content_type(joined)) == (essence, charset)


@pytest.mark.parametrize(
    ("head", "sniffed"),
    [
        (b"<!DOCTYPE html><p>", "text/html"),
        (b"\r\n \t<HtMl>", "text/html"),
        (b"<a href=x>", "text/html"),
        (b"<br>", "text/html"),
        (b"<!-- x -->", "text/html"),
        (b"<!---->", "text/plain"),
        (b"<abbr>", "text/plain"),  # <A is a tag only before a space or ">"
        (b"<?xml version='1.0'?>", "text/xml"),
        (b"%PDF-1.7", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n\0\0", "image/png"),
        (b"GIF89a..", "image/gif"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"RIFF\x10\0\0\0WEBPVP8 ", "image/webp"),
        (b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp41isom", "video/mp4"),
        (b"\x1f\x8b\x08\0", "application/x-gzip"),
        (b"\xef\xbb\xbf<p>", "text/plain"),  # a byte-order mark comes before any tag
        (b"plain words", "text/plain"),
        (b"", "text/plain"),
        (b"words\x00", "application/octet-stream"),
    ],
)
def test_a_body_of_no_type_is_sniffed_as_browsers_sniff_it(head, sniffed):
    assert sniff_unknown(head) == sniffed


NOSNIFF = ("X-Content-Type-Options", "nosniff")


PNG_HEAD = b"\x89PNG\r\n\x1a\n\0\0"


@pytest.mark.parametrize(
    ("headers", "body", "taken_as"),
    [
        ([], b"<html>", "text/html"),
        ([("Content-Type", "")], b"<html>", "text/html"),
        ([("Content-Type", "unknown/unknown")], b"<html>", "text/html"),
        ([("content-type", "application/unknown")], b"<html>", "text/html"),
        ([("Content-Type", "*/*")], b"<html>", "text/html"),
        ([("Content-Type", "text/plain")], b"<html>", "text/plain"),  # a type the server named stands
        ([("Content-Type", "image/png")], b"<html>", "image/png"),
        # nosniff: Chromium takes the answer as text/plain, never a page, but decodes an image,
        # audio or video from its bytes whatever its type.
        ([NOSNIFF], b"<html>", "text/plain"),
        ([NOSNIFF, ("Content-Type", "unknown/unknown")], b"<!DOCTYPE html>", "text/plain"),
        ([NOSNIFF], PNG_HEAD, "image/png"),
        ([("x-content-type-options", "NoSniff, x")], b"GIF89a..", "image/gif"),
        ([NOSNIFF], b"ID3\x03", "audio/mpeg"),
        ([NOSNIFF], b"%PDF-1.7", "text/plain"),
        # An image sent as HTML or plain text is the image a page shows, nosniff or not; a type
        # no text begins with only (BMP's "BM" is the start of "BMW").
        ([NOSNIFF, ("Content-Type", "text/html")], PNG_HEAD, "image/png"),
        ([("Content-Type", "text/html; charset=utf-8")], b"\xff\xd8\xff\xe0", "image/jpeg"),
        ([("Content-Type", "text/plain")], b"GIF87a", "image/gif"),
        ([("Content-Type", "text/plain")], b"BMW", "text/plain"),
        ([("Content-Type", "text/html")], b"%PDF-1.7", "text/html"),
        ([("Content-Type", "application/octet-stream")], PNG_HEAD, "application/octet-stream"),
        ([("Content-Type", "text/css")], PNG_HEAD, "text/css"),
    ],
)
def test_only_an_answer_of_no_type_or_an_image_sent_as_text_is_sniffed(headers, body, taken_as):
    read = []

    def head() -> bytes:
        read.append(True)
        return body

    sent = mime_type(next((value for name, value in headers if name.lower() == "content-type"), ""))
    assert mime_type(effective_content_type(headers, head)) == taken_as
    sniffable = sent in ("", "unknown/unknown", "application/unknown", "text/html", "text/plain")
    assert bool(read) == sniffable, "the body is read only to sniff it"


@pytest.mark.parametrize(
    "kind", sorted({kind for _, _, kind in SIGNATURES} | {"text/html", "text/xml", "video/mp4"})
)
def test_each_sniffed_type_gives_its_mirror_file_an_extension(kind):
    assert url_to_path("http://h/file", kind).startswith("h/file.")
