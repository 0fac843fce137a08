"""Pack files as a user writes them, mostly right and one thing wrong, through the loader, `guardbench
expand` and `guardbench screen`: a DataError naming the file (exit 4), or cases whose every text can be
written; never a crash, a traceback, a half-written output or the planted key in an output."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given

from pytest_guardbench.cases.item_checks import has_visible_text
from pytest_guardbench.cases.sources import load_sources
from pytest_guardbench.commands.main import main
from pytest_guardbench.errors import DataError
from pytest_guardbench.settings.config import MINORBENCH_HARMFUL_CATEGORIES
from tests.fuzz.conftest import check_outcome, fuzz
from tests.fuzz.strategies import pack_files

pytestmark = pytest.mark.usefixtures("planted_key")


@fuzz(examples=150)
@given(pack_files())
def test_the_loader_gives_writable_cases_or_one_error_naming_the_file(pack):
    name, data = pack
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            loaded = load_sources([path], MINORBENCH_HARMFUL_CATEGORIES)
        except DataError as exc:
            event("refused")
            assert str(exc).startswith(str(path)), exc
            assert "\n" not in str(exc).strip()
            return
    event("loaded")
    for item in loaded.items:
        for text in (item.prompt_text, *(t.content for t in item.turns)):
            text.encode("utf-8")  # no lone surrogate reaches a case
            assert has_visible_text(text)


@fuzz(examples=60)
@given(pack_files())
def test_expand_writes_a_whole_pack_that_loads_again_or_nothing(capsys, pack):
    name, data = pack
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / name, Path(folder) / "out" / "expanded.json"
        path.write_bytes(data)
        out.parent.mkdir()
        code = main(["expand", str(path), "-o", str(out), "--variants", "original,typo,crescendo"])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(path)], files=[out])
        if code == 0:
            document = json.loads(out.read_text(encoding="utf-8"))
            assert document["items"]
            load_sources([out], MINORBENCH_HARMFUL_CATEGORIES)  # what expand writes, a run can read
        else:
            assert list(out.parent.iterdir()) == [], "a failed expand left a file behind"


@fuzz(examples=30)
@given(pack_files())
def test_screen_measures_the_pack_or_names_the_file(capsys, pack):
    name, data = pack
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        code = main(["screen", str(path), "--guardrail", "keyword", "--variants", "original,typo", "--json"])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(path)])
        if code == 0:
            assert json.loads(captured.out)["cases"] >= 1
