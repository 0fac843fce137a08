"""Checking every model of the stack once before any case runs: for an API model a wrong key, a
wrong model name, a base URL where nothing listens; for a local one a model that is neither a
folder nor in the cache nor downloadable, a gated repository without a token, a chat template
that rejects the guard's configuration. Each would otherwise fail every case separately, minutes
later, after the run has written a report folder."""

from __future__ import annotations

import concurrent.futures
import json
import threading
from collections.abc import Callable, Mapping

from pytest_guardbench.guards import CHILD_SAFETY_GUIDELINES, granite_template_kwargs, granite_version
from pytest_guardbench.providers import (
    ClassifyRequest,
    GenerationParams,
    ModelAPI,
    ProviderError,
    ProviderOptions,
    chat_provider_for,
)
from pytest_guardbench.providers.embedded import default_stack_problems
from pytest_guardbench.providers.transport import load_client_library
from pytest_guardbench.providers.hub import load_tokenizer, offline_requested, template_problem, where_problem
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.roles import option_of
from pytest_guardbench.settings.model_specs import ModelSpec
from pytest_guardbench.settings.options import ConfigError

# The one message a preflight sends; servers answer it with a token and tests can tell it apart.
PREFLIGHT_PROMPT = "guardbench preflight: reply with OK."

HINTS = (
    ("HTTP 401", "the server rejected the key; check the variable {key}"),
    ("HTTP 403", "the key is not allowed to use this model; check the variable {key} and the model's access"),
    ("HTTP 404", "the server does not know model {model!r} or the path; check the model name and the base URL {url}"),
    ("connection refused", "nothing is listening at {url}; start the server or fix the base URL"),
    ("cannot connect", "cannot reach {url}; check the base URL and the network"),
    ("timed out", "no answer in time; check the server or raise --guardbench-timeout"),
)


def preflight(inputs: RunInputs) -> None:
    """Every local model can be had and every API model answers once, before any case runs or any
    report folder is written; a replay run needs no server (its local models still load)."""
    settings = inputs.settings
    specs = {role: settings.role_spec(role, spec) for role, spec in inputs.model_specs.items()}
    problems = default_stack_problems(settings.guardrail, settings.tutor, settings.judge)
    problems += local_preflight(specs, offline_requested(settings.offline))
    if settings.cache != "replay":
        options = ProviderOptions(model_cache=settings.model_cache)
        problems += api_preflight(specs, lambda spec: chat_provider_for(spec, options))
    if problems:
        raise ConfigError("\nguardbench: ".join(problems))


class PreflightInBackground:
    """`preflight(inputs)` in a thread of its own, for an xdist controller: its workers start (each
    importing pytest, the plugin and the API client on a core of its own) while it asks the models,
    and `wait()` is called before any test is sent to a worker. One process alone gains nothing from
    it: its collection would compete for the same GIL (bench/bench_fixed_costs.py)."""

    def __init__(self, inputs: RunInputs) -> None:
        self._inputs = inputs
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="guardbench-preflight", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            preflight(self._inputs)
        except BaseException as exc:  # noqa: BLE001 - raised again by wait(), in the thread that decides
            self._failure = exc

    def wait(self) -> None:
        """Return once every model answered; raise what the preflight raised otherwise."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure


def hint_for(message: str, spec: ModelSpec) -> str:
    for needle, hint in HINTS:
        if needle in message:
            return hint.format(
                key=spec.api_key_env or "(none set)",
                model=spec.model,
                url=spec.resolved_base_url() or "https://api.openai.com/v1",
            )
    return "see the server's log"


def api_preflight(specs: Mapping[str, ModelSpec], build: Callable[[ModelSpec], ModelAPI]) -> list[str]:
    """One line per role whose API model does not answer a one-token request (after its retries).
    Local models, Batch API models and roles sharing a model already checked are not called."""
    roles = {role: spec for role, spec in specs.items() if spec.provider == "openai-compat" and not spec.batch_api}
    distinct = {spec.model_dump_json(exclude={"alias"}): spec for spec in roles.values()}
    # The models are asked at once: one after another, a run waited for each answer in turn before
    # its first case (bench/bench_fixed_costs.py).
    if distinct:
        load_client_library()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(distinct))) as pool:
        answers = dict(zip(distinct, pool.map(lambda spec: _ask(spec, build), distinct.values())))
    problems = []
    for role, spec in roles.items():
        answer = answers[spec.model_dump_json(exclude={"alias"})]
        if answer is not None:
            problems.append(f"{option_of(role)}={spec.alias}: {answer}; {hint_for(answer, spec)}")
    return problems


def _ask(spec: ModelSpec, build: Callable[[ModelSpec], ModelAPI]) -> str | None:
    provider = build(spec.model_copy(update={"processes": 1, "breaker_after": 0}))
    try:
        kwargs = template_renders(spec)[0]
        if spec.guard.adapter == "openai-moderation":
            provider.moderate([PREFLIGHT_PROMPT])
        elif kwargs:  # the guard's own template configuration, so a server whose template rejects it says so now
            provider.classify(
                ClassifyRequest(
                    [[{"role": "user", "content": PREFLIGHT_PROMPT}]], kwargs, ("Yes", "No"), max_new_tokens=1
                )
            )
        else:
            provider.generate(
                [[{"role": "user", "content": PREFLIGHT_PROMPT}]], GenerationParams(max_new_tokens=1), [None]
            )
    except ProviderError as exc:
        return f"preflight call failed: {exc}"
    finally:
        provider.close()
    return None


def template_renders(spec: ModelSpec) -> list[dict[str, object]]:
    """The template kwargs a local model will be called with: Granite Guardian's per risk and
    version, none for the others (whose template must still exist)."""
    if spec.guard.adapter == "shieldgemma":
        guidelines = {**CHILD_SAFETY_GUIDELINES, **spec.guard.risk_definitions}
        return [{"guideline": guidelines.get(policy, "")} for policy in spec.guard.risks or CHILD_SAFETY_GUIDELINES]
    if spec.guard.adapter != "granite-guardian":
        return [{}]
    version = granite_version(spec.model, spec.guard.granite_version)
    return [
        granite_template_kwargs(version, risk, spec.guard.risk_definitions.get(risk), spec.guard.think)
        for risk in (*(spec.guard.risks or ("harm",)), *spec.guard.observe_risks)
    ]


def local_preflight(specs: Mapping[str, ModelSpec], offline: bool) -> list[str]:
    """One line per role whose local (transformers) model cannot be had, or whose chat template
    rejects what the guard will send. Reads the config and the tokenizer only (downloading them on
    first use unless offline); the weights load when the stack is built."""
    problems = []
    checked: dict[str, str | None] = {}
    for role, spec in specs.items():
        if spec.provider != "hf-local":
            continue
        renders = template_renders(spec)
        key = json.dumps([spec.model, spec.trust_remote_code, renders], sort_keys=True, default=str)
        if key not in checked:
            checked[key] = _local_problem(spec, renders, offline)
        if checked[key] is not None:
            problems.append(f"{option_of(role)}={spec.alias}: {checked[key]}")
    return problems


def _local_problem(spec: ModelSpec, renders: list[dict[str, object]], offline: bool) -> str | None:
    problem = where_problem(spec.model, offline)
    if problem is not None:
        return problem
    try:
        tokenizer = load_tokenizer(spec.model, offline, spec.trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - transformers raises OSError, ValueError and more; each is the finding
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{spec.model}: its tokenizer could not load: {first_line}"
    problem = template_problem(tokenizer, renders)
    if problem is not None:
        return f"{spec.model}: {problem}; check the alias's risks, granite_version and think settings"
    return None
