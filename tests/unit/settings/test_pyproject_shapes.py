"""`[tool.guardbench]` tables in the wrong shape, bars under two names for one scope, values that are
not numbers, ini values a parser refuses with a plain ValueError, and options that change nothing:
each one `ConfigError` naming the table, key or option (exit 4), never another exception or a silent
reading."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.model_specs import model_aliases, price_table, pyproject_thresholds
from pytest_guardbench.settings.option_values import concurrency, fraction, shard
from pytest_guardbench.settings.options import ConfigError


def _settings(root: Path) -> Settings:
    return Settings.build({"scoped_thresholds": pyproject_thresholds(root)}, root=root, invocation_dir=root)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[tool.guardbench.thresholds.turn."²"]\nmin_recall = 0.5\n',
            r'turn\."²"\]: a turn is a depth, a whole number from 1',
        ),
        ('[tool.guardbench.thresholds.turn."١"]\nmin_recall = 0.5\n', r'turn\."١"\]: a turn is a depth'),
        (
            '[tool.guardbench.thresholds.turn."1"]\nmin_recall = 1.0\n[tool.guardbench.thresholds.turn."01"]\nmin_recall = 0.0\n',
            r"turn\.01\]: the same turn as '1'; give each turn once",
        ),
        (
            "[tool.guardbench.thresholds.category.Danger]\nmin_recall = 1.0\n[tool.guardbench.thresholds.category.danger]\nmin_recall = 0.0\n",
            r"category\.danger\]: the same category as 'Danger'",
        ),
        (
            "[tool.guardbench.thresholds.variant.typo]\nmin_recall = true\n",
            r"variant\.typo\] min_recall: Input should be a valid number",
        ),
        (
            '[tool.guardbench.thresholds.variant.typo]\nmax_fpr = "0.5"\n',
            r"variant\.typo\] max_fpr: Input should be a valid number",
        ),
        (
            "[tool.guardbench.thresholds.variant.typo]\nmin_recall = nan\n",
            r"variant\.typo\] min_recall: Input should be less",
        ),
        ("[tool.guardbench.thresholds]\nturn = 3\n", r"tool\.guardbench\.thresholds\.turn must be tables"),
        ("[tool.guardbench.thresholds.variant]\ntypo = 0.5\n", r"variant\.typo\]: must be a table of"),
        ("[[tool.guardbench.thresholds]]\n", r"tool\.guardbench\.thresholds is an array of tables"),
    ],
    ids=[
        "superscript",
        "arabic-digit",
        "1-and-01",
        "category-case",
        "bool",
        "string",
        "nan",
        "scope-value",
        "entry-value",
        "array",
    ],
)
def test_a_thresholds_table_that_cannot_be_read_one_way_is_refused(tmp_path, toml, message):
    (tmp_path / "pyproject.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        _settings(tmp_path)


def test_depths_written_once_each_are_read_as_numbers(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.guardbench.thresholds.turn.1]\nmin_recall = 1\n[tool.guardbench.thresholds.turn.3]\nmax_fpr = 0.25\n",
        encoding="utf-8",
    )
    per_turn = _settings(tmp_path).thresholds.per_turn
    assert per_turn[1].min_recall == 1.0 and type(per_turn[1].min_recall) is float and per_turn[3].max_fpr == 0.25


@pytest.mark.parametrize(
    ("toml", "read", "message"),
    [
        (
            "[[tool.guardbench.models]]\nmodel = 'x'\n",
            model_aliases,
            r"tool\.guardbench\.models is an array of tables \(\[\[\.\.\.\]\]\); write one table per name: \[tool\.guardbench\.models\.<name>\]",
        ),
        ("[tool.guardbench]\nmodels = 3\n", model_aliases, r"tool\.guardbench\.models is a value"),
        (
            "[tool.guardbench.models.m]\nalias = 'x'\nmodel = 'y'\n",
            model_aliases,
            r"\[tool\.guardbench\.models\.m\] alias: the table's name is the alias",
        ),
        (
            "[[tool.guardbench.prices]]\ninput_per_million = 1\n",
            price_table,
            r"tool\.guardbench\.prices is an array of tables",
        ),
        (
            '[tool.guardbench.prices."m"]\ninput_per_million = inf\n',
            price_table,
            r"input_per_million: must be a finite number >= 0",
        ),
        (
            '[tool.guardbench.prices."m"]\noutput_per_million = nan\n',
            price_table,
            r"output_per_million: must be a finite number >= 0",
        ),
        ("[tool]\nguardbench = 3\n", model_aliases, r"tool\.guardbench must be a table"),
    ],
    ids=["models-array", "models-value", "alias-key", "prices-array", "price-inf", "price-nan", "guardbench-value"],
)
def test_a_models_or_prices_table_in_the_wrong_shape_is_refused(tmp_path, toml, read, message):
    (tmp_path / "pyproject.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read(tmp_path)


def test_a_pyproject_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.guardbench.models.m]\nmodel = '\xe9'\n")
    with pytest.raises(ConfigError, match=r"pyproject\.toml: not UTF-8 text \(byte 36\)"):
        model_aliases(tmp_path)


class _Config:
    def __init__(self, root: Path, cli: dict | None = None, ini: dict | None = None) -> None:
        self.rootpath, self.invocation_params, self.inipath = root, SimpleNamespace(dir=root), None
        self._cli, self._ini = cli or {}, ini or {}

    def getoption(self, name: str):
        return self._cli.get(name)

    def getini(self, name: str):
        return self._ini.get(
            name,
            [] if name in ("guardbench_data", "guardbench_harmful_categories", "guardbench_zero_tolerance") else "",
        )


@pytest.mark.parametrize("where", ["cli", "ini"])
def test_attacker_turns_without_an_attacker_is_refused_not_ignored(tmp_path, where):
    config = (
        _Config(tmp_path, cli={"guardbench_attacker_turns": 3})
        if where == "cli"
        else _Config(tmp_path, ini={"guardbench_attacker_turns": "3"})
    )
    with pytest.raises(
        ConfigError, match=r"--guardbench-attacker-turns 3: has no effect without --guardbench-attacker"
    ):
        Settings.from_pytest(config)
    with_attacker = _Config(tmp_path, cli={"guardbench_attacker_turns": 3, "guardbench_attacker": "scripted"})
    assert Settings.from_pytest(with_attacker).attacker_turns == 3


def test_an_ini_value_a_parser_refuses_with_valueerror_is_a_config_error(tmp_path, monkeypatch):
    from pytest_guardbench.settings import options

    spec = options.OPTIONS_BY_NAME["shard"]
    monkeypatch.setattr(
        options.OptionSpec, "parse", property(lambda self: int if self is spec else self.__dict__["parse"])
    )
    with pytest.raises(ConfigError, match=r"ini key guardbench_shard: invalid literal"):
        Settings.from_pytest(_Config(tmp_path, ini={"guardbench_shard": "x"}))


def test_option_values_read_one_way_only():
    with pytest.raises(argparse.ArgumentTypeError, match=r"'²/3' is not i/n"):
        shard("²/3")
    with pytest.raises(argparse.ArgumentTypeError, match=r"tutor given twice"):
        concurrency("tutor=4,tutor=8")
    with pytest.raises(argparse.ArgumentTypeError, match=r"the run-wide value given twice"):
        concurrency("4,8")


def test_an_option_value_that_is_a_key_is_not_echoed(monkeypatch):
    key = "sk-option-Zx9Cv8Bn7Mm6Ll5Kk4"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        fraction(key)
    assert key not in str(refused.value) and "[REDACTED]" in str(refused.value)
