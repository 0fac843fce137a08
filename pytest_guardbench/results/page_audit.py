"""report.html's audit: the sample's section, its labelling controls, and the rubric the labeller labels
by, rendered at page build time from `audit.rubric` (each choice's one-line rule beside its button, the
worked examples behind one key), so the page stays self-contained."""

from __future__ import annotations

from pytest_guardbench.audit.rubric import RUBRIC_VERSION, Example, rubric
from pytest_guardbench.results.page_assets import SAMPLE_COLUMNS, SCRIPT
from pytest_guardbench.results.page_blocks import escape
from pytest_guardbench.results.shown_cases import AUDIT_DESIGN, AUDIT_SAMPLE, AUDIT_SEED


def _choices() -> str:
    """Each field's question and its choices, each with its key, its name and its one-line rule."""
    parts = []
    for field in rubric().fields:
        rows = "".join(
            f"<tr data-field='{escape(field.field)}' data-choice='{escape(choice.value)}'><th>"
            f"<kbd>{escape(choice.key)}</kbd> "
            f"{escape(choice.name)}</th><td class='rule'>{escape(choice.rule)}</td></tr>"
            for choice in field.choices
        )
        parts.append(
            f"<p><b>{escape(field.title)}</b>: {escape(field.question)}</p>"
            f"<table class='rubric-choices' id='rubric-{escape(field.field)}'>{rows}</table>"
        )
    return "".join(parts)


def _example(example: Example) -> str:
    cut = f"<p><small>cut: {escape(example.cut)}</small></p>" if example.cut else ""
    return (
        f"<div class='example' data-boundary='{escape(example.boundary)}'><p><small>{escape(example.dataset)}, row "
        f"{escape(example.row_id)}</small></p><p><b>child:</b> {escape(example.prompt)}</p>"
        f"<p class='reply'><b>reply:</b> {escape(example.reply)}</p>{cut}"
        f"<p><b>labels:</b> {escape(example.response_safety)}, {escape(example.answer_mode)} "
        f"(rules {escape(', '.join(example.rules))})</p><p><b>why:</b> {escape(example.why)}</p></div>"
    )


def rubric_examples() -> str:
    """The rubric's boundaries, each with its line and worked examples; hidden until `?` opens it."""
    whole = rubric()
    sections = []
    for boundary in whole.boundaries:
        examples = "".join(_example(e) for e in whole.examples if e.boundary == boundary.name)
        sections.append(
            f"<section data-boundary='{escape(boundary.name)}'><h3>{escape(boundary.title)}</h3>"
            f"<p>{escape(boundary.line)}</p>{examples}</section>"
        )
    before = "".join(f"<li>{escape(line)}</li>" for line in whole.before_you_start)
    return (
        f"<div id='gb-rubric' hidden><h2>The labelling rubric, version {escape(whole.version)}</h2>"
        "<p><small>Press <kbd>?</kbd> or <kbd>Esc</kbd> to close.</small></p>"
        f"<ul>{before}</ul>{''.join(sections)}</div>"
    )


def audit_section(page_data: str) -> list[str]:
    """The audit sample's section: how it was drawn, the rubric's rules, the labeller's name, the table
    (drawn by the page's script from `page_data`), the export, and the script."""
    command = f"guardbench audit RUN_DIR --design {AUDIT_DESIGN} --sample {AUDIT_SAMPLE} --seed {AUDIT_SEED}"
    return [
        f"<h2 id='audit'>Audit sample</h2><p>{AUDIT_SAMPLE} of this run's judged replies drawn by the random design "
        f"(seed {AUDIT_SEED}, each with inclusion probability n / N): the same replies <code>{escape(command)}</code> "
        "draws. Label each by the rubric (response safety, then answer mode); the judge's labels and the outcome are "
        "shown only once you have labelled it, so they cannot sway you. Labels stay in this browser (local storage) "
        "across reloads. The export is a labels file, row for row what <code>guardbench audit</code> writes: "
        "correct the "
        "run with it, <code>guardbench correct RUN_DIR --labels audit.jsonl</code>.</p>",
        f"<div id='gb-rules'>{_choices()}<p><button type='button' id='gb-rubric-button'>Rubric examples "
        f"(<kbd>?</kbd>)</button> <small>rubric version {escape(RUBRIC_VERSION)}</small></p></div>",
        rubric_examples(),
        "<p><label>Your name (written on every label row): <input id='gb-labeller' autocomplete='name'></label> "
        "<span id='gb-name-needed' class='gate-failed' hidden>Type your name first: each label row says who "
        "gave it.</span></p>",
        f"<table id='sample' class='cases'>{SAMPLE_COLUMNS}</table>",
        "<p><button type='button' id='gb-export-button'>Export labels (JSONL)</button> "
        "<span id='gb-count'>0</span> labelled replies <button type='button' id='gb-clear-button'>Forget "
        "labels</button></p>"
        "<textarea id='gb-export' rows='6' cols='100' readonly></textarea>",
        f"<script type='application/json' id='gb-cases'>{page_data}</script>",
        f"<script>{SCRIPT}</script></body></html>",
    ]
