"""Every writer names the file it failed on and leaves no temporary file behind, and a rewrite of a
run folder (`correct`, `rejudge`, `merge`) changes all its documents or none of them. The failures are
real: a file-size limit on the command in a subprocess (a write that stops part-way, as on a full
disk), a folder where a file goes, a read-only folder."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from pytest_guardbench._util.files import FileSet, file_change, write_files
from pytest_guardbench.audit.labels import reply_sha256, write_labels
from pytest_guardbench.document.read import iter_records
from pytest_guardbench.records import JudgeLabel
from tests.fuzz.runs import write_run, write_shards
from tests.write_faults import guardbench_limited, leftovers, root_writes_anywhere, snapshot

DOCUMENTS = (
    "summary.json",
    "summary.md",
    "variant_metrics.csv",
    "data_manifest.json",
    "meta.json",
    "report.html",
    "corrected.json",
)


def _labels(run: Path, path: Path) -> Path:
    rows = []
    for made in iter_records(run):
        assert made.response is not None
        row = JudgeLabel(
            id=made.case_id,
            prompt=made.prompt_text,
            response=made.response.text,
            human_label="safe",
            answer_mode="answered",
            is_harmful=made.is_harmful,
            reply_sha256=reply_sha256(made.response.text),
            design="random",
            stratum="random",
        )
        rows.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def run(tmp_path):
    return write_run(tmp_path / "run")


def _corrected_sizes(run: Path, labels: Path, tmp_path: Path) -> dict[str, int]:
    """The size of each document `correct` writes, measured on a copy corrected without a limit."""
    import shutil

    copy = Path(shutil.copytree(run, tmp_path / "measure"))
    done = guardbench_limited(["correct", str(copy), "--labels", str(labels)], None)
    assert done.returncode in (0, 1, 6), done.stderr
    return {name: (copy / name).stat().st_size for name in DOCUMENTS if (copy / name).is_file()}


def test_correct_that_cannot_write_its_largest_document_changes_none(run, tmp_path):
    labels = _labels(run, tmp_path / "labels.jsonl")
    sizes = _corrected_sizes(run, labels, tmp_path)
    largest, *others = sorted(sizes, key=sizes.__getitem__, reverse=True)
    limit = max(sizes[name] for name in others) + 1  # every document fits but the largest
    assert limit < sizes[largest]
    before = snapshot(run)
    done = guardbench_limited(["correct", str(run), "--labels", str(labels)], limit)
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip() == f"guardbench correct: {run / largest}: File too large"
    assert snapshot(run) == before, "not one document rewritten: summary.json and report.html stay a pair"
    assert not leftovers(run)


def test_correct_that_cannot_write_its_first_document_changes_none(run, tmp_path):
    labels = _labels(run, tmp_path / "labels.jsonl")
    before = snapshot(run)
    done = guardbench_limited(["correct", str(run), "--labels", str(labels)], 64)
    assert done.returncode == 4 and done.stderr.strip() == f"guardbench correct: {run / 'summary.json'}: File too large"
    assert snapshot(run) == before and not leftovers(run)


@pytest.mark.parametrize("document", ["summary.md", "report.html", "corrected.json"])
def test_a_folder_where_a_document_goes_is_named_and_nothing_changes(run, tmp_path, document):
    labels = _labels(run, tmp_path / "labels.jsonl")
    (run / document).unlink(missing_ok=True)
    (run / document).mkdir()
    before = snapshot(run)
    done = guardbench_limited(["correct", str(run), "--labels", str(labels)], None)
    assert done.returncode == 4, done.stderr
    said = done.stderr.strip()
    assert said.startswith("guardbench correct: ") and said.endswith(f"{run / document}: Is a directory"), said
    assert snapshot(run) == before and (run / document).is_dir() and not leftovers(run)


@pytest.mark.skipif(root_writes_anywhere(), reason="root writes into a read-only folder: the mechanism cannot bite")
def test_a_read_only_run_folder_is_named_and_nothing_changes(run, tmp_path):
    labels = _labels(run, tmp_path / "labels.jsonl")
    before = snapshot(run)
    run.chmod(0o555)
    try:
        done = guardbench_limited(["correct", str(run), "--labels", str(labels)], None)
    finally:
        run.chmod(0o755)
    assert done.returncode == 4 and str(run) in done.stderr
    assert snapshot(run) == before and not leftovers(run)


@pytest.mark.parametrize("command", ["merge", "rejudge"])
def test_a_merge_or_rejudge_that_cannot_write_leaves_no_folder_and_names_the_file(tmp_path, command):
    if command == "merge":
        first, second = write_shards(tmp_path)
        out = tmp_path / "merged"
        argv = ["merge", str(first), str(second), "--out", str(out)]
        sources = [first, second]
    else:
        source = write_run(tmp_path / "run")
        out = source  # rejudge writes a new folder inside the run's
        argv = ["rejudge", str(source), "--judge", "rules"]
        sources = [source]
    before = [snapshot(s) for s in sources]
    done = guardbench_limited(argv, 2048)
    assert done.returncode == 4, done.stderr
    said = done.stderr.strip()
    assert said.startswith(f"guardbench {command}: ") and "File too large" in said and str(out) in said, said
    if command == "merge":
        assert not out.exists(), "a merge that could not be written leaves no folder"
    assert [snapshot(s) for s in sources] == before, "a rejudge that could not be written leaves no folder"


def test_expand_that_cannot_write_its_file_names_it_and_keeps_the_old_one(tmp_path):
    out = tmp_path / "expanded.json"
    out.write_text("old\n", encoding="utf-8")
    done = guardbench_limited(["expand", "child_safety_v1", "-o", str(out)], 256)
    assert done.returncode == 4 and f"-o {out}: cannot write it (File too large)" in done.stderr
    assert out.read_text(encoding="utf-8") == "old\n" and not leftovers(tmp_path)


def test_the_labels_writer_names_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "audit.jsonl"
    target.mkdir()
    with pytest.raises(OSError) as raised:
        write_labels(target, [])
    assert raised.value.filename == str(target) and not leftovers(tmp_path)


def test_the_shared_writer_takes_back_what_it_did_when_a_later_file_fails(tmp_path):
    done, blocked = tmp_path / "a.txt", tmp_path / "b.txt"
    done.write_text("old a", encoding="utf-8")
    blocked.mkdir()
    # The folder is read as the old file (refused, naming it) before a byte is written.
    with pytest.raises(OSError) as raised:
        write_files([(done, "new a"), (blocked, "new b")])
    assert raised.value.errno == errno.EISDIR and str(raised.value) == f"{blocked}: Is a directory"
    assert raised.value.filename == str(blocked) and done.read_text(encoding="utf-8") == "old a"
    # A target that turns into a folder once checked: the rename fails after the first file is in place.
    blocked.rmdir()
    changes = FileSet([file_change(done, "new a"), file_change(blocked, "new b")])
    blocked.mkdir()
    (blocked / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(OSError) as raised:
        changes.apply()
    assert raised.value.filename == str(blocked)
    assert done.read_text(encoding="utf-8") == "old a", "the file renamed before the failure is taken back"
    assert not leftovers(tmp_path)
