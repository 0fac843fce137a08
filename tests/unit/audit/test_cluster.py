"""Conversations corrected as conversations: the cluster design draws whole cases, a conversation's
truth comes from the labels of all its replies by the run's own rule, and the conversation scorecards
and `recall_by_turn` get corrected intervals."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench.audit.conversations import conversation_truth, label_verdict
from pytest_guardbench.audit.designs import draw_cluster, draw_design
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.labels import HumanLabel, label_row
from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.records import CaseRecord, JudgeLabel, JudgeVerdict, TurnRecord, TutorReply
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.runfolder.rescored import write_rescored_run
from pytest_guardbench.scoring.conversation_tally import conversation_verdict, stopped_depth
from tests.builders import REFUSAL, V2, conversation, record

MODES = ("answered", "refused_or_blocked", "indirect", "non_answer")


def test_draw_cluster_takes_whole_cases_with_their_share_as_the_probability():
    pairs = [(f"c{c}@{d}", f"c{c}") for c in range(10) for d in (1, 2, 3)] + [("single", "single")]
    drawn = draw_cluster(pairs, 4, seed=3)
    cases = [unit.unit_id.split("@")[0] for unit in drawn]
    assert len(set(cases)) == 4 and all(unit.inclusion_probability == 4 / 11 for unit in drawn)
    for case_id in set(cases):
        replies = [unit.unit_id for unit in drawn if unit.unit_id.split("@")[0] == case_id]
        assert replies == [u for u, c in pairs if c == case_id], "every reply of a drawn case, in order"
    assert {unit.design for unit in drawn} == {"cluster"}
    assert drawn == draw_cluster(list(reversed(pairs)), 4, seed=3) or [u.unit_id.split("@")[0] for u in drawn] == [
        u.unit_id.split("@")[0] for u in draw_cluster(list(reversed(pairs)), 4, seed=3)
    ]
    assert len(draw_cluster(pairs, 100, seed=0)) == len(pairs)


_verdicts = st.lists(
    st.tuples(st.sampled_from(["safe", "unsafe", None]), st.sampled_from(MODES)), min_size=1, max_size=5
)


@given(harmful=st.booleans(), replies=_verdicts, refusal=st.booleans())
def test_a_conversations_truth_follows_the_runs_own_rule(harmful, replies, refusal):
    # Labels that say what the judge said give the run's own outcome and depth caught.
    policy = REFUSAL if refusal else V2
    record = conversation("c", harmful, [(s, m if s else None, f"r{d}") for d, (s, m) in enumerate(replies)])
    judged = [(t.depth, t.judge) for t in record.turns if t.judge is not None]
    truth = conversation_truth(harmful, judged, policy)
    verdict = conversation_verdict(record.turns, "j")
    assert verdict is not None
    assert truth == (policy.handled(harmful, verdict), stopped_depth(record.turns))


def test_label_verdict_carries_the_labels():
    row = JudgeLabel(
        id="c",
        prompt="p",
        response="r",
        human_label="unsafe",
        answer_mode="answered",
        assistant_policy_label="incorrect",
    )
    verdict = label_verdict(row)
    assert (verdict.response_safety, verdict.answer_mode, verdict.assistant_policy_label) == (
        "unsafe",
        "answered",
        "incorrect",
    )


def _talks(count: int = 60, seed: int = 2):
    """Conversations of three replies with the truth a person would give each reply: a harmful one goes
    unsafe at some depth, or is refused; the judge misses some unsafe replies."""
    rng = random.Random(seed)
    records: list[CaseRecord] = []
    truth: dict[str, tuple[str, str]] = {}
    for i in range(count):
        harmful = i % 3 != 0
        replies = []
        for depth in (1, 2, 3):
            case_id = f"c{i:03d}"
            if harmful:
                kind = rng.choices(["unsafe", "refused", "safe"], [0.2, 0.3, 0.5])[0]
            else:
                kind = rng.choices(["safe", "refused"], [0.8, 0.2])[0]
            safety, mode = {
                "unsafe": ("unsafe", "answered"),
                "refused": ("safe", "refused_or_blocked"),
                "safe": ("safe", "answered"),
            }[kind]
            judged = ("safe", "answered") if kind == "unsafe" and rng.random() < 0.4 else (safety, mode)
            text = f"reply {i}.{depth}"
            replies.append((*judged, text))
            truth[f"{case_id}@{depth}"] = (safety, mode)
        records.append(conversation(f"c{i:03d}", harmful, replies))
    return records, truth


def _cluster_labels(path: Path, records, truth, n: int, seed: int = 0) -> Path:
    lines = []
    for view, unit in draw_design(records, "cluster", n, seed, V2):
        safety, mode = truth[view.case_id]
        row = label_row(view, HumanLabel(view.case_id, safety, mode), V2, unit)
        assert row.design == "cluster" and row.inclusion_probability == pytest.approx(n / len(records))
        lines.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _true_conversations(records, truth):
    """(true recall, true FPR, true caught-by-depth shares) of the conversations, from the truth."""
    handled, caught = {}, {}
    for talk in records:
        labelled = [
            (
                depth,
                JudgeVerdict(
                    judge="t",
                    response_safety=truth[f"{talk.case_id}@{depth}"][0],
                    answer_mode=truth[f"{talk.case_id}@{depth}"][1],
                    reason="",
                ),
            )
            for depth in (1, 2, 3)
        ]
        handled[talk.case_id], caught[talk.case_id] = conversation_truth(bool(talk.is_harmful), labelled, V2)
    harmful = [r.case_id for r in records if r.is_harmful]
    safe = [r.case_id for r in records if not r.is_harmful]
    recall = sum(handled[c] for c in harmful) / len(harmful)
    fpr = 1 - sum(handled[c] for c in safe) / len(safe)
    by_depth = [sum(1 for c in harmful if caught[c] is not None and caught[c] <= d) / len(harmful) for d in (1, 2, 3)]
    return recall, fpr, by_depth


def test_guardbench_correct_corrects_the_conversations_from_a_cluster_draw(tmp_path, capsys):
    records, truth = _talks()
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    path = _cluster_labels(tmp_path / "labels.jsonl", records, truth, 25)
    assert load_run_labels(path).design == "cluster"
    assert main(["correct", str(run), "--labels", str(path)]) in (0, 1, 6)
    corrected = load_run(run).corrected
    assert corrected is not None and corrected.conversations is not None
    block = corrected.conversations
    assert (block.n_conversations, block.n_labelled, block.n_partly_labelled) == (60, 25, 0)
    recall, fpr, by_depth = _true_conversations(records, truth)
    card = block.scorecards.system
    assert card.recall.ci_low <= recall <= card.recall.ci_high
    assert card.false_positive_rate.ci_low <= fpr <= card.false_positive_rate.ci_high
    assert [row.depth for row in block.recall_by_turn] == [1, 2, 3]
    for row, true in zip(block.recall_by_turn, by_depth, strict=True):
        assert row.recall.ci_low <= true <= row.recall.ci_high
        assert row.recall.n_total == 40 and row.recall.n_labelled == sum(
            1 for r in records if r.is_harmful and _drawn(path, r.case_id)
        )
    # The judge missed unsafe replies, so its conversation recall is too high; the judge-only one stays.
    assert card.recall.judge_only > recall
    assert load_run(run).conversations is not None
    written = json.loads((run / "corrected.json").read_text(encoding="utf-8"))
    assert set(written["conversations"]) == {
        "n_conversations",
        "n_labelled",
        "n_partly_labelled",
        "scorecards",
        "recall_by_turn",
    }
    # The replies, drawn in clusters, are corrected as replies too, with the clusters' size taken into account.
    assert corrected.conversation_replies is not None and corrected.labels.used == 75
    assert "conversations recall_by_turn depth=1" in (run / "summary.md").read_text(encoding="utf-8")


def _drawn(path: Path, case_id: str) -> bool:
    return any(json.loads(line)["id"] == case_id for line in path.read_text(encoding="utf-8").splitlines())


def test_a_conversation_with_a_reply_unlabelled_is_counted_not_used(tmp_path):
    records, truth = _talks(12)
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    path = _cluster_labels(tmp_path / "labels.jsonl", records, truth, 6)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")  # the labeller skipped one reply
    block = correct_run_folder(run, load_run_labels(path)).corrected
    assert block is not None and block.conversations is not None
    assert (block.conversations.n_labelled, block.conversations.n_partly_labelled) == (5, 1)


def test_random_labels_of_replies_do_not_correct_conversations(tmp_path):
    records, truth = _talks(12)
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    lines = []
    for view, unit in draw_design(records, "random", 36, 0, V2):
        safety, mode = truth[view.case_id]
        lines.append(
            json.dumps(
                label_row(view, HumanLabel(view.case_id, safety, mode), V2, unit).model_dump(
                    mode="json", exclude_none=True
                )
            )
        )
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    block = correct_run_folder(run, load_run_labels(path)).corrected
    assert block is not None and block.conversations is None and block.conversation_replies is not None


def test_a_conversation_with_no_reply_is_known_not_handled_and_never_caught(tmp_path):
    records, truth = _talks(12)
    records.append(conversation("zz-errored", True, []))
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    path = _cluster_labels(tmp_path / "labels.jsonl", records[:-1], truth, 12)  # every conversation with a reply
    block = correct_run_folder(run, load_run_labels(path)).corrected
    assert block is not None and block.conversations is not None
    recall, _, by_depth = _true_conversations(records[:-1], truth)
    harmful = sum(1 for r in records[:-1] if r.is_harmful)
    card = block.conversations.scorecards.system
    assert card.recall.n_total == harmful + 1
    assert card.recall.estimate == pytest.approx(recall * harmful / (harmful + 1), abs=1e-6)
    last = block.conversations.recall_by_turn[-1].recall
    assert last.estimate == pytest.approx(by_depth[-1] * harmful / (harmful + 1), abs=1e-6)


def test_a_conversations_reply_the_judge_did_not_score_is_a_unit_with_no_verdict():
    from pytest_guardbench.audit.units import audit_units

    talk = conversation("c", True, [("safe", "answered", "one"), (None, None, "two")])
    # And a reply the judge never saw at all (no verdict).
    plain = TurnRecord(
        role="assistant",
        content="three",
        source="tutor",
        depth=3,
        reply=TutorReply(text="three", model="m", source="tutor"),
    )
    talk = talk.model_copy(
        update={
            "turns": (
                *talk.turns,
                TurnRecord(role="user", content="q3", source="pack", depth=3, is_harmful=True),
                plain,
            )
        }
    )
    units = {unit.unit_id: unit for _, unit in audit_units([talk], V2)}
    assert set(units) == {"c@1", "c@2", "c@3"}
    assert (
        units["c@1"].judge_handled is True and units["c@2"].judge_handled is None and units["c@3"].judge_handled is None
    )
    assert record("single", True, malformed=True).judge is not None
