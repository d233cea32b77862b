"""URLs as browsers parse them (WHATWG), SURT keys and scope rules, case by case."""

import random
import re

import ada_url
import pytest
from conftest import in_linear_time

from archiver.domains import has_bad_punycode, registered_domain
from archiver.errors import BadURL
from archiver.scope import EXCLUDED, OUT_OF_SCOPE, TOO_DEEP, Scope
from archiver.surt import surt
from archiver.urls import normalize_url, query_encoded, try_normalize


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM/", "http://example.com/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com:0080/a", "http://example.com/a"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a/%2e%2E/b/%2e/c", "http://example.com/b/c"),
        ("http://example.com/a#frag", "http://example.com/a"),
        # As requested: no respelling a browser would not do.
        ("http://example.com/images//image_left.png", "http://example.com/images//image_left.png"),
        ("http://example.com/%7euser", "http://example.com/%7euser"),
        ("http://example.com/a%2fb", "http://example.com/a%2fb"),
        ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
        # A "%" that starts no escape, and what no URI holds (RFC 3986): escaped, as WARC needs.
        ("http://example.com/?q=a b&x=%zz'", "http://example.com/?q=a%20b&x=%25zz%27"),
        ("http://example.com/a'b", "http://example.com/a'b"),
        ("http://example.com/{}|`", "http://example.com/%7B%7D%7C%60"),
        (
            "http://example.com/[a]^\\?q=|[]{}^`\\",
            "http://example.com/%5Ba%5D%5E/?q=%7C%5B%5D%7B%7D%5E%60%5C",
        ),
        ("http://[::1]/[", "http://[::1]/%5B"),
        ("http://EXAMPLE.com./", "http://example.com./"),
        ("http://b\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://[0:0:0:0:0:0:13.1.68.3]/", "http://[::d01:4403]/"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("  http://example.com/x  ", "http://example.com/x"),
        ("http://ex\tam\nple.com/x", "http://example.com/x"),
        ("http://example.com\\a\\b", "http://example.com/a/b"),
        # What no request carries: the fragment, credentials.
        ("http://user:pass@example.com/x", "http://example.com/x"),
        # An empty query is a query (a browser sends "GET /x?"), another URL than /x.
        ("http://example.com/x?", "http://example.com/x?"),
        ("http://example.com/x?#f", "http://example.com/x?"),
        ("http://example.com/?", "http://example.com/?"),
        ("http://example.com/x??", "http://example.com/x??"),
    ],
)
def test_normalize_url(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    ("link", "base", "expected"),
    [
        ("b", "http://h/a/", "http://h/a/b"),
        ("../b", "http://h/a/c/", "http://h/a/b"),
        ("/b?x", "http://h/a/", "http://h/b?x"),
        ("//other/x", "https://h/", "https://other/x"),
        ("?q=1", "http://h/a", "http://h/a?q=1"),
        ("#top", "http://h/a", "http://h/a"),
        ("images//image_left.png", "http://h/a/p.html", "http://h/a/images//image_left.png"),
        ("x?", "http://h/a/p.html", "http://h/a/x?"),
        ("\\\\other\\x", "http://h/a/", "http://other/x"),
        ("..\\b", "http://h/a/c/", "http://h/a/b"),
        ("https:x", "http://h/a/", "https://x/"),
        ("http:x", "http://h/a/", "http://h/a/x"),
        ("/.//x", "http://h/a/", "http://h//x"),
        ("?", "http://h/a?q", "http://h/a?"),
        ("?#f", "http://h/a", "http://h/a?"),
        ("", "http://h/a?q", "http://h/a?q"),
    ],
)
def test_normalize_relative(link, base, expected):
    assert normalize_url(link, base) == expected


@pytest.mark.parametrize(
    "bad", ["ftp://h/x", "mailto:a@b", "javascript:alert(1)", "http://", "not a url", "http://h:99999/"]
)
def test_bad_urls_raise(bad):
    with pytest.raises(BadURL):
        normalize_url(bad)
    assert try_normalize(bad) is None


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://www.example.com/", "com,example)/"),
        ("https://example.com/A/b?z=1&a=2", "com,example)/a/b?a=2&z=1"),
        ("http://127.0.0.1:8080/x", "1,0,0,127:8080)/x"),
        # as pywb and cdxj-indexer key them (the surt package), else pywb finds no capture of them
        ("http://h/docs/", "h)/docs"),
        ("http://www2.h/x//./y/../%7Ez?a.b=1&a=2#f", "h)/x/~z?a=2&a.b=1"),
        ("http://h/caf%C3%A9?Q=%2F&q", "h)/caf%c3%a9?q&q=/"),
        ("http://h/p?jsessionid=0123456789abcdef0123456789abcdef&x=1", "h)/p?x=1"),
        # the record of a page's rendered DOM: its URN keyed as a path and a query
        ("urn:dom:http://h/Dir/?b=2&a=1", "urn:dom:http://h/dir?a=1&b=2"),
        ("urn:dom:http://h/caf%C3%A9", "urn:dom:http://h/caf%c3%a9"),
    ],
)
def test_surt(url, key):
    assert surt(url) == key


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("127.0.0.1:8080", "127.0.0.1"),
        ("example.com", "example.com"),
        # Public Suffix List: each user's github.io site is its own domain.
        ("foo.github.io", "foo.github.io"),
        ("www.foo.github.io:8080", "foo.github.io"),
        ("github.io", "github.io"),
        ("a.b.example.com.au", "example.com.au"),
        # IP literals and single labels are their own domain.
        ("[::1]:8080", "[::1]"),
        ("[2001:db8::1]", "[2001:db8::1]"),
        ("10.0.0.1", "10.0.0.1"),
        ("localhost:8000", "localhost"),
        ("Example.COM.", "example.com"),
    ],
)
def test_registered_domain(host, domain):
    assert registered_domain(host) == domain


SEED = "http://www.site.test/docs/index.html"


@pytest.mark.parametrize(
    ("kind", "url", "reason"),
    [
        ("host", "http://www.site.test/other", None),
        ("host", "http://img.site.test/x.png", OUT_OF_SCOPE),
        ("host", "http://www.site.test:8080/", OUT_OF_SCOPE),
        ("domain", "http://img.site.test/x.png", None),
        ("domain", "http://site.test/", None),
        ("domain", "http://notsite.test/", OUT_OF_SCOPE),
        ("domain", "http://www.site.test.evil.example/", OUT_OF_SCOPE),
        ("prefix", "http://www.site.test/docs/a/b", None),
        ("prefix", "http://www.site.test/blog/", OUT_OF_SCOPE),
        ("any", "http://elsewhere.example/", None),
    ],
)
def test_scope_kinds(kind, url, reason):
    assert Scope.from_seeds([SEED], kind=kind).skip_reason(url, depth=1) == reason


@pytest.mark.parametrize(
    ("seed", "url", "reason"),
    [
        ("http://h/docs/page?next=/a/b", "http://h/docs/other", None),
        ("http://h/docs/page?next=/a/b", "http://h/docs/page?next=/a/c", None),
        ("http://h/docs/page?next=/a/b", "http://h/blog/", OUT_OF_SCOPE),
        ("http://h/docs/page?", "http://h/docs/other", None),
        ("http://h/docs?go=/docs/", "http://h/blog/", None),  # /docs is a file of /
    ],
)
def test_scope_prefix_is_the_seeds_folder_whatever_its_query(seed, url, reason):
    """--scope prefix keeps to the folder of the seed's path (as wget --no-parent does), and
    its query, ``/`` or not, is no part of the path."""
    assert Scope.from_seeds([seed], kind="prefix").skip_reason(url, depth=1) == reason
    later = Scope.from_seeds(["http://h/elsewhere/"], kind="prefix").with_seeds([seed])
    assert later.skip_reason(url, depth=1) == reason


@pytest.mark.parametrize(
    ("seed", "url", "reason"),
    [
        ("https://foo.github.io/", "https://other-user.github.io/", OUT_OF_SCOPE),
        ("https://foo.github.io/", "https://www.foo.github.io/x", None),
        ("http://[::1]:8080/", "http://[::1]:9090/", None),
        ("http://[::1]:8080/", "http://[::2]/", OUT_OF_SCOPE),
        ("http://127.0.0.1:8080/", "http://127.0.0.2/", OUT_OF_SCOPE),
        ("http://localhost:8080/", "http://other.localhost/", OUT_OF_SCOPE),
    ],
)
def test_scope_domain_is_the_registered_domain(seed, url, reason):
    assert Scope.from_seeds([seed], kind="domain").skip_reason(url, depth=1) == reason


def test_scope_include_exclude_and_depth():
    scope = Scope.from_seeds([SEED], include=[r"/docs/"], exclude=[r"\.pdf$"], max_depth=2)
    assert scope.skip_reason("http://www.site.test/docs/a", 1) is None
    assert scope.skip_reason("http://www.site.test/blog/a", 1) == EXCLUDED
    assert scope.skip_reason("http://www.site.test/docs/a.pdf", 1) == EXCLUDED
    assert scope.skip_reason("http://www.site.test/docs/a", 3) == TOO_DEEP


@pytest.mark.parametrize(
    ("pattern", "url", "reason"),
    [
        ("/café/", "http://www.site.test/caf%C3%A9/a", EXCLUDED),
        ("/caf%C3%A9/", "http://www.site.test/caf%C3%A9/a", EXCLUDED),
        ("^http://bücher\\.site\\.test/", "http://xn--bcher-kva.site.test/a", EXCLUDED),
        ("q=é", "http://www.site.test/s?q=%C3%A9", EXCLUDED),
        ("q=é", "http://www.site.test/s?q=%E9", None),  # not UTF-8: no character to match
        ("/a/b", "http://www.site.test/a%2Fb", None),  # an escaped slash is no path's slash
        ("/café/", "http://www.site.test/cafe/a", None),
    ],
)
def test_patterns_match_a_url_as_a_person_writes_it_too(pattern, url, reason):
    """--exclude names a path or host as it reads (a Unicode host, an accented path), though the
    crawl holds URLs with their host in punycode and their path percent-encoded."""
    scope = Scope.from_seeds([SEED], kind="any", exclude=[pattern])
    assert scope.skip_reason(url, 1) == reason
    including = Scope.from_seeds([SEED], kind="any", include=[pattern])
    assert including.skip_reason(url, 1) == (None if reason else EXCLUDED)


def test_requisites_cross_hosts_and_depth_but_not_exclude():
    scope = Scope.from_seeds([SEED], exclude=[r"ads\."], max_depth=0)
    assert scope.skip_reason("http://cdn.example/x.css", 5, requisite=True) is None
    assert scope.skip_reason("http://ads.example/x.js", 1, requisite=True) == EXCLUDED


def _reference_normalize(url: str, base: str | None = None) -> str:
    """normalize_url without its fast paths: the WHATWG parser, then what no request carries."""
    href = ada_url.join_url(base, url) if base is not None else ada_url.normalize_url(url)
    if not href.startswith(("http://", "https://")):
        raise BadURL(url, "not http")
    parsed = ada_url.URL(href)
    parsed.hash = ""
    parsed.username = ""
    parsed.password = ""
    host_end = parsed.href.index("/", len(parsed.protocol) + 2)
    tail = re.sub(r"[|\[\]{}^`\\]|%(?![0-9A-Fa-f]{2})", lambda m: f"%{ord(m[0]):02X}", parsed.href[host_end:])
    return parsed.href[:host_end] + tail


_PIECES = [
    "a",
    "B",
    "/",
    "//",
    ".",
    "..",
    "./",
    "../",
    "?",
    "#",
    "=",
    "&",
    "%",
    "%7e",
    "%2F",
    "%zz",
    "|",
    "[",
    "]",
    "{",
    "^",
    "`",
    " ",
    "\\",
    ":",
    "@",
    "~",
    "-",
    "é",
    "x.html",
    "index",
    "0",
    "80",
    "'",
    "+",
    "!",
]
# No ";": urljoin still splits RFC 1808 ";params" off the last segment (it drops a bare
# trailing ";" and reads ".;x" as a dot segment), which browsers and the fast paths do not.
_BASES = [
    "http://h/",
    "http://h/a/b",
    "http://h/a/b/",
    "https://h.example:8443/a/b.html?q=1",
    "http://h:80/a/",
    "http://H/a/",
    "http://h/a/./b",
    "http://h/a%7e/b",
    "http://h",
    "http://127.0.0.1:9/x/y?z",
    "http://10.0.0.1/a/b",
    "http://h/a//b/",
    "http://h/a/b#f",
    "http://h/a/b/c/d.html",
]


def test_fast_paths_agree_with_the_full_normalisation():
    rng = random.Random(7)
    starts = [
        "",
        "/",
        "//h2/",
        "http://h/",
        "https://h/",
        "HTTP://H/",
        "http://h:80/",
        "http://h:8080/",
        "http://h:0080/",
        "http://h:99999/",
        "?",
        "#",
        "../",
        "./",
        "mailto:",
        "http://xn--a/",
        "http://a-.b/",
        "http://h./",
        "https://h:80/",
        "http://h:65536/",
        "http://h:65535/",
        "../../",
        "./../",
        ".././",
        "../a/../",
        "http://0x7f/",
        "http://a.0X1f/",
        "http://1.2/",
        "http://1.2.3.4/",
        "http://01.2.3.4/",
        "http://256.1.1.1/",
        "http://1.2.3.4.5/",
        "http://1.2.3.4:8/",
        "http://a.b.9/",
        "http://a.xn--b/",
        "http://u:p@h/",
        "http://h\t/",
        "\t",
    ]
    for _ in range(20000):
        link = rng.choice(starts) + "".join(rng.choice(_PIECES) for _ in range(rng.randrange(6)))
        base = rng.choice(_BASES)
        for args in ((link, base), (link,)):
            try:
                expected = _reference_normalize(*args)
            except ValueError:  # BadURL is one
                expected = "not a URL to fetch"
            try:
                got = normalize_url(*args)
            except BadURL:
                got = "not a URL to fetch"
            assert got == expected, args


@pytest.mark.parametrize(
    ("url", "bad"),
    [
        ("http://xn--bcher-kva.example/", False),
        ("http://xn--55qx5d.xn--fiqs8s:8080/", False),  # 公司.中国, a port
        ("http://xn--zz/", True),  # punycode that does not decode
        ("http://a.xn--ls8h-broken.example/", True),  # decodes to unassigned code points
        ("http://xn--/", True),  # decodes to nothing
        ("http://xn--abc-/", True),  # decodes to ASCII only
        ("http://xn--nda.example/", False),  # ö
        ("http://xn--ls8h.example/", False),  # an emoji
        ("http://h.example/xn--zz", False),  # a path is no host
        ("http://[::1]:8/", False),
    ],
)
def test_a_host_of_punycode_that_is_no_idna_is_found(url, bad):
    # The URL standard's "domain to ASCII" fails such hosts; ada-url (as Chromium) passes them.
    assert normalize_url(url) == url  # a URL all the same: the crawl skips it with a reason
    assert has_bad_punycode(url) is bad


@pytest.mark.parametrize("host", ["a" * 200_000 + "!", "1" * 200_000 + "a!", "a-" * 100_000 + "!"])
def test_a_url_with_a_host_of_a_megabyte_is_normalised_in_linear_time(host):
    """The check for a URL already in normal form (a seed's, a sitemap's) tried such a host at
    every split (hours)."""
    with in_linear_time():
        assert try_normalize(f"http://{host}/") == f"http://{host}/"


@pytest.mark.parametrize(
    ("reference", "encoding", "expected"),
    [
        ("/s?q=caf\u00e9", "cp1252", "/s?q=caf%E9"),
        ("/caf\u00e9?q=caf\u00e9#caf\u00e9", "cp1252", "/caf\u00e9?q=caf%E9#caf\u00e9"),  # the path in UTF-8
        ("?q=\u20ac", "cp1252", "?q=%80"),
        ("?q=\u20ac", "iso8859-1", "?q=%80"),  # a page labelled ISO-8859-1 is windows-1252 to browsers
        ("?q=\u00e9", "us-ascii", "?q=%E9"),  # ...and so is one labelled US-ASCII
        ("?q=\u00e9", "cp1251", "?q=%26%23233%3B"),  # not in the encoding: &#233;, percent-encoded
        # Bytes windows-1252 assigns no character are C1 controls, written back as those bytes.
        ("?q=\u0081\u008d\u00e9", "cp1252", "?q=%81%8D%E9"),
        ("?q=\u0080", "cp1252", "?q=%26%23128%3B"),  # U+0080 is no byte of it (0x80 is the euro sign)
        # Characters the standard's index has where Python's codec has none, or another one.
        ("?q=\u05ba", "windows-1255", "?q=%CA"),
        ("?q=\u045e\u040e", "koi8-u", "?q=%AE%BE"),
        ("?q=\u20ac\ufe10\u1e3f", "gbk", "?q=%80%A6%D9%A8%BC"),  # GB18030-2022, as browsers write it
        ("?q=\u20ac\ufe10", "gb18030", "?q=%A2%E3%A6%D9"),
        # GBK writes no four-byte sequence, GB18030 does; neither writes U+E5E5 (Chromium's &#...;).
        ("?q=\u00e9\u0080\ue5e5", "gbk", "?q=%A8%A6%26%23128%3B%26%2358853%3B"),
        ("?q=\u00e9\u0080\ue5e5", "gb18030", "?q=%A8%A6%810%810%26%2358853%3B"),
        ("?q=\u9ad9\u2460\uff5e", "euc-jp", "?q=%FC%E2%AD%A1%A1%C1"),  # Windows' rows, as browsers
        ("?q=\u65e5\u672c", "shift_jis", "?q=%93%FA%96{"),  # 0x7B, "{", is no byte to encode
        ("?q=\u30bd", "shift_jis", "?q=%83\\"),  # its second byte is ASCII: kept, as a browser keeps it
        ("?q=\u2460", "shift_jis", "?q=%87@"),  # Windows' Shift_JIS, as browsers read it
        ("?q=\u2170\u00a5\u00a2", "shift_jis", "?q=%FA@\\%26%23162%3B"),  # IBM's row, as Chromium writes it
        ("?q=\u2027\u3875\u4e2d", "big5", "?q=%A1E%26%2314453%3B%A4%A4"),  # HKSCS's alone: none
        ("?q=\U0001f600", "euc_jp", "?q=%26%23128512%3B"),
        # Half-width katakana as full-width, NEC's row, JIS X 0201 Roman for the yen sign.
        ("?q=\uff71\u2460x\u00a5", "iso-2022-jp", "?q=%1B$B%%22-!%1B(Bx%1B(J\\%1B(B"),
        ("http://h/a?b=\u00e9&c=d e", "cp1252", "http://h/a?b=%E9&c=d e"),  # ASCII is the parser's
        ("/a#x?\u00e9", "cp1252", "/a#x?\u00e9"),  # a fragment's "?" starts no query
        ("?q=\u00e9", "utf-8", "?q=\u00e9"),
        ("?q=\u00e9", "utf-16", "?q=\u00e9"),  # URLs never use UTF-16: UTF-8
        ("?q=\u00e9", None, "?q=\u00e9"),
    ],
)
def test_a_query_is_encoded_in_its_documents_encoding(reference, encoding, expected):
    # The WHATWG URL standard's encoding override, as browsers apply it to a document's links.
    assert query_encoded(reference, encoding) == expected


def test_a_query_encoded_for_its_document_is_then_normalised_as_written():
    assert (
        normalize_url(query_encoded("s?q=caf\u00e9 x", "cp1252"), "http://h/a/")
        == "http://h/a/s?q=caf%E9%20x"
    )


def test_a_megabyte_of_query_no_encoding_can_hold_is_encoded_in_linear_time():
    with in_linear_time():
        assert query_encoded("?" + "\u65e5" * 1_000_000, "cp1252") == "?" + "%26%2326085%3B" * 1_000_000
