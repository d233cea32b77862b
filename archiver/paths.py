"""Where each archived URL lives in the mirror: pure URL-to-path mapping.

A URL maps to ``<host>/<path>`` under ``mirror/``. Each path segment is
percent-decoded, then every character a file system could misread (``/ \\ : * ?
" < > | % @ #``, control and invisible characters, a trailing dot or space, the
names ``.``, ``..`` and Windows' ``CON``, ``NUL``...) is written back as ``%XX``,
so a name never holds a separator and decoding it gives the segment back.
``@`` is therefore free for what the URL path does not say:

- ``/dir/`` is ``dir/index.html``; a query is appended after ``@``:
  ``/list?page=2`` is ``list@page=2.html``, ``/list?`` (an empty query) ``list@.html``;
- an extension is added from the Content-Type where the name lacks the right
  one (``/about`` served as HTML is ``about.html``, so ``/about/x`` can still be
  a folder), and always for HTML, CSS, JavaScript and SVG, which a browser
  reading files from disk recognises by extension only;
- a name past 200 bytes keeps its first 100 and ends ``@<hash>`` and its extension.

The few URLs that still meet on one path (``/a`` and ``/a.html`` both HTML,
``http:`` and ``https:`` of one host, names equal but for case) are told apart
by the mirror's path plan (mirror/plan.py), which gives the later URL (in
sorted order) a hashed variant of its name (candidate_paths()).

>>> url_to_path("https://Example.com/docs/", "text/html")
'example.com/docs/index.html'
>>> url_to_path("http://127.0.0.1:8080/search?q=a/b", "text/html")
'127.0.0.1+8080/search@q=a%2Fb.html'
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Iterator
from urllib.parse import SplitResult, unquote, urlsplit

from archiver.content import mime_type

MAX_NAME_BYTES = 200
"""Longest file or folder name written, in UTF-8 bytes and in UTF-16 units once decomposed (most
file systems allow 255 bytes, FAT32, exFAT and NTFS 255 UTF-16 units, HFS+ 255 units of the
name's decomposed form, where ``ΐ`` is three)."""
KEEP_NAME_BYTES = 100
MAX_PATH_UNITS = 160
"""Longest path written under mirror/, in UTF-16 units as Windows counts them; longer ones become
<host>/@long/<hash><ext>. Windows opens no path past 260 (MAX_PATH, 248 for a folder): with
``mirror/`` and a file's name, this leaves 80 for the path of the snapshot's folder."""
TOKEN_UNITS = 13
"""What the path plan adds to a path to tell it apart (``@`` and a token, path_token())."""
MAX_HOST_UNITS = 80
"""Longest host folder (a host may have 253 characters): it leaves room under MAX_PATH_UNITS
for a hashed path (``<host>/@long/<hash><ext>``) and the plan's tokens."""

# Canonical extension first.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "text/html": (".html", ".htm"),
    "application/xhtml+xml": (".xhtml", ".html", ".htm"),
    "text/css": (".css",),
    "text/javascript": (".js", ".mjs"),
    "application/javascript": (".js", ".mjs"),
    "application/x-javascript": (".js", ".mjs"),
    "application/ecmascript": (".js",),
    "image/svg+xml": (".svg",),
    "application/json": (".json",),
    "application/ld+json": (".jsonld", ".json"),
    "application/manifest+json": (".webmanifest", ".json"),
    "application/xml": (".xml",),
    "text/xml": (".xml",),
    "application/rss+xml": (".xml", ".rss"),
    "application/atom+xml": (".xml", ".atom"),
    "text/plain": (".txt",),
    "text/csv": (".csv",),
    "text/vtt": (".vtt",),
    "image/png": (".png",),
    "image/jpeg": (".jpg", ".jpeg"),
    "image/gif": (".gif",),
    "image/webp": (".webp",),
    "image/avif": (".avif",),
    "image/bmp": (".bmp",),
    "image/x-icon": (".ico",),
    "image/vnd.microsoft.icon": (".ico",),
    "font/woff": (".woff",),
    "font/woff2": (".woff2",),
    "application/font-woff": (".woff",),
    "font/ttf": (".ttf",),
    "font/otf": (".otf",),
    "application/vnd.ms-fontobject": (".eot",),
    "application/pdf": (".pdf",),
    "application/zip": (".zip",),
    "application/wasm": (".wasm",),
    "video/mp4": (".mp4",),
    "video/webm": (".webm",),
    "audio/mpeg": (".mp3",),
    "audio/ogg": (".ogg",),
    "audio/wav": (".wav",),
    # The other types MIME Sniffing gives a body that named none (mime_sniffing.sniff_unknown()).
    "audio/wave": (".wav",),
    "audio/aiff": (".aiff", ".aif"),
    "audio/basic": (".au", ".snd"),
    "audio/midi": (".mid", ".midi"),
    "application/ogg": (".ogg", ".ogx"),
    "video/avi": (".avi",),
    "application/postscript": (".ps", ".eps"),
    "application/x-gzip": (".gz",),
    "application/x-rar-compressed": (".rar",),
}
# Types a browser opening files from disk identifies by extension alone.
FORCED_EXTENSION_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "text/css",
        "text/javascript",
        "application/javascript",
        "application/x-javascript",
        "image/svg+xml",
    }
)

_DOCUMENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "image/svg+xml"})
"""Types a browser renders a file of as a document, scripts and all, when its name says so."""
_TYPE_OF_EXTENSION: dict[str, str] = {}
for _type, _extensions_of_type in EXTENSIONS.items():
    for _extension in _extensions_of_type:
        _TYPE_OF_EXTENSION.setdefault(_extension, _type)


_ESCAPED = frozenset('/\\:*?"<>|%@#')
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.,;=+~!$&'()\[\]{}^`-]*[A-Za-z0-9_,;=+~!$&'()\[\]{}^`-]")
"""Names escape_name() leaves as they are, but for Windows' reserved ones: printable ASCII
outside _ESCAPED, not ending with a dot (nor a space, which is not in it)."""
_WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{name}{digit}" for name in ("COM", "LPT") for digit in "0123456789¹²³"]
)
_WINDOWS_REFUSED = frozenset('<>:"/\\|?*')
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")


def _escape_char(char: str) -> str:
    if "\udc80" <= char <= "\udcff":  # an undecodable byte kept by surrogateescape
        return f"%{ord(char) - 0xDC00:02X}"
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def reserved_on_windows(name: str) -> bool:
    """True if Windows takes ``name`` for a device (``CON``, ``nul.txt``, ``Com1 .html``)."""
    return name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_RESERVED


def escape_name(text: str) -> str:
    """``text`` as a portable file name: unsafe characters written as %XX (reversible)."""
    if not text:
        return "@"
    if _PLAIN_NAME.fullmatch(text) and not reserved_on_windows(text):
        return text
    if set(text) <= {"."}:
        return "%2E" * len(text)
    out = [_escape_char(c) if c in _ESCAPED or not c.isprintable() else c for c in text]
    if text[-1] in ". ":
        out[-1] = _escape_char(text[-1])
    if reserved_on_windows(text):
        out[0] = _escape_char(text[0])
    return "".join(out)


def unportable(name: str) -> str | None:
    """Why a file system a mirror is copied to (Windows', FAT32, exFAT, macOS') would refuse the
    file or folder name ``name``, or store it as another, or None; escape_name() gives none such.

    >>> unportable("CON.html"), unportable("a:b"), unportable("ok.html")
    ('Windows reserves it for a device', "holds ':', which Windows refuses", None)
    """
    if name in ("", ".", ".."):
        return "names no file"
    refused = next((char for char in name if char in _WINDOWS_REFUSED or char < " "), None)
    if refused is not None:
        return f"holds {refused!r}, which Windows refuses"
    if name[-1] in ". ":
        return f"ends with a {'dot' if name[-1] == '.' else 'space'}, which Windows drops"
    if reserved_on_windows(name):
        return "Windows reserves it for a device"
    if _name_size(name) > 255:
        return "is past 255 bytes or UTF-16 units, the longest name file systems hold"
    return None


def _name_size(name: str) -> int:
    """The size of ``name`` as the strictest file system counts it: its UTF-8 bytes (ext4, APFS),
    or its UTF-16 units once decomposed (HFS+; FAT32, exFAT and NTFS count them as written)."""
    units = len(unicodedata.normalize("NFD", name).encode("utf-16-le", "surrogatepass")) // 2
    return max(len(name.encode("utf-8", "surrogatepass")), units)


def path_units(path: str) -> int:
    """The length of ``path`` as Windows counts it (UTF-16 units)."""
    return len(path.encode("utf-16-le", "surrogatepass")) // 2


def _digest(text: str, size: int = 16) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def _cut(name: str, limit: int) -> str:
    """The longest prefix of ``name`` within ``limit`` UTF-8 bytes, not splitting a %XX."""
    cut = name.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    percent = cut.rfind("%", len(cut) - 2)
    return cut[:percent] if percent != -1 else cut


def _shorten(name: str, original: str, extension: str = "", limit: int | None = None) -> str:
    """``name + extension``, or when that passes ``limit`` (_name_size; MAX_NAME_BYTES if None)
    its first bytes and a hash of ``original``, still ending with the extension (added, or the
    name's own): it is what tells a browser reading files from disk what the file is."""
    limit = MAX_NAME_BYTES if limit is None else limit
    if _name_size(name + extension) <= limit:
        return name + extension
    if not extension and (own := _EXTENSION.search(name)):
        name, extension = name[: own.start()], own.group(0)
    return f"{_cut(name, min(KEEP_NAME_BYTES, limit // 2))}@{_digest(original)}{extension}"


@functools.lru_cache(maxsize=256)
def _host_folder(scheme: str, netloc: str) -> str:
    """The folder of a URL's host: its name, escaped, and a port that is not the default;
    shortened past MAX_HOST_UNITS (a host name may be 253 bytes, its port makes it 259)."""
    parts = SplitResult(scheme, netloc, "", "", "")
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").rstrip(".")
    default = {"http": 80, "https": 443}.get(scheme.lower())
    folder = escape_name(host)
    if port is not None and port != default:
        folder += f"+{port}"
    return _shorten(folder, folder, limit=MAX_HOST_UNITS)


def _extensions(mime: str, segment: str, has_query: bool) -> tuple[str, ...]:
    """The extensions the file name may end with; the first is added if it ends with none.

    A name's own extension is kept, but not one a browser reading files from disk renders as a
    document (a page, an SVG image) when the body is another type we know: an image at
    ``/x.html`` is ``x.html.png``, not a page of its bytes. (A stylesheet a server calls
    text/plain keeps its ``.css``: a page in quirks mode applies it.)"""
    known = EXTENSIONS.get(mime, ())
    own = _EXTENSION.search(segment)
    if mime in FORCED_EXTENSION_TYPES:
        return known
    if own and not (known and _TYPE_OF_EXTENSION.get(own.group(0).lower()) in _DOCUMENT_TYPES):
        return (own.group(0),) if has_query else ()
    return known


def url_to_path(url: str, content_type: str | None = None) -> str:
    """The path, relative to mirror/, of the file holding ``url`` (a posix path).

    Deterministic and safe for any input: the result has no empty, ``.`` or
    ``..`` component, no backslash or NUL, and never starts with ``/``.

    >>> url_to_path("https://h/a/../%2e%2e/x?y", "image/png")
    'h/a/x@y.png'
    """
    mime = mime_type(content_type)
    parts = urlsplit(url.replace("\\", "/"))
    own = urlsplit(url) if "\\" in url else parts  # the host as written
    host = _host_folder(own.scheme, own.netloc)
    segments = parts.path.split("/")[1:] if parts.path.startswith("/") else parts.path.split("/")
    if not segments:
        segments = [""]
    folders = []
    for raw in segments[:-1]:
        decoded = unquote(raw, errors="surrogateescape")
        if decoded in (".", ".."):  # not normalised: never climb out
            continue
        folders.append(_shorten(escape_name(decoded), decoded))
    last = unquote(segments[-1], errors="surrogateescape")
    is_index = last == "" or last in (".", "..")
    stem = "index" if is_index else escape_name(last)
    # An empty query is a query too ("/a?" is another URL than "/a"): its name ends with "@".
    has_query = "?" in url.partition("#")[0]
    query = unquote(parts.query, errors="surrogateescape") if parts.query else ""
    name = f"{stem}@{escape_name(query) if query else ''}" if has_query else stem
    allowed = _extensions(mime, "" if is_index else last, has_query)
    if is_index and not allowed:
        allowed = (".html",)
    extension = ""
    if allowed and not name.lower().endswith(allowed):
        extension = allowed[0]
    name = _shorten(name, name, extension)  # the name tells URLs apart: escape_name() is reversible
    path = "/".join([host, *folders, name])
    # Room for a token in the file's name and one in a folder's, should the plan need them.
    if path_units(path) > MAX_PATH_UNITS - 2 * TOKEN_UNITS:
        kept = _EXTENSION.search(name)
        path = f"{host}/@long/{_digest(url, 32)}{kept.group(0) if kept else ''}"
    return path


def with_token(path: str, token: str) -> str:
    """``path`` with ``@token`` inserted before the file name's extension."""
    folder, _, name = path.rpartition("/")
    match = _EXTENSION.search(name)
    stem, extension = (name[: match.start()], match.group(0)) if match else (name, "")
    return f"{folder}/{stem}@{token}{extension}" if folder else f"{stem}@{token}{extension}"


def folded(path: str) -> str:
    """``path`` as a file system that ignores case and Unicode normalisation compares names
    (macOS; Windows ignores case): two paths with one folded form name one file there. Case is
    folded as Unicode folds it (macOS) and as Windows upper-cases names, which takes the dotless
    ``ı`` for ``I``.

    >>> folded("H/Caf\u00e9.html") == folded("h/cafe\u0301.HTML"), folded("\u0131") == folded("i")
    (True, True)
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", path).upper().casefold())


def folders_of(path: str) -> Iterator[str]:
    """The folders a local path needs, folded (``a/b/c.html`` -> ``a``, ``a/b``)."""
    parts = folded(path).split("/")
    for depth in range(1, len(parts)):
        yield "/".join(parts[:depth])


def path_token(url: str, attempt: int) -> str:
    """The token that tells ``url``'s path apart from another's on its ``attempt``-th try."""
    return _digest(f"{url}#{attempt}", TOKEN_UNITS - 1)


def candidate_paths(url: str, natural: str) -> Iterator[str]:
    """The paths ``url`` may take, in order: its natural path, then hashed variants of it."""
    yield natural
    for attempt in itertools.count(1):
        yield with_token(natural, path_token(url, attempt))


def with_folder_token(path: str, depth: int, token: str) -> str:
    """``path`` with ``@token`` after its folder at ``depth`` (1: the first folder under the host),
    so it moves to a folder of its own.

    >>> with_folder_token("h/a.png/b.html", 1, "x1")
    'h/a.png@x1/b.html'
    """
    parts = path.split("/")
    parts[depth] = f"{parts[depth]}@{token}"
    return "/".join(parts)


def guessed_type(url: str) -> str:
    """The MIME type a URL not fetched yet most likely has: its extension's, else HTML (a link
    without a known extension is most often a page).

    >>> guessed_type("http://h/a/logo.PNG?v=2"), guessed_type("http://h/docs/"), guessed_type("http://h/x.php")
    ('image/png', 'text/html', 'text/html')
    """
    path = urlsplit(url).path
    match = _EXTENSION.search(path.rpartition("/")[2])
    return _TYPE_OF_EXTENSION.get(match.group(0).lower(), "text/html") if match else "text/html"


def relative_url(from_path: str, to_path: str) -> str:
    """The relative URL from the file ``from_path`` to the file ``to_path`` (both posix).

    Pure string work, no file system calls: this runs once per rewritten link,
    and the way between two folders is worked out once.

    >>> relative_url("h/a/b.html", "h/c/d@x=1.html")
    '../c/d@x=1.html'
    """
    from_folder, from_slash, _ = from_path.rpartition("/")
    to_folder, to_slash, name = to_path.rpartition("/")
    return _folder_step(from_folder + from_slash, to_folder + to_slash) + quote_segment(name)


@functools.lru_cache(maxsize=4096)
def _folder_step(from_folder: str, to_folder: str) -> str:
    """The relative URL from a file in ``from_folder`` to ``to_folder`` (each "" or ending in /)."""
    source = from_folder.split("/")[:-1]
    target = to_folder.split("/")[:-1]
    common = 0
    limit = min(len(source), len(target))
    while common < limit and source[common] == target[common]:
        common += 1
    return "".join(["../"] * (len(source) - common) + [quote_segment(s) + "/" for s in target[common:]])


_SEGMENT_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$*+,;=@&]")
_SEGMENT_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$*+,;=@&")


def quote_segment(segment: str) -> str:
    """Percent-encode a file name for use in a URL path (``%``, ``:``, quotes, parens too)."""
    if not _SEGMENT_UNSAFE.search(segment):
        return segment
    return "".join(c if c in _SEGMENT_SAFE else _escape_char(c) for c in segment)
