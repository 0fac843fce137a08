"""A run folder has one writer, and a resume continues only the run it was: the same stack, packs and shard."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_guardbench.document.meta import meta_json
from pytest_guardbench.runfolder.lock import RunFolderLock
from pytest_guardbench.runfolder.resume import ResumeError, check_same_run
from tests.builders import run_meta

STACK = {"guardrail": "offline", "tutor": "t", "malformed_policy": "block", "policy": "assistant_policy_v2"}
STORED = {
    "stack": {**STACK, "variants": ["original", "typo"]},
    "models": {},
    "system_prompt_sha256": "a",
    "refusal_text_sha256": "b",
    "packs": ["child_safety"],
    "shard": "1/2",
}


def _meta(identity):
    """meta.json of a pytest run with `identity`, the rest as any run writes it."""
    return meta_json(run_meta(**identity))


def _folder(tmp_path, meta):
    (tmp_path / "meta.json").write_text(json.dumps(_meta(meta)))
    return tmp_path


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"shard": "2/2"}, "shard (1/2, now 2/2)"),
        ({"shard": None}, "shard (1/2, now none)"),
        ({"packs": ["other"]}, "packs (child_safety, now other)"),
        ({"packs": ["child_safety", "other"]}, "packs (child_safety, now child_safety,other)"),
        ({"stack": {**STORED["stack"], "policy": "refusal"}}, "stack.policy (assistant_policy_v2, now refusal)"),
        ({"stack": {**STORED["stack"], "variants": ["original"]}}, "stack.variants (original,typo, now original)"),
        ({"system_prompt_sha256": "c"}, "different system prompt"),
    ],
)
def test_resume_refuses_another_run_and_names_what_differs(tmp_path, change, named):
    with pytest.raises(ResumeError, match="that run used a different") as err:
        check_same_run(_folder(tmp_path, STORED), {**STORED, **change})
    assert named in str(err.value)


def test_resume_of_the_same_run_and_of_a_folder_older_than_a_key_is_accepted(tmp_path):
    check_same_run(_folder(tmp_path, STORED), dict(STORED))
    older = {k: v for k, v in _meta(STORED).items() if k not in ("packs", "shard")}
    (tmp_path / "meta.json").write_text(json.dumps(older))
    check_same_run(tmp_path, {**STORED, "shard": None})


def test_a_second_writer_of_a_run_folder_stops_naming_the_holder(tmp_path):
    with RunFolderLock(tmp_path):
        # Another process, as a second `pytest --guardbench-resume` would be.
        code = (
            "import sys; from pathlib import Path; from pytest_guardbench.runfolder.lock import RunFolderLock\n"
            "try:\n    RunFolderLock(Path(sys.argv[1])).acquire()\nexcept Exception as exc:\n    print(exc); sys.exit(4)\n"
        )
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert other.returncode == 4
        assert f"{tmp_path}: another process is writing this run folder (pid " in other.stdout
    assert not (tmp_path / "run.lock.holder").exists()
    with RunFolderLock(tmp_path):  # released: the next run takes it
        pass


def test_resume_after_the_pack_was_edited_reuses_only_its_unchanged_cases(tmp_path):
    from pytest_guardbench.records import Case
    from pytest_guardbench.runfolder.resume import prepare
    from tests.builders import record

    kept, edited, removed = record("p.a.original", True), record("p.b.original", False), record("p.c.original", True)
    (tmp_path / "results.jsonl").write_text("".join(r.json_line() for r in (kept, edited, removed)))

    def case(rec, text):
        return Case(
            case_id=rec.case_id,
            pack=rec.pack,
            item_id=rec.item_id,
            base_prompt_id=rec.base_prompt_id,
            variant=rec.variant,
            prompt_text=text,
            is_harmful=rec.is_harmful,
            label_source="is_harmful",
            category=rec.category,
            source_file="pack.json",
        )

    now = {
        "p.a.original": case(kept, kept.prompt_text),
        "p.b.original": case(edited, "a new question"),
        "p.d.original": case(kept, "added").model_copy(update={"case_id": "p.d.original"}),
    }
    finished, skipped, changed = prepare(tmp_path, {}, now)
    assert list(finished) == ["p.a.original"] and changed == ["p.b.original"] and skipped == 0
    base = (tmp_path / "resume_base.jsonl").read_text().splitlines()
    assert len(base) == 1, "the removed case is no longer part of the run"
