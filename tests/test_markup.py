"""The start-tag scanner the rewriter stands on, case by case."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import in_linear_time

from archiver.markup import RAW_TEXT_ELEMENTS, attributes, iter_tags, one_of, scan


def tags(text: str) -> list[tuple[str, str]]:
    return [(tag, raw) for _offset, tag, raw in scan(text).tags]


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<a href="/b">b</a>', [("a", '<a href="/b">')]),
        ("<A HREF=/b>", [("a", "<A HREF=/b>")]),
        ('<a title="x>y" href=z>', [("a", '<a title="x>y" href=z>')]),
        ("<a title='it\"s' href=z>", [("a", "<a title='it\"s' href=z>")]),
        ("<img\nsrc=x\talt=''/>", [("img", "<img\nsrc=x\talt=''/>")]),
        ('<a href="x"title="t">', [("a", '<a href="x"title="t">')]),
        ("<br/><hr / >", [("br", "<br/>"), ("hr", "<hr / >")]),
        ("<!-- <a href=x> -->", []),
        ("<!--> <a href=x>", [("a", "<a href=x>")]),
        ("<!-- open <a href=x>", []),
        ("<!DOCTYPE html><p>", [("p", "<p>")]),
        ("<?php echo 1 ?><p>", [("p", "<p>")]),
        ("</a><p>", [("p", "<p>")]),
        ("a < b and 1<2 <3 <p>", [("p", "<p>")]),
        ('<a href="never closed>text', []),
        (
            "<script>if (a<b) document.write('<img src=x>')</script><p>",
            [("script", "<script>"), ("p", "<p>")],
        ),
        ("<SCRIPT>x='</scr'+'ipt>'</SCRIPT ><p>", [("script", "<SCRIPT>"), ("p", "<p>")]),
        ("<textarea><a href=x></textarea><b>", [("textarea", "<textarea>"), ("b", "<b>")]),
        ("<title><img src=x></title>", [("title", "<title>")]),
        ("<script>never closed <img src=x>", [("script", "<script>")]),
        ("<plaintext><a href=x></plaintext><b>", [("plaintext", "<plaintext>")]),
        ("<svg><use xlink:href='#i'/></svg>", [("svg", "<svg>"), ("use", "<use xlink:href='#i'/>")]),
        ("<a =x href=y>", [("a", "<a =x href=y>")]),
    ],
)
def test_start_tags(html: str, expected: list[tuple[str, str]]) -> None:
    assert tags(html) == expected


def test_offsets_index_the_source() -> None:
    text = "<p>x</p>\n<!-- c --><a\n href=y>z</a><style>\nb{}</style ><i>"
    found = scan(text)
    for offset, _tag, raw in found.tags:
        assert text[offset : offset + len(raw)] == raw
    assert [text[start:end] for start, end in found.styles] == ["\nb{}"]


def test_an_unclosed_style_runs_to_the_end() -> None:
    text = "<style>a{background:url(x.png)}"
    assert [text[s:e] for s, e in scan(text).styles] == ["a{background:url(x.png)}"]


def test_no_backtracking_blowup_on_a_long_broken_tag() -> None:
    text = "<a " + 'b="c" ' * 20000 + 'd="never closed'
    with in_linear_time():
        assert scan(text).tags == []
        assert list(iter_tags(text, [], frozenset({"a"}))) == []  # a name wanted
        assert list(iter_tags(text, [], frozenset({"img"}))) == []  # skipped inside the pattern


class _Reference(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.found.append(tag)

    handle_startendtag = handle_starttag


@pytest.mark.parametrize(
    "page", sorted(Path(__file__).parent.parent.glob("examples/site/**/*.html")), ids=lambda p: p.name
)
def test_same_tags_as_html_parser_on_well_formed_pages(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    reference = _Reference()
    reference.feed(text)
    reference.close()
    assert [tag for _offset, tag, _raw in scan(text).tags] == reference.found


WANTED = frozenset({"a", "img", "link", "meta", "base", "iframe"})
FRAGMENTS = [
    '<a href="x">',
    "<A HREF=y>",
    "<lin\u212a href=k>",
    '<img\nsrc=m alt="<a href=q>">',
    "<a\x00 href=n>",
    '<div style="a:url(b)">',
    "<div STYLE=x>",
    "<x sTyLe='u'>",
    "<x style>",
    "<x style/>",
    '<div class="style">',
    "<x styles=1>",
    "<x data-style=1>",
    "<div \u017ftyle=x>",
    '<span title="<a href=z>">',
    "<div data-x='<img src=w>'>",
    "<p",
    '<div class="open',
    ">",
    "<",
    "<3",
    "</a>",
    "<br/>",
    "<!--",
    "-->",
    "<!-- <img src=q> -->",
    "<!DOCTYPE html>",
    "<?x ?>",
    "<![CDATA[<a href=c>]]>",
    "<script>",
    "</script>",
    "<style>",
    "</style >",
    "<title>",
    "</title>",
    "<textarea>",
    "</textarea>",
    "<abbr title=t>",
    "<imgx src=i>",
    "<links>",
    "<xmp>",
    "</xmp>",
    "<iframe src=f>",
    "</iframe>",
    "<plaintext>",
    "<title/>",
    "<svg><use xlink:href='#i'/>",
    '"',
    "'",
    "=",
    "text ",
    "\n",
]


def _read_by_a_rewriter(tag: str, raw: str, same: Callable[[str, str], bool] = str.__eq__) -> bool:
    return any(same(tag, name) for name in WANTED | RAW_TEXT_ELEMENTS) or any(
        same(raw[start:end].lower(), "style") for _name, start, end, _vs, _ve in attributes(raw)
    )


def _same_but_for_case(text: str, name: str) -> bool:
    return re.fullmatch(name, text, re.IGNORECASE) is not None


def test_wanted_tags_are_those_scan_finds_of_those_names_or_with_a_style_attribute() -> None:
    """iter_tags(wanted=...) skips the other tags inside its regular expression: on documents made
    of every kind of piece, broken ones too, it yields every tag of scan() a rewriter reads, at
    the same offset, and only tags of scan() (a few more where Unicode case folding says a name
    may be one of them: "\u017ftyle"), and the same <style> texts."""
    pieces = random.Random(17)
    for _ in range(3000):
        text = "".join(pieces.choice(FRAGMENTS) for _ in range(pieces.randint(1, 30)))
        everything = scan(text)
        styles: list[tuple[int, int]] = []
        wanted = list(iter_tags(text, styles, WANTED))
        assert set(wanted) <= set(everything.tags) and wanted == sorted(wanted), text
        assert all(_read_by_a_rewriter(tag, raw, _same_but_for_case) for _offset, tag, raw in wanted), text
        assert [found for found in wanted if _read_by_a_rewriter(*found[1:])] == [
            found for found in everything.tags if _read_by_a_rewriter(*found[1:])
        ], text
        assert styles == everything.styles, text


@pytest.mark.parametrize("wanted", [None, WANTED])
def test_a_start_tag_never_closed_takes_the_rest_of_the_page(wanted: frozenset[str] | None) -> None:
    """As in HTML: no tag is looked for inside it. A page of a megabyte of "<div " (each a tag
    never closed) took hours when each "<" was tried as a tag to the end of the page again."""
    assert list(iter_tags('<p><div title="<a href=x>', [], wanted)) == [(0, "p", "<p>")] * (wanted is None)
    with in_linear_time():
        assert list(iter_tags("<div " * 200_000 + "<a href=x", [], wanted)) == []


def test_one_of_matches_exactly_its_words():
    """The branching pattern the scanner skips tags with matches each word and nothing else: a
    prefix, a longer word or a neighbour of a word is no match (random words of three letters,
    many of them prefixes of one another, and the scanner's own tag names)."""
    rng = random.Random(7)
    lists = [sorted(RAW_TEXT_ELEMENTS | {"a", "area", "audio", "q", "td", "th", "table"})]
    lists += [
        sorted({"".join(rng.choices("ab-", k=rng.randint(1, 4))) for _ in range(8)}) for _ in range(300)
    ]
    for words in lists:
        pattern = re.compile(one_of(words))
        candidates = {word[:cut] for word in words for cut in range(len(word) + 2)} | {w + "b" for w in words}
        for candidate in candidates:
            assert bool(pattern.fullmatch(candidate)) == (candidate in words), (words, candidate)
