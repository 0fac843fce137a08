"""Building a run from its settings: the inputs every process agrees on (data, cases, prompts,
model specs), the checks made before any case runs, and the stack of guard, tutor and judge with
its per-process state (models, response cache, engine). Used by the plugin and by the controller's
session; knows nothing of pytest."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.cases.sources import (
    LoadedData,
    check_unique_cases,
    load_judge_labels,
    load_sources,
    load_system_prompt,
    shipped_system_prompts,
)
from pytest_guardbench.run.engine import Engine
from pytest_guardbench.scoring.gates import unmatched_thresholds
from pytest_guardbench.guards import (
    GuardRegistry,
    CHILD_SAFETY_GUIDELINES,
    WILDGUARD_FORMAT,
    ModerationAdapter,
    NemotronSafetyAdapter,
    ShieldGemmaAdapter,
    WildGuardAdapter,
    GraniteGuardianAdapter,
    granite_version,
    Guardrail,
    LlamaGuardAdapter,
    LLMGuard,
)
from pytest_guardbench.judges.base import Judge, JudgeRegistry, LLMJudge
from pytest_guardbench.settings.model_specs import ModelSpec, model_aliases, parse_model_spec, price_table
from pytest_guardbench.settings.options import ConfigError
from pytest_guardbench.run.pipeline import BATCH_API, INSTANT, Stack, StageLimits, api_limits
from pytest_guardbench.run.preflight import api_preflight, local_preflight
from pytest_guardbench.providers import (
    ChatProvider,
    GenerationParams,
    ProviderOptions,
    chat_provider_for,
)
from pytest_guardbench.providers.hub import offline_requested
from pytest_guardbench.providers.cache import CachedProvider, CacheMode, CacheStats, ResponseCache
from pytest_guardbench.run.folder import writable_problem
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.run.units import Units, builtin_units
from pytest_guardbench.cases.variants import expand, in_shard


@dataclass
class ProcessState:
    """Per-process (controller or worker) objects: the registered units, the models built for this
    run (one per distinct spec, shared between roles), the response cache and the engine."""

    units: Units = field(default_factory=builtin_units)
    engine: Engine | None = None
    tutor: ChatProvider | None = None
    cache: ResponseCache | None = None
    cache_mode: CacheMode = "off"
    cache_stats: CacheStats = field(default_factory=CacheStats)
    models: dict[str, Any] = field(default_factory=dict)  # spec json -> provider
    role_models: dict[str, Any] = field(default_factory=dict)  # role -> provider, for call counts
    submitted_all: bool = False
    xdist_queue: Any = None  # the xdist worker's queue of item indices; False when there is none
    prior: dict[str, CaseRecord] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)  # for --guardbench-max-duration

    def execution(self) -> dict[str, Any] | None:
        if self.engine is None:
            return None
        stats = self.engine.stats
        result: dict[str, Any] = {"cases_run": stats.done, "cases_reused": stats.reused, "case_errors": stats.errors}
        if self.cache is not None:
            result["cache"] = self.cache_stats.as_dict()
        calls = {role: stats for role, model in self.role_models.items() if (stats := model.stats())}
        if calls:
            result["api_calls"] = calls
        return result

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        for model in self.models.values():
            model.close()
        if self.cache is not None:
            self.cache.close()


def resolve_role(role: str, value: str, builtins: list[str], aliases: dict[str, ModelSpec]) -> ModelSpec | None:
    """None for a built-in unit; a ModelSpec for an alias or API spec; ConfigError otherwise."""
    if value in builtins:
        return None
    spec = parse_model_spec(value, aliases)
    if spec is None:
        raise ConfigError(
            f"--{role}={value}: unknown {role}; known: {', '.join(builtins)}; aliases: {', '.join(sorted(aliases))}; "
            "or openai:<model>, vllm:<model>@<url>"
        )
    if spec.guard.decoding == "logits" and (spec.provider != "hf-local" or spec.guard.adapter != "granite-guardian"):
        raise ConfigError(
            f'--{role}={value}: decoding = "logits" needs a local (hf-local) Granite Guardian model; over an API use the default decoding'
        )
    if spec.guard.adapter == "granite-guardian" and (spec.guard.think or spec.guard.granite_version):
        version = granite_version(spec.model, spec.guard.granite_version)
        if spec.guard.think and version != "3.3":
            raise ConfigError(f"--{role}={value}: think = true needs Granite Guardian 3.3; {spec.model} is {version}")
        if spec.guard.think and spec.guard.decoding == "logits":
            raise ConfigError(f'--{role}={value}: think = true generates a trace; it cannot use decoding = "logits"')
    if spec.guard.adapter == "shieldgemma":
        unknown = [
            p for p in spec.guard.risks or () if p not in {**CHILD_SAFETY_GUIDELINES, **spec.guard.risk_definitions}
        ]
        if unknown:
            raise ConfigError(
                f"--{role}={value}: ShieldGemma policy {unknown[0]!r} has no guideline; give it one in risk_definitions "
                f"or use one of {', '.join(CHILD_SAFETY_GUIDELINES)}"
            )
    missing = spec.missing_key()
    if missing:
        raise ConfigError(
            f"--{role}={value}: environment variable {missing} is not set (it holds the API key for {spec.model})"
        )
    return spec


def load_inputs(root: Path, settings: Settings, units: Units) -> RunInputs:
    """Everything a process of the run knows before collection; ConfigError/DataError name the bad input."""
    aliases = model_aliases(root)
    specs = {
        "guardrail": resolve_role("guardrail", settings.guardrail, ["none", *units.guards.names()], aliases),
        "tutor": resolve_role("tutor", settings.tutor, units.tutors.names(), aliases),
        "judge": resolve_role("judge", settings.judge, units.judges.names(), aliases),
    }
    if settings.baseline is not None and not (settings.baseline / "results.jsonl").is_file():
        raise ConfigError(
            f"--guardbench-baseline: {settings.baseline} has no results.jsonl (expected a reports/<run-id> folder)"
        )
    base = root
    system_prompt = load_system_prompt(settings.system_prompt, base)
    refusal = load_system_prompt("guard_refusal_v1", base)
    data = (
        load_sources(settings.data, settings.harmful_categories) if settings.data else LoadedData(items=(), sources=())
    )
    cases = (
        expand(list(data.items), settings.selected_variants, settings.samples, units.mutators.table())
        if data.items
        else []
    )
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


def preflight(inputs: RunInputs) -> None:
    """The reports folder takes a file, every local model can be had and every API model answers
    once, before any case runs or any report folder is written; a replay run needs no server (its
    local models still load)."""
    settings = inputs.settings
    unwritable = writable_problem(settings.report_dir)
    if unwritable:
        raise ConfigError(unwritable)
    specs = {role: settings.role_spec(role, spec) for role, spec in inputs.model_specs.items()}
    problems = local_preflight(specs, offline_requested(settings.offline))
    if settings.cache != "replay":
        options = ProviderOptions(model_cache=settings.model_cache)
        problems += api_preflight(specs, lambda spec: chat_provider_for(spec, options))
    if problems:
        raise ConfigError("\nguardbench: ".join(problems))


def stage_limits(spec: ModelSpec | None, unit: StageLimits, batch_size: int) -> StageLimits:
    """How a stage's cases go to its model: a built-in unit as given (`unit`), a local model one
    batch at a time, an API model concurrently (or through the Batch API)."""
    if spec is None:
        return unit
    if spec.provider != "openai-compat":
        return StageLimits(batch=batch_size, in_flight=1)
    return BATCH_API if spec.batch_api else api_limits(spec.concurrency or 8)


def build_stack(inputs: RunInputs, state: ProcessState, root: Path, worker: bool) -> Stack:
    s = inputs.settings
    # Several workers on few cores each want one torch thread: 2 workers x 2 threads on 2 cores ran 20x slower.
    options = ProviderOptions(
        model_cache=s.model_cache,
        batch_size=s.batch_size,
        torch_threads=1 if worker else None,
        batch_state_dir=(s.cache_path or root / ".guardbench" / "cache.sqlite").parent / "batches",
        offline=offline_requested(s.offline),
    )
    if s.cache != "off" and state.cache is None:
        state.cache = ResponseCache(s.cache_path)  # type: ignore[arg-type]
        state.cache_mode = s.cache
    specs = {role: s.role_spec(role, spec) for role, spec in inputs.model_specs.items()}
    local = StageLimits(batch=s.batch_size, in_flight=1)

    def model(role: str) -> Any:
        spec = specs[role]
        key = spec.model_dump_json(exclude={"alias"})
        if key not in state.models:
            state.models[key] = chat_provider_for(spec, options)
        state.role_models[role] = state.models[key]
        return cached(state, state.models[key], role)

    def limits(role: str, fallback: StageLimits) -> StageLimits:
        return stage_limits(specs.get(role), fallback, s.batch_size)

    def tutor() -> ChatProvider:
        if state.tutor is None:
            state.tutor = (
                model("tutor")
                if "tutor" in specs
                else cached(state, state.units.tutors.build(s.tutor, options), "tutor")
            )
        return state.tutor

    return Stack(
        guard=build_guard(s.guardrail, specs.get("guardrail"), options, lambda: model("guardrail"), state.units.guards),
        tutor=tutor,
        judge=build_judge(s.judge, specs.get("judge"), lambda: model("judge"), options, state.units.judges),
        system_prompt=inputs.system_prompt,
        refusal_text=inputs.refusal_text,
        malformed_policy=s.malformed_policy,
        params=GenerationParams(max_new_tokens=s.max_new_tokens),
        sample=s.samples > 1,
        preflight_judge="judge" in specs,
        cached_only=state.cache.cached_only if state.cache is not None else None,
        limits={
            "guard": limits("guardrail", local if state.units.guards.runs_a_model(s.guardrail) else INSTANT),
            "tutor": limits("tutor", local),
            "judge": limits("judge", local if state.units.judges.runs_a_model(s.judge) else INSTANT),
        },
    )


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
    return build_judge(name, spec, lambda: chat_provider_for(spec, options), options, judges)  # type: ignore[arg-type]


def cached(state: ProcessState, provider: Any, role: str) -> Any:
    if state.cache is None:  # only opened when --guardbench-cache is not off
        return provider
    return CachedProvider(provider, state.cache, state.cache_mode, state.cache_stats, role)


def build_guard(
    name: str,
    spec: ModelSpec | None,
    options: ProviderOptions,
    model: Callable[[], Any],
    guards: GuardRegistry,
) -> Guardrail | None:
    """A registered guard by name (`none`: no guard), or a model guard from its alias or spec."""
    if spec is None:
        return None if name == "none" else guards.build(name, options)
    adapters: dict[str, Callable[[Any], Guardrail]] = {
        "granite-guardian": lambda m: granite_adapter(spec, m),
        "llama-guard": lambda m: LlamaGuardAdapter(m, name=spec.alias),
        "wildguard": lambda m: WildGuardAdapter(
            m, prompt_format=spec.guard.prompt_format or WILDGUARD_FORMAT, name=spec.alias
        ),
        "shieldgemma": lambda m: shieldgemma_adapter(spec, m),
        "nemotron-safety": lambda m: NemotronSafetyAdapter(m, name=spec.alias),
        "openai-moderation": lambda m: ModerationAdapter(m, name=spec.alias),
        "generic": lambda m: LLMGuard(m, name=spec.alias),
    }
    return adapters[spec.guard.adapter](model())


def shieldgemma_adapter(spec: ModelSpec, model: Any) -> ShieldGemmaAdapter:
    return ShieldGemmaAdapter(
        model,
        policies=spec.guard.risks or tuple(CHILD_SAFETY_GUIDELINES),
        guidelines=tuple(sorted(spec.guard.risk_definitions.items())),
        name=spec.alias,
    )


def granite_adapter(spec: ModelSpec, model: Any) -> GraniteGuardianAdapter:
    return GraniteGuardianAdapter(
        model,
        block_risks=spec.guard.risks or ("harm",),
        observe_risks=spec.guard.observe_risks,
        risk_definitions=tuple(sorted(spec.guard.risk_definitions.items())),
        name=spec.alias,
        version=granite_version(spec.model, spec.guard.granite_version),
        think=spec.guard.think,
        decoding=spec.guard.decoding,
        block_threshold=spec.guard.block_threshold,
    )


def listing(units: Units, root: Path) -> list[str]:
    """`--guardbench-list`: every registered unit and alias a run can name."""
    lines = ["variants (name, family):"] + [
        f"  {m.name} ({m.family}): {m.description}" for m in units.mutators.table().values()
    ]
    lines += ["guardrails:", "  none: no guardrail; every prompt goes to the tutor"]
    lines += [f"  {name}: {description}" for name, description in units.guards.describe().items()]
    lines += [f"  aliases: {', '.join(sorted(model_aliases(root)))}"]
    lines += ["tutors:"] + [f"  {name}: {desc}" for name, desc in units.tutors.describe().items()]
    lines += ["judges:"] + [f"  {name}: {desc}" for name, desc in units.judges.describe().items()]
    lines += ["system prompts:"] + [f"  {name}" for name in shipped_system_prompts()]
    return lines


def header_line(inputs: RunInputs) -> str:
    """The line pytest prints in its header: what this run is made of."""
    s = inputs.settings
    return (
        f"guardbench: guardrail={s.guardrail} tutor={s.tutor} judge={s.judge} malformed={s.malformed_policy} "
        f"sources={len(inputs.data.sources)} cases={len(inputs.cases)} variants={','.join(s.selected_variants)} reports={s.report_dir}"
    )
