"""The judge a run or a command names: a registered one by name, or an LLM judge around a model
built from an alias or API spec."""

from __future__ import annotations

from pytest_guardbench.errors import InternalError

from collections.abc import Callable
from pathlib import Path

import contextlib
from collections.abc import Iterator

from pytest_guardbench.judges.panel import PanelJudge, SampledJudge, panel_names
from pytest_guardbench.run.roles import judge_specs
from pytest_guardbench.run.units import builtin_judges
from pytest_guardbench.settings.model_specs import default_model_cache, model_aliases
from pytest_guardbench.judges.llm_judge import LLMJudge
from pytest_guardbench.judges.base import Judge, JudgeRegistry
from pytest_guardbench.providers import ChatProvider, ProviderOptions, chat_provider_for
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.settings.model_specs import ModelSpec


MemberModel = Callable[[str], tuple[ModelSpec | None, Callable[[], ChatProvider]]]


def build_judge(
    name: str,
    spec: ModelSpec | None,
    model: Callable[[], ChatProvider],
    options: ProviderOptions,
    judges: JudgeRegistry,
    *,
    samples: int = 1,
    member_model: MemberModel | None = None,
) -> Judge:
    """A registered judge by name, or an LLM judge from its alias or spec; for `a,b,c` a panel of
    those (`member_model` gives each member's spec and model); asked `samples` times when above 1."""
    names = panel_names(name)
    judge: Judge
    if len(names) > 1:
        if member_model is None:
            raise InternalError(f"--judge={name}: a judge panel needs its members' models")
        members = []
        for member in names:
            member_spec, member_provider = member_model(member)
            members.append(build_judge(member, member_spec, member_provider, options, judges))
        judge = PanelJudge(tuple(members), name=name)
    else:
        judge = LLMJudge(model(), name=spec.alias) if spec is not None else judges.build(name, options)
    return SampledJudge(judge, samples) if samples > 1 else judge


def the_run_judge(inputs: RunInputs, state: ProcessState) -> Judge:
    """The run's judge, for the judge-quality check at the end (the controller may have no engine)."""
    if state.engine is not None:
        return state.engine.stack.judge
    settings = inputs.settings
    spec = inputs.model_specs.get("judge")
    members = {
        role.split(":", 1)[1]: settings.role_spec(role, s)
        for role, s in inputs.model_specs.items()
        if role.startswith("judge:")
    }
    return standalone_judge(
        settings.judge,
        spec and settings.role_spec("judge", spec),
        settings.model_cache,
        state.units.judges,
        samples=settings.judge_samples,
        member_specs=members,
    )


def standalone_judge(
    name: str,
    spec: ModelSpec | None,
    model_cache: Path,
    judges: JudgeRegistry,
    *,
    samples: int = 1,
    member_specs: dict[str, ModelSpec] | None = None,
) -> Judge:
    """A judge built outside a run's stack (no response cache, its own model connection)."""
    options = ProviderOptions(model_cache=model_cache)

    def member_model(member: str) -> tuple[ModelSpec | None, Callable[[], ChatProvider]]:
        member_spec = (member_specs or {}).get(member)
        # the model is called only with a spec
        return member_spec, lambda: chat_provider_for(member_spec, options)  # type: ignore[arg-type]

    def provider() -> ChatProvider:
        return chat_provider_for(spec, options)  # type: ignore[arg-type]  # called only with a spec

    return build_judge(name, spec, provider, options, judges, samples=samples, member_model=member_model)


@contextlib.contextmanager
def opened_judge(name: str, root: Path, samples: int = 1) -> Iterator[Judge]:
    """A judge whose model connection is closed when the command is done with it (an API judge
    holds an HTTP session that would otherwise be reported unclosed at exit); asked `samples` times."""
    judge = _judge_for(name, root, samples)
    try:
        yield judge
    finally:
        for llm_judge in _llm_judges(judge):
            # every provider has close(); the Protocol omits it
            llm_judge.provider.close()  # type: ignore[attr-defined]


def _llm_judges(judge: Judge) -> list[LLMJudge]:
    if isinstance(judge, SampledJudge):
        return _llm_judges(judge.inner)
    if isinstance(judge, PanelJudge):
        return [inner for member in judge.members for inner in _llm_judges(member)]
    return [judge] if isinstance(judge, LLMJudge) else []


def named_judge_spec(name: str, root: Path) -> ModelSpec | None:
    """The model spec `--judge=name` resolves to (None for a registered judge or a panel), as a run
    would resolve it: what `run.judge_quality.judge_identity` names besides the judge itself."""
    return _judge_specs(name, root, builtin_judges()).get("judge")


def _judge_specs(name: str, root: Path, judges: JudgeRegistry) -> dict[str, ModelSpec | None]:
    return judge_specs(name, judges.names(), model_aliases(root))


def _judge_for(name: str, root: Path, samples: int) -> Judge:
    """The judge a run would build for `--judge=name` (the same resolution and errors)."""
    judges = builtin_judges()
    specs = _judge_specs(name, root, judges)
    members = {role.split(":", 1)[1]: s for role, s in specs.items() if role.startswith("judge:") and s is not None}
    return standalone_judge(
        name, specs.get("judge"), default_model_cache(), judges, samples=samples, member_specs=members
    )
