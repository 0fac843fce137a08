"""`[tool.guardbench]` tables, ini keys and `--guardbench-*` option values as a user writes them, through
the loaders the plugin calls at configure time: settings, or one `ConfigError` naming the file, table,
key or option; never another exception, a value read as something else (`true` as 1.0), or two names
for one bar."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.model_specs import model_aliases, price_table, pyproject_thresholds
from pytest_guardbench.settings.options import OPTIONS, ConfigError
from tests.fuzz.conftest import SECRET, fuzz
from tests.fuzz.strategies import guardbench_tables, odd_text, toml_text

pytestmark = pytest.mark.usefixtures("planted_key")

OPTION_TEXT = st.one_of(
    odd_text,
    st.sampled_from(
        [
            "nan",
            "inf",
            "-1",
            "0",
            "1",
            "1e999",
            "²",
            "٣",
            "1/2",
            "2/1",
            "²/3",
            "0.5",
            "true",
            "yes",
            "tutor=4,tutor=8",
            "16,tutor=4",
            "judge=0",
            "a=b",
            "",
            ",",
            "1_000",
            " 7 ",
            "0x10",
        ]
    ),
)


@fuzz(examples=200)
@given(guardbench_tables())
def test_a_guardbench_table_gives_settings_or_one_error_naming_it(table):
    text = toml_text(table)
    if text is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            settings = Settings.build({"scoped_thresholds": pyproject_thresholds(root)}, root=root, invocation_dir=root)
            model_aliases(root)
            price_table(root)
        except ConfigError as exc:
            event("refused")
            message = str(exc)
            assert "pyproject.toml" in message and "\n" not in message, message
            assert SECRET not in message
            return
    event("accepted")
    thresholds = settings.thresholds
    for scope in (thresholds.per_variant, thresholds.per_category, thresholds.per_turn):
        for bar in scope.values():
            for value in (bar.min_recall, bar.max_fpr, bar.max_ber):
                assert value is None or (type(value) is float and 0.0 <= value <= 1.0)
    assert all(type(depth) is int and depth >= 1 for depth in thresholds.per_turn)
    # Each bar is the one the file wrote under that name: none replaced by a second name for it.
    written = table.get("thresholds", {})
    assert len(thresholds.per_turn) == len(written.get("turn", {}))
    assert len(thresholds.per_category) == len(written.get("category", {}))


@fuzz(examples=300)
@given(st.sampled_from([spec for spec in OPTIONS if spec.parse is not str]), OPTION_TEXT)
def test_every_option_parser_gives_a_value_or_an_argparse_error(spec, text):
    try:
        value = spec.parse(text)
    except argparse.ArgumentTypeError as exc:
        assert SECRET not in str(exc)
        return
    if isinstance(value, float):
        assert value == value and value not in (float("inf"), float("-inf")) or spec.name == "max_duration"


class _Config:
    """What `Settings.from_pytest` reads of a pytest config: ini values as drawn, no CLI options."""

    def __init__(self, root: Path, ini: dict[str, Any]) -> None:
        self.rootpath = root
        self.invocation_params = SimpleNamespace(dir=root)
        self.inipath = None
        self._ini = ini

    def getoption(self, name: str) -> Any:
        return None

    def getini(self, name: str) -> Any:
        return self._ini.get(
            name,
            [] if name in ("guardbench_data", "guardbench_harmful_categories", "guardbench_zero_tolerance") else "",
        )


@fuzz(examples=200)
@given(st.dictionaries(st.sampled_from([spec.ini_key for spec in OPTIONS]), OPTION_TEXT, max_size=4))
def test_ini_keys_give_settings_or_one_error_naming_the_key(ini):
    linelists = {spec.ini_key for spec in OPTIONS if spec.ini_type == "linelist"}
    values = {key: [value] if key in linelists else value for key, value in ini.items()}
    with tempfile.TemporaryDirectory() as folder:
        try:
            Settings.from_pytest(_Config(Path(folder), values))
        except ConfigError as exc:
            event("refused")
            message = str(exc)
            assert any(key in message or _label(key) in message for key in ini) or "is neither a file" in message, (
                message
            )
            assert "\n" not in message
            return
    event("accepted")


def _label(ini_key: str) -> str:
    return next(spec.label for spec in OPTIONS if spec.ini_key == ini_key)
