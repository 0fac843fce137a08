"""Importing a run recorded by the seed project (minor_bench) as a run folder of ours, checked against
the summary the seed run shipped."""

from __future__ import annotations

from pytest_guardbench.document.meta import ImportedMeta

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.runfolder.rescored import write_rescored_run
from pytest_guardbench.run import judge_quality
from pytest_guardbench.run.judge_factory import opened_judge
from pytest_guardbench.runfolder.rejudge import rejudged
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, policy_named
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.runfolder.seed_format import load_seed_results


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
            named = judge_quality.judge_id(judge_quality.named_judge_identity(judge, judge_name, root))
            records = list(rejudged(records, judge, [0], named))
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
        meta=ImportedMeta(imported_from=str(results), judge=judge_name, policy=scoring_policy.name),
        policy=scoring_policy,
    )
    return out
