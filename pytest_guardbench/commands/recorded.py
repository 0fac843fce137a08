"""The guardbench subcommands that write a run folder from runs already recorded: `rejudge` (the
same responses, another judge), `import-seed` (a run in the seed project's format) and `merge` (the
shards of one run). Each streams its records through the finish step (`results.finish`), like a
pytest session; the CLI parses and prints.
Also the pack `expand` writes, so reviewers can diff the exact prompts a run will use."""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_guardbench.settings.config import Thresholds
from pytest_guardbench.cases.sources import load_sources, slug
from pytest_guardbench.results.finish import RecordCounts, build_summary, carried_reasons, write_artifacts
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.judges.llm import LLMJudge
from pytest_guardbench.settings.model_specs import default_model_cache, model_aliases
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, ScoringPolicy, policy_named
from pytest_guardbench.results.summary import RunInfo, RunSummary, Selection, Stack, iter_records, load_run, record_ids
from pytest_guardbench.scoring.blocks import Confidence
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.run.folder import ResultsWriter
from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.results.minor_bench import load_seed_results
from pytest_guardbench.run.judge_factory import standalone_judge
from pytest_guardbench.run.roles import resolve_role
from pytest_guardbench.run.units import builtin_judges
from pytest_guardbench.settings.options import ConfigError
from pytest_guardbench.cases.variants import expand


def rejudge_run(
    run_dir: Path, judge_name: str, *, root: Path, now: datetime | None = None, policy: str | None = None
) -> Path:
    """Re-judge every final response of a finished run with another judge (no guard or tutor call)
    and write a new summary into a sub-folder of the run; the original files are never touched.
    The run is scored under `policy`, by default the policy of the original run."""
    if not record_ids(run_dir):
        raise ValueError(f"{run_dir}: results.jsonl holds no records")
    original_summary = load_run(run_dir) if (run_dir / "summary.json").is_file() else None
    scoring_policy = policy_named(policy or (original_summary.policy if original_summary else "refusal"))
    stamp = f"{(now or datetime.now(UTC)).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    out = run_dir / f"rejudged-{slug(judge_name)}-{stamp}"
    manifest_path = run_dir / "data_manifest.json"
    judged = [0]
    # The run's judge check measured this very judge only when it is the same one: then it still holds.
    same_judge = (
        original_summary if original_summary is not None and original_summary.stack.judge == judge_name else None
    )
    with opened_judge(judge_name, root) as judge:
        write_rescored_run(
            out,
            _rejudged(iter_records(run_dir), judge, judged),
            original_summary,
            run=RunInfo(
                run_id=f"{_run_id(original_summary, run_dir)}/{out.name}", rejudged_from=str(run_dir), judge=judge_name
            ),
            manifest=json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {},
            meta=lambda: {
                "rejudged_from": str(run_dir),
                "judge": judge_name,
                "cases_rejudged": judged[0],
                "policy": scoring_policy.name,
            },
            policy=scoring_policy,
            missing=missing_cases_of(original_summary) if original_summary else [],
            incomplete_reasons=carried_reasons(original_summary),
            judge_quality=same_judge.judge_quality if same_judge else None,
            confidence=same_judge.confidence if same_judge else None,
        )
    return out


def _rejudged(records: Iterable[CaseRecord], judge: Judge, judged: list[int]) -> Iterator[CaseRecord]:
    """Records with fresh verdicts for every final response (errored cases are kept as they are),
    judged 32 at a time; `judged[0]` counts the verdicts given."""
    batch: list[CaseRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == 32:
            yield from _rejudge_batch(batch, judge, judged)
            batch = []
    yield from _rejudge_batch(batch, judge, judged)


def _rejudge_batch(batch: list[CaseRecord], judge: Judge, judged: list[int]) -> list[CaseRecord]:
    to_judge = [(r, r.response) for r in batch if r.error is None and r.response is not None]
    verdicts = (
        judge.judge([JudgeInput(r.prompt_text, reply.text, reply.source, r.is_harmful) for r, reply in to_judge])
        if to_judge
        else []
    )
    judged[0] += len(to_judge)
    new_verdicts = {r.case_id: v for (r, _), v in zip(to_judge, verdicts, strict=True)}
    return [r.model_copy(update={"judge": new_verdicts[r.case_id]}) if r.case_id in new_verdicts else r for r in batch]


def import_seed_run(
    results: Path,
    out: Path,
    judge_name: str,
    *,
    root: Path,
    harmful_categories: Sequence[str],
    pack: str | None = None,
    policy: str = DEFAULT_POLICY,
    safety_source: str | None = None,
) -> Path:
    """Rescore a run recorded in the seed's format with our scoring: with the seed's own judge labels
    (`judge_name == "recorded"`, to compare with the summary that run shipped) or re-judged."""
    imported = load_seed_results(results, harmful_categories, pack, safety_source)
    records = imported.records
    if judge_name != "recorded":
        with opened_judge(judge_name, root) as judge:
            records = list(_rejudged(records, judge, [0]))
    scoring_policy = policy_named(policy)
    source = {
        "path": str(results),
        "format": "seed-results",
        "sha256": hashlib.sha256(results.read_bytes()).hexdigest(),
    }
    write_rescored_run(
        out,
        records,
        None,
        run=RunInfo(run_id=out.name, imported_from=str(results), judge=judge_name),
        manifest={
            "sources": [source],
            "cases": len(records),
            "seed_safety_source": imported.safety_source,
            "import_notes": dict(sorted(imported.notes.items())),
        },
        meta={"imported_from": str(results), "judge": judge_name, "policy": scoring_policy.name},
        policy=scoring_policy,
    )
    return out


MERGE_MUST_MATCH = (
    "guardrail",
    "tutor",
    "judge",
    "malformed_policy",
    "system_prompt",
    "samples",
    "max_new_tokens",
    "variants",
)
MERGE_SELECTION_MUST_MATCH = ("keyword", "markexpr")


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _source_digests(run_dir: Path) -> list[tuple[str, str]]:
    manifest = _read_json(run_dir / "data_manifest.json")
    return sorted((Path(s["path"]).name, s["sha256"]) for s in manifest.get("sources", []))


def missing_cases_of(summary: RunSummary) -> list[Case]:
    """The cases a run selected but never measured, as its summary lists them. Older summaries list
    only ids; those come back unlabelled, still counted as missing."""
    coverage = summary.coverage
    if coverage.missing_cases is not None:
        return list(coverage.missing_cases)
    return [Case(case_id=cid, pack="?", item_id=cid, base_prompt_id=cid, variant="?", prompt_text="?", is_harmful=None, label_source="unlabelled",
                 category=None, source_file="") for cid in coverage.missing_case_ids]  # fmt: skip


def _run_id(summary: RunSummary | None, run_dir: Path) -> str:
    return summary.run.run_id if summary is not None and summary.run.run_id is not None else run_dir.name


def _check_mergeable(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> None:
    first = summaries[0]
    digests = _source_digests(run_dirs[0])
    for run_dir, summary in zip(run_dirs[1:], summaries[1:], strict=True):
        if summary.policy != first.policy:
            raise ValueError(f"{run_dir}: scored under policy {summary.policy}, but {run_dirs[0]} under {first.policy}")
        for key in MERGE_MUST_MATCH:
            mine, theirs = getattr(summary.stack, key), getattr(first.stack, key)
            if mine != theirs:
                raise ValueError(f"{run_dir}: stack.{key} is {mine!r}, but {run_dirs[0]} has {theirs!r}")
        for key in MERGE_SELECTION_MUST_MATCH:
            mine, theirs = getattr(summary.selection, key), getattr(first.selection, key)
            if mine != theirs:
                raise ValueError(f"{run_dir}: selection {key} {mine!r} differs from {run_dirs[0]}'s {theirs!r}")
        if summary.thresholds != first.thresholds:
            raise ValueError(f"{run_dir}: thresholds differ from {run_dirs[0]}")
        if _source_digests(run_dir) != digests:
            raise ValueError(
                f"{run_dir}: ran on other data than {run_dirs[0]} (the packs in data_manifest.json differ by name or sha256)"
            )


def _absent_shards(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> list[str]:
    """The i/n shards a sharded run is missing; ValueError for shards that cannot be one run."""
    given = [s.selection.shard for s in summaries]
    if not any(given):
        return []
    shards = [shard for shard in given if shard]
    if len(shards) < len(given):
        plain = [str(d) for d, shard in zip(run_dirs, given, strict=True) if not shard]
        raise ValueError(f"{', '.join(plain)}: not a shard, but the other folders are shards of one run")
    totals = {shard.split("/")[1] for shard in shards}
    if len(totals) != 1:
        raise ValueError(f"incompatible shards {shards}: expected i/n of one n")
    if len(set(shards)) != len(shards):
        raise ValueError(f"shard given twice: {sorted(shards)}")
    total = int(totals.pop())
    return [f"{i}/{total}" for i in range(1, total + 1) if f"{i}/{total}" not in shards]


def merge_runs(run_dirs: Sequence[Path], out: Path) -> Path:
    """One run from the shards of a sharded run: one scorecard over all their records, carrying every
    shard's missing cases. Refuses shards that overlap or come from other stacks, data, selections or
    thresholds; a merge short of some of the n shards is written, marked incomplete, and fails its gate."""
    summaries = []
    for run_dir in run_dirs:
        if not (run_dir / "summary.json").is_file():
            raise ValueError(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
        summaries.append(load_run(run_dir))
    _check_mergeable(run_dirs, summaries)
    absent = _absent_shards(run_dirs, summaries)
    first = summaries[0]
    owner: dict[str, Path] = {}
    for run_dir in run_dirs:
        for case_id in record_ids(run_dir):
            if case_id in owner:
                raise ValueError(f"{run_dir}: case {case_id} is also in {owner[case_id]} (overlapping shards)")
            owner[case_id] = run_dir
    records = owner  # the case ids measured
    missing = [case for summary in summaries for case in missing_cases_of(summary) if case.case_id not in records]
    shards = [s.selection.shard for s in summaries if s.selection.shard]
    manifests = [_read_json(d / "data_manifest.json") for d in run_dirs]
    selection = Selection(keyword=first.selection.keyword, markexpr=first.selection.markexpr, merged_shards=sorted(shards),
                          absent_shards=absent, selected_cases=len(records) + len(missing))  # fmt: skip
    write_rescored_run(
        out,
        (record for run_dir in run_dirs for record in iter_records(run_dir)),
        first.model_copy(update={"selection": selection}),
        run=RunInfo(run_id=out.name, merged_from=[str(d) for d in run_dirs]),
        manifest={"merged_from": manifests, "cases": len(records) + len(missing)},
        meta={"merged_from": [str(d) for d in run_dirs], "policy": first.policy},
        policy=policy_named(first.policy),
        missing=missing,
        incomplete_reasons=[f"shard(s) {', '.join(absent)} not merged: their cases are unmeasured"] if absent else [],
        # Every shard ran the same judge against the same audit file (_check_mergeable), so its check
        # holds for the merged run; shards that disagree carry none rather than one of them.
        judge_quality=first.judge_quality if all(s.judge_quality == first.judge_quality for s in summaries) else None,
        confidence=first.confidence if all(s.confidence == first.confidence for s in summaries) else None,
    )
    return out


def write_rescored_run(
    out: Path,
    records: Iterable[CaseRecord],
    original_summary: RunSummary | None,
    *,
    run: RunInfo,
    manifest: dict[str, Any],
    meta: dict[str, Any] | Callable[[], dict[str, Any]],
    policy: ScoringPolicy,
    missing: Sequence[Case] = (),
    incomplete_reasons: Sequence[str] = (),
    judge_quality: dict[str, Any] | None = None,
    confidence: Confidence | None = None,
) -> None:
    """Write `records` to a new run folder at `out` as they come, counting them, then score them
    under `policy` and write the rest of the folder. The expected set is the records plus
    `missing`, the cases the source selected but never measured. `meta` may be a function, for
    counts known only once every record went past. `judge_quality` and `confidence`: the judge
    check of the same judge, carried over (a merge of one run's shards)."""
    thresholds = original_summary.thresholds if original_summary else Thresholds()
    unknown = {"guardrail": "?", "tutor": "?", "malformed_policy": "?"}
    given = original_summary.stack.model_dump() if original_summary else {}
    stack = Stack.model_validate(
        {**unknown, **given, "policy": policy.name} | ({"judge": run.judge} if run.judge is not None else {})
    )
    out.mkdir(parents=True)
    counts = RecordCounts.under(RunTally(policy, thresholds.min_recall or 0.9))
    writer = ResultsWriter(out / "results.jsonl")
    try:
        for record in records:
            writer.write(record)
            counts.add(record)
    finally:
        writer.close()
    summary = build_summary(counts.tally, thresholds, run=run, stack=stack, selection=original_summary.selection if original_summary else Selection(),
                            missing=missing, incomplete_reasons=incomplete_reasons, judge_quality=judge_quality,
                            confidence=confidence)  # fmt: skip
    write_artifacts(out, summary, counts.picks, manifest=manifest, meta=meta() if callable(meta) else meta)


@contextlib.contextmanager
def opened_judge(name: str, root: Path) -> Iterator[Judge]:
    """A judge whose model connection is closed when the command is done with it (an API judge
    holds an HTTP session that would otherwise be reported unclosed at exit)."""
    judge = _judge_for(name, root)
    try:
        yield judge
    finally:
        if isinstance(judge, LLMJudge):
            judge.provider.close()  # type: ignore[attr-defined]  # every provider has close(); the Protocol omits it


def _judge_for(name: str, root: Path) -> Judge:
    """The judge a run would build for `--judge=name` (the same resolution and errors)."""
    judges = builtin_judges()
    try:
        spec = resolve_role("judge", name, judges.names(), model_aliases(root))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return standalone_judge(name, spec, default_model_cache(), judges)


def expanded_pack(path: Path, variants: Sequence[str], harmful_categories: Sequence[str]) -> dict[str, Any]:
    """The pack at `path` with every item expanded into the given variants, in loader format.

    Variant items get id `<item>--<variant>`, `metadata.variant`, `metadata.base_prompt_id` and a
    `variant:<name>` tag, so loading the result and selecting the same variants reproduces the run.
    """
    data = load_sources([path], harmful_categories)
    by_id = {item.item_id: item for item in data.items}
    document = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else {}
    items = []
    for case in expand(list(data.items), tuple(variants)):
        source = by_id[case.item_id]
        metadata = dict(source.metadata)
        if case.variant != source.variant:
            metadata.update(
                variant=case.variant,
                base_prompt_id=source.base_prompt_id,
                variant_tags=[f"variant:{case.variant}"],
                mutator_family=case.variant_family,
            )
        item_id = source.item_id if case.variant == source.variant else f"{source.item_id}--{case.variant}"
        items.append({"id": item_id, "prompt_text": case.prompt_text, "metadata": metadata})
    return {
        "name": data.sources[0].pack,
        "source": f"{document.get('source') or path.name}; expanded by pytest-guardbench ({', '.join(variants)})",
        "subset": document.get("subset"),
        "items": items,
    }
