"""What every process of a run knows after pytest_configure: settings, data, cases, prompts, the
API model specs per role, prices and the judge-check labels. Identical in the controller and every
xdist worker, since each builds it from the same argv."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.cases.sources import LoadedData
from pytest_guardbench.settings.model_specs import ModelSpec
from pytest_guardbench.scoring.policies import ScoringPolicy, policy_named
from pytest_guardbench.records import Case, JudgeLabel


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
