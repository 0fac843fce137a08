"""The text pieces the offline judges read a reply with: phrase patterns, sentences, words and stop lists.

The `offline` and `offline-kb` judges were fitted on features built from these; their shipped heads
(judges/heads/*.json) read exactly these patterns and lists, so a change here changes their verdicts and
needs a refit. Where the two judges read text differently (a phrase that may run on into a longer word or
must end at a word boundary; words with or without their apostrophes; two stop lists), each way is kept
under its own name rather than made one.
"""

from __future__ import annotations

import re

__all__ = [
    "APOSTROPHE",
    "ECHO_STOP_WORDS",
    "OVERLAP_STOP_WORDS",
    "SENTENCE",
    "letter_words",
    "sentences",
    "whole_phrases",
    "word_start_phrases",
    "words",
]

# An optional straight or curly apostrophe, for contractions written either way or without one ("cant").
APOSTROPHE = r"(?:'|’)?"
# A sentence: the text up to and with its end mark, or up to a line break.
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_WORD = re.compile(r"[a-z']+")
_LETTERS = re.compile(r"[a-z]+")

# Left out of the offline judge's prompt-reply word overlap (a feature of FEATURE_VERSION 3).
OVERLAP_STOP_WORDS = frozenset(
    "a an the to of and or is are i you it in on for my me do how what why can with that this be so if your at "
    "by".split()
)
# Words too common to say a reply takes up a request (the offline-kb judge's request echo); the
# prompt's framing words are left out there too, so that the echo counts the request's own content.
ECHO_STOP_WORDS = frozenset(
    """a an the to of and or is are was were i you it in on for my me do does how what why can could would
    with that this be so if your at by from about just tell please like want know make get some any there their
    they them he she his her him its not no yes but when where who which will should been have has had""".split()
)


def word_start_phrases(*phrases: str) -> re.Pattern[str]:
    """Any of `phrases` starting at a word boundary, case-insensitive; a match may run on into a longer
    word ("harm" finds "harmful"). The offline judge's phrase lists."""
    return re.compile(r"\b(?:" + "|".join(phrases) + r")", re.IGNORECASE)


def whole_phrases(*phrases: str) -> re.Pattern[str]:
    """Any of `phrases` as whole words, case-insensitive. The offline-kb judge's phrase lists."""
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The sentences of `text` that hold more than whitespace."""
    return [s for s in SENTENCE.findall(text) if s.strip()]


def words(text: str) -> list[str]:
    """The lower-cased words of `text` with their apostrophes kept ("can't" is one word)."""
    return _WORD.findall(text.lower())


def letter_words(text: str) -> list[str]:
    """The lower-cased runs of letters of `text`; an apostrophe splits a word ("can't" is "can", "t")."""
    return _LETTERS.findall(text.lower())
