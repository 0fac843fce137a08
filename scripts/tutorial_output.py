"""Regenerate the tutorial's printed output from a real run of the tutorial's own steps.

The tutorial (docs/tutorial/index.md) marks each file it has the reader write with a comment
`<!-- tutorial-file: PATH -->` before the file's code block, and its output block with
`<!-- tutorial-output: start -->` and `<!-- tutorial-output: end -->`. This script writes those files
into a fresh temporary folder (outside this repository, so the installed package runs, as a reader's
would), runs the tutorial's command there with the stack it names (the offline guard and judge; the
MiniLM wheel must be installed, as its step 1 says), and puts the output between the markers, with
the folder, the run id and the duration made stable. It also runs the tutorial's other claims (the
original prompts alone pass, exit 0) and stops if they no longer hold.

    python scripts/tutorial_output.py            # rewrite the block in docs/tutorial/index.md
    python scripts/tutorial_output.py --check    # exit 1 if the block differs from a fresh run

tests/plugin/test_first_hour.py runs the same steps with a fast stack on every test run.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial" / "index.md"
FILE_MARK = re.compile(r"<!-- tutorial-file: (\S+) -->\n+```[^\n]*\n(.*?)```", re.S)
START, END = "<!-- tutorial-output: start -->", "<!-- tutorial-output: end -->"
COMMAND = ("-rx",)  # the tutorial's `.venv/bin/pytest -rx`
WIDTH = 80  # the terminal width the run is given (COLUMNS), as in the tutorial's block
# What a reader's run prints differently each time: its folder, its run id and its duration.
FOLDER = "/…/my-tutor"
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
DURATION = re.compile(r" in \d+(\.\d+)?s( \(\d+:\d\d:\d\d\))? ")


def tutorial_files(text: str) -> dict[str, str]:
    """The files the tutorial has the reader write, by path, from its marked code blocks."""
    files = {path: body for path, body in FILE_MARK.findall(text)}
    if not files:
        raise SystemExit(f"{TUTORIAL}: no <!-- tutorial-file: PATH --> markers")
    return files


def write_files(folder: Path, files: dict[str, str]) -> None:
    for path, body in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")


def pytest_command() -> list[str]:
    """The installed `pytest` script beside this interpreter (what the tutorial runs), else `python -m pytest`."""
    script = Path(sys.executable).parent / "pytest"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "pytest"]


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "GUARDBENCH_"))}
    # A progress line appears only when a run is slow (a busy machine): never in the tutorial's block.
    env.update(COLUMNS=str(WIDTH), HF_HUB_OFFLINE="1", PYTEST_ADDOPTS="--guardbench-progress=0")
    return subprocess.run(
        [*pytest_command(), *args], cwd=folder, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def printed_block(stdout: str, folder: Path) -> str:
    """The part of a run's output the tutorial shows (from the row of dots on), made stable."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("tests/")), None)
    if start is None:
        raise SystemExit(f"the run printed no row of results:\n{stdout}")
    text = "\n".join(lines[start:]).replace(str(folder.resolve()), FOLDER).replace(str(folder), FOLDER)
    text = DURATION.sub(" in <time> ", RUN_ID.sub("<run-id>", text))
    return "\n".join(_centred(line) for line in text.splitlines()) + "\n"


def _centred(line: str) -> str:
    """A `==== message ====` line filled to the width again, as pytest fills it (its message changed
    length when the duration was replaced)."""
    match = re.fullmatch(r"=+ (.*<time>.*) =+", line)
    if match is None:
        return line
    fill = "=" * ((WIDTH - len(match.group(1)) - 2) // 2)
    centred = f"{fill} {match.group(1)} {fill}"
    return centred + "=" if len(centred) + 1 <= WIDTH else centred


def regenerate(text: str) -> str:
    """The tutorial with its output block replaced by a fresh run's."""
    if START not in text or END not in text:
        raise SystemExit(f"{TUTORIAL}: no {START} ... {END} markers")
    with tempfile.TemporaryDirectory(prefix="guardbench-tutorial-") as tmp:
        folder = Path(tmp) / "my-tutor"
        folder.mkdir()
        write_files(folder, tutorial_files(text))
        run = run_pytest(folder, *COMMAND)
        if run.returncode not in (0, 1):
            raise SystemExit(f"the tutorial's run exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
        block = printed_block(run.stdout, folder)
        original = run_pytest(folder, "--guardbench-variants=original")
        if original.returncode != 0:
            raise SystemExit(f"the tutorial says the original prompts pass (exit 0); it exited {original.returncode}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n\n```text\n{block}```\n\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 if the tutorial's block differs from a fresh run.")
    parser.add_argument("--doc", type=Path, default=TUTORIAL, help="The tutorial page (default: %(default)s).")
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    new = regenerate(text)
    if args.check:
        if new != text:
            print(
                f"{args.doc}: the output block differs from a fresh run; run scripts/tutorial_output.py",
                file=sys.stderr,
            )
            diff = difflib.unified_diff(text.splitlines(True), new.splitlines(True), "the tutorial", "a fresh run", n=0)
            sys.stderr.writelines(diff)
            return 1
        print(f"{args.doc}: the output block matches a fresh run")
        return 0
    if new != text:
        args.doc.write_text(new, encoding="utf-8")
        print(f"rewrote the output block of {args.doc}")
    else:
        print(f"{args.doc}: the output block is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
