"""summary.md: the scorecards, gate and warnings of a run for people (also the GitHub job summary)."""

from __future__ import annotations


from collections.abc import Mapping

from pytest_guardbench.document.correction import CorrectedMetric, CorrectedPair
from pytest_guardbench.results.corrected import correction_markdown
from pytest_guardbench.results.sources import source_lines, sourced_message
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.terminal import incomplete_lines, resume_lines
from pytest_guardbench.document.scorecards import Scorecard
from pytest_guardbench.scoring.scorecard import fmt_rate


def _md_table(rows: list[tuple[str, Scorecard]], corrected: Mapping[str, CorrectedPair] | None = None) -> list[str]:
    """Judge-only scorecards, one row each; with `corrected` (scope -> its corrected pair), the corrected
    recall and FPR with their intervals beside the judge-only ones."""
    columns = ("n", "tp", "fp", "tn", "fn", "recall", "false_positive_rate", "balanced_error_rate", "f1", "precision")
    titles = list(columns)
    if corrected is not None:
        titles[5:7] = [
            "recall (judge-only)",
            "recall (corrected)",
            "false_positive_rate (judge-only)",
            "false_positive_rate (corrected)",
        ]
    lines = ["| scope | " + " | ".join(titles) + " |", "|---" * (len(titles) + 1) + "|"]
    for name, card in rows:
        cells = [fmt_rate(getattr(card, c)) for c in columns]
        if corrected is not None:
            pair = corrected.get(name)
            cells[5:7] = [
                cells[5],
                corrected_cell(pair.recall) if pair else "-",
                cells[6],
                corrected_cell(pair.false_positive_rate) if pair else "-",
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def corrected_cell(metric: CorrectedMetric) -> str:
    """A corrected rate with its 95% interval, or why there is none."""
    if metric.estimate is None or metric.ci_low is None or metric.ci_high is None:
        return metric.note or "n/a"
    return f"{fmt_rate(metric.estimate)} [{metric.ci_low:.3f}, {metric.ci_high:.3f}]"


def _interval(bounds: tuple[float, float] | None) -> str:
    return "n/a" if bounds is None else f"{bounds[0]:.3f}-{bounds[1]:.3f}"


def _judge_identity(summary: RunSummary) -> str:
    """The judge's id and sample count after its name: two runs measured the same judge only when the ids match."""
    samples = summary.stack.judge_samples
    parts = [f"id `{summary.judge_id}`"] if summary.judge_id else []
    if samples and samples > 1:
        parts.append(f"asked {samples} times per response")
    return f" ({', '.join(parts)})" if parts else ""


def _majority_of(summary: RunSummary) -> str:
    samples = summary.stack.judge_samples
    return f"{samples} answers" if samples and samples > 1 else "panel members"


def _head(summary: RunSummary) -> list[str]:
    """The run, its stack and policy, the headline rates and the gate with every check."""
    gate = summary.gate
    definitions = summary.metric_definitions
    system = summary.scorecards.system
    stack = summary.stack
    sources = source_lines(summary, code=lambda command: f"`{command}`")
    lines = [
        f"# guardbench run {summary.run.run_id}",
        "",
        # Where the numbers come from, before any of them: judge-only (and how to audit it) or corrected.
        *(part for index, line in enumerate(sources) for part in (f"**{line}**" if index == 0 else line, "")),
        f"Stack: guardrail `{stack.guardrail}`, tutor `{stack.tutor}`, judge `{stack.judge}`"
        f"{_judge_identity(summary)}, malformed policy `{stack.malformed_policy}`.",
        "",
        f"**Gate: {gate.verdict.upper()}**",
        "",
        *(line + "\n" for line in incomplete_lines(summary, "**INCOMPLETE RUN**: ")),
        *(line + "\n" for line in resume_lines(summary)),
    ]
    marks = {"pass": "ok", "fail": "FAIL", "inconclusive": "UNDECIDED"}
    lines += [f"- {marks[c.status]}: {sourced_message(summary, c)}" for c in gate.checks]
    confidence = summary.confidence
    if confidence and confidence.level == "low":
        lines += ["", f"**Low-confidence scorecard:** {confidence.reason}."]
    if summary.corrected is not None:  # the corrected numbers right under the gate they decide
        lines += ["", *correction_markdown(summary.corrected)]
    return lines + [
        "",
        f"Scoring policy `{definitions.policy}` (version {definitions.policy_version}): a harmful prompt is "
        "handled correctly when "
        f"{definitions.harmful_prompt_correct_when}; a safe prompt when {definitions.safe_prompt_correct_when}. "
        "TP/FN = harmful prompts handled correctly/wrongly, TN/FP = safe prompts handled correctly/wrongly.",
        "",
        f"Judge-only rates: harmful prompt success {fmt_rate(system.harmful_prompt_success_rate)}, safe prompt success "
        f"{fmt_rate(system.safe_prompt_success_rate)}, safe prompt over-refusal "
        f"{fmt_rate(system.safe_prompt_overrefusal_rate)}, "
        f"harmful prompt unsafe answers {fmt_rate(system.harmful_prompt_unsafe_answer_rate)}, overall success "
        f"{fmt_rate(system.overall_success_rate)}.",
    ]


def _scorecards(summary: RunSummary) -> list[str]:
    """The scorecards (audit-corrected too, when labelled), per variant, per mutator family and flip rates."""
    corrected = summary.corrected
    pairs = (
        {"system": corrected.scorecards.system, "tutor_conditional": corrected.scorecards.tutor_conditional}
        if corrected is not None
        else None
    )
    note = (
        "Counted from the judge's verdicts alone; recall and FPR corrected by labels beside them."
        if pairs
        else "Counted from the judge's verdicts alone."
    )
    lines = ["", "## Scorecards", "", note, "", *_md_table(summary.scorecards.scopes(), pairs)]
    lines += ["", "## Per variant (system, judge-only)", ""]
    lines += _md_table([(v, cards.system) for v, cards in summary.per_variant.items()])
    lines += ["", "## Per mutator family (system, judge-only)", ""]
    lines += _md_table([(f, cards.system) for f, cards in summary.per_family.items()])
    if summary.flip_rates:
        lines += [
            "",
            "## Flip rate against original (judge-only)",
            "",
            "| variant | guard flips | outcome flips | became mishandled | became handled |",
            "|---|---|---|---|---|",
        ]
        for variant, f in summary.flip_rates.items():
            lines.append(
                f"| {variant} | {fmt_rate(f.guard_flip_rate)} ({f.guard_flips}/{f.guard_pairs}) | "
                f"{fmt_rate(f.outcome_flip_rate)} "
                f"| {f.became_mishandled} | {f.became_handled} |"
            )
    return lines


def _conversations(summary: RunSummary) -> list[str]:
    talks = summary.conversations
    if talks is None:
        return []
    lines = [
        "",
        "## Conversations (judge-only)",
        "",
        f"{talks.conversations} conversations ({talks.harmful} harmful and {talks.safe} safe scored), up to "
        f"{talks.max_depth} turns. A harmful conversation is caught at the first turn the guard blocked or the "
        "tutor refused with no unsafe reply before it; a safe one is over-blocked at the first such turn.",
        "",
        *_md_table(talks.scorecards.scopes()),
        "",
        "| turn | harmful caught by then | 95% CI | safe over-blocked by then | 95% CI |",
        "|---|---|---|---|---|",
    ]
    for caught, blocked in zip(talks.recall_by_turn, talks.over_blocking_by_turn, strict=True):
        lines.append(
            f"| {caught.depth} | {fmt_rate(caught.rate)} ({caught.count}/{caught.n}) | {_interval(caught.interval)} "
            f"| {fmt_rate(blocked.rate)} ({blocked.count}/{blocked.n}) | {_interval(blocked.interval)} |"
        )
    if talks.first_unsafe_turn:
        firsts = ", ".join(f"turn {d}: {n}" for d, n in talks.first_unsafe_turn.items())
        lines += ["", f"First unsafe reply of harmful conversations, by turn: {firsts}."]
    return lines


def _coverage(summary: RunSummary) -> list[str]:
    """Per category, coverage, the judge's disagreement and the prompt-row buckets."""
    lines = ["", "## Per category (system, judge-only)", ""]
    lines += _md_table([(c, cards.system) for c, cards in summary.per_category.items()])
    cov = summary.coverage
    lines += [
        "",
        "## Coverage",
        "",
        f"expected {cov.expected}, scored {cov.scored.count}, unlabelled {cov.unlabelled.count}, "
        f"errored {cov.errored.count}, judge malformed {cov.malformed_judge.count}, judge labels incomplete "
        f"{cov.incomplete_judge.count}, missing {cov.missing.count}, tutor ran on {cov.tutor_evaluable.count}; "
        f"replies cut off by the token limit: {cov.truncated_share.describe()}.",
    ]
    disagreement = cov.judge_disagreement
    if disagreement is not None:
        lines += [
            "",
            f"Judge disagreement: {disagreement.count} majority verdict(s) ({fmt_rate(disagreement.rate)}) whose "
            f"{_majority_of(summary)} did not all give the same labels.",
        ]
    buckets = summary.prompt_row_buckets
    return lines + [
        "",
        "## Prompt-row buckets (judge-only)",
        "",
        f"{buckets.rows} rows: fully correct {buckets.fully_correct.count}, partially incorrect "
        f"{buckets.partially_incorrect.count}, consistently incorrect {buckets.consistently_incorrect.count}.",
    ]


def _guards(summary: RunSummary) -> list[str]:
    """The guard's decisions per label and its threshold sweeps."""
    lines = []
    if summary.guard_decisions:
        lines += ["", "## Guardrail decisions", ""]
        for guard, split in summary.guard_decisions.items():
            for label, rates in split.sides():
                lines.append(
                    f"- {guard} / {label} (n={rates.n}): allow {fmt_rate(rates.allow.rate)}, block "
                    f"{fmt_rate(rates.block.rate)}, "
                    f"malformed {fmt_rate(rates.malformed.rate)}"
                )
    for guard, result in summary.guard_sweeps.items():
        point = result.operating_point
        at = (
            f"threshold {point.threshold:.4g} gives recall {fmt_rate(point.recall)} at FPR "
            f"{fmt_rate(point.false_positive_rate)}"
            if point
            else result.operating_point_note
        )
        lines += [
            "",
            f"## Guard threshold sweep: {guard}",
            "",
            f"{result.n} scored cases ({result.positives} harmful): ROC AUC {fmt_rate(result.roc_auc)}, "
            f"average precision {fmt_rate(result.average_precision)}; for recall >= {result.target_recall:g}, {at}.",
        ]
    return lines


def _usage(summary: RunSummary) -> list[str]:
    """Time per stage, and the tutor's and attacker's tokens and cost."""
    usage = summary.run.usage
    if not usage:
        return []
    lines = ["", "## Time and tokens", "", "| stage | cases | p50 s | p95 s | total s |", "|---|---|---|---|---|"]
    for stage, t in usage.stages.items():
        lines.append(f"| {stage} | {t.cases} | {fmt_rate(t.p50_s)} | {fmt_rate(t.p95_s)} | {t.total_s:.1f} |")
    tokens = usage.tutor_tokens
    cost = "unknown" if usage.tutor_cost_usd is None else f"${usage.tutor_cost_usd:.4f}"
    note = f" ({usage.cost_note})" if usage.cost_note else ""
    lines += [
        "",
        f"Tutor: {tokens.answers} answers, prompt tokens "
        f"{tokens.prompt_tokens if tokens.prompt_tokens is not None else 'unknown'}, "
        f"completion tokens {tokens.completion_tokens if tokens.completion_tokens is not None else 'unknown'}, "
        f"cost {cost}{note}.",
    ]
    attacker = usage.attacker_tokens
    if attacker is not None:
        spent = "unknown" if usage.attacker_cost_usd is None else f"${usage.attacker_cost_usd:.4f}"
        lines += [
            "",
            f"Attacker ({', '.join(attacker.models)}): {attacker.answers} turns written, prompt tokens "
            f"{attacker.prompt_tokens if attacker.prompt_tokens is not None else 'unknown'}, completion tokens "
            f"{attacker.completion_tokens if attacker.completion_tokens is not None else 'unknown'}, cost {spent}.",
        ]
    return lines


def _judge_quality(summary: RunSummary) -> list[str]:
    """The judge against human labels, when the run checked it."""
    quality = summary.judge_quality
    if not quality or quality.error is not None:
        return []
    lines = [
        "",
        f"## Judge quality ({quality.labels_file})",
        "",
        f"{quality.judge}: agreement {fmt_rate(quality.agreement)}, Cohen's kappa {fmt_rate(quality.cohen_kappa)}, "
        f"over-block {fmt_rate(quality.over_block_rate)}, miss {fmt_rate(quality.miss_rate)}, malformed "
        f"{fmt_rate(quality.malformed_rate)} "
        f"over {quality.rows} labelled responses.",
        "",
    ]
    if "answer_mode_agreement" in quality.model_fields_set:
        lines += [
            f"Answer mode agreement {fmt_rate(quality.answer_mode_agreement)} over {quality.answer_mode_rows} rows.",
            "",
        ]
    if "policy_label_agreement" in quality.model_fields_set:
        lines += [
            f"Policy label agreement {fmt_rate(quality.policy_label_agreement)} over {quality.policy_label_rows} rows.",
            "",
        ]
    lines += ["| bucket | rows | agreement | over-block | miss |", "|---|---|---|---|---|"]
    for bucket, b in (quality.per_bucket or {}).items():
        lines.append(
            f"| {bucket} | {b.rows} | {fmt_rate(b.agreement)} | {fmt_rate(b.over_block_rate)} | "
            f"{fmt_rate(b.miss_rate)} |"
        )
    return lines


def _closing(summary: RunSummary) -> list[str]:
    """The run's warnings."""
    lines: list[str] = []
    if summary.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in summary.warnings]
    return lines


# summary.md's sections, in order: each gives its lines (none when the run has nothing to show there).
_SECTIONS = (_head, _scorecards, _conversations, _coverage, _guards, _usage, _judge_quality, _closing)


def summary_markdown(summary: RunSummary) -> str:
    """summary.md of a run."""
    return "\n".join(line for section in _SECTIONS for line in section(summary)) + "\n"
