"""What the plugin prints: the `--guardbench-list` listing, the report header line and the run's
result at the end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from pytest_guardbench._util.terminal import shown
from pytest_guardbench._util.package_data import DATASETS, PACKS, shipped_names
from pytest_guardbench.cases.sources import NO_SYSTEM_PROMPT, shipped_system_prompts
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.sources import labelled, source_lines, sourced_message
from pytest_guardbench.results.terminal import terminal_lines
from pytest_guardbench.run.units import Units
from pytest_guardbench.document.judging import StoredCheck
from pytest_guardbench.settings.model_specs import model_aliases


def listing(units: Units, root: Path) -> list[str]:
    """`--guardbench-list`: every registered unit and alias a run can name."""
    lines = ["variants (name, family):"] + [
        f"  {m.name} ({m.family}): {m.description}" for m in units.mutators.table().values()
    ]
    lines += ["guardrails:", "  none: no guardrail; every prompt goes to the tutor"]
    lines += [f"  {name}: {description}" for name, description in units.guards.describe().items()]
    lines += [f"  aliases: {', '.join(sorted(model_aliases(root)))}"]
    lines += ["tutors:"] + [f"  {name}: {desc}" for name, desc in units.tutors.describe().items()]
    lines += ["judges:"] + [f"  {name}: {desc}" for name, desc in units.judges.describe().items()]
    lines += ["system prompts:"] + [f"  {name}" for name in shipped_system_prompts()]
    lines += [f"  {NO_SYSTEM_PROMPT}: no system message; the tutor gets only the child's turn"]
    lines += ["shipped packs and datasets (by name: --guardbench-data, --guardbench-judge-check):"]
    lines += [f"  {folder}: {', '.join(shipped_names(folder))}" for folder in (PACKS, DATASETS)]
    return [shown(line) for line in lines]  # a plugin's unit describes itself


def header_line(inputs: RunInputs) -> str:
    """The line pytest prints in its header: what this run is made of."""
    s = inputs.settings
    return shown(
        f"guardbench: guardrail={s.guardrail} tutor={s.tutor} judge={s.judge} malformed={s.malformed_policy} "
        f"sources={len(inputs.data.sources)} cases={len(inputs.cases)} variants={','.join(s.selected_variants)} "
        f"reports={s.report_dir}"
    )


def _shown_folder(folder: Path) -> str:
    """The run folder as a command to copy names it: relative to where pytest ran, when it is below it."""
    try:
        return str(folder.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(folder)


def result_lines(
    summary: RunSummary,
    stored: StoredCheck | None,
    scorecard: Path | None,
    worker_crashes: Sequence[str],
    internal_errors: Sequence[str],
) -> list[tuple[str, dict[str, bool]]]:
    """The run's result at the end of the terminal report, each line with its markup: where the numbers
    come from (judge-only, or corrected by labels) and the confidence first, then the scorecards, where
    the files are, and the gate's verdict in colour, each check naming its source."""
    run_dir = _shown_folder(scorecard.parent) if scorecard is not None else None
    body = terminal_lines(summary, run_dir)
    head = len(source_lines(summary, run_dir))
    # Judge-only, or labels that decide too little, is what a reader must not miss.
    warn = {"yellow": True, "bold": True}
    lines: list[tuple[str, dict[str, bool]]] = [
        (line, warn if not labelled(summary) or index else {}) for index, line in enumerate(body[:head])
    ]
    confidence = summary.confidence
    if confidence and confidence.level == "low":
        lines.append((f"guardbench: LOW CONFIDENCE scorecard: {confidence.reason}", warn))
    lines += [(line, {}) for line in body[head:]]
    if stored is not None and stored.reused:
        lines.append((f"judge check reused from {stored.path} (computed {stored.computed_at})", {}))
    lines.append((f"scorecard: {scorecard or '?'}", {}))
    lines += [(f"guardbench: {crash}", {"red": True}) for crash in worker_crashes]
    lines += [(f"guardbench: internal error: {error}", {"red": True}) for error in internal_errors]
    gate = summary.gate
    if gate.passed:
        said = "; ".join(sourced_message(summary, c) for c in gate.checks)
        lines.append(("guardbench gate passed: " + said, {"green": True}))
        return lines
    lines += [
        (f"guardbench gate failed: {sourced_message(summary, c)}", {"red": True, "bold": True}) for c in gate.failures
    ]
    lines += [
        (f"guardbench gate inconclusive: {sourced_message(summary, c)}", {"yellow": True, "bold": True})
        for c in gate.undecided
    ]
    return lines


class ResultTerminal(Protocol):
    """What `write_result` writes to: pytest's terminal reporter has these two."""

    def write_line(self, line: str, **markup: bool) -> None: ...

    def write_sep(self, sep: str, title: str) -> None: ...


def write_result(
    terminal: ResultTerminal,
    summary: RunSummary | None,
    write_problem: str | None,
    stored: StoredCheck | None,
    run_dir: Path | None,
    worker_crashes: Sequence[str],
    internal_errors: Sequence[str],
) -> None:
    """The run's result at the end of pytest's terminal report; without a summary (the folder could
    not be written, the report failed), only why."""
    if write_problem is not None:
        terminal.write_line(shown(f"guardbench: {write_problem}"), red=True, bold=True)
    if summary is None:
        for error in internal_errors:
            terminal.write_line(shown(f"guardbench: {error}"), red=True)
        return
    terminal.write_sep("=", "guardbench")
    scorecard = run_dir / "summary.json" if run_dir else None
    for line, markup in result_lines(summary, stored, scorecard, worker_crashes, internal_errors):
        terminal.write_line(shown(line), **markup)
