"""Re-judging a finished run: every final response judged again by another judge (no guard or tutor
call), scored and written to a sub-folder of the run."""

from __future__ import annotations

from pytest_guardbench.document.meta import RejudgedMeta

import secrets
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pytest_guardbench._util.redact import redact_json
from pytest_guardbench.errors import DataError
from pytest_guardbench.audit.label_files import carried_labels
from pytest_guardbench.runfolder.rescored import missing_cases_of, run_id_of, write_rescored_run
from pytest_guardbench.document.read import read_json_object
from pytest_guardbench.run import judge_quality
from pytest_guardbench.run.judge_factory import opened_judge
from pytest_guardbench.cases.sources import slug
from pytest_guardbench.runfolder.finish import carried_reasons
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.document.summary import RunInfo, RunSummary, StackInfo
from pytest_guardbench.document.read import record_ids, iter_records, load_run
from pytest_guardbench.runfolder.folder import removed_on_failure
from pytest_guardbench.records import CaseRecord, JudgeVerdict
from pytest_guardbench.run.conversation import replies_to_judge, with_turn_verdicts


def rejudge_run(
    run_dir: Path,
    judge_name: str,
    *,
    root: Path,
    now: datetime | None = None,
    policy: str | None = None,
    samples: int = 1,
    labels: Sequence[Path] = (),
    drop_labels: bool = False,
) -> Path:
    """Re-judge every final response of a finished run with another judge (no guard or tutor call),
    asked `samples` times per response, and write a new summary into a sub-folder of the run; the
    original files are never touched. The run is scored under `policy`, by default the policy of
    the original run. A corrected run's labels correct the rejudged run too (`labels`: the files where
    they are now, when they moved); `MissingLabels` when they are gone, unless `drop_labels`."""
    if not record_ids(run_dir):
        raise DataError("holds no records", path=run_dir / "results.jsonl")
    original_summary = load_run(run_dir) if (run_dir / "summary.json").is_file() else None
    # Labels measure the replies, not the judge: the new judge is corrected by the same labels.
    carried = (
        None
        if drop_labels
        else carried_labels(
            original_summary,
            labels,
            how_to_give=f"guardbench rejudge {run_dir} --labels FILE, once for each file",
            how_to_leave="rejudge with --no-labels: the rejudged run is then judge-only",
        )
    )
    scoring_policy = policy_named(policy or (original_summary.policy if original_summary else "refusal"))
    stamp = f"{(now or datetime.now(UTC)).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    out = run_dir / f"rejudged-{slug(judge_name)}-{stamp}"
    manifest = read_json_object(run_dir / "data_manifest.json")
    judged = [0]
    with opened_judge(judge_name, root, samples) as judge, removed_on_failure(out):
        new_id = judge_quality.judge_id(judge_quality.named_judge_identity(judge, judge_name, root))
        source = _with_judge(original_summary, judge_name, samples) if original_summary is not None else None
        # The run's judge check measured this very judge only when it is the same one: then it still holds.
        checked = original_summary if _checked(original_summary, new_id) else None
        write_rescored_run(
            out,
            rejudged(iter_records(run_dir), judge, judged, new_id),
            source,
            run=RunInfo(
                run_id=f"{run_id_of(original_summary, run_dir)}/{out.name}",
                rejudged_from=str(run_dir),
                judge=judge_name,
            ),
            manifest=redact_json(manifest),
            meta=lambda: RejudgedMeta(
                rejudged_from=str(run_dir),
                judge=judge_name,
                judge_id=new_id,
                cases_rejudged=judged[0],
                policy=scoring_policy.name,
                **({"judge_samples": samples} if samples > 1 else {}),
            ),
            policy=scoring_policy,
            missing=missing_cases_of(original_summary) if original_summary else [],
            incomplete_reasons=carried_reasons(original_summary),
            judge_quality=checked.judge_quality if checked else None,
            confidence=checked.confidence if checked else None,
            labels=carried,
        )
    return out


def _with_judge(summary: RunSummary, judge_name: str, samples: int) -> RunSummary:
    """The source summary with the new judge and sample count in its stack (a judge asked once has none)."""
    given = {key: value for key, value in summary.stack.model_dump().items() if key != "judge_samples"}
    stack = StackInfo.model_validate(
        {**given, "judge": judge_name} | ({"judge_samples": samples} if samples > 1 else {})
    )
    return summary.model_copy(update={"stack": stack})


def _checked(summary: RunSummary | None, new_id: str) -> bool:
    """Whether `summary`'s judge check measured the judge with identity `new_id`."""
    return summary is not None and summary.judge_quality is not None and summary.judge_quality.judge_id == new_id


def rejudged(
    records: Iterable[CaseRecord], judge: Judge, judged: list[int], judge_id: str | None = None
) -> Iterator[CaseRecord]:
    """Records with fresh verdicts for every final response, each naming the judge by `judge_id`
    (errored cases are kept as they are), judged 32 at a time; `judged[0]` counts the verdicts given.
    Each leaves through the one redaction pass (`CaseRecord.redacted`): a judge's reason may quote a key."""
    batch: list[CaseRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == 32:
            yield from (r.redacted() for r in _rejudge_batch(batch, judge, judged, judge_id))
            batch = []
    yield from (r.redacted() for r in _rejudge_batch(batch, judge, judged, judge_id))


def _rejudge_batch(batch: list[CaseRecord], judge: Judge, judged: list[int], judge_id: str | None) -> list[CaseRecord]:
    talks = [r for r in batch if r.error is None and r.turns]
    if talks:
        # Every reply of a conversation is judged again in its context; the whole verdict follows from them.
        keyed = [(r.case_id, i, item) for r in talks for i, item in replies_to_judge(r)]
        given = judge.judge([item for _, _, item in keyed]) if keyed else []
        judged[0] += len(keyed)
        by_case: dict[str, dict[int, JudgeVerdict]] = {}
        for (case_id, i, _), verdict in zip(keyed, given, strict=True):
            by_case.setdefault(case_id, {})[i] = verdict
        redone = {
            r.case_id: with_turn_verdicts(r, by_case.get(r.case_id, {}), judge.name).model_copy(
                update={"judge_id": judge_id}
            )
            for r in talks
        }
        batch = [redone.get(r.case_id, r) for r in batch]
    to_judge = [(r, r.response) for r in batch if r.error is None and r.response is not None and not r.turns]
    verdicts = (
        judge.judge([JudgeInput(r.prompt_text, reply.text, reply.source, r.is_harmful) for r, reply in to_judge])
        if to_judge
        else []
    )
    judged[0] += len(to_judge)
    new_verdicts = {r.case_id: v for (r, _), v in zip(to_judge, verdicts, strict=True)}
    return [
        r.model_copy(update={"judge": new_verdicts[r.case_id], "judge_id": judge_id})
        if r.case_id in new_verdicts
        else r
        for r in batch
    ]
