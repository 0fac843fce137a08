"""Adding init's settings to the file pytest reads them from, without rewriting the rest of it.

The lines go right under the table's header (or a new table is appended); `--force` replaces the
one-line value of a key it was given; `tests` joins a one-line `testpaths` that leaves it out. Every
edit is then read back with pytest's own parser and compared with what it should hold: the file's
other settings and tables unchanged, each new value exactly the value given. An edit that does not
read back so (a layout init cannot edit, a value the format cannot hold) is refused, and nothing is
written."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_guardbench.errors import UsageError
from pytest_guardbench.settings.starter_source import SettingsSource, parse_ini, parse_toml


@dataclass(frozen=True)
class SettingsChange:
    """What init changes in a pytest settings table: lines to add (TOML, comments included), keys whose
    value `--force` replaces, and whether `tests` joins `testpaths`."""

    add: Sequence[str] = ()
    replace: Mapping[str, Any] = field(default_factory=dict)
    extend_testpaths: bool = False

    def values(self) -> dict[str, Any]:
        return tomllib.loads("\n".join(line for line in self.add if not line.startswith("#")))


def toml_string(text: str) -> str:
    """`text` as a TOML basic string. (JSON's escapes are not all TOML's: a character outside the
    Basic Multilingual Plane becomes a surrogate pair, which TOML refuses.)"""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return toml_string(str(value))


def ini_value(key: str, value: Any) -> str:
    """A setting's value as an ini file holds it: `testpaths` space-separated, other lists one a line."""
    if isinstance(value, list):
        return " ".join(value) if key == "testpaths" else "\n".join(value)
    return str(value)


def _ini_line(line: str) -> str:
    """A TOML settings line (or comment) as the same line in an ini file."""
    if line.startswith("#"):
        return line
    ((key, value),) = tomllib.loads(line).items()
    return f"{key} = " + ini_value(key, value).replace("\n", "\n    ")


def _canonical(value: Any) -> str:
    # NaN is not equal to itself, and dates are not JSON: compared as text, a document equals itself.
    return json.dumps(value, sort_keys=True, default=str)


def _cannot(source: SettingsSource, why: str, change: SettingsChange) -> UsageError:
    keys = "; ".join(f"{key} = {toml_value(value)}" for key, value in {**change.values(), **change.replace}.items())
    return UsageError(
        f"{source.path}: {why}, so init cannot add its settings to {source.header}; nothing written. "
        f"Add them there by hand: {keys or 'testpaths with tests in it'}"
    )


def _header_pattern(source: SettingsSource) -> re.Pattern[str]:
    if source.table is None:
        return re.compile(rf"^\ufeff?\s*\[\s*{re.escape(source.section or '')}\s*\]\s*([#;].*)?$")
    # As TOML allows the header to be written: spaces inside the brackets, a comment after it.
    dotted = r"\s*\.\s*".join(re.escape(part) for part in source.table)
    return re.compile(rf"^\ufeff?\s*\[\s*{dotted}\s*\]\s*(#.*)?$")


def _region(lines: list[str], header: int, toml: bool) -> range:
    """The lines of the table or section under `header`, up to the next header (an indented line in
    an ini file continues a value)."""
    starts = re.compile(r"^\s*\[" if toml else r"^\[")
    end = next((i for i in range(header + 1, len(lines)) if starts.match(lines[i])), len(lines))
    return range(header + 1, end)


def _extended(line: str, toml: bool) -> str | None:
    """A one-line `testpaths` setting with "tests" added, or None when the line is not one."""
    if toml:
        match = re.match(r"^(\s*testpaths\s*=\s*)(\[.*\])(\s*#.*)?$", line)
        if match is None:
            return None
        try:
            paths = tomllib.loads(f"x = {match.group(2)}")["x"]
        except tomllib.TOMLDecodeError:
            return None
        return f"{match.group(1)}{toml_value([*map(str, paths), 'tests'])}{match.group(3) or ''}"
    return f"{line} tests" if re.match(r"^testpaths\s*[=:]\s*\S", line) else None


def _edited_lines(
    lines: list[str], header: int, source: SettingsSource, change: SettingsChange, newline: str
) -> tuple[list[str], list[str]]:
    """The lines with the change made under `header`, and what was done."""
    toml = source.table is not None
    region = _region(lines, header, toml)
    actions = []
    removed: set[int] = set()
    for key, value in change.replace.items():
        pattern = rf"^\s*(?:{key}|\"{key}\"|'{key}')\s*=" if toml else rf"^{key}\s*[=:]"
        at = next((i for i in region if re.match(pattern, lines[i])), None)
        if at is None:
            raise _cannot(source, f"its {key} line was not found", change)
        new = f"{key} = {toml_value(value)}" if toml else _ini_line(f"{key} = {toml_value(value)}")
        lines[at] = new.replace("\n", newline) + newline
        following = at + 1
        while not toml and following in region and lines[following][:1] in (" ", "\t"):
            removed.add(following)  # the old value's continuation lines
            following += 1
        actions.append(f"set {key} (--force)")
    if change.extend_testpaths:
        for index in region:
            one_line = toml or index + 1 not in region or lines[index + 1][:1] not in (" ", "\t")
            extended = _extended(lines[index].rstrip("\r\n"), toml) if one_line else None
            if extended is not None:
                lines[index] = extended + newline
                actions.append('added "tests" to testpaths')
                break
    lines = [line for i, line in enumerate(lines) if i not in removed]  # all below the header
    if any(not line.startswith("#") for line in change.add):
        added = [line if toml else _ini_line(line) for line in change.add]
        lines[header + 1 : header + 1] = [line.replace("\n", newline) + newline for line in added]
        actions.insert(0, f"added guardbench keys under {source.header}")
    return lines, actions


def _expected(source: SettingsSource, change: SettingsChange, tests_added: bool) -> dict[str, Any]:
    """The settings the table must hold after the change."""
    expected = dict(source.settings or {})
    values = {**change.values(), **change.replace}
    if tests_added:
        paths = expected["testpaths"]
        if source.table is None:
            values["testpaths"] = f"{paths} tests"
        else:
            values["testpaths"] = [*paths, "tests"]
    if source.table is None:
        values = {key: ini_value(key, value) for key, value in values.items()}
    return {**expected, **values}


def _check(source: SettingsSource, new: str, change: SettingsChange, tests_added: bool) -> None:
    """Refuse an edit that does not read back as the file with exactly the change made."""
    settings = _expected(source, change, tests_added)
    try:
        if source.table is not None:
            expected = copy.deepcopy(dict(source.document or {}))
            place = expected
            for part in source.table[:-1]:
                place = place.setdefault(part, {})
            place[source.table[-1]] = settings
            read_back: Any = parse_toml(source.path, new)
        else:
            expected = parse_ini(source.path, source.text or "")
            expected[source.section or ""] = settings
            read_back = parse_ini(source.path, new)
    except UsageError:
        read_back = None
    if read_back is None or _canonical(read_back) != _canonical(expected):
        raise _cannot(source, "its layout does not read back as init's edit would have it", change)


def settings_text(source: SettingsSource, change: SettingsChange) -> tuple[str, str] | None:
    """The settings file's new text and what changed, or None when the change is empty. Refuses
    (UsageError naming the file) an edit that would not read back as the settings given."""
    if not change.replace and not change.extend_testpaths and not any(not x.startswith("#") for x in change.add):
        return None
    existing = source.text or ""
    newline = "\r\n" if "\r\n" in existing else "\n"
    lines = existing.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    pattern = _header_pattern(source)
    header = next((i for i, line in enumerate(lines) if pattern.match(line.rstrip("\r\n"))), None)
    if header is None and source.settings is not None:
        raise _cannot(source, f"it sets them without a {source.header} header line", change)
    if header is None:
        separator = [] if not lines or not lines[-1].strip() else [newline]
        lines = [*lines, *separator, source.header + newline]
        header = len(lines) - 1
    lines, actions = _edited_lines(lines, header, source, change, newline)
    new = "".join(lines)
    _check(source, new, change, 'added "tests" to testpaths' in actions)
    if source.text is None:
        return new, "written"
    if source.settings is None:
        actions = [f"appended {source.header}"] + [a for a in actions if not a.startswith("added guardbench keys")]
    return new, "; ".join(actions)
