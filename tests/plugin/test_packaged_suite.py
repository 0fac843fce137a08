"""What an installed wheel gives a repository: the packaged suite, the shipped packs by name, and the
files `guardbench init` writes, collected and run by pytest there; and what the wheel carries."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_guardbench._util.package_data import DATASETS, PACKS, shipped_names
from pytest_guardbench.cases.sources import shipped_system_prompts
from tests.conftest import SCRIPTED_TUTOR_CONFTEST, read_summary

REPO = Path(__file__).resolve().parents[2]


def test_an_initialised_folder_collects_the_shipped_pack_through_the_packaged_suite(pytester):
    init = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "init", "--no-models"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    assert "next: pytest" in init.stdout
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["tests/test_guardbench.py::test_case[child_safety.danger-001.original]", "396 tests collected*"]
    )


def test_the_packaged_suite_runs_a_shipped_pack_by_name(pytester):
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST)
    pytester.makepyfile(test_mine="from pytest_guardbench.suite import test_case\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:xdist",
        "--guardbench-data=child_safety_v1",
        "--guardbench-variants=original",
        "--tutor=scripted",
        "--guardrail=keyword",
        "--judge=rules",
        "--guardbench-min-recall=0",
        "--guardbench-max-fpr=1",
    )
    assert result.ret == 0, result.stdout.str()
    pack = json.loads((REPO / "pytest_guardbench" / "packs" / "child_safety_v1.json").read_text(encoding="utf-8"))
    assert read_summary(pytester)["scorecards"]["system"]["n"] == len(pack["items"]) == 99
    manifest = (next((pytester.path / "reports").iterdir()) / "data_manifest.json").read_text()
    assert "pytest_guardbench/packs/child_safety_v1.json" in manifest.replace("\\\\", "/")


@pytest.mark.slow
def test_the_wheel_carries_packs_datasets_suite_and_system_prompts(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(
        REPO / "pytest_guardbench", source / "pytest_guardbench", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    # No build isolation: the build backend is already here, and isolation would reach for an index.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("pytest_guardbench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    expected = {f"pytest_guardbench/packs/{n}.json" for n in shipped_names(PACKS)}
    expected |= {n for n in names if n.startswith("pytest_guardbench/datasets/")}
    assert len([n for n in expected if "/datasets/" in n]) == len(shipped_names(DATASETS))
    expected |= {f"pytest_guardbench/system_prompts/{n}.txt" for n in shipped_system_prompts()}
    expected |= {
        "pytest_guardbench/suite.py",
        "pytest_guardbench/guards/heads/offline_guard_v1.json",
        "pytest_guardbench/judges/heads/offline_judge_v1.json",
    }
    assert expected <= names, sorted(expected - names)
    assert wheel.stat().st_size < 3_000_000
    # A plain install stays free of torch and the OpenAI client; the extras bring them.
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [line for line in requires if "extra ==" not in line]
    assert not any(lib in line for line in core for lib in ("torch", "transformers", "openai"))
    for extra, lib in (
        ("hf", "torch"),
        ("hf", "transformers"),
        ("openai", "openai"),
        ("docs", "sphinx"),
        ("dev", "ruff"),
    ):
        assert any(lib in line and f'extra == "{extra}"' in line for line in requires), (extra, lib)
