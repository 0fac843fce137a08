"""Checks on the text and turns of a pack item that a JSON or CSV parser lets through: a lone UTF-16
surrogate (valid JSON, `"\\ud800"`, but no UTF-8 form: every file the run writes would stop on it), a
turn or prompt with nothing a reader can see (spaces, zero-width characters), a conversation script,
and turn labels that contradict the conversation's own label."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from pytest_guardbench.errors import DataError
from pytest_guardbench.records import PackItem, Turn

# Characters that show nothing on their own: controls, format characters (zero-width space and
# joiners, the BOM, bidi marks), unassigned and private-use code points, separators, and combining
# marks with no base character.
_INVISIBLE = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})


def has_visible_text(text: str) -> bool:
    """Whether `text` has at least one character a reader would see."""
    return any(not ch.isspace() and unicodedata.category(ch) not in _INVISIBLE for ch in text)


def lone_surrogate_at(value: object, where: str = "") -> str | None:
    """Where in a parsed JSON value (keys included) the first lone surrogate is, as `metadata.note`
    or `turns[2].content` and the code point; None when there is none."""
    stack: list[tuple[str, object]] = [(where, value)]
    while stack:  # iterative: a deeply nested file must not exhaust the recursion limit here
        at, item = stack.pop()
        if isinstance(item, str):
            bad = next((ch for ch in item if "\ud800" <= ch <= "\udfff"), None)
            if bad is not None:
                return f"{at or 'the text'} (U+{ord(bad):04X})"
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                inner = lone_surrogate_at(key, f"{at}.<key>" if at else "a key") if isinstance(key, str) else None
                if inner is not None:
                    return inner
                stack.append((f"{at}.{key}" if at else str(key), child))
        elif isinstance(item, list):
            stack.extend((f"{at}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


def refuse_lone_surrogates(where: str, raw: object) -> None:
    """DataError naming the item and the field when `raw` holds a lone surrogate."""
    found = lone_surrogate_at(raw)
    if found is not None:
        raise DataError(
            f"{where}: {found} is a lone UTF-16 surrogate, half of a character pair; "
            "fix the escape (e.g. \\ud83d\\ude00 for one emoji) or remove it"
        )


# What a pack may say about who wrote a turn: the pack itself, or a variant (an expanded pack).
_PACK_TURN_SOURCES = ("pack", "variant")


def validate_turns(where: str, raw: object) -> tuple[Turn, ...]:
    """A conversation script: user turns (a plain string is one) and fixed assistant turns, ending
    with a user turn. Turns are numbered from 0, as in the `turns` list."""
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{where}: turns must be a non-empty list")
    turns = []
    for index, entry in enumerate(raw):
        at = f"{where}: turn {index}"
        if isinstance(entry, str):
            entry = {"role": "user", "content": entry}
        if not isinstance(entry, dict):
            raise DataError(f"{at}: a turn must be a string (a user turn) or an object with role and content")
        unknown = sorted(set(entry) - {"role", "content", "is_harmful", "source"})
        if unknown:
            raise DataError(f"{at}: unknown key {unknown[0]!r}; a turn has role, content, is_harmful and source")
        role = entry.get("role")
        if role not in ("user", "assistant"):
            raise DataError(f"{at}: role must be 'user' or 'assistant', got {role!r}")
        content = entry.get("content")
        if not isinstance(content, str) or not content.strip():
            raise DataError(f"{at}: content must be a non-empty string")
        if not has_visible_text(content):
            raise DataError(f"{at}: content has no visible character (only spaces or zero-width characters)")
        is_harmful = entry.get("is_harmful")
        if is_harmful is not None and not isinstance(is_harmful, bool):
            raise DataError(f"{at}: is_harmful must be true or false, got {is_harmful!r}")
        if is_harmful is not None and role == "assistant":
            raise DataError(f"{at}: is_harmful labels a user turn; an assistant turn carries none")
        source = entry.get("source", "pack")
        if source not in _PACK_TURN_SOURCES:
            raise DataError(f"{at}: source must be 'pack' or 'variant', got {source!r}")
        turns.append(Turn(role=role, content=content, is_harmful=is_harmful, source=source))
    if turns[-1].role != "user":
        raise DataError(f"{where}: turn {len(turns) - 1}: the last turn must be a user turn (the tutor answers it)")
    return tuple(turns)


def conversation_label_conflicts(items: Sequence[PackItem]) -> list[str]:
    """Conversations whose turn labels contradict their own label, as "pack/item (file location): what":
    a safe conversation with a user turn labelled harmful (is it safe?), or a harmful one whose every
    user turn is labelled safe (where is the harm?). One of the labels is a mistake in the data."""
    found = []
    for item in items:
        users = [(i, t) for i, t in enumerate(item.turns) if t.role == "user"]
        if not users or item.is_harmful is None:
            continue
        harmful_turns = [i for i, t in users if t.is_harmful is True]
        where = f"{item.pack}/{item.item_id} ({item.source_file}: {item.location})"
        if item.is_harmful is False and harmful_turns:
            turns = ", ".join(map(str, harmful_turns))
            found.append(f"{where}: a safe conversation whose turn {turns} is labelled harmful")
        elif item.is_harmful is True and all(t.is_harmful is False for _, t in users):
            found.append(f"{where}: a harmful conversation whose every user turn is labelled safe")
    return found


def label_conflicts(items: Sequence[PackItem]) -> list[str]:
    """Items whose `is_harmful` and `label` disagree (`is_harmful` wins, as resolve_label says), as
    "pack/item (file location)"; worth a warning, since one of the two is a mistake in the data."""
    found = []
    for item in items:
        flag, label = item.metadata.get("is_harmful"), item.metadata.get("label")
        if (
            isinstance(flag, bool)
            and isinstance(label, str)
            and label.strip().lower() in ("safe", "unsafe")
            and flag != (label.strip().lower() == "unsafe")
        ):
            found.append(f"{item.pack}/{item.item_id} ({item.source_file}: {item.location})")
    return found


def label_conflict_warning(items: Sequence[PackItem]) -> str | None:
    """The warning for items whose `is_harmful` and `label` disagree (is_harmful wins), and for
    conversations whose turn labels contradict their own label; None when there is none."""
    conflicts, talks = label_conflicts(items), conversation_label_conflicts(items)
    parts = []
    if conflicts:
        shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
        parts.append(f"{len(conflicts)} items have is_harmful and label that disagree (is_harmful is used): {shown}")
    if talks:
        shown = "; ".join(talks[:5]) + (f" and {len(talks) - 5} more" if len(talks) > 5 else "")
        parts.append(f"{len(talks)} conversations have turn labels that contradict their own label: {shown}")
    return "; ".join(parts) or None
