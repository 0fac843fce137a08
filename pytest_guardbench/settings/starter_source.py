"""Where pytest reads a folder's settings, found the way pytest 9 finds them, and read as text that
`guardbench init` can add to.

pytest takes the first of: `pytest.toml` or `.pytest.toml` (a `[pytest]` table, native TOML types),
`pytest.ini` or `.pytest.ini` (whatever they hold), `pyproject.toml` when it has pytest settings
(`[tool.pytest]` with native types, pytest 9's table, or `[tool.pytest.ini_options]`, never both),
`tox.ini` with a `[pytest]` section, `setup.cfg` with `[tool:pytest]`. With none of them, init starts a
`[tool.pytest.ini_options]` table in pyproject.toml, the table every pytest from 8 on reads.

Every file is read as UTF-8 and parsed with the parser pytest uses (tomllib, iniconfig), so a file
pytest would refuse is refused here first, with one line naming it."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import iniconfig

from pytest_guardbench.errors import UsageError

PYPROJECT = Path("pyproject.toml")
INI_OPTIONS = ("tool", "pytest", "ini_options")  # strings and lists of strings, read by every pytest
NATIVE_TABLE = ("tool", "pytest")  # pytest 9: native TOML types
PYTEST_TABLE = ("pytest",)  # pytest.toml and .pytest.toml (pytest 9)
TOML_CONFIGS = ("pytest.toml", ".pytest.toml")
INI_CONFIGS = (("pytest.ini", "pytest"), (".pytest.ini", "pytest"))
# Read after pyproject.toml, and only when they hold this section.
LATER_INI_CONFIGS = (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


@dataclass(frozen=True)
class SettingsSource:
    """The file pytest reads its settings from, its text, and the pytest settings it holds.

    A TOML file names its `table` (the keys that lead to it); an ini file names its `section`."""

    path: Path  # relative to the folder
    table: tuple[str, ...] | None = INI_OPTIONS
    section: str | None = None
    text: str | None = None  # None: the file is not there yet
    settings: Mapping[str, Any] | None = None  # None: the file has no pytest settings yet
    document: Mapping[str, Any] | None = None  # a TOML file's whole document, as parsed

    @property
    def header(self) -> str:
        return f"[{'.'.join(self.table)}]" if self.table is not None else f"[{self.section}]"

    @property
    def native(self) -> bool:
        """Whether the table takes native TOML types (pytest 9), so pytest checks each value's type."""
        return self.table is not None and self.table != INI_OPTIONS


def read_text(folder: Path, path: Path) -> str | None:
    """The text of `folder / path` when it is a file, read as UTF-8; None when it is not there."""
    target = folder / path
    if not target.is_file():
        return None
    data = target.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{target}: not UTF-8 text (byte {exc.start}), which init cannot add to; save it as UTF-8, "
            "or pass --dir to another folder"
        ) from None


def parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); fix it or pass --dir to another folder") from None


def parse_ini(path: Path, text: str) -> dict[str, dict[str, str]]:
    """Every section of an ini file, as pytest's own parser (iniconfig) reads it."""
    try:
        parsed = iniconfig.IniConfig(str(path), data=text)
    except iniconfig.ParseError as exc:
        raise UsageError(f"{path}: cannot be read as an ini file ({exc}); fix it or pass --dir") from None
    return {name: dict(values) for name, values in parsed.sections.items()}


def _pytest_tables(path: Path, document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """pyproject.toml's native `[tool.pytest]` keys and its `[tool.pytest.ini_options]` table."""
    tool = document.get("tool")
    tool_pytest = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(tool_pytest, dict):
        return {}, None
    native = {key: value for key, value in tool_pytest.items() if key != "ini_options"}
    ini_options = tool_pytest.get("ini_options")
    if native and ini_options is not None:
        raise UsageError(
            f"{path}: has both [tool.pytest] (pytest 9's native table) and [tool.pytest.ini_options], which "
            "pytest refuses; keep one of them, then run init again"
        )
    return native, ini_options if isinstance(ini_options, dict) else None


def find_settings(folder: Path) -> SettingsSource:
    """Where pytest reads its settings in `folder`; UsageError names a file pytest could not read."""
    for name in TOML_CONFIGS:
        text = read_text(folder, Path(name))
        if text is not None:
            document = parse_toml(folder / name, text)
            table = document.get("pytest")
            return SettingsSource(
                Path(name), PYTEST_TABLE, None, text, table if isinstance(table, dict) else None, document
            )
    for name, section in INI_CONFIGS:
        text = read_text(folder, Path(name))
        if text is not None:
            return SettingsSource(Path(name), None, section, text, parse_ini(folder / name, text).get(section))
    pyproject = read_text(folder, PYPROJECT)
    document = parse_toml(folder / PYPROJECT, pyproject) if pyproject is not None else {}
    native, ini_options = _pytest_tables(folder / PYPROJECT, document)
    if native:
        return SettingsSource(PYPROJECT, NATIVE_TABLE, None, pyproject, native, document)
    if ini_options is not None:
        return SettingsSource(PYPROJECT, INI_OPTIONS, None, pyproject, ini_options, document)
    for name, section in LATER_INI_CONFIGS:
        text = read_text(folder, Path(name))
        if text is not None:
            sections = parse_ini(folder / name, text)
            if section in sections:
                return SettingsSource(Path(name), None, section, text, sections[section])
    return SettingsSource(PYPROJECT, INI_OPTIONS, None, pyproject, None, document)


def builds_a_package(folder: Path) -> bool:
    """Whether `pip install .` installs the project in `folder`: its pyproject.toml has a [project] or
    [build-system] table, or it has a setup.py."""
    if (folder / "setup.py").is_file():
        return True
    text = read_text(folder, PYPROJECT)
    if text is None:
        return False
    document = parse_toml(folder / PYPROJECT, text)
    return isinstance(document.get("project"), dict) or isinstance(document.get("build-system"), dict)
