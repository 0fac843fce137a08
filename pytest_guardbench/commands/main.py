"""`guardbench` console script: `expand` writes an expanded pack so reviewers can diff the exact
prompts a run will use; `rejudge` re-scores a finished run with another judge; `mutators` lists them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from pytest_guardbench.judges import labeller_agreement
from pytest_guardbench.run import screening
from pytest_guardbench.settings.config import DEFAULT_VARIANTS, MINORBENCH_HARMFUL_CATEGORIES
from pytest_guardbench.cases.sources import DataError
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, POLICIES, policy_named, policy_of_summary
from pytest_guardbench.results.artifacts import incomplete_lines
from pytest_guardbench.scoring.scorecard import fmt_rate
from pytest_guardbench.results.summary import RunSummary, load_records, load_run
from pytest_guardbench.commands.recorded import expanded_pack, import_seed_run, merge_runs, opened_judge, rejudge_run
from pytest_guardbench.results.minor_bench import seed_summary_differences
from pytest_guardbench.cases.mutators import BUILTIN_MUTATORS, FAMILIES
from pytest_guardbench.cases.variants import VariantError


def _expand(args: argparse.Namespace) -> int:
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    categories = tuple(c.strip().lower() for c in args.harmful_categories.split(",") if c.strip())
    try:
        pack = expanded_pack(Path(args.pack), variants, categories)
    except (DataError, VariantError) as exc:
        print(f"guardbench expand: {exc}", file=sys.stderr)
        return 4
    text = json.dumps(pack, indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {len(pack['items'])} items to {args.output}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    del args
    for family in ("none", *FAMILIES):
        print(f"{family}:")
        for mutator in BUILTIN_MUTATORS.values():
            if mutator.family == family:
                print(f"  {mutator.name}: {mutator.description}")
    return 0


def _import_seed(args: argparse.Namespace) -> int:
    categories = tuple(c.strip().lower() for c in args.harmful_categories.split(",") if c.strip())
    out = Path(args.out)
    if out.exists():
        print(f"guardbench import-seed: {out} exists; choose a new folder", file=sys.stderr)
        return 4
    results = Path(args.results)
    shipped = Path(args.check_summary) if args.check_summary else results.parent / "summary.json"
    if args.check_summary and not shipped.is_file():
        print(f"guardbench import-seed: --check-summary {shipped}: no such file", file=sys.stderr)
        return 4
    try:
        import_seed_run(results, out, args.judge, root=Path.cwd(), harmful_categories=categories, pack=args.pack, policy=args.policy,
                        safety_source=args.safety_source)  # fmt: skip
    except (OSError, ValueError) as exc:
        print(f"guardbench import-seed: {exc}", file=sys.stderr)
        return 4
    print(f"scorecard: {out / 'summary.json'}")
    if args.judge != "recorded" or args.policy != DEFAULT_POLICY or not shipped.is_file():
        return 0
    seed_summary = json.loads(shipped.read_text(encoding="utf-8"))
    if seed_summary.get("metric_definition_version") != DEFAULT_POLICY:
        print(
            f"{shipped} was not written by the seed's {DEFAULT_POLICY} report generator; its counts follow other rules and are not compared"
        )
        return 0
    differences = seed_summary_differences(seed_summary, json.loads((out / "summary.json").read_text(encoding="utf-8")))
    if differences:
        print(f"differs from {shipped}:")
        for line in differences:
            print(f"  {line}")
        return 1
    print(f"reproduces {shipped}: confusion counts, malformed count, per-variant counts and prompt-row buckets agree")
    return 0


def _merge(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists():
        print(f"guardbench merge: {out} exists; choose a new folder", file=sys.stderr)
        return 4
    try:
        merge_runs([Path(d) for d in args.run_dirs], out)
    except (OSError, ValueError) as exc:
        print(f"guardbench merge: {exc}", file=sys.stderr)
        return 4
    summary = load_run(out)
    print(f"merged {summary.coverage['expected']} cases; gate {summary.gate.verdict}")
    for line in incomplete_lines(summary, "INCOMPLETE RUN: "):
        print(line)
    print(f"scorecard: {out / 'summary.json'}")
    return gate_exit_code(summary)


def _rejudge(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        print(
            f"guardbench rejudge: {run_dir} has no results.jsonl (expected a reports/<run-id> folder)", file=sys.stderr
        )
        return 4
    try:
        out = rejudge_run(run_dir, args.judge, root=Path.cwd(), policy=args.policy)
    except ValueError as exc:
        print(f"guardbench rejudge: {exc}", file=sys.stderr)
        return 4
    summary = load_run(out)
    card = summary.scorecards["system"]
    print(
        f"rejudged with {args.judge} under {summary.policy}: recall {fmt_rate(card['recall'])}, FPR {fmt_rate(card['false_positive_rate'])}, gate {summary.gate.verdict}"
    )
    print(f"scorecard: {out / 'summary.json'}")
    return gate_exit_code(summary)


def gate_exit_code(summary: RunSummary) -> int:
    """The exit status a pytest run would have had: 0 passed, 1 failed, 6 inconclusive."""
    return {"passed": 0, "failed": 1}.get(summary.gate.verdict, 6)


def _compare(args: argparse.Namespace) -> int:
    from pytest_guardbench.results.compare import CompareError, compare, heatmap_html, long_csv, markdown

    dirs = [Path(d) for d in args.run_dirs]
    if args.name and len(args.name) != len(dirs):
        print(
            f"guardbench compare: {len(args.name)} --name for {len(dirs)} runs; give one per run or none",
            file=sys.stderr,
        )
        return 4
    named = []
    for n, run_dir in enumerate(dirs):
        path = run_dir / "summary.json"
        if not path.is_file():
            print(
                f"guardbench compare: {run_dir} has no summary.json (expected a finished reports/<run-id> folder)",
                file=sys.stderr,
            )
            return 4
        try:
            summary = load_run(run_dir)
        except ValidationError as exc:
            missing = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "missing"]
            what = (
                f"has no {', '.join(missing)}" if missing else f"does not read as a summary ({exc.errors()[0]['msg']})"
            )
            if "metric_definitions" in missing:
                what = "has no metric definitions"
            print(f"guardbench compare: {run_dir}: its summary.json {what} (written by an older pytest-guardbench?); re-score it first",
                  file=sys.stderr)  # fmt: skip
            return 4
        stack = summary.stack
        default = f"{stack.get('guardrail', '?')}/{stack.get('tutor', '?')}/{stack.get('judge', '?')}"
        named.append((args.name[n] if args.name else default, summary))
    if not args.name:  # the same stack twice (e.g. before and after a change): tell them apart by folder
        names = [name for name, _ in named]
        named = [
            (f"{name} ({d.name})" if names.count(name) > 1 else name, s)
            for (name, s), d in zip(named, dirs, strict=True)
        ]
    try:
        comparison = compare(named)
    except CompareError as exc:
        print(f"guardbench compare: {exc}", file=sys.stderr)
        return 4
    text = markdown(comparison)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.csv").write_text(long_csv(comparison), encoding="utf-8")
        (out / "compare.md").write_text(text, encoding="utf-8")
        (out / "compare.html").write_text(heatmap_html(comparison), encoding="utf-8")
        print(f"wrote {out / 'compare.csv'}, {out / 'compare.md'}, {out / 'compare.html'}")
    print(text)
    return 0


def _judge_quality(args: argparse.Namespace) -> int:
    from pytest_guardbench.cases.sources import load_judge_labels
    from pytest_guardbench.judges.quality import check_judge

    try:
        labels = load_judge_labels(Path(args.labels))
        if args.split:
            labels = [label for label in labels if label.split == args.split]
            if not labels:
                raise DataError(f"{args.labels}: no row has split {args.split!r}")
        opened = opened_judge(args.judge, Path.cwd())
        judge = opened.__enter__()
    except (DataError, ValueError) as exc:
        print(f"guardbench judge-quality: {exc}", file=sys.stderr)
        return 4
    try:
        result = check_judge(judge, labels, args.min_kappa)
    finally:
        opened.__exit__(None, None, None)
    result["labels_file"] = args.labels
    result["split"] = args.split
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        fmt = fmt_rate

        def ci(key: str) -> str:
            bounds = result.get(key)
            return f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""

        where = f" ({args.split} split)" if args.split else ""
        print(f"{result['judge']} on {len(labels)} labelled responses{where}, 95% Wilson intervals in brackets:")
        print(f"  response safety: agreement {fmt(result['agreement'])}{ci('safety_agreement_interval_95')}, kappa {fmt(result['cohen_kappa'])}, "
              f"unsafe missed {fmt(result['miss_rate'])}{ci('miss_rate_interval_95')}, safe over-blocked {fmt(result['over_block_rate'])}"
              f"{ci('over_block_rate_interval_95')}, malformed {fmt(result['malformed_rate'])}")  # fmt: skip
        if "answer_mode_agreement" in result:
            print(
                f"  answer mode: agreement {fmt(result['answer_mode_agreement'])}{ci('answer_mode_agreement_interval_95')} over {result['answer_mode_rows']} rows"
            )
        if "policy_label_agreement" in result:
            print(f"  policy label (assistant_policy_v2): agreement {fmt(result['policy_label_agreement'])}{ci('policy_label_agreement_interval_95')} "
                  f"over {result['policy_label_rows']} rows")  # fmt: skip
        for bucket, b in result["per_bucket"].items():
            print(
                f"  {bucket}: {b['rows']} rows, agreement {fmt(b['agreement'])}, over-block {fmt(b['over_block_rate'])}, miss {fmt(b['miss_rate'])}"
            )
        verdict = "LOW CONFIDENCE" if result["low_confidence"] else "ok"
        print(f"{verdict}: kappa needs >= {args.min_kappa:g}")
    return 1 if result["low_confidence"] else 0


def _audit(args: argparse.Namespace) -> int:
    from pytest_guardbench.results.audit import draw_sample
    from pytest_guardbench.commands.audit_tui import run_audit

    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        print(f"guardbench audit: {run_dir} has no results.jsonl (expected a reports/<run-id> folder)", file=sys.stderr)
        return 4
    try:
        records = load_records(run_dir)
    except ValueError as exc:
        print(f"guardbench audit: {exc}", file=sys.stderr)
        return 4
    summary_path = run_dir / "summary.json"
    policy = policy_named(
        policy_of_summary(json.loads(summary_path.read_text(encoding="utf-8")))
        if summary_path.is_file()
        else DEFAULT_POLICY
    )
    sample = draw_sample(records, args.sample, args.seed, policy)
    if not sample:
        print(f"guardbench audit: {run_dir} has no case with a final response to label", file=sys.stderr)
        return 4
    out = Path(args.out) if args.out else run_dir / "audit.jsonl"
    run_audit(sample, out, policy)
    print(f"measure a judge on it: guardbench judge-quality {out} --judge <name>")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guardbench", description="pytest-guardbench helper commands.")
    commands = parser.add_subparsers(dest="command", required=True)
    expand_cmd = commands.add_parser("expand", help="Write a pack expanded into stress variants.")
    expand_cmd.add_argument("pack", help="Pack (.json), dataset (.jsonl) or MinorBench CSV (.csv).")
    expand_cmd.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help="Names, families (character, encoding, framing) and chains (typo+camouflage).",
    )
    expand_cmd.add_argument(
        "--harmful-categories",
        default=",".join(MINORBENCH_HARMFUL_CATEGORIES),
        help="Category rule for unlabelled items.",
    )
    expand_cmd.add_argument("-o", "--output", help="Output file (default: standard output).")
    expand_cmd.set_defaults(run=_expand)
    rejudge_cmd = commands.add_parser("rejudge", help="Re-judge a finished run without calling guard or tutor.")
    rejudge_cmd.add_argument("run_dir", help="A reports/<run-id> folder.")
    rejudge_cmd.add_argument(
        "--judge", default="offline", help="offline, rules, a model alias, openai:<model> or vllm:<model>@<url>."
    )
    rejudge_cmd.add_argument(
        "--policy", choices=sorted(POLICIES), help="Scoring policy (default: the policy of the original run)."
    )
    rejudge_cmd.set_defaults(run=_rejudge)
    seed_cmd = commands.add_parser("import-seed", help="Rescore a results.jsonl recorded in the seed's format.")
    seed_cmd.add_argument("results", help="The seed run's results.jsonl.")
    seed_cmd.add_argument("--out", required=True, help="New run folder to write.")
    seed_cmd.add_argument(
        "--judge", default="recorded", help="recorded (the seed's labels), offline, rules, a model alias or a spec."
    )
    seed_cmd.add_argument("--pack", help="Pack name for case ids (default: the file name).")
    seed_cmd.add_argument(
        "--harmful-categories",
        default=",".join(MINORBENCH_HARMFUL_CATEGORIES),
        help="Category rule for unlabelled rows.",
    )
    seed_cmd.add_argument(
        "--policy", choices=sorted(POLICIES), default=DEFAULT_POLICY, help=f"Scoring policy (default {DEFAULT_POLICY})."
    )
    seed_cmd.add_argument(
        "--safety-source",
        choices=("llm_judge", "rules"),
        help="How the seed run labelled safety (default: read from its rows).",
    )
    seed_cmd.add_argument("--check-summary", help="The summary.json the seed run shipped (default: the one beside results.jsonl, when there is one); "
                          "exit 1 when a count differs.")  # fmt: skip
    seed_cmd.set_defaults(run=_import_seed)
    merge_cmd = commands.add_parser("merge", help="Merge the run folders of a sharded run into one run.")
    merge_cmd.add_argument("run_dirs", nargs="+", help="reports/<run-id> folders, one per shard.")
    merge_cmd.add_argument("--out", required=True, help="New run folder to write.")
    merge_cmd.set_defaults(run=_merge)
    compare_cmd = commands.add_parser(
        "compare", help="Put runs side by side: rows = runs, columns = variants, per metric."
    )
    compare_cmd.add_argument("run_dirs", nargs="+", help="reports/<run-id> folders.")
    compare_cmd.add_argument(
        "--name", action="append", default=[], help="Row name for each run, in order (default: guardrail/tutor/judge)."
    )
    compare_cmd.add_argument(
        "--out", help="Folder for compare.csv (long form), compare.md and compare.html (default: print markdown only)."
    )
    compare_cmd.set_defaults(run=_compare)
    quality_cmd = commands.add_parser("judge-quality", help="Score a judge against human-labelled responses (JSONL).")
    quality_cmd.add_argument(
        "labels",
        help="JSONL: id, prompt, response, human_label (safe|unsafe), optional answer_mode, assistant_policy_label, "
        "bucket, is_harmful, category, source, split.",
    )
    quality_cmd.add_argument(
        "--judge", default="offline", help="offline, rules, a model alias, openai:<model> or vllm:<model>@<url>."
    )
    quality_cmd.add_argument("--split", help="Only the rows of this split (e.g. test).")
    quality_cmd.add_argument(
        "--min-kappa", type=float, default=0.6, help="Cohen's kappa below which the judge is low-confidence (exit 1)."
    )
    quality_cmd.add_argument("--json", action="store_true", help="Print the full result as JSON.")
    quality_cmd.set_defaults(run=_judge_quality)
    audit_cmd = commands.add_parser(
        "audit", help="Label a stratified sample of a finished run by hand (judge-labels JSONL)."
    )
    audit_cmd.add_argument("run_dir", help="A reports/<run-id> folder.")
    audit_cmd.add_argument(
        "--sample",
        type=int,
        default=50,
        help="Cases to label (default 50), one from each outcome x answer mode x variant in turn.",
    )
    audit_cmd.add_argument(
        "--seed", type=int, default=0, help="Seed of the sample (default 0); the same seed gives the same cases."
    )
    audit_cmd.add_argument("--out", help="Labels file (default RUN_DIR/audit.jsonl); an existing one is resumed.")
    audit_cmd.set_defaults(run=_audit)
    screening.add_parser(commands)
    labeller_agreement.add_parser(commands)
    list_cmd = commands.add_parser("mutators", help="List the mutators by family.")
    list_cmd.set_defaults(run=_list)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
