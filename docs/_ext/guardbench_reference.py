"""Reference pages rendered from the code, so they cannot drift from it.

Directives:

- ``guardbench-options``: every pytest option and ini key the plugin registers, read by handing
  ``pytest_guardbench.plugin.hooks.pytest_addoption`` a parser that records what it is given; the
  default comes from the ``Settings`` / ``Thresholds`` field the option fills.
- ``guardbench-json-schema``: the JSON schema of a pydantic model (``module:Class``).
- ``guardbench-units``: the built-in tutors, guards, judges and mutators with their descriptions.
- ``guardbench-aliases``: the built-in model aliases.
- ``guardbench-model-keys``: the keys of a ``[tool.guardbench.models.<alias>]`` table.
- ``guardbench-modules``: every module of the package with the first paragraph of its docstring.
- ``guardbench-result-columns``: the columns and dtypes of ``load_results`` (``results.frame.RESULT_COLUMNS``).
- ``guardbench-exit-statuses``: the exit statuses of runs and commands (``commands.exit_status.EXIT_STATUSES``).
- ``guardbench-rubric``: the labelling rubric (``audit.rubric``): each field's choices, keys and ordered
  rules, then each boundary's line with its worked examples, as sections of the page.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docutils import nodes
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

if TYPE_CHECKING:
    from pytest_guardbench.audit.rubric import Example


@dataclass
class RecordedOption:
    flags: tuple[str, ...]
    dest: str
    help: str
    action: str | None


@dataclass
class RecordedIni:
    name: str
    help: str
    type: str | None


@dataclass
class _RecordingGroup:
    options: list[RecordedOption]

    def addoption(self, *flags: str, **attrs: Any) -> None:
        self.options.append(
            RecordedOption(tuple(flags), attrs.get("dest", ""), attrs.get("help", ""), attrs.get("action"))
        )


@dataclass
class RecordingParser:
    """Stands in for ``pytest.Parser``: keeps what ``pytest_addoption`` registers, in order."""

    options: list[RecordedOption] = field(default_factory=list)
    inis: list[RecordedIni] = field(default_factory=list)

    def getgroup(self, name: str, description: str = "") -> _RecordingGroup:
        return _RecordingGroup(self.options)

    def addoption(self, *flags: str, **attrs: Any) -> None:
        _RecordingGroup(self.options).addoption(*flags, **attrs)

    def addini(self, name: str, help: str, type: str | None = None, default: Any = None) -> None:
        self.inis.append(RecordedIni(name, help, type))


def _import(dotted: str) -> Any:
    module_name, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
        if isinstance(value, Path):
            return str(value).replace(str(Path.home()), "~")
        return "" if value in ({}, (), []) else json.dumps(value)
    if info.default is PydanticUndefined or info.default is None:
        return ""
    value = info.default
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _type_text(annotation: Any) -> str:
    """`str`, not `<class 'str'>`; `str | None` and `Literal[...]` as Python writes them."""
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _option_defaults() -> dict[str, str]:
    """dest -> the default of the setting it fills ("" where the code leaves it unset)."""
    from pytest_guardbench.settings.config import Settings, Thresholds

    # Options whose value lands in Thresholds under another name.
    threshold_fields = {"gate_interval": "interval", "zero_tolerance": "zero_tolerance_categories"}
    defaults: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        if name != "thresholds":
            defaults[f"guardbench_{name}"] = _default_text(info)
    for name, info in Thresholds.model_fields.items():
        defaults[f"guardbench_{name}"] = _default_text(info)
    for option_name, field_name in threshold_fields.items():
        defaults[f"guardbench_{option_name}"] = _default_text(Thresholds.model_fields[field_name])
    return defaults


# A cell is a list of pieces: a str is plain text, a Code piece is set in monospace.
@dataclass(frozen=True)
class Code:
    text: str


Cell = list["str | Code"]


def _code(text: str) -> Cell:
    return [Code(text)] if text else []


def _paragraph(cell: Cell) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for piece in cell:
        if isinstance(piece, Code):
            paragraph += nodes.literal(piece.text, piece.text)
        else:
            paragraph += nodes.Text(piece)
    return paragraph


def table(header: list[str], rows: list[list[Cell]], widths: list[int]) -> nodes.table:
    """A docutils table built node by node: cell text is never parsed as markup."""
    group = nodes.tgroup(cols=len(header))
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head_row = nodes.row()
    for title in header:
        head_row += nodes.entry("", nodes.paragraph(title, title))
    head += head_row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += nodes.entry("", _paragraph(cell))
        body += row
    group += body
    result = nodes.table(classes=["colwidths-given"])
    result += group
    return result


def _join(cells: list[Cell], separator: str) -> Cell:
    joined: Cell = []
    for index, cell in enumerate(cells):
        if index:
            joined.append(separator)
        joined.extend(cell)
    return joined


class OptionsDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.plugin import hooks

        parser = RecordingParser()
        hooks.pytest_addoption(parser)  # type: ignore[arg-type]
        inis = {ini.name: ini for ini in parser.inis}
        defaults = _option_defaults()
        rows: list[list[Cell]] = []
        for option in parser.options:
            ini = inis.get(option.dest)
            ini_cell: Cell = _code(ini.name) if ini else ["(none)"]
            if ini and ini.type == "linelist":
                ini_cell.append(" (one per line, or a comma list)")
            elif ini and option.action == "store_const":
                ini_cell.append(" (true or false)")
            flags = _join([_code(flag) for flag in option.flags], " / ")
            rows.append([flags, ini_cell, _code(defaults.get(option.dest, "")), [option.help.replace("%%", "%")]])
        rows.extend(
            [["(ini only)"], _code(name), [], [inis[name].help]]
            for name in sorted(set(inis) - {o.dest for o in parser.options})
        )
        return [table(["option", "ini key", "default", "meaning"], rows, [22, 18, 14, 46])]


class JsonSchemaDirective(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        model: type[BaseModel] = _import(self.arguments[0])
        text = json.dumps(model.model_json_schema(), indent=2)
        block = nodes.literal_block(text, text)
        block["language"] = "json"
        return [block]


class UnitsDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.run.units import builtin_units

        units = builtin_units()
        rows: list[list[Cell]] = []
        for role, option, registry in (
            ("tutor", "--tutor", units.tutors),
            ("guard", "--guardrail", units.guards),
            ("judge", "--judge", units.judges),
        ):
            rows.extend(
                [[role], _code(f"{option}={name}"), [description]] for name, description in registry.describe().items()
            )
        mutator_rows: list[list[Cell]] = [
            [_code(m.name), _code(m.family), [m.description]] for m in units.mutators.table().values()
        ]
        intro = nodes.paragraph()
        intro += nodes.Text("The variants, in registration order: text mutators, then conversation variants (")
        intro += nodes.literal("--guardbench-variants", "--guardbench-variants")
        intro += nodes.Text(" takes a name, a family or a chain such as typo+camouflage):")
        return [
            table(["role", "select with", "what it is"], rows, [10, 30, 60]),
            intro,
            table(["variant", "family", "what it does"], mutator_rows, [20, 15, 65]),
        ]


class AliasesDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.settings.model_specs import BUILTIN_MODEL_ALIASES

        rows: list[list[Cell]] = []
        for alias, entry in BUILTIN_MODEL_ALIASES.items():
            keys = _join([_code(f"{key} = {json.dumps(value)}") for key, value in entry.items()], ", ")
            rows.append([_code(alias), keys])
        return [table(["alias", "its table"], rows, [20, 80])]


class ExitStatusesDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.commands.exit_status import EXIT_STATUSES

        rows: list[list[Cell]] = [[_code(str(code)), [meaning]] for code, meaning in EXIT_STATUSES]
        return [table(["exit", "meaning"], rows, [10, 90])]


class ModelKeysDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.settings.model_specs import GuardAdapterSettings, ModelSpec

        rows: list[list[Cell]] = []
        for model, where in ((ModelSpec, "any model"), (GuardAdapterSettings, "a guard adapter")):
            for name, info in model.model_fields.items():
                if name in ("alias", "guard"):
                    continue
                annotation = _type_text(info.annotation)
                rows.append([_code(name), [where], _code(annotation), _code(_default_text(info))])
        return [table(["key", "applies to", "type", "default"], rows, [25, 15, 40, 20])]


class ModulesDirective(SphinxDirective):
    """Each subpackage of the package and each of its modules, with the first paragraph of its docstring."""

    def run(self) -> list[nodes.Node]:
        import ast

        import pytest_guardbench

        root = Path(pytest_guardbench.__file__).parent
        rows: list[list[Cell]] = []
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if relative.name == "__init__.py" and relative.parent == Path("."):
                continue
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            first = " ".join(docstring.split("\n\n")[0].split())
            name = str(relative.parent) + "/" if relative.name == "__init__.py" else str(relative)
            rows.append([_code(name), [first]])
        return [table(["module", "what it is (its docstring)"], rows, [30, 70])]


class ResultColumnsDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.results.frame import RESULT_CATEGORIES, RESULT_COLUMNS

        rows: list[list[Cell]] = []
        for column in RESULT_COLUMNS:
            dtype: Cell = _code(column.dtype)
            if column.name in RESULT_CATEGORIES:
                dtype += [" of ", *_join([_code(c) for c in RESULT_CATEGORIES[column.name]], ", ")]
            rows.append([_code(column.name), dtype, [column.meaning]])
        return [table(["column", "dtype", "meaning"], rows, [22, 38, 40])]


def _section(title: str, anchor: str) -> nodes.section:
    section = nodes.section(ids=[nodes.make_id(f"rubric-{anchor}")])
    section += nodes.title(title, title)
    return section


def _text_paragraph(*pieces: str | Code, bold: str = "") -> nodes.paragraph:
    paragraph = _paragraph(list(pieces))
    if bold:
        paragraph.insert(0, nodes.strong(bold, bold))
    return paragraph


class RubricDirective(SphinxDirective):
    """The rubric's fields and boundaries as sections; every text is set as text, never parsed."""

    def run(self) -> list[nodes.Node]:
        from pytest_guardbench.audit.rubric import CUT, examples_of, rubric

        whole = rubric()
        before = nodes.bullet_list()
        for line in whole.before_you_start:
            before += nodes.list_item("", nodes.paragraph(line, line))
        result: list[nodes.Node] = [
            _text_paragraph(Code(whole.version), bold="Rubric version: "),
            _text_paragraph("Before you start:"),
            before,
        ]
        for part in whole.fields:
            section = _section(part.title, part.field)
            section += _text_paragraph(part.question, bold="Ask: ")
            rows = [[_code(c.key), [c.name], _code(c.value), [c.rule]] for c in part.choices]
            section += table(["key", "label", "in the labels file", "rule"], rows, [8, 17, 20, 55])
            section += _text_paragraph("Ask in this order; the first rule that applies decides:")
            rules = nodes.bullet_list()
            for rule in part.rules:
                rules += nodes.list_item("", _text_paragraph(rule.text, bold=f"{rule.id} {rule.title}. "))
            section += rules
            result.append(section)
        boundaries = _section("Where labellers split, with worked examples", "boundaries")
        boundaries += _text_paragraph(
            "Each example is a real reply from a shipped development dataset, with that row's labels; a "
            f"reply shortened where the cut cannot change the labels shows {CUT} and says what was cut."
        )
        for boundary in whole.boundaries:
            section = _section(boundary.title, boundary.name)
            section += _text_paragraph(boundary.line, bold="The line: ")
            for number, example in enumerate(examples_of(boundary=boundary.name), start=1):
                section += _example(number, example)
            boundaries += section
        result.append(boundaries)
        return result


def _example(number: int, example: Example) -> nodes.container:
    block = nodes.container(classes=["rubric-example"])
    block += _text_paragraph(Code(example.dataset), ", row ", Code(example.row_id), bold=f"Example {number}, from ")
    block += _text_paragraph(example.prompt, bold="The child: ")
    block += _text_paragraph(bold="The reply:")
    reply = nodes.block_quote()
    for paragraph in (p.strip() for p in example.reply.split("\n\n")):
        if paragraph:
            reply += nodes.paragraph(paragraph, paragraph)
    block += reply
    if example.cut:
        block += _text_paragraph(example.cut, bold="Cut: ")
    block += _text_paragraph(Code(example.response_safety), ", ", Code(example.answer_mode), bold="Labels: ")
    block += _text_paragraph(example.why, bold="Why: ")
    return block


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("guardbench-result-columns", ResultColumnsDirective)
    app.add_directive("guardbench-options", OptionsDirective)
    app.add_directive("guardbench-json-schema", JsonSchemaDirective)
    app.add_directive("guardbench-units", UnitsDirective)
    app.add_directive("guardbench-aliases", AliasesDirective)
    app.add_directive("guardbench-model-keys", ModelKeysDirective)
    app.add_directive("guardbench-modules", ModulesDirective)
    app.add_directive("guardbench-exit-statuses", ExitStatusesDirective)
    app.add_directive("guardbench-rubric", RubricDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
