"""pytest11 entry point: options, markers, parametrisation, fixtures and the report hook. Kept thin:
the controller's work lives in `session.GuardbenchSession`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_guardbench import hookspecs
from pytest_guardbench.config import GateMode, Settings
from pytest_guardbench.model_specs import ModelSpec, model_aliases, parse_model_spec, price_table
from pytest_guardbench.options import OPTIONS, ConfigError
from pytest_guardbench.data import DataError, LoadedData, check_unique_cases, label_conflicts, load_judge_labels, load_sources, load_system_prompt
from pytest_guardbench.guards import BUILTIN_GUARDS, GraniteGuardianAdapter, Guardrail, LlamaGuardAdapter, LLMGuard, SemanticGuard
from pytest_guardbench.judges import BUILTIN_JUDGES, Judge, LLMJudge
from pytest_guardbench.offline_judge import BUILTIN_JUDGE_NAMES, OfflineJudge, builtin_judge
from pytest_guardbench.engine import Engine
from pytest_guardbench.gates import unmatched_thresholds
from pytest_guardbench.preflight import api_preflight
from pytest_guardbench.reports import writable_problem
from pytest_guardbench.pipeline import BATCH_API, INSTANT, Stack, StageLimits, api_limits
from pytest_guardbench.resume import ResumeError, load_base
from pytest_guardbench.providers import (
    ChatProvider,
    GenerationParams,
    ProviderOptions,
    ProviderRegistry,
    builtin_registry,
    chat_provider_for,
    minilm_embedder,
)
from pytest_guardbench.providers.cache import CachedProvider, CacheMode, CacheStats, ResponseCache
from pytest_guardbench.schemas import Case, CaseRecord, GuardDecision, JudgeVerdict, Outcome, TutorReply
from pytest_guardbench.policies import ScoringPolicy
from pytest_guardbench.scoring import classify, explain
from pytest_guardbench.session import RECORD_ATTR, SLOT_FIXTURE, WORKER_OUTPUT_KEY, GuardbenchSession, RunInputs, XdistBridge
from pytest_guardbench.variants import BUILTIN_MUTATORS, VariantError, expand, in_shard

INPUTS_KEY = pytest.StashKey[RunInputs]()
SESSION_KEY = pytest.StashKey[GuardbenchSession]()
PROCESS_KEY = pytest.StashKey["ProcessState"]()
# Guards that load a model shipped in a PyPI wheel (no spec needed).
MODEL_GUARDS = ("semantic",)
RECORD_KEY = pytest.StashKey[dict[str, Any]]()
ATTACHED_KEY = pytest.StashKey[bool]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guardbench", "child-safety stress tests (pytest-guardbench)")
    for spec in OPTIONS:
        cli_help = spec.help.replace("%", "%%")  # argparse %-formats help strings
        if spec.repeatable:
            group.addoption(*spec.flags, dest=spec.dest, action="append", default=None, help=cli_help)
        else:
            group.addoption(*spec.flags, dest=spec.dest, type=spec.parse, default=None, help=cli_help)
        parser.addini(spec.ini_key, spec.help, type=spec.ini_type, default=[] if spec.ini_type == "linelist" else "")
    group.addoption("--guardbench-list", action="store_true", dest="guardbench_list", default=False, help="List variants, guardrails, tutors, judges and system prompts, then exit.")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@dataclass
class ProcessState:
    """Per-process (controller or worker) objects: the provider registry, the models built for this
    run (one per distinct spec, shared between roles), the response cache and the engine."""

    registry: ProviderRegistry
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
        calls = {role: model.stats() for role, model in self.role_models.items() if callable(getattr(model, "stats", None))}
        if calls:
            result["api_calls"] = calls
        return result

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        for model in self.models.values():
            closer = getattr(model, "close", None)
            if callable(closer):
                closer()
        if self.cache is not None:
            self.cache.close()


def _resolve_role(role: str, value: str, builtins: list[str], aliases: dict[str, ModelSpec]) -> ModelSpec | None:
    """None for a built-in unit; a ModelSpec for an alias or API spec; ConfigError otherwise."""
    if value in builtins:
        return None
    spec = parse_model_spec(value, aliases)
    if spec is None:
        raise ConfigError(
            f"--{role}={value}: unknown {role}; known: {', '.join(builtins)}; aliases: {', '.join(sorted(aliases))}; "
            "or openai:<model>, vllm:<model>@<url>"
        )
    if spec.decoding == "logits" and (spec.provider != "hf-local" or spec.adapter != "granite-guardian"):
        raise ConfigError(f"--{role}={value}: decoding = \"logits\" needs a local (hf-local) Granite Guardian model; over an API use the default decoding")
    missing = spec.missing_key()
    if missing:
        raise ConfigError(f"--{role}={value}: environment variable {missing} is not set (it holds the API key for {spec.model})")
    return spec


def _load_inputs(config: pytest.Config, settings: Settings, registry: ProviderRegistry) -> RunInputs:
    aliases = model_aliases(Path(config.rootpath))
    specs = {
        "guardrail": _resolve_role("guardrail", settings.guardrail, ["none", *sorted(BUILTIN_GUARDS), *MODEL_GUARDS], aliases),
        "tutor": _resolve_role("tutor", settings.tutor, registry.names(), aliases),
        "judge": _resolve_role("judge", settings.judge, list(BUILTIN_JUDGE_NAMES), aliases),
    }
    if settings.baseline is not None and not (settings.baseline / "results.jsonl").is_file():
        raise ConfigError(f"--guardbench-baseline: {settings.baseline} has no results.jsonl (expected a reports/<run-id> folder)")
    base = Path(config.rootpath)
    system_prompt = load_system_prompt(settings.system_prompt, base)
    refusal = load_system_prompt("guard_refusal_v1", base)
    data = load_sources(settings.data, settings.harmful_categories) if settings.data else LoadedData(items=(), sources=())
    cases = expand(list(data.items), settings.selected_variants, settings.samples, BUILTIN_MUTATORS) if data.items else []
    check_unique_cases(cases)
    unmatched = unmatched_thresholds(settings.thresholds, cases) if cases else []  # before sharding: a shard may lack a category
    if unmatched:
        raise ConfigError("; ".join(unmatched))
    cases = [c for c in cases if in_shard(c, settings.shard)]
    tutor_spec = specs["tutor"]
    description = registry.describe()[settings.tutor] if tutor_spec is None else f"{tutor_spec.model} over an OpenAI-compatible API"
    specs_used = {k: v for k, v in specs.items() if v is not None}
    labels = load_judge_labels(settings.judge_check) if settings.judge_check is not None else []
    return RunInputs(settings, data, cases, system_prompt, refusal, description, specs_used, price_table(Path(config.rootpath)), labels)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "guardbench(pack, variant, harmful, category): a generated guardbench case; select with -m \"guardbench(variant='typo')\".")
    config.addinivalue_line("markers", "harmful: a guardbench case whose prompt is labelled harmful.")
    config.addinivalue_line("markers", "harmless: a guardbench case whose prompt is labelled safe.")
    config.addinivalue_line("markers", "unlabelled: a guardbench case without a label (runs, never scored).")
    registry = builtin_registry()
    config.hook.pytest_guardbench_register_providers(registry=registry)
    try:
        settings = Settings.from_pytest(config)
        inputs = _load_inputs(config, settings, registry)
        if not _is_worker(config):
            _preflight(config, inputs)
        state = ProcessState(registry=registry)
        session = None if _is_worker(config) else GuardbenchSession(config, inputs)
    except (ConfigError, DataError, VariantError, ResumeError) as exc:
        raise pytest.UsageError(f"guardbench: {exc}") from None
    conflicts = label_conflicts(inputs.data.items)
    if conflicts and not _is_worker(config):
        shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
        config.issue_config_time_warning(pytest.PytestWarning(f"guardbench: {len(conflicts)} items have is_harmful and label that disagree "
                                                              f"(is_harmful is used): {shown}"), stacklevel=2)  # fmt: skip
    if settings.resume is not None:
        # The controller folded the folder's finished cases into resume_base.jsonl before any worker started.
        state.prior = session.prior if session is not None else load_base(settings.resume)
    config.stash[INPUTS_KEY] = inputs
    config.stash[PROCESS_KEY] = state
    if session is not None:
        session.local_execution = state.execution
        session.judge_factory = lambda: _run_judge(config)
        config.stash[SESSION_KEY] = session
        config.pluginmanager.register(session, "guardbench-session")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistBridge(session), "guardbench-xdist-bridge")


def _preflight(config: pytest.Config, inputs: RunInputs) -> None:
    """The reports folder takes a file and every API model answers once, before any case runs or
    any report folder is written; a replay run needs no server, a listing or collection makes no call."""
    settings = inputs.settings
    if config.option.collectonly or config.getoption("guardbench_list"):
        return
    unwritable = writable_problem(settings.report_dir)
    if unwritable:
        raise ConfigError(unwritable)
    if settings.cache == "replay":
        return
    options = ProviderOptions(model_cache=settings.model_cache)
    specs = {role: settings.role_spec(role, spec) for role, spec in inputs.model_specs.items()}
    problems = api_preflight(specs, lambda spec: chat_provider_for(spec, options))
    if problems:
        raise ConfigError("\nguardbench: ".join(problems))


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(PROCESS_KEY, None)
    if state is not None:
        state.close()
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        bridge = config.pluginmanager.get_plugin("guardbench-xdist-bridge")
        if bridge is not None:
            config.pluginmanager.unregister(bridge)
        del config.stash[SESSION_KEY]


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("guardbench_list"):
        return None
    from pytest_guardbench.data import shipped_system_prompts

    config._do_configure()
    registry = config.stash[PROCESS_KEY].registry
    lines = ["variants (name, family):"] + [f"  {m.name} ({m.family}): {m.description}" for m in BUILTIN_MUTATORS.values()]
    lines += ["guardrails:", "  none: no guardrail; every prompt goes to the tutor"]
    lines += [f"  {name}: {factory().description}" for name, factory in sorted(BUILTIN_GUARDS.items())]
    lines += [f"  semantic: {SemanticGuard.description}", f"  aliases: {', '.join(sorted(model_aliases(Path(config.rootpath))))}"]
    lines += ["tutors:"] + [f"  {name}: {desc}" for name, desc in registry.describe().items()]
    lines += ["judges:", f"  offline: {OfflineJudge.description}"] + [f"  {name}: {factory().description}" for name, factory in sorted(BUILTIN_JUDGES.items())]
    lines += ["system prompts:"] + [f"  {name}" for name in shipped_system_prompts()]
    print("\n".join(lines))
    config._ensure_unconfigure()
    return 0


def pytest_report_header(config: pytest.Config) -> str | None:
    inputs = config.stash.get(INPUTS_KEY, None)
    if inputs is None or not inputs.cases:
        return None
    s = inputs.settings
    return (
        f"guardbench: guardrail={s.guardrail} tutor={s.tutor} judge={s.judge} malformed={s.malformed_policy} "
        f"sources={len(inputs.data.sources)} cases={len(inputs.cases)} variants={','.join(s.selected_variants)} reports={s.report_dir}"
    )


def _marks(case: Case) -> list[pytest.MarkDecorator]:
    label = "harmful" if case.is_harmful else "harmless" if case.is_harmful is False else "unlabelled"
    return [
        pytest.mark.guardbench(pack=case.pack, variant=case.variant, harmful=case.is_harmful, category=(case.category or "").lower()),
        getattr(pytest.mark, label),
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if SLOT_FIXTURE not in metafunc.fixturenames:
        return
    inputs = metafunc.config.stash[INPUTS_KEY]
    if not inputs.data.sources:
        raise pytest.UsageError("guardbench: no prompt data; pass --guardbench-data PATH or set the guardbench_data ini key")
    params = [pytest.param(case, id=case.case_id, marks=_marks(case)) for case in inputs.cases]
    metafunc.parametrize(SLOT_FIXTURE, params, indirect=True)


def _build_stack(config: pytest.Config) -> Stack:
    inputs = config.stash[INPUTS_KEY]
    state = config.stash[PROCESS_KEY]
    s = inputs.settings
    # Several workers on few cores each want one torch thread: 2 workers x 2 threads on 2 cores ran 20x slower.
    options = ProviderOptions(
        model_cache=s.model_cache,
        batch_size=s.batch_size,
        torch_threads=1 if _is_worker(config) else None,
        batch_state_dir=(s.cache_path or Path(config.rootpath) / ".guardbench" / "cache.sqlite").parent / "batches",
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
        return _cached(state, state.models[key], role)

    def limits(role: str, fallback: StageLimits) -> StageLimits:
        spec = specs.get(role)
        if spec is None:
            return fallback
        if spec.provider != "openai-compat":
            return local
        return BATCH_API if spec.batch_api else api_limits(spec.concurrency or 8)

    def tutor() -> ChatProvider:
        if state.tutor is None:
            state.tutor = model("tutor") if "tutor" in specs else _cached(state, state.registry.build(s.tutor, options), "tutor")
        return state.tutor

    return Stack(
        guard=_build_guard(s.guardrail, specs.get("guardrail"), options, lambda: model("guardrail")),
        tutor=tutor,
        judge=_judge(s.judge, specs.get("judge"), lambda: model("judge"), options),
        system_prompt=inputs.system_prompt,
        refusal_text=inputs.refusal_text,
        malformed_policy=s.malformed_policy,
        params=GenerationParams(max_new_tokens=s.max_new_tokens),
        sample=s.samples > 1,
        preflight_judge="judge" in specs,
        cached_only=state.cache.cached_only if state.cache is not None else None,
        limits={
            "guard": limits("guardrail", local if s.guardrail in MODEL_GUARDS else INSTANT),
            "tutor": limits("tutor", local),
            "judge": limits("judge", local if s.judge == "offline" else INSTANT),
        },
    )


def _judge(name: str, spec: ModelSpec | None, model: Callable[[], Any], options: ProviderOptions) -> Judge:
    return LLMJudge(model(), name=spec.alias) if spec is not None else builtin_judge(name, lambda: minilm_embedder(options))


def _run_judge(config: pytest.Config) -> Judge:
    """The run's judge, for the judge-quality check at the end (the controller may have no engine)."""
    state = config.stash[PROCESS_KEY]
    if state.engine is not None:
        return state.engine.stack.judge
    settings = config.stash[INPUTS_KEY].settings
    spec = config.stash[INPUTS_KEY].model_specs.get("judge")
    options = ProviderOptions(model_cache=settings.model_cache)
    return _judge(settings.judge, spec, lambda: chat_provider_for(settings.role_spec("judge", spec), options), options)  # type: ignore[arg-type]


def _cached(state: ProcessState, provider: Any, role: str) -> Any:
    if state.cache is None:  # only opened when --guardbench-cache is not off
        return provider
    return CachedProvider(provider, state.cache, state.cache_mode, state.cache_stats, role)


def _build_guard(name: str, spec: ModelSpec | None, options: ProviderOptions, model: Callable[[], Any]) -> Guardrail | None:
    if spec is None:
        if name == "none":
            return None
        if name == "semantic":
            return SemanticGuard(minilm_embedder(options))
        return BUILTIN_GUARDS[name]()
    if spec.adapter == "granite-guardian":
        return GraniteGuardianAdapter(
            model(),
            block_risks=spec.risks,
            observe_risks=spec.observe_risks,
            risk_definitions=tuple(sorted(spec.risk_definitions.items())),
            name=spec.alias,
            decoding=spec.decoding,
            block_threshold=spec.block_threshold,
        )
    if spec.adapter == "llama-guard":
        return LlamaGuardAdapter(model(), name=spec.alias)
    return LLMGuard(model(), name=spec.alias)


def _xdist_queue(config: pytest.Config, state: ProcessState) -> list[int]:
    """Indices (into session.items) that the xdist scheduler has already sent this worker and that
    it has not started yet. Read from the worker's own queue; empty if xdist changes its internals."""
    if state.xdist_queue is None:  # looked up once: this runs before every test of a worker
        state.xdist_queue = next(
            (getattr(p, "torun") for p in config.pluginmanager.get_plugins()
             if type(p).__name__ == "WorkerInteractor" and hasattr(getattr(p, "torun", None), "lock")),
            False,
        )  # fmt: skip
    if state.xdist_queue is False:
        return []
    with state.xdist_queue.lock() as pending:
        return [i for i in pending if isinstance(i, int)]


def _case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(SLOT_FIXTURE) if callspec is not None else None
    return case if isinstance(case, Case) else None


def _schedule(slot: CaseSlot, engine: Engine) -> None:
    """Put this process's selected cases in flight: in a single process, every selected item at the
    first test; in an xdist worker, whatever the scheduler has queued for it so far."""
    state = slot.config.stash[PROCESS_KEY]
    items = slot.item.session.items
    if not _is_worker(slot.config):
        if not state.submitted_all:
            state.submitted_all = True
            engine.submit(case for case in map(_case_of, items) if case is not None)
        return
    queued = [_case_of(items[i]) for i in _xdist_queue(slot.config, state) if i < len(items)]
    engine.submit(case for case in queued if case is not None)


@dataclass(frozen=True)
class CaseSlot:
    """This test's case with its item and config, handed to the public fixtures so that only one
    fixture per test asks for `request`: pytest builds a new `request` fixture definition, with a
    signature inspection, each time one is asked for (bench/bench_warm_cache.py counts per-test cost)."""

    case: Case
    item: pytest.Item
    config: pytest.Config


@pytest.fixture
def _guardbench_slot(request: pytest.FixtureRequest) -> CaseSlot:
    limit = request.config.stash[INPUTS_KEY].settings.max_duration
    if limit is not None and time.monotonic() - request.config.stash[PROCESS_KEY].started > limit:
        # Skipped, not failed: no record is written, so the case counts as not run (missing) and the
        # summary marks the run incomplete.
        pytest.skip(f"not run: --guardbench-max-duration {limit:g} s reached")
    return CaseSlot(request.param, request.node, request.config)


@pytest.fixture
def guardbench_case(_guardbench_slot: CaseSlot) -> Case:
    """The prompt-variant sample this test runs (set by parametrisation)."""
    return _guardbench_slot.case


@pytest.fixture
def guardbench_record(_guardbench_slot: CaseSlot) -> CaseRecord:
    """The full pipeline record of this case: guard decision, final response, judge verdict."""
    slot = _guardbench_slot
    state = slot.config.stash[PROCESS_KEY]
    if state.engine is None:
        state.engine = Engine(_build_stack(slot.config), prior=state.prior)
    _schedule(slot, state.engine)
    record = state.engine.result(slot.case)
    slot.item.stash[RECORD_KEY] = record.model_dump(mode="json")
    slot.item.user_properties.extend(_junit_properties(record, slot.config.stash[INPUTS_KEY].policy))
    return record


def _junit_properties(record: CaseRecord, policy: ScoringPolicy) -> list[tuple[str, str]]:
    """Small per-case facts for --junitxml (never prompt or response text, never keys)."""
    outcome, reason = classify(record, policy)
    label = "harmful" if record.is_harmful else "safe" if record.is_harmful is False else "unlabelled"
    properties = [
        ("guardbench.case_id", record.case_id),
        ("guardbench.variant", record.variant),
        ("guardbench.category", record.category or ""),
        ("guardbench.label", label),
        ("guardbench.guard_decision", record.guard.status if record.guard else "no-guard"),
        ("guardbench.outcome", outcome or f"unscored:{reason}"),
    ]
    if record.error is not None:
        properties.append(("guardbench.failed_stage", record.error.stage))
    elif outcome in ("FN", "FP"):
        properties.append(("guardbench.failed_stage", "guard" if record.response is not None and record.response.source == "guard_block" else "tutor"))
    if record.judge is not None:
        properties.append(("guardbench.judge_reason", record.judge.reason[:300]))
    return properties


@pytest.fixture
def guardbench_guard_decision(guardbench_record: CaseRecord) -> GuardDecision | None:
    """The parsed guardrail decision, or None when the run has no guardrail."""
    return guardbench_record.guard


@pytest.fixture
def guardbench_tutor_response(guardbench_record: CaseRecord) -> TutorReply | None:
    """The final response: the tutor's answer, or the refusal text when the guard blocked."""
    return guardbench_record.response


@pytest.fixture
def guardbench_verdict(guardbench_record: CaseRecord) -> JudgeVerdict | None:
    """The judge's verdict on the final response."""
    return guardbench_record.judge


@dataclass(frozen=True)
class GuardbenchOutcome:
    """A scored case. `require_handled()` is the assertion the shipped suite makes."""

    record: CaseRecord
    outcome: Outcome | None
    unscored_reason: str | None
    explanation: str
    mode: GateMode

    @property
    def handled(self) -> bool:
        return self.outcome in ("TP", "TN")

    def baseline_view(self) -> dict[str, Any]:
        """What a per-case baseline keeps: decisions and correctness, never the raw text (it varies)."""
        record = self.record
        return {
            "guard_decision": record.guard.status if record.guard else None,
            "answer_mode": record.judge.answer_mode if record.judge else None,
            "response_safety": record.judge.response_safety if record.judge else None,
            "outcome": self.outcome,
            "correct": self.handled if self.outcome is not None else None,
        }

    def check_baseline(self, snapshot: Any) -> None:
        """Compare this case with its syrupy snapshot (JSON). A case handled in the baseline and
        mishandled now fails as a regression; an improvement or another change fails as a snapshot
        change to accept with --snapshot-update."""
        __tracebackhide__ = True
        from syrupy.extensions.json import JSONSnapshotExtension

        stored = snapshot.use_extension(JSONSnapshotExtension)
        view = self.baseline_view()
        if stored == view:
            return
        recalled = stored.executions[stored.num_executions - 1].recalled_data
        if recalled is None:
            pytest.fail(f"no baseline for {self.record.case_id}: run with --snapshot-update to record one", pytrace=False)
        before = json.loads(recalled)
        change = f"{before.get('outcome')} → {view['outcome']}"
        if before.get("correct") is True and view["correct"] is False:
            pytest.fail(f"regression against the baseline ({change}): {self.explanation}", pytrace=False)
        kind = "improvement" if before.get("correct") is False and view["correct"] is True else "changed outcome"
        pytest.fail(f"{kind} against the baseline ({change}); accept it with --snapshot-update", pytrace=False)

    def require_handled(self) -> None:
        """Pass when handled; otherwise fail (strict mode, or pipeline error) or xfail (gate mode),
        saying which stage mishandled the case. Unlabelled cases are skipped: they are not scored."""
        # Hidden from tracebacks, and no traceback for the xfail either: the message says it all, and
        # pytest parsing the sources of the frames for every xfailed case took 5-25 ms each
        # (bench/bench_warm_cache.py).
        __tracebackhide__ = True
        if self.unscored_reason == "error":
            pytest.fail(self.explanation, pytrace=False)
        if self.unscored_reason == "unlabelled":
            pytest.skip(self.explanation)
        if self.handled:
            return
        if self.mode == "gate":
            raise pytest.xfail.Exception(self.explanation, pytrace=False)
        pytest.fail(self.explanation, pytrace=False)


@pytest.fixture
def guardbench_outcome(_guardbench_slot: CaseSlot, guardbench_record: CaseRecord) -> GuardbenchOutcome:
    """The case scored against its label (TP/FP/TN/FN or why it is unscored)."""
    inputs = _guardbench_slot.config.stash[INPUTS_KEY]
    outcome, reason = classify(guardbench_record, inputs.policy)
    return GuardbenchOutcome(
        record=guardbench_record,
        outcome=outcome,
        unscored_reason=reason,
        explanation=explain(guardbench_record, outcome, reason),
        mode=inputs.settings.mode,
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if RECORD_KEY in item.stash and not item.stash.get(ATTACHED_KEY, False):
        setattr(report, RECORD_ATTR, item.stash[RECORD_KEY])
        item.stash[ATTACHED_KEY] = True
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not _is_worker(config) or INPUTS_KEY not in config.stash:
        return
    cases = config.stash[INPUTS_KEY].cases_by_id
    selected = [case.case_id for case in map(_case_of, session.items) if case is not None and case.case_id in cases]
    execution = config.stash[PROCESS_KEY].execution()
    config.workeroutput[WORKER_OUTPUT_KEY] = {"schema": 1, "selected": selected, "execution": execution}  # type: ignore[attr-defined]
