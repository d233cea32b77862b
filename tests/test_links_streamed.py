"""A large page is parsed for links as a stream, without its tree: it gives what its tree
gives, cut short, in UTF-16, its queries encoded alike."""

import subprocess
import sys

import pytest
from link_cases import BASE, past_streaming

from archiver.findings import findings, parse_page, read_page, root_findings
from archiver.links import LINK, REQUISITE

# Pages past STREAMED_BYTES are parsed as a stream (no tree): they must give what the tree gives.
STREAMED_PAGES = [
    '<a href="a.html">x</a><map><area href="/area"></map><link rel="canonical" href="/c">',
    '<link rel="stylesheet" href="s.css"><link rel="preload" as="image" imagesrcset="pre.png 2x">',
    '<img src="i.png" srcset="s1.png 1x, s2.png 2x"><picture><source srcset="p.webp"></picture>',
    '<video src="v.mp4" poster="poster.jpg"><source src="v.webm"><track src="t.vtt"></video>',
    '<input type="image" src="btn.png"><input type="text" src="no.png"><object data="o.svg"></object>',
    '<meta http-equiv="refresh" content="0; url=/next"><meta name="ROBOTS" content="noindex, NoFollow">',
    "<div style=\"background: url('bg.png')\"><p STYLE='x: url(deep.png)'><a href=in-styled>t</a></p></div>",
    "<style>body { background: url(/st.png) }</style><style>@import 'imp.css';</style>",
    '<svg><use href="sprite.svg#icon"></use><use xlink:href="/x.svg#i"></use><title>In svg</title></svg>',
    '<svg><rect fill="url(paint.svg#g)" style="fill:url(st.svg#s)"/><g mask="url(m.svg?\u00e9#m)"></g></svg>',
    '<svg><rect fill="url(f1.svg)"/><g><rect style="fill:url(s1.svg)"/></g></svg><rect fill="url(no.svg)">',
    '<head><base href="mailto:x"><base href="http://other/r/"><title> A \n title </title></head><a href=x>',
    "<body><svg><title>Image</title></svg><head><title>Late head</title></head></body>",
    '<a href="i.png">i</a><img src="i.png"><a href="#top">t</a><a href="javascript:go()">j</a>',
    "<!-- <a href='commented.html'> --><script>var s = '<a href=\"in-script\">';</script><a href=after>",
    "<p><a href=x>unclosed <b>tags<table><td background=tile.gif><tr><a href=in-table>",
    '<meta charset="iso-8859-1"><a href="caf\xe9.html">caf\xe9</a><title>d\xe9j\xe0</title>',
    '<base href="/b/"><iframe srcdoc="&lt;img src=s.png&gt;&lt;iframe srcdoc=\'&lt;a href=d.html&gt;\'&gt;">',
]


# Elements left open at the end of a page (a page cut short): what they hold counts too.
ENDING_OPEN = ["<title>Cut short: ", "<style>p { background: url(/cut.png) } ", "<a href=/last>"]


@pytest.mark.parametrize("ending", ENDING_OPEN)
def test_a_large_page_cut_short_parsed_as_a_stream_gives_what_its_tree_gives(ending):
    body = past_streaming('<a href="a.html">a</a>', "utf-8", ending + "x " * 1000)
    streamed = findings(body, BASE, "text/html", "text/html")
    assert streamed == root_findings(parse_page(body, "text/html"), BASE)
    assert len(streamed[2]) == 2 or streamed[0] is not None and streamed[0].startswith("Cut short")


@pytest.mark.parametrize("html", STREAMED_PAGES)
@pytest.mark.parametrize("charset", [None, "utf-8", "iso-8859-1", "no-such-charset"])
def test_a_large_page_parsed_as_a_stream_gives_what_its_tree_gives(html, charset):
    body = past_streaming(html, charset if charset in ("utf-8", "iso-8859-1") else "iso-8859-1")
    content_type = f"text/html; charset={charset}" if charset else "text/html"
    streamed = findings(body, BASE, "text/html", content_type)
    tree = root_findings(parse_page(body, content_type), BASE)
    assert streamed == tree
    assert list(streamed[2].items()) == list(tree[2].items())  # in the page's order too
    assert streamed[2] or streamed[0]  # each page has a link or a title to find


def test_a_large_page_in_utf16_parsed_as_a_stream_gives_what_its_tree_gives():
    body = past_streaming('<p style="background: url(bg.png)"><a href="u.html">u</a>', "utf-16")
    streamed = findings(body, BASE, "text/html", "text/html")
    assert streamed == root_findings(parse_page(body, "text/html"), BASE)
    assert streamed[2] == {"http://h/dir/u.html": LINK, "http://h/dir/bg.png": REQUISITE}


def test_a_page_of_megabytes_is_parsed_for_links_without_its_tree(tmp_path):
    # A tree of this page holds about ten times its size; the stream holds a chunk at a time.
    # Measured in a fresh interpreter, as the peak of its resident memory (Linux's VmHWM).
    page = tmp_path / "big.html"
    rows = "".join(
        f'<a href="/p{i}.html" class="entry">page {i}: {"words of text " * 6}</a><br>' for i in range(40_000)
    )
    page.write_text(f"<title>Big</title><div>{rows}</div>")
    code = (
        "import sys\n"
        "from archiver.findings import findings\n"
        "def peak(): return int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
        "body = open(sys.argv[1], 'rb').read()\n"
        "before = peak()\n"
        "found = findings(body, 'http://h/', 'text/html')\n"
        "print(len(body), len(found[2]), peak() - before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(page)], capture_output=True, text=True, check=True)
    size, links, grown_kib = map(int, done.stdout.split())
    assert size > 4_000_000 and links == 40_000
    assert grown_kib < 24 * 1024, f"parsing a {size} byte page grew the process by {grown_kib} KiB"


def test_a_large_page_parsed_as_a_stream_encodes_queries_as_its_tree_does():
    body = past_streaming('<a href="/s?q=caf\xe9"><p style="background:url(/b?\xe9)">', "windows-1252")
    content_type = "text/html; charset=windows-1252"
    streamed = findings(body, BASE, "text/html", content_type)
    assert streamed[2] == {"http://h/s?q=caf%E9": LINK, "http://h/b?%C3%A9": REQUISITE}
    root, encoding = read_page(body, content_type)
    assert streamed == root_findings(root, BASE, encoding)
