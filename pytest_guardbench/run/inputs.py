"""What every process of a run knows after pytest_configure: settings, data, cases, prompts, the
API model specs per role, prices and the judge-check labels. Identical in the controller and every
xdist worker, since each builds it from the same argv."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_guardbench._util.redact import treat_as_key
from pytest_guardbench.cases.attack import SCRIPTED_ATTACKER, attack_cases
from pytest_guardbench.cases.sources import (
    LoadedData,
    check_unique_cases,
    load_judge_labels,
    load_sources,
    load_system_prompt,
)
from pytest_guardbench.cases.variants import expand, in_shard
from pytest_guardbench.records import Case, JudgeLabel
from pytest_guardbench.run.roles import judge_specs, resolve_role
from pytest_guardbench.run.units import Units
from pytest_guardbench.scoring.gates import unmatched_thresholds
from pytest_guardbench.scoring.policies import ScoringPolicy, policy_named
from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.model_specs import ModelSpec, model_aliases, price_table
from pytest_guardbench.settings.options import ConfigError


@dataclass
class RunInputs:
    """What every process of a run knows after pytest_configure: settings, data, cases and texts."""

    settings: Settings
    data: LoadedData
    cases: list[Case]
    system_prompt: str
    refusal_text: str
    tutor_description: str
    model_specs: dict[str, ModelSpec] = field(default_factory=dict)  # role -> spec, for API-backed roles
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # served model -> USD per million tokens
    judge_labels: list[JudgeLabel] = field(default_factory=list)  # --guardbench-judge-check
    cases_by_id: dict[str, Case] = field(init=False)
    policy: ScoringPolicy = field(init=False)

    def __post_init__(self) -> None:
        self.cases_by_id = {c.case_id: c for c in self.cases}
        self.policy = policy_named(self.settings.policy)


def load_inputs(root: Path, settings: Settings, units: Units) -> RunInputs:
    """Everything a process of the run knows before collection; ConfigError/DataError name the bad input."""
    aliases = model_aliases(root)
    # Every variable the project's specs name for a key is a secret of the run, used by it or not.
    treat_as_key(spec.api_key_env for spec in aliases.values())
    specs = {
        "guardrail": resolve_role("guardrail", settings.guardrail, ["none", *units.guards.names()], aliases),
        "tutor": resolve_role("tutor", settings.tutor, units.tutors.names(), aliases),
        **judge_specs(settings.judge, units.judges.names(), aliases),
    }
    if settings.attacker is not None:  # any model a tutor can be, or the scripted attacker
        builtins = [SCRIPTED_ATTACKER, *units.tutors.names()]
        specs["attacker"] = resolve_role("attacker", settings.attacker, builtins, aliases)
    if settings.baseline is not None and not (settings.baseline / "results.jsonl").is_file():
        raise ConfigError(
            f"--guardbench-baseline: {settings.baseline} has no results.jsonl (expected a reports/<run-id> folder)"
        )
    system_prompt = load_system_prompt(settings.system_prompt, root)
    refusal = load_system_prompt("guard_refusal_v1", root)
    data = (
        load_sources(settings.data, settings.harmful_categories) if settings.data else LoadedData(items=(), sources=())
    )
    cases = (
        expand(list(data.items), settings.variants, settings.samples, units.mutators.table(), settings.exclude_variants)
        if data.items
        else []
    )
    if settings.attacker is not None:
        cases += attack_cases(list(data.items), settings.attacker_turns, settings.samples)
    check_unique_cases(cases)
    unmatched = (
        unmatched_thresholds(settings.thresholds, cases) if cases else []
    )  # before sharding: a shard may lack a category
    if unmatched:
        raise ConfigError("; ".join(unmatched))
    cases = [c for c in cases if in_shard(c, settings.shard)]
    tutor_spec = specs["tutor"]
    description = (
        units.tutors.describe()[settings.tutor]
        if tutor_spec is None
        else f"{tutor_spec.model} over an OpenAI-compatible API"
    )
    specs_used = {k: v for k, v in specs.items() if v is not None}
    labels = load_judge_labels(settings.judge_check) if settings.judge_check is not None else []
    return RunInputs(settings, data, cases, system_prompt, refusal, description, specs_used, price_table(root), labels)
