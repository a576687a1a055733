"""How the web page prints an entry's text (`ard_mcp.ui.text`): escaped, matched words marked, invisible
characters named. Fast: no server, no browser (tests/test_web_page.py checks the same in Chromium)."""

from __future__ import annotations

from ard_mcp.ui.text import shown, visible


def test_markup_in_an_entry_is_escaped_even_where_a_word_is_marked() -> None:
    assert str(shown('<script>alert("x")</script>')) == "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
    assert str(shown("<b>bold</b>", ["b"])) == "&lt;<mark>b</mark>&gt;<mark>bold</mark>&lt;/<mark>b</mark>&gt;"


def test_matched_words_are_marked_whole_with_their_inflections_and_any_case() -> None:
    assert str(shown("Reconcile overdue Invoices.", ["invoice", "overdue"])) == "Reconcile <mark>overdue</mark> <mark>Invoices</mark>."
    assert str(shown("subinvoice", ["invoice"])) == "subinvoice"  # not inside another word
    assert str(shown("c++ and c#", ["c++"])) == "<mark>c++</mark> and c#"  # a word is text, not a pattern


def test_invisible_characters_are_named_instead_of_rendered() -> None:
    out = str(shown("pay\u202egnp.exe ig\u200bnore", ["ignore"]))
    assert "\u202e" not in out and "\u200b" not in out
    assert "U+202E" in out and "U+200B" in out and 'class="invisible"' in out
    assert visible("book a \u202eletoh") == "book a [U+202E]letoh"
    assert str(shown("👨\u200d👩")) == "👨\u200d👩"  # a joiner inside an emoji sequence is no disguise
