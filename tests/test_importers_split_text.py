"""Laying a text over timing-only chunks."""

from __future__ import annotations

import pytest

from uxlab.streams.split_text import (
    TextTooShortError,
    lay_text,
    neutral_text,
    split_text,
    text_pieces,
)

MD = "## Title\n\nSome **bold** text, a `code` span and a list:\n\n- one\n- two\n"


def test_pieces_rejoin_and_keep_markdown_markers_whole():
    pieces = text_pieces(MD)
    assert "".join(pieces) == MD
    assert "##" in pieces and " **" in pieces and "**" in pieces and " `" in pieces
    assert "\n\n" in pieces  # paragraph breaks are pieces of their own


def test_long_words_are_cut_like_subword_tokens():
    pieces = text_pieces(" internationalisation")
    assert "".join(pieces) == " internationalisation"
    assert len(pieces) > 1 and all(len(p.strip()) <= 6 for p in pieces)


@pytest.mark.parametrize("n", [1, 2, 5, 17, 40, 61])
def test_split_gives_exactly_n_non_empty_pieces_that_rejoin(n):
    pieces = split_text(MD, n)
    assert len(pieces) == n
    assert "".join(pieces) == MD
    assert all(pieces)


def test_split_groups_on_word_boundaries_when_text_is_long():
    pieces = split_text("alpha beta gamma delta epsilon zeta", 3)
    assert pieces == ["alpha beta", " gamma delta", " epsilon zeta"]


def test_split_refuses_a_text_shorter_than_the_chunks():
    with pytest.raises(TextTooShortError):
        split_text("abc", 4)


def test_lay_text_takes_a_prefix_and_repeats_when_short():
    pieces = lay_text("One two three.", 11)
    assert len(pieces) == 11
    assert "".join(pieces) == "One two three.\n\nOne two three.\n\nOne"
    assert lay_text("One two three.", 0) == []


def test_neutral_text_is_bundled_and_long_enough():
    text = neutral_text()
    assert 500 <= len(text.split()) <= 700
    assert text.startswith("## ")
    assert len(text_pieces(text)) > 250  # enough for a 250-token stream without repeating
