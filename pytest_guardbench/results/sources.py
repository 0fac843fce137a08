"""Where each number a run shows comes from, said the same way by every output (terminal, summary.md,
report.html, JUnit, the GitHub step summary, `compare`): `judge-only` (counted from the judge's
verdicts alone) or `corrected` (by a person's labels of this run's own replies).

A run with no labels of its own replies opens with `UNCHECKED` and the command that audits it
(`source_lines`); a run whose configured labels matched none or too few of its replies says how many
matched, why the others did not, and about how many more labels the audit plan needs
(`shortfall_line`, from summary.json's `corrected.labels` block and `audit.plan`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pytest_guardbench.audit.plan import plan_audit_from_counts
from pytest_guardbench.document.correction import Correction, CorrectedMetric
from pytest_guardbench.document.gate import GateCheck
from pytest_guardbench.document.summary import RunSummary

Source = Literal["judge-only", "corrected"]
JUDGE_ONLY: Source = "judge-only"
CORRECTED: Source = "corrected"

UNCHECKED = "judge-only: this judge has not been checked on this tutor's replies"

# The half-width the suggested audit is sized for: about ±0.1 on recall and FPR is what a first audit
# of some 50-150 labels gives; `guardbench audit RUN --plan --half-width H` sizes a tighter one.
PLAN_HALF_WIDTH = 0.1
# The sample to suggest when the run has no scored case to plan from (`guardbench audit`'s own default).
DEFAULT_SAMPLE = 50

# The checks decided on the corrected intervals when a run has labels (`scoring.gates.corrected_checks`).
CORRECTED_CHECKS = ("min_recall", "max_fpr")
# Checks that count what ran, not what the judge said of it: they have no source to name.
UNJUDGED_CHECKS = ("min_coverage", "max_errors", "max_empty_rate", "complete")


def labelled(summary: RunSummary) -> bool:
    """Whether labels of this run's own replies corrected its system recall or FPR (labels too few to
    estimate either leave every number judge-only)."""
    return bool(_corrected_names(summary))


def _corrected_names(summary: RunSummary) -> list[str]:
    correction = summary.corrected
    if correction is None or not correction.labels.used:
        return []
    system = correction.scorecards.system
    named = (("recall", system.recall), ("FPR", system.false_positive_rate))
    return [name for name, metric in named if metric.estimate is not None]


def check_source(summary: RunSummary, check: GateCheck) -> Source | None:
    """Where a gate check's number comes from; None for a check that counts what ran (coverage, errors)."""
    if check.name in UNJUDGED_CHECKS:
        return None
    return CORRECTED if summary.corrected is not None and check.name in CORRECTED_CHECKS else JUDGE_ONLY


def sourced_message(summary: RunSummary, check: GateCheck) -> str:
    """A check's message naming its source: a corrected check's message says "audit-corrected" already,
    a judge-only one gets "(judge-only)" after it."""
    return f"{check.message} (judge-only)" if check_source(summary, check) == JUDGE_ONLY else check.message


def run_folder(summary: RunSummary, run_dir: str | None = None) -> str:
    """The run's folder as a command names it: the one given, else `reports/<run-id>`."""
    return run_dir or f"reports/{summary.run.run_id or '<run-id>'}"


def planned_labels(summary: RunSummary, half_width: float = PLAN_HALF_WIDTH) -> int | None:
    """The labels the random design needs for `half_width` on system recall and FPR (`audit.plan`),
    planned from the system scorecard's cells with the plan's prior disagreement (the judge's own
    probabilities are in the records, which `guardbench audit --plan` reads); None when nothing was scored."""
    card = summary.scorecards.system
    counts = {(True, True): card.tp, (True, False): card.fn, (False, True): card.tn, (False, False): card.fp}
    if not sum(counts.values()):
        return None
    return plan_audit_from_counts(counts, half_width).random.total


def audit_command(summary: RunSummary, run_dir: str | None = None, sample: int | None = None) -> str:
    """`guardbench audit <run> --design random --sample N`, N from the plan (or `sample`)."""
    size = sample if sample is not None else planned_labels(summary) or DEFAULT_SAMPLE
    return f"guardbench audit {run_folder(summary, run_dir)} --design random --sample {size}"


def _unestimated(correction: Correction) -> list[tuple[str, CorrectedMetric]]:
    system = correction.scorecards.system
    named = (("recall", system.recall), ("FPR", system.false_positive_rate))
    return [(name, metric) for name, metric in named if metric.n_total and metric.estimate is None]


def _dropped(correction: Correction) -> str:
    use = correction.labels
    reasons = (
        (use.reply_changed, "reply_changed: the reply changed since it was labelled"),
        (use.not_in_run, "not_in_run: labels of another run's replies"),
        (use.undecided, "undecided: the labels cannot decide the case under the policy"),
    )
    said = [f"{count} {why}" for count, why in reasons if count]
    return f" ({'; '.join(said)})" if said else ""


Format = Callable[[str], str]


def _same(text: str) -> str:
    return text


def shortfall_line(
    summary: RunSummary, run_dir: str | None = None, text: Format = _same, code: Format = _same
) -> str | None:
    """One line when the configured labels match none or too few of this run's replies, or leave a
    corrected bar undecided: how many matched, why the others did not, and how many more the plan needs.
    None when the labels decide every corrected bar (or the run has no labels configured). `text` and
    `code` format its words and its commands (markdown's backticks, HTML's escaping)."""
    correction = summary.corrected
    if correction is None:
        return None
    undecided = [c for c in summary.gate.undecided if c.name in CORRECTED_CHECKS]
    missing = _unestimated(correction)
    use = correction.labels
    if use.used and not missing and not undecided:
        return None
    planned = planned_labels(summary)
    said = f"labels: {use.used} of {use.rows} rows of {use.labels_file} match this run's replies{_dropped(correction)}"
    if missing:
        said += f"; too few to estimate {' and '.join(name for name, _ in missing)}"
    if any(c.interval is not None for c in undecided):
        said += "; a corrected interval straddles its bar"
    if planned is None:
        return text(said + "; this run has no scored case to label")
    more = max(planned - use.used, 0)
    if more == 0:  # the plan's size is reached and a bar is still undecided: a narrower interval is needed
        said += f"; the plan's {planned} labels (±{PLAN_HALF_WIDTH:g}) are reached: size a narrower audit with "
        return text(said) + code(f"guardbench audit {run_folder(summary, run_dir)} --plan --half-width 0.05")
    said += f"; the plan needs about {planned} labels of this run's replies for ±{PLAN_HALF_WIDTH:g}, {more} more: "
    return text(said) + code(audit_command(summary, run_dir, sample=planned))


def source_lines(
    summary: RunSummary, run_dir: str | None = None, text: Format = _same, code: Format = _same
) -> list[str]:
    """What a run's first screen says of where its numbers come from: judge-only with the command that
    audits it, or corrected by how many labels; and the labels' shortfall, when they decide too little.
    `text` and `code` format the words and the commands (see `shortfall_line`)."""
    shortfall = shortfall_line(summary, run_dir, text, code)
    if not labelled(summary):
        lines = [text(UNCHECKED)]
        if shortfall is None:
            folder = run_folder(summary, run_dir)
            lines.append(
                text("audit it: ")
                + code(audit_command(summary, run_dir))
                + text(f" (about ±{PLAN_HALF_WIDTH:g} on recall and FPR; --plan sizes it), then ")
                + code(f"guardbench correct {folder} --labels {folder}/audit.jsonl")
            )
        return lines + ([shortfall] if shortfall else [])
    assert summary.corrected is not None
    use = summary.corrected.labels
    said = (
        f"corrected: {' and '.join(_corrected_names(summary))} corrected by {use.used} labels of this run's own "
        f"replies ({use.labels_file}, {use.design} design); every other number is judge-only"
    )
    return [text(said)] + ([shortfall] if shortfall else [])
