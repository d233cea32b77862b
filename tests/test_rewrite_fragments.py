"""Links to a fragment of the page itself, which the tokenizer skips in a page without a <base>
of another URL (most links of a documentation page): the rewrite is the same, byte for byte, as
if each were handed to the Linker, which keeps them."""

from __future__ import annotations

import pytest
from conftest import in_linear_time
from rewrite_cases import PAGE, rewrite

from archiver.markup import iter_tags
from archiver.mirror import document_edits
from archiver.mirror.document_edits import _EDITED_TAGS, _OWN_FRAGMENT_LINKS

FRAGMENT_LINKS = [
    '<a href="#x">x</a>',
    "<A HREF=#x CLASS=headerlink>x</A>",
    "<a href='#x' title=\"Link to this definition\">x</a>",
    '<a href = "#x" >x</a>',
    '<a href="#x" href="#y">x</a>',
    '<a href="#x" href="/target">x</a>',
    '<a href="/target" href="#x">x</a>',
    '<a href=" #x">x</a>',
    '<a href="&#35;x">x</a>',
    '<a href="#x" style="background: url(/img/a.png)">x</a>',
    '<a href="#x" crossorigin>x</a>',
    '<a href="#x" integrity="sha256-x">x</a>',
    '<a href="#x" ping="/target">x</a>',
    '<a href="#x" hreflang="en">x</a>',
    '<a href="#x" xlink:href="/target">x</a>',
    '<a href=#x"y title=">">x</a>',
    '<a href="#x"title="t">x</a>',
    "<a href==#x>x</a>",
    "<a href>x</a>",
    '<area href="#x">',
]
PAGES = [
    "".join(FRAGMENT_LINKS),
    '<base href="/target">' + "".join(FRAGMENT_LINKS),
    '<base href="#top">' + "".join(FRAGMENT_LINKS),
    '<iframe srcdoc="&lt;a href=&quot;#x&quot;&gt;x&lt;/a&gt;"></iframe>',
    '<svg><a href="#x"><text>x</text></a></svg>',
]


@pytest.mark.parametrize("page", PAGES)
def test_skipping_fragment_links_changes_nothing(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    skipping = rewrite(page)
    monkeypatch.setattr(document_edits, "_OWN_FRAGMENT_LINKS", None)
    assert skipping == rewrite(page)


def test_a_page_of_fragment_links_hands_the_rewriter_none_of_them() -> None:
    page = "".join(FRAGMENT_LINKS)
    read = [raw for _offset, _tag, raw in iter_tags(page, [], _EDITED_TAGS)]
    skipped = set(read) - {
        raw for _o, _t, raw in iter_tags(page, [], _EDITED_TAGS, unread=_OWN_FRAGMENT_LINKS)
    }
    assert skipped == {
        '<a href="#x">',
        "<A HREF=#x CLASS=headerlink>",
        "<a href='#x' title=\"Link to this definition\">",
        '<a href = "#x" >',
        '<a href="#x" href="#y">',
        '<a href="#x" hreflang="en">',
        '<a href=#x"y title=">">',
        '<a href="#x"title="t">',
    }


def test_a_fragment_link_is_kept_as_written_and_one_under_another_base_goes_there() -> None:
    assert '<a href="#x">' in rewrite('<a href="#x">x</a>')
    assert '<a href="../target.html#x">' in rewrite('<base href="/target"><a href="#x">x</a>')
    assert '<a href="#x">' in rewrite('<base href="page.html"><a href="#x">x</a>', page=PAGE)


@pytest.mark.parametrize(
    "text",
    [
        '<a href="#x" ' + 'b="c" ' * 20000 + 'd="never closed',
        '<a href="#' + "<a href=#x " * 100_000,
        "<a " * 200_000 + "<a href=x",
    ],
)
def test_skipping_fragment_links_reads_a_hostile_page_once(text: str) -> None:
    with in_linear_time():
        assert list(iter_tags(text, [], _EDITED_TAGS, unread=_OWN_FRAGMENT_LINKS)) == []
