"""A write failure injected at each writer of a run folder or a command's output: `correct` (a folder
rewritten in place), `merge`, `rejudge` and `import-seed` (a new folder), `expand -o`, `compare --out`
and the labels file. The failures are real: a file-size limit on the command in a subprocess (a write
that stops part-way, as on a full disk) or a folder standing where a file goes.

The contract: a documented status, never 3 and never a traceback; a failure names the file it failed
on; no temporary file anywhere; the inputs untouched; a folder rewritten in place keeps all its old
documents or has all new ones; a new folder is whole or absent."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.audit.labels import write_labels
from pytest_guardbench.document.read import iter_records, load_records
from pytest_guardbench.records import JudgeLabel
from tests.fuzz.conftest import check_outcome, fuzz
from tests.fuzz.runs import copy_run, write_run, write_shards
from tests.fuzz.strategies import write_failures
from tests.write_faults import guardbench_limited, leftovers, snapshot

pytestmark = pytest.mark.usefixtures("planted_key")
DOCUMENTS = ("summary.md", "variant_metrics.csv", "data_manifest.json", "meta.json", "report.html", "corrected.json")
WRITERS = ("correct", "merge", "rejudge", "import-seed", "expand", "compare")
SEED_RESULTS = Path(__file__).parents[1] / "data" / "seed_v2_run" / "results.jsonl"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("writers")
    first, second = write_shards(folder)
    run = write_run(folder / "run")
    labels = folder / "labels.jsonl"
    rows = [
        JudgeLabel(
            id=r.case_id,
            prompt=r.prompt_text,
            response=r.response.text if r.response else "",
            human_label="safe",
            answer_mode="answered",
            is_harmful=r.is_harmful,
            design="random",
            stratum="random",
        )
        for r in iter_records(run)
    ]
    labels.write_text("".join(json.dumps(row.model_dump(mode="json", exclude_none=True)) + "\n" for row in rows))
    return {"run": run, "shard1": first, "shard2": second, "labels": labels}


def _argv(writer: str, made: dict[str, Path], root: Path) -> tuple[list[str], Path, list[Path]]:
    """(argument vector, where it writes, the inputs it must leave alone) for a writer working in `root`."""
    if writer == "correct":
        run = copy_run(made["run"], root)
        return ["correct", str(run), "--labels", str(made["labels"])], run, [made["labels"]]
    if writer == "merge":
        return ["merge", str(made["shard1"]), str(made["shard2"]), "--out", str(root / "merged")], root / "merged", []
    if writer == "rejudge":
        run = copy_run(made["run"], root)
        return ["rejudge", str(run), "--judge", "rules"], run, []
    if writer == "import-seed":
        seed = SEED_RESULTS
        return ["import-seed", str(seed), "--out", str(root / "imported")], root / "imported", [seed]
    if writer == "expand":
        return ["expand", "child_safety_v1", "-o", str(root / "expanded.json")], root / "expanded.json", []
    out = root / "compared"
    return ["compare", str(made["run"]), str(made["run"]), "--name", "a", "--name", "b", "--out", str(out)], out, []


def _inject(writer: str, where: Path, failure: tuple[str, int | str]) -> int | None:
    """Put the failure in place; the file-size limit to run the command under, if that is the failure."""
    how, what = failure
    if how == "limit":
        assert isinstance(what, int)
        return what
    if writer in ("correct",):
        target = where / str(what)
        target.unlink(missing_ok=True)
        target.mkdir()
    elif writer == "expand":
        where.mkdir()
    elif writer == "compare":
        (where / f"compare.{'md' if 'summary' in str(what) else 'html'}").mkdir(parents=True)
    return None


@fuzz(examples=30)
@given(writer=st.sampled_from(WRITERS), failure=st.data())
def test_a_write_failure_at_any_writer_names_the_file_and_leaves_all_or_nothing(made, writer, failure):
    targets = DOCUMENTS if writer in ("correct", "expand", "compare") else ()
    drawn = failure.draw(write_failures(targets))
    event(f"{writer}: {drawn[0]}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        argv, where, inputs = _argv(writer, made, root)
        limit = _inject(writer, where, drawn)
        before_inputs = [snapshot(p) if p.is_dir() else p.read_bytes() for p in inputs]
        before = snapshot(where) if writer in ("correct", "rejudge") else None
        sources = {name: snapshot(made[name]) for name in ("run", "shard1", "shard2")}
        done = guardbench_limited(argv, limit, cwd=root)
        check_outcome(done.returncode, done.stdout, done.stderr, names=[str(root)])
        assert not leftovers(root) and not any(leftovers(made[name]) for name in sources), "a temporary file was left"
        assert {name: snapshot(made[name]) for name in sources} == sources, "an input was changed"
        assert [snapshot(p) if p.is_dir() else p.read_bytes() for p in inputs] == before_inputs
        failed = done.returncode == 4
        event(f"{writer}: exit {done.returncode}")
        if failed:
            assert "File too large" in done.stderr or "folder" in done.stderr or "directory" in done.stderr, done.stderr
        if writer == "correct" and failed:
            assert snapshot(where) == before, "a correction that failed changed no document"
        if writer == "rejudge" and failed:
            assert snapshot(where) == before, "a rejudge that failed left no folder"
        if writer in ("merge", "import-seed") and failed:
            assert not where.exists(), "a new run folder that failed is absent"
        if writer == "compare" and failed:
            assert not [p for p in where.glob("compare.*") if p.is_file()], "compare's three files, all or none"
        if writer in ("merge", "import-seed", "rejudge") and done.returncode != 4 and where.is_dir():
            for run in [where] if writer != "rejudge" else [p for p in where.iterdir() if p.is_dir()]:
                assert load_records(run) is not None and (run / "summary.json").is_file(), "a new folder is whole"


@fuzz(examples=10)
@given(name=st.sampled_from(["audit.jsonl", "a.overlap-bo.jsonl"]), how=st.sampled_from(["folder", "parent-file"]))
def test_the_labels_writer_names_the_file_and_leaves_nothing_half_written(name, how):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        target = root / name if how == "folder" else root / "afile" / name
        if how == "folder":
            target.mkdir()
        else:
            (root / "afile").write_text("in the way\n", encoding="utf-8")
        with pytest.raises(OSError) as raised:
            write_labels(target, [])
        assert raised.value.filename in (str(target), str(root / "afile"))
        assert not leftovers(root)
        shutil.rmtree(root / "afile", ignore_errors=True)
