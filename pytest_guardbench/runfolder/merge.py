"""Merging the shards of one run into one run folder: one scorecard over all their records, with every
shard's missing cases, and every block the unsharded run would have had (usage, execution, internal
errors, worker crashes, the reasons a shard is incomplete)."""

from __future__ import annotations

from pytest_guardbench.document.meta import RunMeta
from pytest_guardbench.document.meta import meta_json
from pytest_guardbench.document.read import read_meta

from pytest_guardbench.document.meta import MergedMeta

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pytest_guardbench._util.redact import redact, redact_json
from pytest_guardbench.errors import DataError, UsageError
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.runfolder.execution import merged_execution
from pytest_guardbench.runfolder.finish import carried_reasons, told_warnings
from pytest_guardbench.document.read import record_ids, iter_records, load_run
from pytest_guardbench.audit.label_files import carried_labels, load_run_labels, recorded_files
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.runfolder.rescored import missing_cases_of, write_rescored_run
from pytest_guardbench.document.read import read_json_object
from pytest_guardbench.document.metrics import Usage
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.scoring.usage_tally import UsageTally
from pytest_guardbench.document.summary import RunInfo, RunSummary, Selection


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
# Settings (meta.json) that change which cases a run has or what they say, beyond the stack: the
# attacker and its turns (attack conversations), which categories label an item harmful, the bar the
# judge is held to. Compared where both shards recorded them (older folders may not have).
MERGE_SETTINGS_MUST_MATCH = ("attacker", "attacker_turns", "harmful_categories", "min_judge_kappa", "policy")
# The texts the tutor was given and the guard's refusal, and the models behind each role as far as
# they change an answer (not where or how fast they were reached).
MERGE_META_MUST_MATCH = ("system_prompt_sha256", "refusal_text_sha256", "packs")
TRANSPORT_KEYS = frozenset(
    {
        "alias",
        "base_url",
        "base_url_env",
        "fleet",
        "failures_to_drop",
        "breaker_after",
        "cooldown_s",
        "batch_api",
        "batch_poll_s",
        "batch_completion_window",
        "api_key_env",
        "concurrency",
        "processes",
        "timeout_s",
        "max_retries",
        "retry_backoff_s",
        "device",
    }
)


def merge_runs(run_dirs: Sequence[Path], out: Path, labels: Sequence[Path] = (), drop_labels: bool = False) -> Path:
    """One run from the shards of a sharded run: one scorecard over all their records, carrying every
    shard's missing cases. Refuses shards that overlap or come from other stacks, data, selections,
    settings or thresholds; a merge short of some of the n shards is written, marked incomplete, and
    fails its gate. Shards corrected by the same labels give them to the merged run (`labels`: the files
    where they are now); shards corrected otherwise are refused (`merged_labels`), unless `drop_labels`."""
    summaries = []
    for run_dir in run_dirs:
        if not (run_dir / "summary.json").is_file():
            raise MergeError(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
        if not (run_dir / "results.jsonl").is_file():
            raise MergeError(f"{run_dir}: no results.jsonl (expected a finished reports/<run-id> folder)")
        summaries.append(load_run(run_dir))
    _check_mergeable(run_dirs, summaries)
    carried = None if drop_labels else merged_labels(run_dirs, summaries, labels)
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
    manifests = [read_json_object(d / "data_manifest.json") for d in run_dirs]
    selection = Selection.model_validate(
        _merged_selection(summaries, sorted(shards), absent, len(records) + len(missing))
    )
    reasons = _unique(reason for summary in summaries for reason in carried_reasons(summary))
    # What the shards' runs were told (a demo stack, a served model), once each; the rest the records say again.
    warnings = _unique(warning for summary in summaries for warning in told_warnings(summary))
    if absent:
        reasons.append(f"shard(s) {', '.join(absent)} not merged: their cases are unmeasured")
    write_rescored_run(
        out,
        _all_records(run_dirs),
        first.model_copy(update={"selection": selection}),
        run=_merged_info(run_dirs, summaries, out),
        manifest=redact_json({"merged_from": manifests, "cases": len(records) + len(missing)}),
        meta=MergedMeta(merged_from=[str(d) for d in run_dirs], policy=first.policy),
        policy=policy_named(first.policy),
        missing=missing,
        incomplete_reasons=reasons,
        # Every shard ran the same judge against the same audit file (_check_mergeable), so its check
        # holds for the merged run; shards that disagree carry none rather than one of them.
        judge_quality=first.judge_quality if all(s.judge_quality == first.judge_quality for s in summaries) else None,
        confidence=first.confidence if all(s.confidence == first.confidence for s in summaries) else None,
        labels=carried,
        warnings=warnings,
    )
    return out


def merged_labels(run_dirs: Sequence[Path], summaries: Sequence[RunSummary], given: Sequence[Path]) -> RunLabels | None:
    """The labels of a merge: those given, else those every shard was corrected with, the same files for
    all (one draw over the whole run, so they correct all its cases). Shards corrected by other files, or
    some corrected and some not, are refused: labels drawn from a part of the run cannot correct it all,
    and the merge must not turn a corrected run judge-only without a word."""
    files = [tuple(recorded_files(s)) for s in summaries]
    if given:
        design = next((s.corrected.labels.design for s in summaries if s.corrected is not None), None)
        return load_run_labels(list(given), design)
    if not any(files):
        return None
    if len(set(files)) > 1:
        said = "; ".join(
            f"{d} {'by ' + ', '.join(map(str, f)) if f else 'not corrected'}"
            for d, f in zip(run_dirs, files, strict=True)
        )
        raise MergeError(
            f"the shards were corrected by other labels ({said}): labels drawn from a part of the run cannot correct "
            "the merged run; merge with --no-labels (the merged run is then judge-only), then audit and correct it, "
            "or give labels drawn from the whole run with --labels FILE"
        )
    return carried_labels(
        summaries[0],
        how_to_give="guardbench merge ... --labels FILE, once for each file",
        how_to_leave="merge with --no-labels: the merged run is then judge-only",
    )


def _merged_selection(
    summaries: Sequence[RunSummary], shards: list[str], absent: list[str], selected: int
) -> dict[str, object]:
    """The selection block the unsharded run would have had, and the shards it was made of."""
    first = summaries[0].selection
    block: dict[str, object] = {"keyword": first.keyword, "markexpr": first.markexpr, "selected_cases": selected}
    totals = [s.selection.total_cases for s in summaries]
    if all(t is not None for t in totals):  # each shard's own slice: together, every case of the run
        total = sum(t or 0 for t in totals)
        block.update(total_cases=total, partial=selected < total)
    return {**block, "merged_shards": shards, **({"absent_shards": absent} if absent else {})}


def _all_records(run_dirs: Sequence[Path]) -> Iterator[CaseRecord]:
    # Each record takes the redaction pass again: a shard written by an older version may hold a key.
    return (record.redacted() for run_dir in run_dirs for record in iter_records(run_dir))


def _unique(items: Iterator[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _merged_info(run_dirs: Sequence[Path], summaries: Sequence[RunSummary], out: Path) -> RunInfo:
    """The `run` block: what the unsharded run would have said, from each shard's (timings aside)."""
    return RunInfo(
        run_id=out.name,
        merged_from=[str(d) for d in run_dirs],
        worker_crashes=[crash for s in summaries for crash in s.run.worker_crashes],
        internal_errors=[error for s in summaries for error in s.run.internal_errors],
        # Each shard ran with the whole concurrency limit: the merged lowest is the lowest of theirs.
        execution=merged_execution((s.run.execution for s in summaries), shared_limit=False),
        usage=_merged_usage(run_dirs, summaries),
    )


def _merged_usage(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> Usage | None:
    """Stage times and tokens counted again over every shard's records (percentiles do not add up);
    the cost is the shards' costs added up (the price table is the project's, not the merge's),
    unknown when any shard's is. None when no shard had a usage block."""
    given = [s.run.usage for s in summaries]
    if all(u is None for u in given):
        return None
    tally = UsageTally()
    for run_dir in run_dirs:
        for record in iter_records(run_dir):
            tally.add(record)
    counted = tally.usage({})

    def added(costs: list[float | None]) -> float | None:
        return None if not costs or any(c is None for c in costs) else round(math.fsum(c or 0.0 for c in costs), 6)

    tutor_cost = added([u.tutor_cost_usd if u is not None else None for u in given])
    note = next((u.cost_note for u in given if u is not None and u.cost_note), None) if tutor_cost is None else None
    attacker = [u.attacker_cost_usd for u in given if u is not None and u.attacker_tokens is not None]
    return counted.model_copy(
        update={
            "tutor_cost_usd": tutor_cost if counted.tutor_tokens.answers else None,
            "cost_note": note if counted.tutor_tokens.answers else None,
            "attacker_cost_usd": added(attacker) if counted.attacker_tokens is not None else None,
        }
    )


def _check_mergeable(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> None:
    first = summaries[0]
    digests = _source_digests(run_dirs[0])
    first_meta = _shard_meta(run_dirs[0])
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
            raise MergeError(
                f"{run_dir}: judged by judge {summary.judge_id}, but {run_dirs[0]} by {first.judge_id} "
                "(stack.judge_id: another judge, or the same judge with another model, instruction or code)"
            )
        if summary.thresholds != first.thresholds:
            raise MergeError(f"{run_dir}: thresholds differ from {run_dirs[0]}")
        if _source_digests(run_dir) != digests:
            raise MergeError(
                f"{run_dir}: ran on other data than {run_dirs[0]} "
                "(the packs in data_manifest.json differ by name or sha256)"
            )
        _check_same_meta(run_dir, _shard_meta(run_dir), run_dirs[0], first_meta)


_ABSENT = object()


def _shard_meta(run_dir: Path) -> Mapping[str, object]:
    """A shard's meta.json as a document ({} when it has none); a folder another command wrote
    (a merge, a rejudge) is not a shard."""
    meta = read_meta(run_dir)
    if meta is None:
        return {}
    if not isinstance(meta, RunMeta):
        raise MergeError(f"{run_dir}: not a shard of a pytest run (its meta.json was written by another command)")
    return meta_json(meta)


def _check_same_meta(run_dir: Path, meta: Mapping[str, object], first_dir: Path, first: Mapping[str, object]) -> None:
    """Shards that ran with other settings (meta.json) are not one run, even when their stacks agree.
    Compared where both recorded the key (a folder written by an older version may not have)."""
    pairs = [
        (f"settings.{key}", _at(meta, "settings", key), _at(first, "settings", key))
        for key in MERGE_SETTINGS_MUST_MATCH
    ]
    pairs += [(key, meta.get(key, _ABSENT), first.get(key, _ABSENT)) for key in MERGE_META_MUST_MATCH]
    mine, theirs = _models(meta), _models(first)
    if mine is not None and theirs is not None:
        pairs += [(f"models.{role}", mine.get(role), theirs.get(role)) for role in sorted(set(mine) | set(theirs))]
    for key, value, other in pairs:
        if value is not _ABSENT and other is not _ABSENT and value != other:
            raise MergeError(f"{run_dir}: meta.json {key} is {_shown(value)}, but {first_dir} has {_shown(other)}")


def _at(document: Mapping[str, object], table: str, key: str) -> object:
    block = document.get(table)
    return block.get(key, _ABSENT) if isinstance(block, dict) else _ABSENT


def _models(meta: Mapping[str, object]) -> dict[str, object] | None:
    models = meta.get("models")
    if not isinstance(models, dict):
        return None
    return {
        role: {k: v for k, v in spec.items() if k not in TRANSPORT_KEYS} if isinstance(spec, dict) else spec
        for role, spec in models.items()
    }


def _shown(value: object) -> str:
    text = redact(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return text if len(text) <= 120 else text[:117] + "..."


def _absent_shards(run_dirs: Sequence[Path], summaries: Sequence[RunSummary]) -> list[str]:
    """The i/n shards a sharded run is missing; `MergeError` for shards that cannot be one run."""
    given = [s.selection.shard for s in summaries]
    if not any(given):
        return []
    shards = [shard for shard in given if shard]
    if len(shards) < len(given):
        plain = [str(d) for d, shard in zip(run_dirs, given, strict=True) if not shard]
        raise MergeError(f"{', '.join(plain)}: not a shard, but the other folders are shards of one run")
    parsed = []
    for run_dir, shard in zip(run_dirs, given, strict=True):
        index, _, total = (shard or "").partition("/")
        if not (index.isascii() and index.isdigit() and total.isascii() and total.isdigit()) or not 1 <= int(
            index
        ) <= int(total):
            raise MergeError(f"{run_dir}: selection.shard {shard!r} in summary.json is not i/n")
        parsed.append((int(index), int(total)))
    totals = {total for _, total in parsed}
    if len(totals) != 1:
        raise MergeError(f"incompatible shards {shards}: expected i/n of one n")
    if len(set(parsed)) != len(parsed):
        raise MergeError(f"shard given twice: {sorted(shards)}")
    n = totals.pop()
    given_indexes = {index for index, _ in parsed}
    return [f"{i}/{n}" for i in range(1, n + 1) if i not in given_indexes]


def _source_digests(run_dir: Path) -> list[tuple[str, str]]:
    path = run_dir / "data_manifest.json"
    sources = read_json_object(path).get("sources", [])
    if not isinstance(sources, list) or not all(
        isinstance(s, dict) and isinstance(s.get("path"), str) and isinstance(s.get("sha256"), str) for s in sources
    ):
        raise DataError("sources must be a list of {path, sha256} objects", path=path)
    return sorted((Path(s["path"]).name, s["sha256"]) for s in sources)
