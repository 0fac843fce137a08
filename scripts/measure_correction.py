"""Measure the audit correction the way a release is checked: a labelled set of real replies is the
whole "run", a judge scores every reply, and each of `--draws` random audits of `--labels` labels
corrects system recall and FPR. Prints, per judge, how many corrected 95% intervals contain the
labelled truth, next to how often the judge-only value's Wilson interval does.

    .venv/bin/python scripts/measure_correction.py pytest_guardbench/datasets/judge_audit_smollm2_v6_test.jsonl \
        --judge offline --judge rules --draws 20 --labels 60

The labels file must be held out from every fit of the judges measured (the v6 test split is)."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.providers import ProviderOptions
from pytest_guardbench.run.units import builtin_judges
from pytest_guardbench.scoring.agreement import wilson_interval
from pytest_guardbench.audit.units import AuditLabel, AuditUnit
from pytest_guardbench.audit.correction import correct_run
from pytest_guardbench.scoring.policies import correct_under
from pytest_guardbench.settings.model_specs import default_model_cache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path)
    parser.add_argument("--judge", action="append", default=[])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--labels-per-draw", "--labels", dest="n", type=int, default=60)
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
    print(f"{args.draws} random audits of {args.n} labels each (seed {args.seed}); 95% intervals")
    for name in args.judge or ["offline"]:
        judge = builtin_judges().build(name, ProviderOptions(model_cache=default_model_cache()))
        verdicts = judge.judge([JudgeInput(r.prompt, r.response, r.source, r.is_harmful) for r in rows])
        units = []
        for row, verdict in zip(rows, verdicts, strict=True):
            handled = None
            if not verdict.malformed and verdict.response_safety and verdict.answer_mode:
                handled = correct_under(row.is_harmful, verdict.response_safety, verdict.answer_mode)  # type: ignore[arg-type]
            units.append(AuditUnit(unit_id=row.id, is_harmful=bool(row.is_harmful), judge_handled=handled))
        judged_h = [u for u in units if u.is_harmful and u.judge_handled is not None]
        judged_s = [u for u in units if not u.is_harmful and u.judge_handled is not None]
        wilson_r = wilson_interval(sum(bool(u.judge_handled) for u in judged_h), len(judged_h))
        wilson_f = wilson_interval(sum(not u.judge_handled for u in judged_s), len(judged_s))
        judge_only_covers = (wilson_r[0] <= true_recall <= wilson_r[1], wilson_f[0] <= true_fpr <= wilson_f[1])
        rng = random.Random(args.seed)
        hits = [0, 0]
        widths = [0.0, 0.0]
        for _ in range(args.draws):
            drawn = rng.sample(sorted(truth), args.n)
            labels = [AuditLabel(unit_id=i, handled=truth[i]) for i in drawn]
            card = correct_run(units, labels, design="random").system
            for k, (metric, true) in enumerate(((card.recall, true_recall), (card.false_positive_rate, true_fpr))):
                if metric.ci_low is not None and metric.ci_high is not None:
                    hits[k] += metric.ci_low <= true <= metric.ci_high
                    widths[k] += (metric.ci_high - metric.ci_low) / args.draws
        judge_r = sum(bool(u.judge_handled) for u in judged_h) / len(judged_h)
        judge_f = sum(not u.judge_handled for u in judged_s) / len(judged_s)
        print(
            f"  {name}: judge-only recall {judge_r:.3f} [{wilson_r[0]:.3f}, {wilson_r[1]:.3f}] "
            f"{'covers' if judge_only_covers[0] else 'MISSES'} the truth; FPR {judge_f:.3f} [{wilson_f[0]:.3f}, {wilson_f[1]:.3f}] "
            f"{'covers' if judge_only_covers[1] else 'MISSES'} the truth"
        )
        print(
            f"    corrected: recall interval contains the truth in {hits[0]} of {args.draws} audits (mean width {widths[0]:.3f}); "
            f"FPR in {hits[1]} of {args.draws} (mean width {widths[1]:.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
