"""The audit-corrected scorecards (summary.json's `corrected` block) for people: lines for the terminal
and `guardbench correct`, and a markdown table for summary.md. The judge-only value always stands
beside the corrected one, so a reader sees how far the judge was off."""

from __future__ import annotations

from pytest_guardbench.document.correction import Correction
from pytest_guardbench.document.correction import CorrectedMetric
from pytest_guardbench.document.correction import CorrectedPair, Rate
from pytest_guardbench.scoring.scorecard import fmt_rate


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"


def metric_text(metric: CorrectedMetric) -> str:
    """`judge-only 0.962, labels-only 0.950 (n=40), corrected 0.944 [0.901, 0.975]`, or why there is none."""
    labels = f"labels-only {fmt_rate(metric.labels_only)} (n={metric.n_labelled})"
    if metric.estimate is None:
        return f"judge-only {fmt_rate(metric.judge_only)}, {labels}, corrected: {metric.note or 'none'}"
    return (
        f"judge-only {fmt_rate(metric.judge_only)}, {labels}, "
        f"corrected {fmt_rate(metric.estimate)}{_interval(metric.ci_low, metric.ci_high)}"
    )


def _rate(rate: Rate) -> str:
    return f"{fmt_rate(rate.value)}{_interval(rate.ci_low, rate.ci_high)} (n={rate.n})"


def correction_lines(correction: Correction) -> list[str]:
    """The corrected recall and FPR of both scorecards, the judge on this run's labels, and the labels used."""
    cards = correction.scorecards
    use = correction.labels
    lines = [f"audit-corrected ({use.design} design, {use.used} labels of {cards.n_units} cases; 95% intervals):"]
    for scope, pair in (("system", cards.system), ("tutor_conditional", cards.tutor_conditional)):
        lines.append(f"  {scope} recall: {metric_text(pair.recall)}")
        lines.append(f"  {scope} FPR:    {metric_text(pair.false_positive_rate)}")
    replies = correction.conversation_replies
    if replies is not None:
        lines.append(f"  conversation replies recall: {metric_text(replies.system.recall)}")
        lines.append(f"  conversation replies FPR:    {metric_text(replies.system.false_positive_rate)}")
    talks = correction.conversations
    if talks is not None:
        lines.append(f"  conversations recall: {metric_text(talks.scorecards.system.recall)}")
        lines.append(f"  conversations FPR:    {metric_text(talks.scorecards.system.false_positive_rate)}")
        lines += [
            f"  conversations caught by depth {row.depth}: {metric_text(row.recall)}" for row in talks.recall_by_turn
        ]
    lines += [f"  {line}" for line in judge_lines(correction)]
    return lines + [f"  {line}" for line in [*labels_lines(correction), *labeller_lines(correction)]]


def labels_lines(correction: Correction) -> list[str]:
    """The files and labellers behind the labels, and their draw checked against the run."""
    use = correction.labels
    files = use.labels_files or [use.labels_file]
    lines = []
    if len(files) > 1 or use.labellers:
        who = f" by {', '.join(use.labellers)}" if use.labellers else ""
        settled = f", {use.settled} settled" if use.settled else ""
        unsettled = (
            f", {use.unsettled} labelled differently and not settled (the first file's used)" if use.unsettled else ""
        )
        lines.append(f"labels: {len(files)} file(s){who}{settled}{unsettled}")
    draw = use.draw
    if draw is not None and draw.checked != "not recorded":
        how = (
            "drawn again from this run"
            if draw.checked == "redrawn"
            else "not drawn again: this run's population differs"
        )
        lines.append(
            f"draw: {draw.design}, seed {draw.seed}: {draw.drawn} drawn, {draw.labelled} labelled, "
            f"{draw.skipped} skipped ({how})"
        )
    return lines


def _kappa(value: float | None, low: float | None, high: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}{_interval(low, high)}"


def labeller_lines(correction: Correction) -> list[str]:
    """The labellers' kappa per domain on the truth the scorecards take from the labels, beside the judge's."""
    agreement = correction.labellers
    if agreement is None:
        return []
    judge = correction.scorecards.judge_on_this_run
    parts = []
    for domain, block in sorted(agreement.domains.items()):
        handled = block.handled
        if handled.rows:
            low = " LOW" if domain in agreement.low_domains else ""
            parts.append(
                f"{domain} {_kappa(handled.cohen_kappa, handled.kappa_ci_low, handled.kappa_ci_high)} "
                f"over {handled.rows}{low}"
            )
    return [
        f"labellers' kappa ({' and '.join(agreement.labellers)}, {agreement.rows} replies both labelled): "
        f"{'; '.join(parts) or 'none'}; the judge's "
        f"{_kappa(judge.cohen_kappa, judge.kappa_ci_low, judge.kappa_ci_high)}"
    ]


def judge_lines(correction: Correction) -> list[str]:
    """The judge measured on this run's labels, and the labels that could not be used."""
    use = correction.labels
    judge = correction.scorecards.judge_on_this_run
    kappa = "undefined" if judge.cohen_kappa is None else f"{judge.cohen_kappa:.3f}"
    lines = [
        f"judge on this run's labels: agreement {_rate(judge.agreement)}, kappa {kappa}"
        f"{_interval(judge.kappa_ci_low, judge.kappa_ci_high)}, misses {_rate(judge.miss_rate)}, "
        f"over-blocks {_rate(judge.over_block_rate)}"
    ]
    dropped = {"reply changed": use.reply_changed, "not in this run": use.not_in_run, "undecided": use.undecided}
    if any(dropped.values()):
        lines.append("labels not used: " + ", ".join(f"{n} {why}" for why, n in dropped.items() if n))
    return lines


def _md_row(name: str, metric: CorrectedMetric) -> str:
    corrected = (
        f"{fmt_rate(metric.estimate)}{_interval(metric.ci_low, metric.ci_high)}"
        if metric.estimate is not None
        else metric.note or "n/a"
    )
    return (
        f"| {name} | {fmt_rate(metric.judge_only)} | {fmt_rate(metric.labels_only)} | {corrected} "
        f"| {metric.n_labelled}/{metric.n_total} |"
    )


def correction_markdown(correction: Correction) -> list[str]:
    """summary.md's section: judge-only and corrected side by side, per scorecard and per group."""
    cards = correction.scorecards
    use = correction.labels
    lines = [
        "## Audit-corrected scorecards",
        "",
        f"Corrected by {use.used} labels of this run's own replies "
        f"({', '.join(f'`{name}`' for name in use.labels_files or [use.labels_file])}, {use.design} design); "
        "95% intervals. The gate's recall and FPR bars are decided on the corrected intervals.",
        "",
        "| metric | judge-only | labels-only | corrected | labelled |",
        "|---|---|---|---|---|",
    ]
    pairs: list[tuple[str, CorrectedPair]] = [("system", cards.system), ("tutor_conditional", cards.tutor_conditional)]
    pairs += sorted(cards.groups.items())
    replies = correction.conversation_replies
    if replies is not None:  # a conversation's replies, corrected as replies, overall and per depth
        pairs += [("conversation replies", replies.system)]
        pairs += [(f"conversation replies {name}", pair) for name, pair in sorted(replies.groups.items())]
    talks = correction.conversations
    if talks is not None:  # whole conversations drawn (cluster design), corrected as conversations
        pairs += [
            ("conversations", talks.scorecards.system),
            ("conversations tutor_conditional", talks.scorecards.tutor_conditional),
        ]
    for scope, pair in pairs:
        lines.append(_md_row(f"{scope} recall", pair.recall))
        lines.append(_md_row(f"{scope} FPR", pair.false_positive_rate))
    if talks is not None:
        lines += [
            _md_row(f"conversations recall_by_turn depth={row.depth}", row.recall) for row in talks.recall_by_turn
        ]
    lines += ["", *(f"{line}." for line in [*judge_lines(correction), *labels_lines(correction)])]
    return lines + labeller_markdown(correction)


def labeller_markdown(correction: Correction) -> list[str]:
    """summary.md's table of two labellers' agreement per field and domain, beside the judge's kappa."""
    agreement = correction.labellers
    if agreement is None:
        return []
    judge = correction.scorecards.judge_on_this_run
    lines = [
        "",
        f"Two labellers ({' and '.join(agreement.labellers)}) labelled {agreement.rows} of these replies: their "
        f"agreement, beside the judge's kappa of {_kappa(judge.cohen_kappa, judge.kappa_ci_low, judge.kappa_ci_high)} "
        "on the labels used. Where the labellers disagree, the truth itself is uncertain.",
        "",
        "| domain | field | rows | agreement | kappa |",
        "|---|---|---|---|---|",
    ]
    for domain, block in sorted(agreement.domains.items()):
        for name in ("handled", "safety", "answer_mode", "policy_label"):
            field = getattr(block, name)
            lines.append(
                f"| {domain} | {name.replace('_', ' ')} | {field.rows} | {fmt_rate(field.agreement)}"
                f"{_interval(field.agreement_ci_low, field.agreement_ci_high)} "
                f"| {_kappa(field.cohen_kappa, field.kappa_ci_low, field.kappa_ci_high)} |"
            )
    return lines
