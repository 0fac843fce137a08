"""Checking every API model of the stack once before any case runs: a wrong key, a wrong model
name, a base URL where nothing listens. Each would otherwise fail every case separately, minutes
later, after the run has written a report folder."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pytest_guardbench.model_specs import ModelSpec
from pytest_guardbench.providers import GenerationParams, ModelAPI, ProviderError

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
    problems = []
    checked: dict[str, str | None] = {}
    for role, spec in specs.items():
        if spec.provider != "openai-compat" or spec.batch_api:
            continue
        key = spec.model_dump_json(exclude={"alias"})
        if key not in checked:
            checked[key] = _ask(spec, build)
        if checked[key] is not None:
            problems.append(f"--{role}={spec.alias}: {checked[key]}; {hint_for(checked[key] or '', spec)}")
    return problems


def _ask(spec: ModelSpec, build: Callable[[ModelSpec], ModelAPI]) -> str | None:
    provider = build(spec.model_copy(update={"processes": 1, "breaker_after": 0}))
    try:
        provider.generate([[{"role": "user", "content": PREFLIGHT_PROMPT}]], GenerationParams(max_new_tokens=1), [None])
    except ProviderError as exc:
        return f"preflight call failed: {exc}"
    finally:
        provider.close()
    return None
