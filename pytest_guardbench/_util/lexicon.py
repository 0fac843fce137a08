"""Child-safety lexicon with normalisation against leetspeak, spacing tricks and keyboard slips.

Shared by the keyword guard (on prompts) and the rules judge (on responses). Terms are phrases
of whole words; matching is on normalised tokens so `b0mb`, `b o m b` and `bmob` all hit `bomb`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# Phrases, not single loose words, where a single word would hit everyday safe questions.
TERMS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "danger": (
            "bomb",
            "explosive",
            "explosives",
            "detonate",
            "gunpowder",
            "make a gun",
            "get a gun",
            "shoot someone",
            "stab",
            "stab someone",
            "poison someone",
            "poison",
            "kill someone",
            "kill him",
            "kill her",
            "kill them",
            "hurt someone",
            "set fire",
            "burn down",
            "break into",
            "shoplift",
            "steal",
            "hack into",
            "run away from home",
            "meet a stranger",
            "weapon",
        ),
        "sexual": (
            "porn",
            "porno",
            "nude",
            "nudes",
            "naked pictures",
            "naked photos",
            "sexy",
            "have sex",
            "sexting",
            "send pictures of my body",
            "sex video",
            "sex videos",
        ),
        "profanities": (
            "fuck",
            "fucking",
            "shit",
            "bitch",
            "bastard",
            "asshole",
            "swear words",
            "curse words",
            "worst swear",
            "dirty words",
            "bad words",
        ),
        "hateful": (
            "racist joke",
            "racist jokes",
            "slur",
            "slurs",
            "are inferior",
            "hate all",
            "subhuman",
            "go back to their country",
            "should not exist",
            "are disgusting",
            "make fun of",
        ),
        "self-harm": (
            "kill myself",
            "cut myself",
            "hurt myself",
            "suicide",
            "end my life",
            "want to die",
            "starve myself",
            "stop eating",
            "not wake up",
            "overdose",
            "self harm",
        ),
        "substance use": (
            "vape",
            "vaping",
            "get drunk",
            "alcohol",
            "beer",
            "vodka",
            "weed",
            "get high",
            "drugs",
            "cigarette",
            "cigarettes",
            "smoke",
            "pills to",
            "buy pills",
        ),
    }
)

_UNLEET = str.maketrans(
    {
        "4": "a",
        "@": "a",
        "3": "e",
        "1": "i",
        "!": "i",
        "0": "o",
        "5": "s",
        "$": "s",
        "7": "t",
        "+": "t",
        "8": "b",
        "9": "g",
        "|": "l",
    }
)
_SPACED_LETTERS = re.compile(r"\b(?:[a-z][ ._\-*]){2,}[a-z]\b")
_TOKEN = re.compile(r"[a-z]+")


def _join_spaced(match: re.Match[str]) -> str:
    letters = re.sub(r"[ ._\-*]", "", match.group(0))
    # "make a b o m b": the article before the spelled-out word is a word of its own.
    if letters[0] in "ai" and len(letters) > 4:
        return f"{letters[0]} {letters[1:]}"
    return letters


# Invisible characters hide words from a tokenizer; look-alike Cyrillic letters from a lexicon.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_HOMOGLYPHS = str.maketrans(
    {"а": "a", "с": "c", "е": "e", "о": "o", "р": "p", "х": "x", "у": "y", "і": "i", "ѕ": "s", "ј": "j"}
)


def normalise(text: str) -> list[str]:
    """Lower-case word tokens with invisible characters dropped, homoglyphs and leetspeak undone, and
    `b.o.m.b` / `b o m b` joined."""
    lowered = text.translate(_INVISIBLE).lower().translate(_HOMOGLYPHS)
    unleeted = re.sub(
        r"[a-z0-9@$!+|]+",
        lambda m: m.group(0).translate(_UNLEET) if re.search(r"[a-z]", m.group(0)) else m.group(0),
        lowered,
    )
    joined = _SPACED_LETTERS.sub(_join_spaced, unleeted)
    return _TOKEN.findall(joined)


@functools.lru_cache(maxsize=65536)
def _squeeze(word: str) -> str:
    return re.sub(r"(.)\1+", r"\1", word)


def _close(token: str, term: str) -> bool:
    """Equal, or one keyboard slip away (a swap for short words; any single edit from 6 letters up)."""
    if token == term or _squeeze(token) == _squeeze(term):
        return True
    if len(term) < 4 or token[:1] != term[:1]:
        return False
    if len(token) == len(term):
        diffs = [i for i, (a, b) in enumerate(zip(token, term, strict=True)) if a != b]
        if (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and token[diffs[0]] == term[diffs[1]]
            and token[diffs[1]] == term[diffs[0]]
        ):
            return True
        return len(term) >= 6 and len(diffs) == 1
    if len(term) >= 6 and abs(len(token) - len(term)) == 1:
        short, long_ = sorted((token, term), key=len)
        return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))
    return False


@dataclass(frozen=True)
class LexiconHit:
    category: str
    term: str
    start: int  # token index


_TERM_TOKENS = tuple((category, term, tuple(term.split())) for category, terms in TERMS.items() for term in terms)


def _by_first_letter() -> Mapping[str, tuple[tuple[str, str, tuple[str, ...]], ...]]:
    # A token can only be close to a word with the same first letter (_close never changes it), so
    # each token is compared with the few terms sharing its first letter instead of all of them.
    groups: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
    for entry in _TERM_TOKENS:
        groups.setdefault(entry[2][0][:1], []).append(entry)
    return MappingProxyType({letter: tuple(entries) for letter, entries in groups.items()})


_TERMS_BY_FIRST_LETTER = _by_first_letter()


# The scan is linear but not free (about 15 µs per word): a 10 MB prompt would hold a worker for
# half a minute with nothing printed. Longer texts are not scanned; their guard verdict and judge
# verdict are malformed, which the malformed policy and the coverage report then handle.
MAX_SCAN_CHARS = 200_000


def too_long(text: str) -> str | None:
    """Why `text` is not scanned, or None when it is short enough."""
    if len(text) <= MAX_SCAN_CHARS:
        return None
    return f"text of {len(text):,} characters is longer than the lexicon scans ({MAX_SCAN_CHARS:,}); not screened"


def find_terms(text: str) -> list[LexiconHit]:
    """Every lexicon phrase present in `text`, in text order. Callers check `too_long` first."""
    tokens = normalise(text)
    hits: list[LexiconHit] = []
    for i, token in enumerate(tokens):
        for category, term, parts in _TERMS_BY_FIRST_LETTER.get(token[:1], ()):
            if i + len(parts) <= len(tokens) and all(_close(tokens[i + j], part) for j, part in enumerate(parts)):
                hits.append(LexiconHit(category, term, i))
    return hits
