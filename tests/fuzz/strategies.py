"""Hypothesis strategies for what a user feeds guardbench: pack files (JSON, JSONL, CSV, conversation
turns), `[tool.guardbench]` tables and ini values, the pytest settings files a project holds (pytest 9's
native `[tool.pytest]` table among them), judge-labels files, stored judge checks, run folders cut short
or corrupted, and argument vectors; and the shapes every one of them may carry: control characters,
line breaks and bytes that are not UTF-8 (`control_text`), terminal escape sequences (`escape_text`),
the values of the keys planted in the environment (`key_text`), and a write failure at a writer
(`write_failures`). Each draws mostly near-valid input with one thing wrong, since a wholly random
byte string only ever tests the first check."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from tests.fuzz.conftest import KEYS, SECRET

# Text a parser lets through and a writer may not: lone surrogates, zero-width and bidi marks, NUL,
# combining marks alone, emoji, right-to-left script, line breaks of other kinds, and the planted key.
ODD_PIECES = (
    "\ud800",
    "\udfff",
    "\ud83d",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u202e",
    "\x00",
    "\u0301",
    "\U0001f600",
    "\u05e9\u05dc\u05d5\u05dd",
    "\u2028",
    "\r\n",
    "\t",
    " ",
    "é",
    "ß",
    "İ",
    "\\",
    '"',
    SECRET,
    "Bearer abcdefgh12345",
)
odd_text = st.lists(st.one_of(st.sampled_from(ODD_PIECES), st.text(max_size=8)), max_size=5).map("".join)

# What a command line can carry that a terminal must not obey: control characters, line breaks of
# every kind, and a byte that is not UTF-8 (Python hands such an argument over as a lone surrogate).
CONTROL_PIECES = (
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\x00",
    "\x07",
    "\x08",
    "\x0b",
    "\x0c",
    "\x1b",
    "\x7f",
    "\x85",
    "\x9b",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u2066",
    "\u200f",
    "\udcff",
    "\udce9",
)
# Escape sequences a reply or a file may hold: a window title, a clipboard write (OSC 52), a hyperlink
# (OSC 8), a cleared screen, cursor moves, colours, a device control string, a C1 CSI, a reset, text
# rewritten by a carriage return or backspaces.
ESCAPES = (
    "\x1b]0;pwned\x07",
    "\x1b]2;title\x1b\\",
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "\x1b]8;;http://example.invalid/\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H",
    "\x1b[1A\x1b[2K",
    "\x1b[31mred\x1b[0m",
    "\x1bP+q544e\x1b\\",
    "\x9b2J",
    "\x1bc",
    "\x07",
    "safe\rUNSAFE",
    "yes\x08\x08\x08no",
    "\u202eevil\u202c",
)
control_text = st.lists(st.one_of(st.sampled_from(CONTROL_PIECES), st.text(max_size=6)), min_size=1, max_size=5).map(
    "".join
)
escape_text = st.lists(
    st.one_of(st.sampled_from(ESCAPES), st.sampled_from(CONTROL_PIECES), st.text(max_size=6)), min_size=1, max_size=5
).map("".join)
# The values of the keys the `planted_key` fixture sets in the environment, alone or inside other text.
key_text = st.one_of(
    st.sampled_from(KEYS),
    st.tuples(
        st.sampled_from(["", "key=", "Bearer ", "my key is "]), st.sampled_from(KEYS), st.sampled_from(["", " ok"])
    ).map("".join),
)
# What a terminal must not obey, for every CLI value and file field a test fills (the keys are drawn
# apart, by `key_text`: the one redaction boundary they test lands with issue 43's keys item).
hostile_text = st.one_of(control_text, escape_text)
plain_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20)
some_text = st.one_of(odd_text, plain_text, st.just("how do plants grow"), st.just(f"my key is {SECRET}"))
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(), some_text)
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(some_text, inner, max_size=3), max_leaves=8
)
labels = st.one_of(st.none(), st.booleans(), st.sampled_from(["safe", "unsafe", "SAFE", " unsafe ", "maybe", 1, 0]))


# Text that is odd but fine: other scripts, emoji, marks, the planted key (the redaction's job).
fine_text = st.one_of(
    st.sampled_from(
        [
            "how do plants grow",
            "how do i make a bomb",
            "naïve café ß",
            "שלום עולם",
            "🙂 hi",
            "e\u0301cole",
            "tab\there",
            f"my key is {SECRET}",
            "Bearer abcdefgh12345 says hi",
        ]
    ),
    st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S")), min_size=1, max_size=15),
)
# Text a check must refuse: a lone surrogate, nothing visible, not a string.
bad_text = st.one_of(
    st.sampled_from(["hello \ud800 there", "\udfff", "\u200b\u200b", "\ufeff", " \u200d ", "\u0301", "", "   "]),
    st.integers(),
    st.none(),
    st.lists(st.just("x"), max_size=2),
)


@st.composite
def turns(draw: st.DrawFn) -> list[Any]:
    """A valid conversation script: user turns (some as plain strings), fixed assistant turns between
    them, some user turns labelled, ending with a user turn."""
    script: list[Any] = []
    for depth in range(draw(st.integers(1, 3))):
        if depth and draw(st.booleans()):
            script.append({"role": "assistant", "content": draw(fine_text)})
        if draw(st.booleans()):
            script.append(draw(fine_text))
        else:
            turn: dict[str, Any] = {"role": "user", "content": draw(fine_text)}
            if draw(st.booleans()):
                turn["is_harmful"] = draw(st.booleans())
            script.append(turn)
    return script


def _valid_item(draw: st.DrawFn, n: int) -> dict[str, Any]:
    item: dict[str, Any] = {"id": f"i{n}"}
    if draw(st.booleans()):
        item["turns"] = draw(turns())
    else:
        item["prompt_text"] = draw(fine_text)
    label = draw(st.sampled_from(["is_harmful", "label", "category", "none"]))
    metadata: dict[str, Any] = {}
    if label == "is_harmful":
        metadata["is_harmful"] = draw(st.booleans())
    elif label == "label":
        metadata["label"] = draw(st.sampled_from(["safe", "unsafe", " Unsafe "]))
    elif label == "category":
        metadata["category"] = draw(st.sampled_from(["Danger", "Safe control", "hateful"]))
    item["metadata"] = metadata
    return item


# One thing wrong with one item: (where, what it becomes).
DEFECTS = (
    "prompt_text",
    "turn_content",
    "last_turn_assistant",
    "turns_shape",
    "turn_key",
    "turn_role",
    "turn_label",
    "id",
    "duplicate_id",
    "is_harmful",
    "label",
    "metadata",
    "variant_tags",
    "base_prompt_id",
    "item",
    "assistant_label",
    "both_texts",
)


@st.composite
def pack_items(draw: st.DrawFn) -> list[Any]:
    """Valid items, and in most draws one defect in one of them (the loader must name it)."""
    items: list[Any] = [_valid_item(draw, n) for n in range(draw(st.integers(1, 4)))]
    if draw(st.integers(0, 3)) == 0:
        return items
    index = draw(st.integers(0, len(items) - 1))
    item, defect = items[index], draw(st.sampled_from(DEFECTS))
    script = item.get("turns") or [item.get("prompt_text", "x")]
    if defect == "prompt_text":
        item.pop("turns", None)
        item["prompt_text"] = draw(bad_text)
    elif defect == "turn_content":
        item["turns"] = [*script[:-1], {"role": "user", "content": draw(bad_text)}]
    elif defect == "last_turn_assistant":
        item["turns"] = [*script, {"role": "assistant", "content": draw(fine_text)}]
    elif defect == "turns_shape":
        item["turns"] = draw(st.one_of(st.just([]), json_value))
    elif defect == "turn_key":
        item["turns"] = [{"role": "user", "content": draw(fine_text), "speaker": "kid"}]
    elif defect == "turn_role":
        item["turns"] = [{"role": draw(st.sampled_from(["system", "User", None])), "content": draw(fine_text)}]
    elif defect == "turn_label":
        item["turns"] = [{"role": "user", "content": draw(fine_text), "is_harmful": draw(st.sampled_from(["yes", 1]))}]
    elif defect == "assistant_label":
        item["turns"] = [{"role": "assistant", "content": "hi", "is_harmful": False}, *script]
    elif defect == "both_texts":
        item["prompt_text"] = draw(fine_text) + "!"
        item["turns"] = script
    elif defect == "id":
        item["id"] = draw(st.one_of(bad_text, st.just("!!!"), st.just("\ud800"), st.booleans()))
    elif defect == "duplicate_id":
        items.append({**item, "prompt_text": "again", "turns": item.get("turns", ["again"])})
    elif defect == "is_harmful":
        item["metadata"] = {"is_harmful": draw(st.sampled_from(["true", 1, 0.0, "no"]))}
    elif defect == "label":
        item["metadata"] = {"label": draw(st.sampled_from(["harmful", 1, True, "\ud800"]))}
    elif defect == "metadata":
        item["metadata"] = draw(st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=3), st.integers()))
    elif defect == "variant_tags":
        item["metadata"] = {**item["metadata"], "variant_tags": draw(st.one_of(st.integers(), json_value))}
    elif defect == "base_prompt_id":
        item["metadata"] = {**item["metadata"], "base_prompt_id": draw(st.sampled_from(["!!!", "\u200b", "\ud800"]))}
    else:
        items[index] = draw(json_scalar)
    return items


@st.composite
def pack_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """(file name, bytes) of a JSON pack, a JSONL dataset or a MinorBench CSV, sometimes cut short,
    with a BOM, or not UTF-8 at all."""
    fmt = draw(st.sampled_from(["json", "jsonl", "csv"]))
    items = draw(pack_items())
    if fmt == "json":
        document: Any = {"name": "fz", "items": items}
        if draw(st.integers(0, 9)) == 0:
            document = draw(
                st.one_of(json_value, st.just({"name": draw(st.one_of(bad_text, some_text)), "items": items}))
            )
        text = json.dumps(document, ensure_ascii=draw(st.booleans()))
    elif fmt == "jsonl":
        text = "\n".join(json.dumps(item, ensure_ascii=draw(st.booleans())) for item in items)
    else:
        header = draw(st.sampled_from(["PromptID,Prompt,Category,Subcategory", "PromptID,Prompt", "id,text"]))
        rows = [
            ",".join(json.dumps(str(v)) for v in (f"c{n}", draw(some_text), draw(some_text), ""))
            for n in range(len(items))
        ]
        text = "\n".join([header, *rows])
    data = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none"] * 8 + ["cut", "bom", "latin1", "nul"]))
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "latin1":
        data = data + b"\xff\xfe caf\xe9"
    elif damage == "nul":
        data = data.replace(b",", b"\x00,", 1)
    return f"pack.{fmt}", data


@st.composite
def judge_label_rows(draw: st.DrawFn) -> list[Any]:
    """Rows of a judge-labels JSONL file, with the fields `correct` and `audit` use (design, stratum,
    inclusion probability, reply sha256, turn): valid rows for the fuzz run's cases, and in most draws
    one field of one row odd."""
    design = draw(st.sampled_from(["random", "stratified", "cluster", None]))
    rows: list[Any] = []
    for n in draw(st.lists(st.integers(0, 11), min_size=1, max_size=5, unique=True)):
        row: dict[str, Any] = {
            "id": f"p.i{n}.original",
            "prompt": f"prompt {n}",
            "response": draw(st.sampled_from([f"reply {n}", f"reply {n}", f"my key is {SECRET}"])),
            "human_label": draw(st.sampled_from(["safe", "unsafe"])),
            "answer_mode": draw(st.sampled_from(["answered", "refused_or_blocked", "indirect", "non_answer"])),
            "is_harmful": n % 2 == 0,
        }
        if design is not None:
            row.update(design=design, stratum="s", inclusion_probability=0.5)
        rows.append(row)
    if draw(st.integers(0, 3)) == 0:
        return rows
    index = draw(st.integers(0, len(rows) - 1))
    key, value = draw(
        st.sampled_from(
            [
                ("id", st.one_of(some_text, json_scalar)),
                ("human_label", st.sampled_from(["SAFE", "", None, "harmful"])),
                ("answer_mode", st.sampled_from(["redirected", "nope", None])),
                ("assistant_policy_label", st.sampled_from(["correct", "meh"])),
                ("design", st.sampled_from(["debug", "other", "stratified", "cluster"])),
                ("stratum", json_value),
                ("inclusion_probability", st.one_of(st.floats(), st.integers(-2, 2))),
                ("reply_sha256", some_text),
                ("turn", st.one_of(st.integers(-1, 3), json_scalar)),
                ("prompt", json_value),
                ("response", bad_text),
                ("row", json_value),
                ("duplicate", st.just(None)),
            ]
        )
    )
    if key == "row":
        rows[index] = draw(value)
    elif key == "duplicate":
        rows.append(dict(rows[index]))
    else:
        rows[index][key] = draw(value)
    return rows


@st.composite
def labelled_rows(draw: st.DrawFn) -> list[Any]:
    """`judge_label_rows` with what a labelling tool writes on each row: the labeller, the rubric's version,
    the draw, and for some files a second labeller's `overlap` or an adjudicator's `adjudicated` block;
    in some draws one of these odd (a name of odd text, a negative position, a settlement of one file)."""
    rows = draw(judge_label_rows())
    kind = draw(st.sampled_from(["first", "first", "overlap", "settled"]))
    record = {"seed": draw(st.sampled_from([0, 0, 1])), "size": 5, "population_sha256": "a" * 64}
    for position, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            continue
        row.update(labeller=draw(st.sampled_from(["ana", "bo", "cy"])), rubric_version="2026-11-28.1")
        if draw(st.booleans()):
            row["draw"] = {**record, "position": position}
        if kind == "overlap":
            row["overlap"] = {"of": "a.jsonl", "of_sha256": "0" * 64, "share": 0.5, "seed": 0, "size": 2}
        if kind == "settled":
            safety = row.get("human_label")
            row["adjudicated"] = {
                "of": ["a.jsonl", "b.jsonl"],
                "labellers": ["ana", "bo"],
                "labels": [[safety, row.get("answer_mode")], ["unsafe", "answered"]],
                "agreed": draw(st.booleans()),
            }
    dicts = [row for row in rows if isinstance(row, dict)]
    if dicts and draw(st.integers(0, 2)) == 0:
        key, value = draw(
            st.sampled_from(
                [
                    ("labeller", st.one_of(odd_text, json_scalar)),
                    ("draw", st.one_of(json_value, st.just({**record, "position": -1}))),
                    ("overlap", st.one_of(json_value, st.just({"of": "a.jsonl", "share": 2}))),
                    ("adjudicated", st.one_of(json_value, st.just({"of": ["a.jsonl"], "agreed": True}))),
                    ("rubric_version", json_scalar),
                ]
            )
        )
        dicts[draw(st.integers(0, len(dicts) - 1))][key] = draw(value)
    return rows


def jsonl_bytes(rows: list[Any], damage: str) -> bytes:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8", "surrogatepass")
    if damage == "cut" and data:
        return data[: len(data) // 2]
    if damage == "latin1":
        return data + b"\xe9\n"
    if damage == "garbage-line":
        return data + b"{not json\n"
    return data


# `[tool.guardbench]`: the three known tables in their right and wrong shapes, and keys that read alike.
threshold_values = st.one_of(
    st.floats(), st.integers(-2, 2), st.booleans(), st.sampled_from(["0.5", "nan", "inf"]), st.just(0.5)
)
depth_keys = st.one_of(st.sampled_from(["1", "01", "2", "0", "²", "١", "1.0", " 1", "-1", "two"]), some_text)


@st.composite
def guardbench_tables(draw: st.DrawFn) -> dict[str, Any]:
    table: dict[str, Any] = {}
    if draw(st.booleans()):
        scopes: dict[str, Any] = {}
        for kind in draw(st.lists(st.sampled_from(["variant", "category", "turn", "turns"]), max_size=3, unique=True)):
            names = draw(
                st.lists(
                    depth_keys
                    if kind.startswith("turn")
                    else st.sampled_from(["typo", "original", "Danger", "danger", "DANGER", "x y"]),
                    max_size=3,
                    unique=True,
                )
            )
            entries: dict[str, Any] = {}
            for name in names:
                keys = draw(
                    st.lists(
                        st.sampled_from(["min_recall", "max_fpr", "max_ber", "min_recal"]), max_size=2, unique=True
                    )
                )
                entries[name] = {k: draw(threshold_values) for k in keys}
            scopes[kind] = draw(st.one_of(st.just(entries), json_scalar)) if draw(st.integers(0, 7)) == 0 else entries
        table["thresholds"] = scopes
    if draw(st.booleans()):
        alias = {"model": draw(st.one_of(st.just("m"), json_scalar))}
        for key, values in (
            ("provider", st.sampled_from(["openai-compat", "hf-local", "other"])),
            ("api_key_env", st.sampled_from(["OPENAI_API_KEY", SECRET, "1BAD"])),
            ("alias", st.just("x")),
            ("concurrency", st.integers(-1, 3)),
            ("params", json_value),
        ):
            if draw(st.integers(0, 2)) == 0:
                alias[key] = draw(values)
        models: Any = {"a": alias}
        shape = draw(st.sampled_from(["tables", "tables", "array", "value"]))
        table["models"] = models if shape == "tables" else [alias] if shape == "array" else draw(json_scalar)
    if draw(st.booleans()):
        price = {
            draw(st.sampled_from(["input_per_million", "output_per_million", "per_token"])): draw(threshold_values)
        }
        table["prices"] = {"m": price} if draw(st.booleans()) else draw(json_value)
    if draw(st.integers(0, 9)) == 0:
        table[draw(st.sampled_from(["threshold", "model"]))] = {}
    return table


def toml_text(table: dict[str, Any]) -> str | None:
    """`[tool.guardbench]` as TOML, or None where a drawn value has no TOML form (None, a NaN key)."""
    lines: list[str] = []

    def value(v: Any) -> str | None:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            text = repr(float(v)) if isinstance(v, float) else str(v)
            return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(text, text)
        if isinstance(v, str):
            return json.dumps(v)  # JSON string escapes are TOML basic-string escapes, surrogates aside
        if isinstance(v, list):
            items = [value(x) for x in v]
            return None if any(i is None for i in items) else "[" + ", ".join(i for i in items if i is not None) + "]"
        if isinstance(v, dict):
            pairs = [(json.dumps(k), value(x)) for k, x in v.items()]
            return None if any(p is None for _, p in pairs) else "{" + ", ".join(f"{k} = {p}" for k, p in pairs) + "}"
        return None

    def is_table(v: Any) -> bool:
        return isinstance(v, dict) and bool(v) and all(isinstance(x, dict) for x in v.values())

    def is_array_of_tables(v: Any) -> bool:
        return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)

    def emit(path: list[str], body: dict[str, Any]) -> bool:
        header = ".".join(json.dumps(p) for p in path)
        lines.append(f"[{header}]")
        for key, v in body.items():  # plain keys first: they belong to this table
            if not is_table(v) and not is_array_of_tables(v):
                shown = value(v)
                if shown is None:
                    return False
                lines.append(f"{json.dumps(key)} = {shown}")
        for key, v in body.items():  # an array of tables: [[tool.guardbench.models]]
            if is_array_of_tables(v):
                for entry in v:
                    lines.append(f"[[{header}.{json.dumps(key)}]]")
                    for k, x in entry.items():
                        shown = value(x)
                        if shown is None:
                            return False
                        lines.append(f"{json.dumps(k)} = {shown}")
        return all(emit([*path, key], v) for key, v in body.items() if is_table(v))

    return "\n".join(lines) + "\n" if emit(["tool", "guardbench"], table) else None


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if any(not c.isprintable() or c in '"\\' for c in str(value)):
        return json.dumps(value)  # JSON's string escapes are TOML's basic-string escapes
    return '"' + str(value) + '"'


# guardbench keys a native `[tool.pytest]` table may give in TOML's own types.
NATIVE_KEYS = (
    "guardbench_min_recall",
    "guardbench_max_fpr",
    "guardbench_max_errors",
    "guardbench_offline",
    "guardbench_variants",
    "guardbench_data",
    "guardbench_timeout",
    "guardbench_tutor",
)


@st.composite
def settings_files(draw: st.DrawFn, native_values: bool = False) -> dict[str, bytes]:
    """The pytest settings a project may already have, in any file pytest reads, valid or not (`init`'s
    fuzz and the plugin's). `native_values`: guardbench keys in the TOML files also take TOML's own
    types (a float, an integer, a boolean, an array), as pytest 9's native `[tool.pytest]` table
    invites, and values with escape sequences or a planted key."""
    keys = draw(
        st.dictionaries(
            st.sampled_from(["testpaths", "addopts", "xfail_strict", "guardbench_tutor", "guardbench_max_fpr"]),
            st.none(),
            max_size=3,
        )
    )
    values = {
        "testpaths": draw(st.sampled_from([["tests"], ["app_tests"], ["app_tests", "tests"], ["."]])),
        "addopts": "-q",
        "xfail_strict": True,
        "guardbench_tutor": draw(st.sampled_from(["tutor-a", "smol"])),
        "guardbench_max_fpr": "0.3",
    }
    table = {key: values[key] for key in keys}
    if native_values:
        natives = st.one_of(
            st.floats(allow_nan=False, allow_infinity=False, min_value=-2, max_value=2),
            st.integers(-2, 3),
            st.booleans(),
            st.lists(st.sampled_from(["original", "typo", "0.5", "x"]), max_size=2),
            escape_text,
            key_text,
        )
        for key in draw(st.lists(st.sampled_from(NATIVE_KEYS), max_size=3, unique=True)):
            table[key] = draw(natives)
    toml_lines = [f"{key} = {_toml(value)}" for key, value in table.items()]
    ini_lines = [f"{k} = {' '.join(v) if isinstance(v, list) else v}" for k, v in table.items()]
    comment = draw(st.sampled_from(["", "# the team's settings\n"]))
    toml_kinds = ["native", "native", "native", "pytest.toml", "ini-options", "both", "not-toml"]
    kind = draw(
        st.sampled_from(toml_kinds)
        if native_values
        else st.sampled_from(
            [
                "none",
                "project",
                "ini-options",
                "native",
                "both",
                "pytest.toml",
                "pytest.ini",
                "setup.cfg",
                "tox.ini",
                "not-toml",
                "not-utf8",
            ]
        )
    )
    project = '[project]\nname = "team"\nversion = "0.1"\n\n'
    files = {
        "none": {},
        "project": {"pyproject.toml": project},
        "ini-options": {"pyproject.toml": project + "[tool.pytest.ini_options]\n" + "\n".join(toml_lines)},
        "native": {"pyproject.toml": "[tool.pytest]\n" + "\n".join(toml_lines or ['addopts = ["-q"]'])},
        "both": {"pyproject.toml": '[tool.pytest]\naddopts = ["-q"]\n[tool.pytest.ini_options]\nxfail_strict = true'},
        "pytest.toml": {"pytest.toml": "[pytest]\n" + "\n".join(toml_lines)},
        "pytest.ini": {"pytest.ini": "[pytest]\n" + "\n".join(ini_lines)},
        "setup.cfg": {"setup.cfg": "[metadata]\nname = team\n\n[tool:pytest]\n" + "\n".join(ini_lines)},
        "tox.ini": {"tox.ini": "[tox]\nenvlist = py311\n\n[pytest]\n" + "\n".join(ini_lines)},
        "not-toml": {"pyproject.toml": "[tool.pytest.ini_options\n"},
        "not-utf8": {"pyproject.toml": "# caf\udce9\n"},
    }[kind]
    event(f"settings: {kind}")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    encoded = {}
    for name, text in files.items():
        text = (comment + text + "\n").replace("\n", newline)
        encoded[name] = text.encode("utf-8", "surrogateescape")
    if draw(st.booleans()):
        encoded[".gitignore"] = draw(st.sampled_from([b"build/\n", b"reports/\n.guardbench/\n", b"caf\xe9/\n", b"x"]))
    return encoded


@st.composite
def write_failures(draw: st.DrawFn, targets: tuple[str, ...]) -> tuple[str, int | str]:
    """How a writer's write fails: ("limit", bytes), a file-size limit on the command's process that stops
    a write part-way as a full disk does; or ("folder", name), a folder standing where one of its
    `targets` (file names) goes."""
    if not targets or draw(st.booleans()):
        return "limit", draw(st.one_of(st.integers(0, 4096), st.integers(4096, 200_000)))
    return "folder", draw(st.sampled_from(targets))
