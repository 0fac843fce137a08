"""What `--guardrail`, `--tutor` and `--judge` name: a built-in unit, or a model spec (an alias or an
API spec) checked against what its guard adapter can do before anything is built."""

from __future__ import annotations

from pytest_guardbench._util.redact import treat_as_key
from pytest_guardbench.guards import CHILD_SAFETY_GUIDELINES, granite_version
from pytest_guardbench.judges.panel import panel_names, panel_size_problem
from pytest_guardbench.settings.model_specs import ModelSpec, parse_model_spec
from pytest_guardbench.settings.options import ConfigError


# The roles with a short option of their own; any other (the attacker) is a `--guardbench-*` option.
SHORT_OPTION_ROLES = ("guardrail", "tutor", "judge")


def option_of(role: str) -> str:
    """The option that names a role's model: `--tutor`, `--guardbench-attacker`; a panel member's is `--judge`."""
    base = role.split(":", 1)[0]
    return f"--{base}" if base in SHORT_OPTION_ROLES else f"--guardbench-{base}"


def resolve_role(role: str, value: str, builtins: list[str], aliases: dict[str, ModelSpec]) -> ModelSpec | None:
    """None for a built-in unit; a ModelSpec for an alias or API spec; ConfigError otherwise."""
    if value in builtins:
        return None
    spec = parse_model_spec(value, aliases)
    role, option = role.removeprefix("guardbench-"), option_of(role.removeprefix("guardbench-"))
    if spec is None:
        raise ConfigError(
            f"{option}={value}: unknown {role}; known: {', '.join(builtins)}; aliases: {', '.join(sorted(aliases))}; "
            "or openai:<model>, vllm:<model>@<url>"
        )
    if spec.guard.decoding == "logits" and (spec.provider != "hf-local" or spec.guard.adapter != "granite-guardian"):
        raise ConfigError(
            f'--{role}={value}: decoding = "logits" needs a local (hf-local) Granite Guardian model; '
            "over an API use the default decoding"
        )
    if spec.guard.adapter == "granite-guardian" and (spec.guard.think or spec.guard.granite_version):
        version = granite_version(spec.model, spec.guard.granite_version)
        if spec.guard.think and version != "3.3":
            raise ConfigError(f"{option}={value}: think = true needs Granite Guardian 3.3; {spec.model} is {version}")
        if spec.guard.think and spec.guard.decoding == "logits":
            raise ConfigError(f'--{role}={value}: think = true generates a trace; it cannot use decoding = "logits"')
    if spec.guard.adapter == "shieldgemma":
        unknown = [
            p for p in spec.guard.risks or () if p not in {**CHILD_SAFETY_GUIDELINES, **spec.guard.risk_definitions}
        ]
        if unknown:
            raise ConfigError(
                f"{option}={value}: ShieldGemma policy {unknown[0]!r} has no guideline; "
                "give it one in risk_definitions "
                f"or use one of {', '.join(CHILD_SAFETY_GUIDELINES)}"
            )
    treat_as_key([spec.api_key_env])  # a key is a key whatever its variable is called
    missing = spec.missing_key()
    if missing:
        raise ConfigError(
            f"{option}={value}: environment variable {missing} is not set (it holds the API key for {spec.model})"
        )
    return spec


def judge_specs(value: str, builtins: list[str], aliases: dict[str, ModelSpec]) -> dict[str, ModelSpec | None]:
    """The model specs `--judge` needs: {"judge": spec} for one judge; for a panel `a,b,c`, one
    `judge:<member>` entry per member, so each member model is preflighted, cached and recorded
    in meta.json like a role of its own."""
    names = panel_names(value)
    if len(names) <= 1:
        return {"judge": resolve_role("judge", value, builtins, aliases)}
    problem = panel_size_problem(names)
    if problem:
        raise ConfigError(f"--judge={value}: {problem}")
    return {f"judge:{name}": resolve_role("judge", name, builtins, aliases) for name in names}
