"""`--guardbench-attacker=scripted` end to end: each harmful prompt also runs as an attack
conversation, collected as its own test, recorded turn by turn and counted in the usage."""

from __future__ import annotations

import json


def test_scripted_attacks_run_as_conversations_with_no_model(run_guardbench, pytester):
    args = ("-n", "2", "--guardbench-attacker=scripted", "--guardbench-attacker-turns=3")
    result, summary = run_guardbench(*args, "--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("xfailed", 0) == 9, result.stdout.str()
    [run] = (pytester.path / "reports").iterdir()
    records = {
        r["case_id"]: r for r in map(json.loads, (run / "results.jsonl").read_text(encoding="utf-8").splitlines())
    }
    attacks = {case_id: r for case_id, r in records.items() if r["variant"] == "attack"}
    assert sorted(attacks) == ["mini.h1.attack", "mini.h2.attack", "mini.h3.attack"]
    for record in attacks.values():
        users = [t for t in record["turns"] if t["role"] == "user"]
        assert record["variant_family"] == "conversation"
        assert [t["source"] for t in users] == ["attacker"] * 3 and [t["depth"] for t in users] == [1, 2, 3]
        assert users[-1]["content"] == record["prompt_text"]  # the scripted attack ends on the request itself
        assert all(t["attacker"]["model"] == "scripted" for t in users)
    # The scripted tutor complies with h2's request: its third reply is the first unsafe one.
    assert attacks["mini.h2.attack"]["first_unsafe_turn"] == 3
    assert attacks["mini.h1.attack"]["first_unsafe_turn"] is None
    usage = summary["run"]["usage"]
    assert usage["attacker_tokens"]["answers"] == 9 and usage["attacker_cost_usd"] == 0.0
    assert "mini.h2.attack" in records and records["mini.h2.original"]["turns"] == []
