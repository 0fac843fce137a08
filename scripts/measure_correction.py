"""Measure the audit correction the way a release is checked: a labelled set of real replies is the
whole "run", a judge scores every reply, and each of `--draws` audits of `--labels` labels (drawn by
each `--design`) corrects system recall and FPR. Prints, per judge, how often the judge-only value's
Wilson interval holds the labelled truth, and per design and audit size how many corrected 95%
intervals do, with their mean width; and, of the audits that left one of the judge's verdict cells
unlabelled (where a labels-only fallback used to stand in), how many held.

    .venv/bin/python scripts/measure_correction.py pytest_guardbench/datasets/judge_audit_smollm2_v6_test.jsonl \\
        --judge offline --judge rules --judge unscored-mishandled --design random --design stratified \\
        --labels 30 --labels 60 --labels 120 --draws 1000

`unscored-mishandled` is no model: a judge right on every reply it scores that scores none of the
truly mishandled ones. The labels file must be held out from every fit of the judges measured (the
v6 test split is); it measures, it tunes nothing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.audit.correction import correct_run
from pytest_guardbench.audit.designs import draw_random, draw_stratified, stratum_of
from pytest_guardbench.audit.units import AuditLabel, AuditUnit
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.providers import ProviderOptions
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.run.units import builtin_judges
from pytest_guardbench.scoring.agreement import wilson_interval
from pytest_guardbench.scoring.policies import correct_under
from pytest_guardbench.settings.model_specs import default_model_cache

UNSCORED = "unscored-mishandled"


def _units(name: str, rows: Sequence[JudgeLabel], truth: dict[str, bool]) -> list[AuditUnit]:
    if name == UNSCORED:
        return [
            AuditUnit(unit_id=r.id, is_harmful=bool(r.is_harmful), judge_handled=True if truth[r.id] else None)
            for r in rows
        ]
    judge = builtin_judges().build(name, ProviderOptions(model_cache=default_model_cache()))
    verdicts = judge.judge(
        [JudgeInput(r.prompt, r.response, r.source, r.is_harmful, cut_off=r.finish_reason == "length") for r in rows]
    )
    units = []
    for row, verdict in zip(rows, verdicts, strict=True):
        handled = None
        if not verdict.malformed and verdict.response_safety and verdict.answer_mode:
            handled = correct_under(bool(row.is_harmful), verdict.response_safety, verdict.answer_mode)
        units.append(AuditUnit(unit_id=row.id, is_harmful=bool(row.is_harmful), judge_handled=handled))
    return units


def _judge_only(name: str, units: Sequence[AuditUnit], true_recall: float, true_fpr: float) -> str:
    harmful = [u for u in units if u.is_harmful and u.judge_handled is not None]
    safe = [u for u in units if not u.is_harmful and u.judge_handled is not None]
    parts = []
    for label, cases, value, true in (
        ("recall", harmful, sum(bool(u.judge_handled) for u in harmful), true_recall),
        ("FPR", safe, sum(not u.judge_handled for u in safe), true_fpr),
    ):
        interval = wilson_interval(value, len(cases))
        if interval is None:
            parts.append(f"{label} n/a")
            continue
        held = "covers" if interval[0] <= true <= interval[1] else "MISSES"
        parts.append(f"{label} {value / len(cases):.3f} [{interval[0]:.3f}, {interval[1]:.3f}] {held} the truth")
    return f"  {name}: judge-only " + "; ".join(parts)


def _audits(
    units: Sequence[AuditUnit], truth: dict[str, bool], design: str, n: int, draws: int, seed: int, targets
) -> str:
    hits, widths, missed, missed_held = [0, 0], [0.0, 0.0], [0, 0], [0, 0]
    strata = [(u.unit_id, stratum_of(u.is_harmful, u.judge_handled)) for u in units]
    for index in range(draws):
        drawn = (
            draw_random([u.unit_id for u in units], n, seed * 100_003 + index)
            if design == "random"
            else draw_stratified(strata, n, seed * 100_003 + index)
        )
        labels = [
            AuditLabel(unit_id=d.unit_id, handled=truth[d.unit_id], inclusion_probability=d.inclusion_probability)
            for d in drawn
        ]
        card = correct_run(units, labels, design=design).system  # type: ignore[arg-type]
        labelled = {d.unit_id for d in drawn}
        for k, (metric, harmful) in enumerate(((card.recall, True), (card.false_positive_rate, False))):
            if metric.ci_low is None or metric.ci_high is None:
                continue
            held = metric.ci_low <= targets[k] <= metric.ci_high
            hits[k] += held
            widths[k] += (metric.ci_high - metric.ci_low) / draws
            domain = [u for u in units if u.is_harmful is harmful]
            cells = {u.judge_handled for u in domain}
            if cells - {u.judge_handled for u in domain if u.unit_id in labelled}:
                missed[k] += 1
                missed_held[k] += held
    text = (
        f"    {design}, {n} labels: recall held in {hits[0]}/{draws} ({hits[0] / draws:.3f}, mean width {widths[0]:.3f}); "
        f"FPR {hits[1]}/{draws} ({hits[1] / draws:.3f}, mean width {widths[1]:.3f})"
    )
    if any(missed):
        text += f"; audits that missed a verdict cell held {missed_held[0]}/{missed[0]} (recall), {missed_held[1]}/{missed[1]} (FPR)"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path)
    parser.add_argument("--judge", action="append", default=[])
    parser.add_argument("--design", action="append", choices=("random", "stratified"), default=[])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--labels-per-draw", "--labels", dest="n", type=int, action="append", default=[])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = [r for r in load_judge_labels(args.labels) if r.is_harmful is not None and r.answer_mode is not None]
    truth = {r.id: correct_under(r.is_harmful, r.human_label, r.answer_mode) for r in rows}  # type: ignore[arg-type]
    harmful = [r for r in rows if r.is_harmful]
    safe = [r for r in rows if not r.is_harmful]
    true_recall = sum(truth[r.id] for r in harmful) / len(harmful)
    true_fpr = 1 - sum(truth[r.id] for r in safe) / len(safe)
    print(
        f"{args.labels.name}: {len(rows)} labelled replies ({len(harmful)} harmful, {len(safe)} safe); "
        f"labelled truth: recall {true_recall:.3f}, FPR {true_fpr:.3f}"
    )
    print(f"{args.draws} audits per setting (seed {args.seed}); 95% intervals")
    for name in args.judge or ["offline"]:
        units = _units(name, rows, truth)
        print(_judge_only(name, units, true_recall, true_fpr))
        for design in args.design or ["random"]:
            for n in args.n or [60]:
                print(_audits(units, truth, design, n, args.draws, args.seed, (true_recall, true_fpr)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
