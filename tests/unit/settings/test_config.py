from __future__ import annotations

import pytest

from pytest_guardbench.settings.config import OPTIONS, ConfigError, Settings
from pytest_guardbench.settings.model_specs import ModelSpec, model_aliases
from tests.builders import FakeConfig


def test_cli_beats_ini_beats_default(tmp_path):
    config = FakeConfig(
        cli={"guardbench_min_recall": 0.9, "guardbench_data": ["cli.json"]},
        ini={
            "guardbench_min_recall": "0.5",
            "guardbench_max_fpr": "0.1",
            "guardbench_data": ["ini.json"],
            "guardbench_variants": "original, typo",
        },
        root=tmp_path,
    )
    settings = Settings.from_pytest(config)
    assert settings.thresholds.min_recall == 0.9
    assert settings.thresholds.max_fpr == 0.1
    assert settings.thresholds.max_ber is None
    assert settings.data == (tmp_path / "sub" / "cli.json",)  # CLI paths are relative to the invocation dir
    assert settings.variants == ("original", "typo")
    assert settings.tutor == "smol" and settings.guardrail == "offline" and settings.judge == "offline"
    assert settings.policy == "assistant_policy_v2"
    assert settings.report_dir == tmp_path / "reports"


def test_ini_paths_resolve_against_rootdir(tmp_path):
    settings = Settings.from_pytest(FakeConfig({}, {"guardbench_data": ["packs/a.json"]}, tmp_path))
    assert settings.data == (tmp_path / "packs" / "a.json",)


def test_bad_ini_value_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match="ini key guardbench_max_fpr: '2' is not between 0 and 1"):
        Settings.from_pytest(FakeConfig({}, {"guardbench_max_fpr": "2"}, tmp_path))


def test_every_option_follows_the_naming_rules():
    for spec in OPTIONS:
        assert spec.dest.startswith("guardbench_") and spec.ini_key.startswith("guardbench_")
        assert all(f.startswith("--guardbench-") or f in ("--guardrail", "--tutor", "--judge") for f in spec.flags)
        assert spec.help.endswith(".")


def test_concurrency_option_per_role_and_precedence():
    import argparse

    from pytest_guardbench.settings.config import Settings
    from pytest_guardbench.settings.model_specs import ModelSpec
    from pytest_guardbench.settings.option_values import concurrency

    assert concurrency("16") == {"all": 16}
    assert concurrency("16,tutor=4") == {"all": 16, "tutor": 4}
    for bad in ("guard=4", "tutor=0", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            concurrency(bad)
    settings = Settings(concurrency={"all": 16, "tutor": 4}, timeout=5.0, retries=1)
    plain = ModelSpec(alias="a", model="m")
    tuned = ModelSpec(alias="b", model="m", concurrency=2, timeout_s=9.0, max_retries=0)
    assert settings.role_spec("tutor", tuned).concurrency == 4, "a per-role option beats the alias table"
    assert settings.role_spec("judge", tuned).concurrency == 2, "the alias table beats the run-wide value"
    assert settings.role_spec("judge", plain).concurrency == 16
    assert (settings.role_spec("judge", plain).timeout_s, settings.role_spec("judge", plain).max_retries) == (5.0, 1)
    assert (settings.role_spec("judge", tuned).timeout_s, settings.role_spec("judge", tuned).max_retries) == (9.0, 0)
    defaults = Settings().role_spec("judge", plain)
    assert (defaults.concurrency, defaults.timeout_s, defaults.max_retries) == (8, 60.0, 3)


@pytest.mark.parametrize(
    ("table", "named"),
    [
        (
            "[tool.guardbench.threshold.variant.original]\nmin_recall = 0.9\n",
            r"\[tool\.guardbench\.threshold\] is not a known table; known: models, prices, thresholds",
        ),
        ("[tool.guardbench]\nmin_recal = 0.9\n", r"\[tool\.guardbench\.min_recal\] is not a known table"),
    ],
)
def test_a_misspelt_pyproject_table_is_a_usage_error(tmp_path, table, named):
    (tmp_path / "pyproject.toml").write_text(table)
    with pytest.raises(ConfigError, match=named):
        Settings.from_pytest(FakeConfig({}, {}, tmp_path))


def test_an_alias_table_is_flat_and_its_guard_keys_land_in_the_guard_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.guardbench.models.gg]\nmodel = "ibm-granite/granite-guardian-3.3-8b"\nadapter = "granite-guardian"\n'
        'risks = ["harm", "jailbreak"]\nthink = true\nconcurrency = 2\n',
        encoding="utf-8",
    )
    spec = model_aliases(tmp_path)["gg"]
    assert (spec.guard.adapter, spec.guard.risks, spec.guard.think) == ("granite-guardian", ("harm", "jailbreak"), True)
    assert spec.concurrency == 2 and "risks" not in spec.model_dump(exclude={"guard"})
    flat = spec.flat_dump()
    assert ModelSpec(**flat) == spec and flat["risks"] == ("harm", "jailbreak") and "guard" not in flat


def test_a_bad_guard_key_in_an_alias_names_the_key_as_written(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.guardbench.models.gg]\nmodel = "m"\nadapter = "granite-guardian"\nblock_threshold = 2\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"\[tool.guardbench.models.gg\] block_threshold: Input should be less"):
        model_aliases(tmp_path)


KEY = "sk-live-0123456789abcdefSECRET"


@pytest.mark.parametrize("field", ["api_key_env", "base_url_env"])
def test_a_key_written_where_a_variable_name_belongs_is_refused_without_showing_it(tmp_path, field):
    (tmp_path / "pyproject.toml").write_text(f'[tool.guardbench.models.m]\nmodel = "x"\n{field} = "{KEY}"\n')
    with pytest.raises(
        ConfigError, match=rf"\[tool.guardbench.models.m\] {field}: .*NAME of an environment variable"
    ) as err:
        model_aliases(tmp_path)
    assert KEY not in str(err.value) and "0123456789" not in str(err.value)


def test_a_key_written_in_a_vllm_spec_is_refused_without_showing_it():
    from pytest_guardbench.settings.model_specs import parse_model_spec

    with pytest.raises(ConfigError, match=r"\?key=ENV takes the NAME") as err:
        parse_model_spec(f"vllm:m@http://127.0.0.1:9/v1?key={KEY}", {})
    assert KEY not in str(err.value)
    assert parse_model_spec("vllm:m@http://127.0.0.1:9/v1?key=MY_KEY", {}).api_key_env == "MY_KEY"
