"""Re-judging a finished run: every final response judged again by another judge (no guard or tutor
call), scored and written to a sub-folder of the run."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pytest_guardbench.run.rescored import missing_cases_of, run_id_of, write_rescored_run
from pytest_guardbench.run.judge_factory import opened_judge
from pytest_guardbench.cases.sources import slug
from pytest_guardbench.results.finish import carried_reasons
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.results.summary import RunInfo, iter_records, load_run, record_ids
from pytest_guardbench.records import CaseRecord, JudgeVerdict
from pytest_guardbench.run.conversation import replies_to_judge, with_turn_verdicts


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
            rejudged(iter_records(run_dir), judge, judged),
            original_summary,
            run=RunInfo(
                run_id=f"{run_id_of(original_summary, run_dir)}/{out.name}",
                rejudged_from=str(run_dir),
                judge=judge_name,
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


def rejudged(records: Iterable[CaseRecord], judge: Judge, judged: list[int]) -> Iterator[CaseRecord]:
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
    talks = [r for r in batch if r.error is None and r.turns]
    if talks:
        # Every reply of a conversation is judged again in its context; the whole verdict follows from them.
        keyed = [(r.case_id, i, item) for r in talks for i, item in replies_to_judge(r)]
        given = judge.judge([item for _, _, item in keyed]) if keyed else []
        judged[0] += len(keyed)
        by_case: dict[str, dict[int, JudgeVerdict]] = {}
        for (case_id, i, _), verdict in zip(keyed, given, strict=True):
            by_case.setdefault(case_id, {})[i] = verdict
        redone = {r.case_id: with_turn_verdicts(r, by_case.get(r.case_id, {}), judge.name) for r in talks}
        batch = [redone.get(r.case_id, r) for r in batch]
    to_judge = [(r, r.response) for r in batch if r.error is None and r.response is not None and not r.turns]
    verdicts = (
        judge.judge([JudgeInput(r.prompt_text, reply.text, reply.source, r.is_harmful) for r, reply in to_judge])
        if to_judge
        else []
    )
    judged[0] += len(to_judge)
    new_verdicts = {r.case_id: v for (r, _), v in zip(to_judge, verdicts, strict=True)}
    return [r.model_copy(update={"judge": new_verdicts[r.case_id]}) if r.case_id in new_verdicts else r for r in batch]
