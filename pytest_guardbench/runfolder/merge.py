"""Merging the shards of one run into one run folder: one scorecard over all their records, with every
shard's missing cases."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.errors import UsageError
from pytest_guardbench.runfolder.labels import carried_labels
from pytest_guardbench.runfolder.rescored import missing_cases_of, read_json, write_rescored_run
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.results.summary import RunInfo, RunSummary, Selection, iter_records, load_run, record_ids


class MergeError(UsageError):
    """Run folders that cannot be merged into one run; the message names the folder and what differs."""


MERGE_MUST_MATCH = (
    "guardrail",
    "tutor",
    "judge",
    "malformed_policy",
    "system_prompt",
    "samples",
    "judge_samples",
    "max_new_tokens",
    "variants",
)
MERGE_SELECTION_MUST_MATCH = ("keyword", "markexpr")


def merge_runs(run_dirs: Sequence[Path], out: Path) -> Path:
    """One run from the shards of a sharded run: one scorecard over all their records, carrying every
    shard's missing cases. Refuses shards that overlap or come from other stacks, data, selections or
    thresholds; a merge short of some of the n shards is written, marked incomplete, and fails its gate."""
    summaries = []
    for run_dir in run_dirs:
        if not (run_dir / "summary.json").is_file():
            raise MergeError(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
        summaries.append(load_run(run_dir))
    _check_mergeable(run_dirs, summaries)
    absent = _absent_shards(run_dirs, summaries)
    first = summaries[0]
    owner: dict[str, Path] = {}
    for run_dir in run_dirs:
        for case_id in record_ids(run_dir):
            if case_id in owner:
                raise MergeError(f"{run_dir}: case {case_id} is also in {owner[case_id]} (overlapping shards)")
            owner[case_id] = run_dir
    records = owner  # the case ids measured
    missing = [case for summary in summaries for case in missing_cases_of(summary) if case.case_id not in records]
    shards = [s.selection.shard for s in summaries if s.selection.shard]
    manifests = [read_json(d / "data_manifest.json") for d in run_dirs]
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
        # Shards corrected with one labels file give it to the merged run, which corrects all its cases with it.
        labels=carried_labels(first) if all(_labels_file(s) == _labels_file(first) for s in summaries) else None,
    )
    return out


def _labels_file(summary: RunSummary) -> str | None:
    return summary.corrected.labels.labels_file if summary.corrected is not None else None


def _check_mergeable(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> None:
    first = summaries[0]
    digests = _source_digests(run_dirs[0])
    for run_dir, summary in zip(run_dirs[1:], summaries[1:], strict=True):
        if summary.policy != first.policy:
            raise MergeError(f"{run_dir}: scored under policy {summary.policy}, but {run_dirs[0]} under {first.policy}")
        for key in MERGE_MUST_MATCH:
            mine, theirs = getattr(summary.stack, key), getattr(first.stack, key)
            if mine != theirs:
                raise MergeError(f"{run_dir}: stack.{key} is {mine!r}, but {run_dirs[0]} has {theirs!r}")
        for key in MERGE_SELECTION_MUST_MATCH:
            mine, theirs = getattr(summary.selection, key), getattr(first.selection, key)
            if mine != theirs:
                raise MergeError(f"{run_dir}: selection {key} {mine!r} differs from {run_dirs[0]}'s {theirs!r}")
        # Checked where both runs name their judge: runs written before records named it may not.
        if summary.judge_id and first.judge_id and summary.judge_id != first.judge_id:
            raise MergeError(f"{run_dir}: judged by judge {summary.judge_id}, but {run_dirs[0]} by {first.judge_id} "
                             "(stack.judge_id: another judge, or the same judge with another model, instruction or code)")  # fmt: skip
        if summary.thresholds != first.thresholds:
            raise MergeError(f"{run_dir}: thresholds differ from {run_dirs[0]}")
        if _source_digests(run_dir) != digests:
            raise MergeError(
                f"{run_dir}: ran on other data than {run_dirs[0]} (the packs in data_manifest.json differ by name or sha256)"
            )


def _absent_shards(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> list[str]:
    """The i/n shards a sharded run is missing; `MergeError` for shards that cannot be one run."""
    given = [s.selection.shard for s in summaries]
    if not any(given):
        return []
    shards = [shard for shard in given if shard]
    if len(shards) < len(given):
        plain = [str(d) for d, shard in zip(run_dirs, given, strict=True) if not shard]
        raise MergeError(f"{', '.join(plain)}: not a shard, but the other folders are shards of one run")
    totals = {shard.split("/")[1] for shard in shards}
    if len(totals) != 1:
        raise MergeError(f"incompatible shards {shards}: expected i/n of one n")
    if len(set(shards)) != len(shards):
        raise MergeError(f"shard given twice: {sorted(shards)}")
    total = int(totals.pop())
    return [f"{i}/{total}" for i in range(1, total + 1) if f"{i}/{total}" not in shards]


def _source_digests(run_dir: Path) -> list[tuple[str, str]]:
    manifest = read_json(run_dir / "data_manifest.json")
    return sorted((Path(s["path"]).name, s["sha256"]) for s in manifest.get("sources", []))
