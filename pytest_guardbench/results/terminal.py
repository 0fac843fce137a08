"""The lines a run prints at the end of the pytest output (and `guardbench merge` prints)."""

from __future__ import annotations


from pytest_guardbench.results.corrected import correction_lines
from pytest_guardbench.results.sources import source_lines
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.document.scorecards import ConversationMetrics
from pytest_guardbench.document.scorecards import Scorecard
from pytest_guardbench.scoring.scorecard import fmt_rate


def terminal_lines(summary: RunSummary, run_dir: str | None = None) -> list[str]:
    """What a run prints at the end of the pytest output: where its numbers come from first (judge-only
    with the command that audits it, or corrected by labels, with the corrected recall and FPR right
    after), then the compact judge-only scorecard table, coverage and warnings."""
    width = max([26, *(len(v) + 11 for v in summary.per_variant)])
    header = f"{'scope':<{width}}{'n':>6}{'TP':>5}{'FP':>5}{'TN':>5}{'FN':>5}{'recall':>8}{'FPR':>7}{'BER':>7}{'F1':>7}"
    lines = source_lines(summary, run_dir)
    if summary.corrected is not None:
        lines.extend(correction_lines(summary.corrected))
    beside = "; the corrected recall and FPR are above" if summary.corrected is not None else ""
    lines += [
        f"scoring policy: {summary.policy}",
        f"judge-only scorecards (counted from the judge's verdicts alone{beside}):",
        header,
    ]

    def row(name: str, card: Scorecard) -> str:
        return (
            f"{name:<{width}}{card.n:>6}{card.tp:>5}{card.fp:>5}{card.tn:>5}{card.fn:>5}"
            f"{fmt_rate(card.recall):>8}{fmt_rate(card.false_positive_rate):>7}"
            f"{fmt_rate(card.balanced_error_rate):>7}{fmt_rate(card.f1):>7}"
        )

    for scope, card in summary.scorecards.scopes():
        lines.append(row(scope, card))
    for variant, cards in summary.per_variant.items():
        lines.append(row(f"  variant {variant}", cards.system))
    talks = summary.conversations
    if talks is not None:
        lines.append(row("  conversations", talks.scorecards.system))
        lines.append(f"conversations (judge-only): {depth_line(talks)}")
    cov = summary.coverage
    lines.append(
        f"coverage: {cov.scored.count}/{cov.expected} scored, {cov.unlabelled.count} unlabelled, "
        f"{cov.errored.count} errored, {cov.malformed_judge.count} judge-malformed, {cov.missing.count} missing; "
        f"cut off by the token limit: {cov.truncated_share.describe()}"
    )
    lines.extend(f"warning: {w}" for w in summary.warnings)
    for role, calls in sorted((summary.run.execution.api_calls or {}).items()):
        breaker = calls.circuit_breaker
        if breaker:
            lines.append(f"{role}: {breaker['reason']} ({breaker['calls_not_sent']} calls not sent)")
    lines.extend(resume_lines(summary))
    lines.extend(incomplete_lines(summary, "INCOMPLETE RUN: "))
    return lines


def depth_line(talks: ConversationMetrics) -> str:
    """Caught and over-blocked by each depth, on one line: `caught by turn 1 25% (1/4), 2 50% ...`."""
    caught = ", ".join(f"{r.depth}: {fmt_rate(r.rate)} ({r.count}/{r.n})" for r in talks.recall_by_turn)
    blocked = ", ".join(f"{r.depth}: {fmt_rate(r.rate)} ({r.count}/{r.n})" for r in talks.over_blocking_by_turn)
    return f"harmful caught by turn {caught}; safe over-blocked by turn {blocked}"


def resume_lines(summary: RunSummary) -> list[str]:
    """A resumed run says so: how many cases it took from the stopped run and how many it re-ran
    because their text or label changed."""
    info = summary.run.execution.resume
    if not info:
        return []
    changed = info.changed_cases or 0
    return [
        f"resumed {info.run_dir}: {info.finished_before} finished cases reused"
        + (f", {changed} re-run because their prompt or label changed" if changed else "")
    ]


def incomplete_lines(summary: RunSummary, prefix: str) -> list[str]:
    """One line saying why the run is not a whole measurement, or nothing."""
    if summary.completeness.complete:
        return []
    return [prefix + "; ".join(summary.completeness.reasons)]
