"""The run's judge quality, measured on human labels and paid once: its result is stored under a key
made of everything it depends on (the judge's identity, the labels file's bytes, the kappa bar and the
code that scores it) and read back by every later run with the same key, so an API judge is not billed
again for the same answers. A stored result that is unreadable or not a judge-quality document is
measured again and rewritten."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_guardbench._util.files import write_files
from pytest_guardbench.judges import quality
from pytest_guardbench.judges.base import Judge
from pytest_guardbench.judges.offline import OfflineJudge
from pytest_guardbench.judges.panel import PanelJudge, SampledJudge
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.judge_factory import named_judge_spec, the_run_judge
from pytest_guardbench.run.pipeline import preflight_error
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.scoring import agreement
from pytest_guardbench.document.gate import Confidence
from pytest_guardbench.document.judging import JudgeQuality, StoredCheck
from pytest_guardbench.settings.model_specs import ModelSpec

STORE_FOLDER = "judge_checks"


def _file_sha256(path: str | Path | None) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


def judge_identity(judge: Judge, spec: ModelSpec | None) -> dict[str, object]:
    """What makes two judges give the same verdicts: name, class and the source file that defines it
    (a judge registered from a conftest included), the model spec, an LLM judge's instructions and
    the offline judge's fitted heads and relevance floor."""
    if isinstance(judge, SampledJudge):
        return {**judge_identity(judge.inner, spec), "samples": judge.samples}
    if isinstance(judge, PanelJudge):
        # A member's spec is not known here; its provider's model and its instruction are.
        return {"name": judge.name, "panel": [judge_identity(member, None) for member in judge.members]}
    cls = type(judge)
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    return {
        "name": getattr(judge, "name", cls.__name__),
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "class_source_sha256": _file_sha256(source),
        "model_spec": None if spec is None else {**spec.flat_dump(), "base_url": spec.resolved_base_url()},
        "instruction": getattr(judge, "instruction", None),
        "provider_model": getattr(getattr(judge, "provider", None), "model", None),
        "heads_sha256": _file_sha256(judge.head_file) if isinstance(judge, OfflineJudge) else None,
        # The relevance check lives beside the class that reads it (judges/relevance.py); its floor decides verdicts.
        **({"relevance_floor": judge.relevance_floor} if isinstance(judge, OfflineJudge) else {}),
    }


def named_judge_identity(judge: Judge, name: str, root: Path) -> dict[str, object]:
    """`judge_identity` of the judge a command built for `--judge=name`, with the model spec a run
    would resolve the name to, so the command and a run name the same judge alike."""
    return judge_identity(judge, named_judge_spec(name, root))


def judge_id(identity: Mapping[str, object]) -> str:
    """A short name for a judge identity: two results with the same id measured the same judge."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def check_key(identity: Mapping[str, object], labels_file: Path, min_kappa: float) -> str:
    """sha256 over the judge's identity, the audit file's bytes, the bar and the scoring code."""
    parts = {
        "judge": identity,
        "labels_sha256": _file_sha256(labels_file),
        "min_kappa": min_kappa,
        "scoring_sha256": [_file_sha256(quality.__file__), _file_sha256(agreement.__file__)],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def stored_check(
    store: Path,
    key: str,
    compute: Callable[[], dict[str, Any]],
    now: Callable[[], str],
    replaced: Callable[[Path], None] = lambda path: None,
) -> tuple[dict[str, Any], bool]:
    """The check's result under `key`: read from `store` when there, else computed and written
    (an errored check is never written, so the next run tries again). Returns (result, reused);
    the result carries `stored_check` (its file and when it was computed), the same for every run
    that reads it, so shards that reuse it merge. A stored file that is not a whole result (cut
    short, emptied, edited) is measured again and replaced; `replaced` is told its path."""
    path = store / f"{key}.json"
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if _is_result(stored):
            return stored, True
        replaced(path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        replaced(path)
    result = compute()
    if "error" in result:
        return result, False
    result = {**result, "stored_check": {"path": str(path), "computed_at": now()}}
    try:
        store.mkdir(parents=True, exist_ok=True)
        # Atomic: two processes computing the same check both leave a whole file, and no temporary one.
        write_files([(path, json.dumps(result, indent=1, sort_keys=True))])
    except OSError:
        pass  # an unwritable store costs the next run the check again, nothing more
    # Read back as a later run will, so this run's summary equals theirs (JSON has no tuples).
    return json.loads(json.dumps(result)), False


def _is_result(stored: object) -> bool:
    """Whether a stored file holds a measured judge quality, as `stored_check` writes it."""
    if not isinstance(stored, dict) or "stored_check" not in stored or "cohen_kappa" not in stored or "error" in stored:
        return False
    try:
        JudgeQuality.model_validate(stored)
    except ValidationError:
        return False
    return True


def measured_quality(judge: Judge, labels: Sequence[JudgeLabel], min_kappa: float) -> dict[str, Any]:
    """`measure_judge_quality`, after one easy judgement: a judge that cannot answer (one that failed
    its preflight in the run, failing every case with it) is not sent the whole labels file as well."""
    problem = preflight_error(judge)
    if problem is not None:
        return {"error": f"not measured: {problem}", "low_confidence": True}
    return quality.measure_judge_quality(judge, labels, min_kappa)


@dataclass(frozen=True)
class RunJudgeQuality:
    """The run's judge measured on human labels, whether that makes the scorecard low-confidence, and
    where a stored result came from (`stored`: None when it could not be measured)."""

    quality: JudgeQuality
    confidence: Confidence
    stored: StoredCheck | None
    warnings: tuple[str, ...] = ()


def run_judge_quality(inputs: RunInputs, state: ProcessState, now: Callable[[], str]) -> RunJudgeQuality | None:
    """The run's judge scored against the labels file the settings name (`guardbench_judge_check`);
    None without one. A check that cannot be made is reported in the result, never raised: a run's
    finish must write its folder whatever the check does."""
    labels = inputs.judge_labels
    settings = inputs.settings
    if not labels or settings.judge_check is None or settings.cache_path is None:
        return None
    stored: StoredCheck | None = None
    healed: list[str] = []
    try:
        judge = the_run_judge(inputs, state)
        identity = judge_identity(judge, inputs.model_specs.get("judge"))
        key = check_key(identity, settings.judge_check, settings.min_judge_kappa)
        found, reused = stored_check(
            settings.cache_path.parent / STORE_FOLDER,
            key,
            lambda: measured_quality(judge, labels, settings.min_judge_kappa),
            now,
            lambda path: healed.append(f"the stored judge check {path} was unreadable or not a result: measured again"),
        )
        found = {**found, "judge_id": judge_id(identity), "judge_identity": identity}
        stored = StoredCheck.model_validate({"reused": reused, **found.get("stored_check", {})})
    except Exception as exc:  # noqa: BLE001 - a broken check is reported, not a crash
        found = {"error": f"{type(exc).__name__}: {exc}", "low_confidence": True}
    result = JudgeQuality.model_validate({**found, "labels_file": str(settings.judge_check)})
    kappa = result.cohen_kappa
    if result.low_confidence:
        why = result.error or (
            f"judge kappa {'undefined' if kappa is None else f'{kappa:.3f}'} < {settings.min_judge_kappa:g} "
            f"on {settings.judge_check}"
        )
        confidence = Confidence(level="low", reason=why)
    else:
        confidence = Confidence(level="normal", reason=f"judge kappa {kappa:.3f} >= {settings.min_judge_kappa:g}")
    return RunJudgeQuality(result, confidence, stored, tuple(healed))
