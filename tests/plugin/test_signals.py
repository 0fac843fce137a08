"""Stopping a run by signal: SIGTERM is Ctrl-C (reports written, marked incomplete, exit 2), and a second
Ctrl-C or SIGTERM exits 2 at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SUITE
from tests.openai_stub import OpenAIStub


@pytest.fixture
def slow_stub():
    stub = OpenAIStub(latency_s=0.1)
    yield stub
    stub.close()


def test_a_second_interrupt_exits_2_at_once():
    # The handler itself, in a process of its own: the first signal is a KeyboardInterrupt the program
    # handles (pytest writes its reports there); the second ends the process with 2 before the next line.
    code = (
        "import os, signal, sys\n"
        "from pytest_guardbench.plugin.interrupts import InterruptHandler\n"
        "assert InterruptHandler().install()\n"
        "first = signal.SIGTERM\n"
        "try:\n    os.kill(os.getpid(), first)\n    signal.pause()\nexcept KeyboardInterrupt:\n    print('first: interrupted', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\nsignal.pause()\nprint('never printed')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == "first: interrupted\n"
    assert "guardbench: SIGINT again: stopping now without finishing the reports (exit 2)" in done.stderr


def test_sigterm_mid_run_writes_the_reports_marked_incomplete_and_exits_2(tmp_path, slow_stub):
    stub = slow_stub
    items = [{"id": f"p{i}", "prompt_text": f"question {i}", "metadata": {"is_harmful": False}} for i in range(60)]
    (tmp_path / "pack.json").write_text(json.dumps({"name": "pack", "items": items}))
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nguardbench_data = pack.json\nguardbench_variants = original\n")
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "--guardrail=none",
            f"--tutor=vllm:tutor@{stub.base_url}",
            "--judge=rules",
            "--guardbench-concurrency=1",
            "--guardbench-min-recall=0",
            "--guardbench-max-fpr=1",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not any(
        len(p.read_text().splitlines()) >= 10 for p in Path(tmp_path / "reports").glob("*/results.jsonl")
    ):
        time.sleep(0.05)
    slow_stub.hold()  # no case finishes between the check above and the signal, however slow the machine
    run.send_signal(signal.SIGTERM)  # to the runner alone, as `timeout` or a CI cancel sends it
    slow_stub.release()
    try:
        output, _ = run.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("the run did not stop within 30 s of SIGTERM")
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    folder = next((tmp_path / "reports").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["completeness"]["complete"] is False
    assert summary["completeness"]["reasons"][0].startswith("run stopped early")
    assert 10 <= summary["coverage"]["scored"]["count"] < 60


def _slow_project(tmp_path: Path, stub: OpenAIStub, n: int = 60) -> list[str]:
    items = [{"id": f"p{i}", "prompt_text": f"question {i}", "metadata": {"is_harmful": i % 2 == 1}} for i in range(n)]
    (tmp_path / "pack.json").write_text(json.dumps({"name": "pack", "items": items}))
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nguardbench_data = pack.json\nguardbench_variants = original\n")
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--guardrail=none",
        f"--tutor=vllm:tutor@{stub.base_url}",
        "--judge=rules",
        "--guardbench-concurrency=1",
        "--guardbench-min-recall=0",
        "--guardbench-max-fpr=1",
    ]


def _wait_for_results(tmp_path: Path, lines: int) -> Path:
    deadline = time.time() + 60
    while time.time() < deadline:
        for path in Path(tmp_path / "reports").glob("*/results.jsonl"):
            if len(path.read_text().splitlines()) >= lines:
                return path.parent
        time.sleep(0.05)
    pytest.fail(f"no run wrote {lines} results within 60 s")


def test_ctrl_c_under_xdist_still_reports_how_many_cases_were_selected(tmp_path, slow_stub):
    command = _slow_project(tmp_path, slow_stub)
    # The server holds every call until the signal is sent, so it lands mid-run however slow the
    # machine is (on a loaded one the workers could otherwise finish all 60 before it is sent). A call
    # means a worker runs cases, which xdist starts only once every worker has collected.
    slow_stub.hold()
    run = subprocess.Popen(
        [*command, "-n", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not slow_stub.requests:
        time.sleep(0.05)
    assert slow_stub.requests, "no call reached the server within 60 s"
    os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the controller and its workers
    slow_stub.release()
    try:
        output, _ = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        pytest.fail("the run did not stop within 60 s of Ctrl-C")
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    folder = next((tmp_path / "reports").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["completeness"]["complete"] is False
    assert summary["selection"]["selected_cases"] == 60, "the workers' selection is known before they finish"


# A plugin hook that runs while guardbench writes the reports: the signal arrives after the last test,
# in the middle of the finish, as a Ctrl-C pressed a moment too late does.
SIGNAL_IN_THE_FINISH = """import os
import signal


def pytest_guardbench_summary(config, summary, extensions):
    os.kill(os.getpid(), signal.{name})
    extensions["after_the_signal"] = {{"still": "written"}}
"""


@pytest.mark.parametrize("kind", ["in one process", "under -n 2"])
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_reports_are_written_finishes_them_and_exits_2(tmp_path, slow_stub, kind, name):
    command = _slow_project(tmp_path, slow_stub, n=8)
    (tmp_path / "conftest.py").write_text(SIGNAL_IN_THE_FINISH.format(name=name))
    done = subprocess.run(
        [*command, *(["-p", "no:xdist"] if kind == "in one process" else ["-n", "2"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout + done.stderr
    assert f"guardbench: {name}: finishing the reports, then exit 2 (again to stop at once)" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    folder = next((tmp_path / "reports").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["extensions"] == {"after_the_signal": {"still": "written"}}, "the writes went on past it"
    assert summary["completeness"]["complete"] is True, "every case had run before the signal"
    assert len((folder / "results.jsonl").read_text().splitlines()) == 8
    assert (folder / "report.html").is_file()


def test_a_second_resume_of_a_folder_in_use_stops_at_once_naming_the_holder(tmp_path, slow_stub):
    command = _slow_project(tmp_path, slow_stub)
    first = subprocess.run(
        [*command, "-p", "no:xdist", "-x", "--guardbench-max-duration=0.5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    folder = next((tmp_path / "reports").iterdir())
    assert json.loads((folder / "summary.json").read_text())["completeness"]["complete"] is False, first.stdout
    # The server holds every call until the second process has been refused, so the first one is
    # still writing the folder then however slowly either starts.
    slow_stub.hold()
    resuming = subprocess.Popen(
        [*command, "-p", "no:xdist", f"--guardbench-resume={folder}"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (folder / "run.lock.holder").exists():
            time.sleep(0.05)
        second = subprocess.run(
            [*command, "-p", "no:xdist", f"--guardbench-resume={folder}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == pytest.ExitCode.USAGE_ERROR
        assert f"{folder}: another process is writing this run folder (pid {resuming.pid} on " in second.stderr
    finally:
        slow_stub.release()
        output, _ = resuming.communicate(timeout=120)
    assert resuming.returncode == 0, output
    records = (folder / "results.jsonl").read_text().splitlines()
    assert len(records) == 60, "one writer: each case written once"


# A conftest in the run's project that notes every report the controller (or the only process) logs,
# after guardbench's own hook has seen it, with one unbuffered write each: what a person, a CI log or a
# report file could have been told. An xdist worker logs its reports before the controller has them.
LOGGED_REPORTS = """import os

import pytest

_LOG = []


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        _LOG.append(os.open("reported.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    for fd in _LOG:
        os.write(fd, (report.when + " " + report.nodeid + "\\n").encode())
"""


def _told(reported: Path) -> set[str]:
    """The node ids of the case tests whose reports were logged."""
    return (
        {line.split()[1] for line in reported.read_text().splitlines() if "[" in line} if reported.is_file() else set()
    )


@pytest.mark.parametrize("kind", ["in one process", "under -n 2"])
def test_a_run_killed_mid_way_keeps_every_reported_case_and_no_half_line(tmp_path, slow_stub, kind):
    command = _slow_project(tmp_path, slow_stub)
    (tmp_path / "conftest.py").write_text(LOGGED_REPORTS)
    run = subprocess.Popen(
        [*command, *(["-p", "no:xdist"] if kind == "in one process" else ["-n", "2"]), "--guardbench-concurrency=4"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    reported = tmp_path / "reported.txt"
    deadline = time.time() + 60
    while time.time() < deadline and len(_told(reported)) < 10:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # no handler runs, no finish: only what is on disk is left
    run.wait(timeout=30)
    told = _told(reported)
    assert len(told) >= 10, "the run was killed after some tests had reported"
    data = next((tmp_path / "reports").glob("*/results.jsonl")).read_bytes()
    assert data.endswith(b"\n"), "no half line at the end"
    written = {json.loads(line)["case_id"] for line in data.decode("utf-8").splitlines()}
    assert {nodeid[nodeid.index("[") + 1 : -1] for nodeid in told} <= written
    assert run.returncode == -signal.SIGKILL
