"""An ini key as a TOML settings file hands it over ([tool.pytest.ini_options], pytest.toml): a number or
a boolean is read as written, and an array or a table where one value goes is refused naming the key
(it was a TypeError from the value's parser: an internal error, exit 3)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.options import OPTIONS, ConfigError


class _Config:
    def __init__(self, root: Path, ini: dict[str, Any]) -> None:
        self.rootpath = root
        self.invocation_params = SimpleNamespace(dir=root)
        self.inipath = None
        self._ini = ini

    def getoption(self, name: str) -> Any:
        return None

    def getini(self, name: str) -> Any:
        if name in self._ini:
            return self._ini[name]
        return [] if any(spec.ini_key == name and spec.ini_type == "linelist" for spec in OPTIONS) else ""


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("guardbench_min_recall", 0.5, "min_recall", 0.5),
        ("guardbench_max_errors", 3, "max_errors", 3),
        ("guardbench_offline", True, "offline", True),
        ("guardbench_offline", False, "offline", False),
    ],
)
def test_a_toml_number_or_boolean_is_read_as_written(tmp_path, key, value, field, expected):
    settings = Settings.from_pytest(_Config(tmp_path, {key: value}))
    got = getattr(settings.thresholds if field in ("min_recall", "max_errors") else settings, field)
    assert got == expected


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("guardbench_min_recall", ["0.5"], "an array where one value goes"),
        ("guardbench_variants", [1, 2], "an array where one value goes"),
        ("guardbench_tutor", {"a": 1}, "a dict where one value goes"),
        ("guardbench_min_recall", float("nan"), "is not between 0 and 1"),
        ("guardbench_data", ["pack.json", 7], "7 is not a name"),
    ],
)
def test_an_array_or_table_where_one_value_goes_is_refused_naming_the_key(tmp_path, key, value, said):
    with pytest.raises(ConfigError) as raised:
        Settings.from_pytest(_Config(tmp_path, {key: value}))
    assert str(raised.value).startswith(f"ini key {key}: ") and said in str(raised.value)
