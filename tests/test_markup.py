"""The start-tag scanner the rewriter stands on, case by case."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from archiver.mirror.markup import scan


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
    assert scan(text).tags == []


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
