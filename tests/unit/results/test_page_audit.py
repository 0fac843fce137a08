"""report.html's audit is a real audit: its sample is the random design's draw (the replies `guardbench
audit --design random --sample 30 --seed 0` draws), nothing of the judge or the outcome shows before the
labeller answers, and its export is the terminal audit's row format, which `guardbench correct` takes.
Driven in headless Chromium, the page's own script running."""

from __future__ import annotations

import json

from pytest_guardbench.audit.designs import draw_design
from pytest_guardbench.audit.labels import HumanLabel, label_row
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.rubric import RUBRIC_VERSION, examples_of, rubric, rule_for
from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_records, load_run
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.results.shown_cases import AUDIT_SAMPLE, AUDIT_SEED
from tests.builders import V2
from tests.chromium import evaluate_in_chromium, needs_chromium
from tests.unit.results.labelled_runs import judged_run, population
from tests.unit.results.test_html_report import page_data

# Before any label: every sampled row as the labeller sees it (its attributes, the judge and outcome
# cells, each cell's background), and the failed table's rows folded because they are in the sample.
BLIND = """(function(){
  var rows = Array.prototype.map.call(document.querySelectorAll('#sample tbody tr'), function(tr){
    return {id: tr.dataset.case, attributes: Array.prototype.map.call(tr.attributes, function(a){ return a.name; }),
            judge: tr.querySelector('td.judge').textContent, outcome: tr.querySelector('td.outcome').textContent,
            backgrounds: Array.prototype.map.call(tr.children, function(td){ return getComputedStyle(td).backgroundColor; })}; });
  var folded = Array.prototype.map.call(document.querySelectorAll('#failed tr[data-blind]'), function(tr){ return tr.dataset.case; });
  var shown = Array.prototype.map.call(document.querySelectorAll('#failed tr[data-outcome]'), function(tr){ return tr.dataset.case; });
  var titles = Array.prototype.map.call(document.querySelectorAll('#sample tbody tr')[0].querySelectorAll('button'),
                                        function(b){ return [b.dataset.value, b.title]; });
  return {rows: rows, folded: folded, shown: shown, titles: titles};
})()"""

# Label as a person would: a press before giving a name is refused; then the name, keys for the
# current reply, buttons for the next ones; the rubric opens with `?` and closes with Esc; export.
LABEL = """(function(){
  function key(k){ document.body.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true})); }
  function press(id, kind, value){ document.querySelector('#sample tr[data-case="' + id + '"] button[data-kind="' + kind
                                   + '"][data-value="' + value + '"]').click(); }
  var ids = Array.prototype.map.call(document.querySelectorAll('#sample tbody tr'), function(tr){ return tr.dataset.case; });
  press(ids[0], 'safety', 'safe');
  var refused = [document.getElementById('gb-name-needed').hidden, document.getElementById('gb-count').textContent];
  var box = document.getElementById('gb-labeller'); box.value = 'Ada Lovelace'; box.dispatchEvent(new Event('input'));
  key('s'); key('n');  // the first reply: safe, no answer
  var first = document.querySelector('#sample tr[data-case="' + ids[0] + '"]');
  var revealed = [first.dataset.outcome, first.querySelector('td.judge').textContent, first.querySelector('td.outcome').textContent];
  var given = {};
  given[ids[0]] = ['safe', 'non_answer'];
  for (var i = 1; i < 8; i++) {
    var mode = i % 2 ? 'answered' : 'refused_or_blocked', safety = i === 3 ? 'unsafe' : 'safe';
    press(ids[i], 'safety', safety); press(ids[i], 'mode', mode); given[ids[i]] = [safety, mode]; }
  press(ids[8], 'safety', 'safe');  // no answer mode: not exported
  key('?'); var opened = !document.getElementById('gb-rubric').hidden;
  var examples = document.querySelectorAll('#gb-rubric .example').length;
  key('Escape'); var closed = document.getElementById('gb-rubric').hidden;
  document.getElementById('gb-export-button').click();
  return {refused: refused, revealed: revealed, given: given, opened: opened, closed: closed, examples: examples,
          exported: document.getElementById('gb-export').value, count: document.getElementById('gb-count').textContent};
})()"""

RELOADED = """[document.getElementById('gb-count').textContent, document.getElementById('gb-labeller').value,
  (function(){ document.getElementById('gb-export-button').click(); return document.getElementById('gb-export').value; })()]"""


def test_the_sample_is_the_random_designs_draw_with_its_rows_and_the_rubric(tmp_path):
    run = judged_run(tmp_path / "run", population())
    records = load_records(run)
    data = page_data((run / "report.html").read_text(encoding="utf-8"))
    terminal = draw_design(records, "random", AUDIT_SAMPLE, AUDIT_SEED, V2)
    assert data["sample"] == [unit.unit_id for _, unit in terminal], "the draw of guardbench audit --design random"
    for record, drawn in terminal:
        assert drawn is not None
        unit = data["units"][drawn.unit_id]
        assert unit["row"]["design"] == "random" and unit["row"]["stratum"] == "random"
        assert unit["row"]["inclusion_probability"] == drawn.inclusion_probability == AUDIT_SAMPLE / len(records)
        expected = label_row(record, HumanLabel(record.case_id, "unsafe", "indirect"), V2, drawn)
        written = {**unit["row"], **unit["labelled_as"]["unsafe|indirect"]}
        assert JudgeLabel.model_validate(written) == expected
    page = (run / "report.html").read_text(encoding="utf-8")
    for field in rubric().fields:
        for choice in field.choices:
            assert rule_for(field.field, choice.value).replace("'", "&#x27;") in page, "each choice's one-line rule"
    assert page.count("class='example'") == len(examples_of()), "every worked example, behind the ? key"
    assert data["rubric_version"] == RUBRIC_VERSION


@needs_chromium
def test_labelled_in_the_page_blind_and_exported_rows_correct_the_run(tmp_path):
    rows = population()
    run = judged_run(tmp_path / "run", rows)
    records = load_records(run)
    terminal = {drawn.unit_id: (record, drawn) for record, drawn in draw_design(records, "random", 30, 0, V2) if drawn}
    values, errors = evaluate_in_chromium(
        run / "report.html",
        tmp_path / "profile",
        "({blind: " + BLIND + ", labelled: " + LABEL + "})",  # in this order: blind first, then labelled
        RELOADED,
        reload_until=lambda value: isinstance(value, list) and value[0] == "8",
    )
    assert errors == [], errors
    blind, labelled = values[0]["blind"], values[0]["labelled"]  # type: ignore[index]
    assert [row["id"] for row in blind["rows"]] == list(terminal)
    for row in blind["rows"]:
        assert row["attributes"] == ["data-case"] or row["attributes"] == ["data-case", "class"], row
        assert row["judge"] == "shown once you have labelled this reply" and row["outcome"] == ""
    for column in range(len(blind["rows"][0]["backgrounds"])):
        assert len({row["backgrounds"][column] for row in blind["rows"]}) == 1, "no cell coloured by its outcome"
    failed_in_sample = {record.case_id for record, _ in terminal.values() if _failed(record)}
    assert set(blind["folded"]) == failed_in_sample and not set(blind["shown"]) & failed_in_sample
    assert blind["shown"], "failed cases outside the sample stay shown"
    assert dict(blind["titles"])["non_answer"] == rule_for("answer_mode", "non_answer")

    assert labelled["refused"] == [False, "0"], "no label without the labeller's name"
    record, drawn = terminal[blind["rows"][0]["id"]]
    assert labelled["revealed"][0] == labelled["revealed"][2] and labelled["revealed"][2] in ("TN", "FP", "TP", "FN")
    assert labelled["revealed"][1] != "shown once you have labelled this reply", "the judge once answered"
    assert labelled["opened"] and labelled["closed"] and labelled["examples"] == len(examples_of())
    assert labelled["count"] == "8"
    exported = [json.loads(line) for line in labelled["exported"].splitlines()]
    assert [row["id"] for row in exported] == [unit for unit in terminal if unit in labelled["given"]]
    for row in exported:
        record, drawn = terminal[row["id"]]
        safety, mode = labelled["given"][row["id"]]
        expected = label_row(record, HumanLabel(record.case_id, safety, mode), V2, drawn).model_copy(
            update={"labeller": "Ada Lovelace", "rubric_version": RUBRIC_VERSION}
        )
        assert JudgeLabel.model_validate(row) == expected, "the terminal audit's row, field for field"
    assert values[1] == ["8", "Ada Lovelace", labelled["exported"]], "labels and name kept across a reload"

    labels = tmp_path / "page-audit.jsonl"
    labels.write_text(labelled["exported"], encoding="utf-8")
    assert load_run_labels(labels).design == "random"
    status = main(["correct", str(run), "--labels", str(labels)])
    corrected = load_run(run).corrected
    assert corrected is not None and corrected.labels.used == 8 and corrected.labels.not_in_run == 0
    assert status in (0, 1, 6) and corrected.labels.reply_changed == 0


def _failed(record) -> bool:
    from pytest_guardbench.scoring.scorecard import score_record

    return score_record(record, V2).outcome in ("FN", "FP")
