"""The stack of one process: guard, tutor and judge built from the run's settings, each behind the
response cache, with the batching and concurrency limits of its stage. Used by the plugin; knows
nothing of pytest."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_guardbench.providers import ChatProvider, GenerationParams, ProviderOptions, chat_provider_for
from pytest_guardbench.providers.base import DEFAULT_NEW_TOKENS
from pytest_guardbench.providers.cache import ResponseCache
from pytest_guardbench.providers.hub import offline_requested
from pytest_guardbench.run.attacker import Attacker, ModelAttacker, ScriptedAttacker
from pytest_guardbench.run.guard_factory import build_guard
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.judges.panel import panel_names
from pytest_guardbench.run.judge_quality import judge_id, judge_identity
from pytest_guardbench.run.judge_factory import build_judge
from pytest_guardbench.run.stages import BATCH_API, INSTANT, Stack, StageLimits, api_limits
from pytest_guardbench.records import PipelineStage
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.settings.model_specs import ModelSpec


def stage_limits(spec: ModelSpec | None, unit: StageLimits, batch_size: int) -> StageLimits:
    """How a stage's cases go to its model: a built-in unit as given (`unit`), a local model one
    batch at a time, an API model concurrently (or through the Batch API)."""
    if spec is None:
        return unit
    if spec.provider != "openai-compat":
        return StageLimits(batch=batch_size, in_flight=1)
    return BATCH_API if spec.batch_api else api_limits(spec.concurrency or 8)


def calls_only_apis(inputs: RunInputs) -> bool:
    """Whether the run's tutor is an API model and no role loads a local one: its cases wait on a
    server, not on this machine, so every process can have all of its share in flight at once."""
    specs = inputs.model_specs
    return "tutor" in specs and all(spec.provider == "openai-compat" for spec in specs.values())


# The run's call processes start by themselves (no --guardbench-api-processes given) when they pay:
# every role an API model, the run in one process, and enough calls. On two cores, 50 ms answers and 32
# calls in flight, 2 call processes broke even at about 300 cases (900 calls) and gained at 1,000;
# under -n 2 each worker's own were slower than none (bench/bench_fixed_costs.py, bench/bench_issue44.py).
AUTO_API_PROCESSES = 2
AUTO_MIN_CALLS = 1_500


def run_api_processes(inputs: RunInputs, distributed: bool) -> int:
    """How many call processes the API models without `processes` of their own share: the option's
    value when given; else `AUTO_API_PROCESSES` for a run in one process (`distributed`: an xdist
    worker, or a controller that starts workers) whose every role is an API model called through the
    client (no Batch API) and that will make at least `AUTO_MIN_CALLS` calls; else 1 (in this process)."""
    given = inputs.settings.api_processes
    if given is not None:
        return given
    if distributed or inputs.settings.cache == "replay" or not calls_only_apis(inputs):
        return 1
    roles = [inputs.settings.role_spec(role, spec) for role, spec in inputs.model_specs.items()]
    if any(spec.batch_api for spec in roles):
        return 1
    turns = sum(len(case.live_positions()) or 1 for case in inputs.cases)
    return AUTO_API_PROCESSES if turns * len(roles) >= AUTO_MIN_CALLS else 1


def run_role_spec(inputs: RunInputs, role: str, processes: int) -> ModelSpec:
    """A role's spec as this run calls it: the settings' values filled in, and `processes`, the run's
    call processes (`run_api_processes`), where its alias names none of its own."""
    given = inputs.model_specs[role]
    spec = inputs.settings.role_spec(role, given)
    return spec if given.processes is not None else spec.model_copy(update={"processes": processes})


def shares_call_processes(inputs: RunInputs, role: str, processes: int) -> bool:
    """Whether a role's model makes its calls in the run's call processes: an API model (not through
    the Batch API) with no `processes` of its own, in a run with more than one call process."""
    given = inputs.model_specs[role]
    spec = run_role_spec(inputs, role, processes)
    return spec.provider == "openai-compat" and not spec.batch_api and given.processes is None and processes > 1


def will_use_call_processes(inputs: RunInputs, distributed: bool) -> int:
    """How many call processes this run will make calls in (0: none; a replay makes none)."""
    processes = run_api_processes(inputs, distributed)
    if inputs.settings.cache == "replay" or not any(
        shares_call_processes(inputs, role, processes) for role in inputs.model_specs
    ):
        return 0
    return processes


def shared_concurrency(spec: ModelSpec, processes: int) -> ModelSpec:
    """An API model's calls in flight for one of `processes` xdist workers: the run's concurrency
    is the run's, whatever number of processes share it (a server's rate limit does not grow with -n)."""
    if processes <= 1 or spec.provider != "openai-compat" or spec.concurrency is None:
        return spec
    return spec.model_copy(update={"concurrency": max(1, spec.concurrency // processes)})


def build_stack(inputs: RunInputs, state: ProcessState, root: Path, worker: bool, processes: int = 1) -> Stack:
    """This process's stack; `processes` is how many xdist workers share the run (1 without xdist)."""
    s = inputs.settings
    if s.cache != "off" and state.cache is None:
        state.cache = ResponseCache(s.cache_path)  # type: ignore[arg-type]
        state.cache_mode = s.cache
    run_processes = run_api_processes(inputs, worker)
    specs = {
        role: shared_concurrency(run_role_spec(inputs, role, run_processes), processes) for role in inputs.model_specs
    }
    models = RoleModels(inputs, state, specs, provider_options(inputs, root, worker), run_processes)
    guard = build_guard(
        s.guardrail, specs.get("guardrail"), models.options, lambda: models.model("guardrail"), state.units.guards
    )
    judge = build_judge(
        s.judge,
        specs.get("judge"),
        lambda: models.model("judge"),
        models.options,
        state.units.judges,
        samples=s.judge_samples,
        member_model=lambda name: (specs.get(f"judge:{name}"), lambda: models.model(f"judge:{name}")),
    )
    return Stack(
        guard=guard,
        tutor=models.tutor,
        judge=judge,
        # The spec as given, as the run's judge check names it (not this process's concurrency and timeouts).
        judge_id=judge_id(judge_identity(judge, inputs.model_specs.get("judge"))),
        system_prompt=inputs.system_prompt,
        refusal_text=inputs.refusal_text,
        malformed_policy=s.malformed_policy,
        params=GenerationParams(max_new_tokens=tutor_token_limit(inputs)),
        sample=s.samples > 1,
        preflight_judge="judge" in specs,
        cached_only=state.cache.cached_only if state.cache is not None else None,
        limits=limits_by_stage(inputs, state, specs),
        attacker=models.attacker if s.attacker is not None else None,
    )


def provider_options(inputs: RunInputs, root: Path, worker: bool) -> ProviderOptions:
    """What every model of this process is built with."""
    s = inputs.settings
    return ProviderOptions(
        model_cache=s.model_cache,
        batch_size=s.batch_size,
        # Several workers on few cores each want one torch thread: 2 workers x 2 threads on 2 cores ran 20x slower.
        torch_threads=1 if worker else None,
        batch_state_dir=(s.cache_path or root / ".guardbench" / "cache.sqlite").parent / "batches",
        offline=offline_requested(s.offline),
    )


@dataclass(frozen=True)
class RoleModels:
    """This process's models by role, each built at its first use and behind the response cache:
    one per distinct spec (roles with the same spec share it, in `state.models`). `specs` are the
    roles' specs as this process runs them."""

    inputs: RunInputs
    state: ProcessState
    specs: dict[str, ModelSpec]
    options: ProviderOptions
    run_processes: int = 1  # the run's call processes (`run_api_processes`)

    def model(self, role: str) -> Any:
        """The model of a role that has a spec (`guardrail`, `tutor`, `judge`, `judge:NAME`, `attacker`)."""
        state, spec = self.state, self.specs[role]
        key = spec.model_dump_json(exclude={"alias"})
        if key not in state.models:
            options = self.options
            # The run-wide --guardbench-api-processes is one set of call processes for every API model;
            # an alias's own `processes` keeps call processes of its own.
            if shares_call_processes(self.inputs, role, self.run_processes):
                options = replace(options, call_processes=state.call_processes_of_run(self.run_processes))
            state.models[key] = chat_provider_for(spec, options)
        state.role_models[role] = state.models[key]
        return state.cached(state.models[key], role)

    def tutor(self) -> ChatProvider:
        """The tutor: its spec's model, else a registered tutor unit; built once per process."""
        state = self.state
        if state.tutor is None:
            state.tutor = (
                self.model("tutor")
                if "tutor" in self.specs
                else state.cached(state.units.tutors.build(self.inputs.settings.tutor, self.options), "tutor")
            )
        return state.tutor

    def attacker(self) -> Attacker:
        """The attacker, built the way the tutor is: a model spec, else a registered tutor unit."""
        s = self.inputs.settings
        if "attacker" in self.specs:
            return ModelAttacker(self.model("attacker"))
        if s.attacker is None or s.attacker == ScriptedAttacker.name:
            return ScriptedAttacker()
        if s.attacker == s.tutor:  # one copy of a local model in memory; the seeds keep the calls apart
            return ModelAttacker(self.tutor())
        return ModelAttacker(self.state.cached(self.state.units.tutors.build(s.attacker, self.options), "attacker"))


def limits_by_stage(
    inputs: RunInputs, state: ProcessState, specs: dict[str, ModelSpec]
) -> dict[PipelineStage, StageLimits]:
    """How each stage is fed: by its role's model when it has a spec, else by whether its unit runs a model."""
    s = inputs.settings
    units = state.units
    local = StageLimits(batch=s.batch_size, in_flight=1)
    judge_runs_a_model = any(units.judges.runs_a_model(n) or f"judge:{n}" in specs for n in panel_names(s.judge))

    def limits(role: str, fallback: StageLimits) -> StageLimits:
        return stage_limits(specs.get(role), fallback, s.batch_size)

    return {
        "guard": limits("guardrail", local if units.guards.runs_a_model(s.guardrail) else INSTANT),
        "tutor": limits("tutor", local),
        "judge": limits("judge", local if judge_runs_a_model else INSTANT),
        "attacker": limits("attacker", INSTANT if s.attacker == ScriptedAttacker.name else local),
    }


def tutor_token_limit(inputs: RunInputs) -> int | None:
    """The tutor's token limit: `--guardbench-max-new-tokens` when set; else None for an API tutor
    (its server's own limit: a real tutor's real answers are not cut) and 64 for a local one."""
    if inputs.settings.max_new_tokens is not None:
        return inputs.settings.max_new_tokens
    spec = inputs.model_specs.get("tutor")
    return None if spec is not None and spec.provider == "openai-compat" else DEFAULT_NEW_TOKENS
