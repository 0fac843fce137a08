"""The judge a run or a command names: a registered one by name, or an LLM judge around a model
built from an alias or API spec."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import contextlib
from collections.abc import Iterator

from pytest_guardbench.run.roles import resolve_role
from pytest_guardbench.run.units import builtin_judges
from pytest_guardbench.settings.model_specs import default_model_cache, model_aliases
from pytest_guardbench.settings.options import ConfigError
from pytest_guardbench.judges.llm import LLMJudge
from pytest_guardbench.judges.base import Judge, JudgeRegistry
from pytest_guardbench.providers import ProviderOptions, chat_provider_for
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.settings.model_specs import ModelSpec


def build_judge(
    name: str, spec: ModelSpec | None, model: Callable[[], Any], options: ProviderOptions, judges: JudgeRegistry
) -> Judge:
    """A registered judge by name, or an LLM judge from its alias or spec."""
    return LLMJudge(model(), name=spec.alias) if spec is not None else judges.build(name, options)


def run_judge(inputs: RunInputs, state: ProcessState) -> Judge:
    """The run's judge, for the judge-quality check at the end (the controller may have no engine)."""
    if state.engine is not None:
        return state.engine.stack.judge
    settings = inputs.settings
    spec = inputs.model_specs.get("judge")
    return standalone_judge(
        settings.judge, spec and settings.role_spec("judge", spec), settings.model_cache, state.units.judges
    )


def standalone_judge(name: str, spec: ModelSpec | None, model_cache: Path, judges: JudgeRegistry) -> Judge:
    """A judge built outside a run's stack (no response cache, its own model connection)."""
    options = ProviderOptions(model_cache=model_cache)
    if spec is None:
        return judges.build(name, options)
    return build_judge(name, spec, lambda: chat_provider_for(spec, options), options, judges)


@contextlib.contextmanager
def opened_judge(name: str, root: Path) -> Iterator[Judge]:
    """A judge whose model connection is closed when the command is done with it (an API judge
    holds an HTTP session that would otherwise be reported unclosed at exit)."""
    judge = _judge_for(name, root)
    try:
        yield judge
    finally:
        if isinstance(judge, LLMJudge):
            judge.provider.close()  # type: ignore[attr-defined]  # every provider has close(); the Protocol omits it


def _judge_for(name: str, root: Path) -> Judge:
    """The judge a run would build for `--judge=name` (the same resolution and errors)."""
    judges = builtin_judges()
    try:
        spec = resolve_role("judge", name, judges.names(), model_aliases(root))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return standalone_judge(name, spec, default_model_cache(), judges)
