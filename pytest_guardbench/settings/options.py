"""The option table: every `--guardbench-*` option and `guardbench_*` ini key with its flags, help and
parser (the parsers are in option_values.py), and ConfigError, the error an unusable setting raises.
Settings (config.py) are built from it; plugin.hooks registers it and the docs' option page renders it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from pytest_guardbench.errors import UsageError
from pytest_guardbench.settings.option_values import (
    MAX_API_PROCESSES,
    MAX_ATTACKER_TURNS,
    MAX_BATCH_SIZE,
    MAX_CASES,
    MAX_NEW_TOKENS,
    MAX_RETRIES,
    MAX_SAMPLES,
    at_most,
    choice,
    concurrency,
    count,
    fraction,
    name_list,
    positive_seconds,
    seconds,
    shard,
    yes_no,
)


def policy_name(text: str) -> str:
    """A scoring policy's name. The names come from the record types, read when the option is given:
    registering the options imports no model (every pytest run in an environment with guardbench
    installed registers them)."""
    from pytest_guardbench.records import PolicyName

    return choice(*get_args(PolicyName))(text)


# name_list is re-exported: callers split a comma list the way the option table does.
__all__ = ["OPTIONS", "OPTIONS_BY_NAME", "ConfigError", "OptionSpec", "name_list"]


class ConfigError(UsageError):
    """A setting is unusable; the message names the option or file."""


@dataclass(frozen=True)
class OptionSpec:
    """One setting: its CLI flag(s), ini key and parser. `plugin.py` registers these as they are."""

    name: str  # settings field and the suffix of dest/ini key
    flags: tuple[str, ...]
    help: str
    parse: Callable[[str], object] = str
    repeatable: bool = False
    flag: bool = False  # a CLI switch without a value; its ini key takes true/false
    ini_type: Literal["string", "linelist"] = "string"

    @property
    def dest(self) -> str:
        return f"guardbench_{self.name}"

    @property
    def ini_key(self) -> str:
        return f"guardbench_{self.name}"

    @property
    def label(self) -> str:
        return self.flags[0]


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "guardrail",
        ("--guardrail", "--guardbench-guardrail"),
        "Guard: offline (default), offline-kb, keyword, semantic, none, a model alias or openai:<model> / "
        "vllm:<model>@<url>.",
    ),
    OptionSpec(
        "tutor",
        ("--tutor", "--guardbench-tutor"),
        "Tutor: smol, a registered provider, a model alias or openai:<model> / vllm:<model>@<url>.",
    ),
    OptionSpec(
        "judge",
        ("--judge", "--guardbench-judge"),
        "Safety judge: offline (default), rules, a model alias or openai:<model> / vllm:<model>@<url>; a comma list "
        "of 3, 5, ... judges is a panel whose verdict is their strict majority.",
    ),
    OptionSpec(
        "data",
        ("--guardbench-data",),
        "Prompt pack (.json), dataset (.jsonl), MinorBench CSV (.csv) or a shipped pack's name (child_safety_v1); "
        "repeatable.",
        repeatable=True,
        ini_type="linelist",
    ),
    OptionSpec(
        "variants",
        ("--guardbench-variants",),
        "Comma list of variants to run (default: original,typo,camouflage,adversarial).",
        name_list,
    ),
    OptionSpec(
        "exclude_variants", ("--guardbench-exclude-variants",), "Comma list of variants to leave out.", name_list
    ),
    OptionSpec(
        "samples",
        ("--guardbench-samples",),
        "Tutor samples per prompt-variant (k); k>1 samples with a per-case seed.",
        at_most(MAX_SAMPLES),
    ),
    OptionSpec(
        "judge_samples",
        ("--guardbench-judge-samples",),
        "Ask the judge k times per response (an LLM judge samples with a seed per ask); the verdict is the strict "
        "majority, and judge_quality reports how often the k answers disagreed (default 1).",
        at_most(MAX_SAMPLES),
    ),
    OptionSpec(
        "malformed_policy",
        ("--guardbench-malformed-policy",),
        "What a malformed guard verdict does: block, allow, or fallback (the tutor answers).",
        choice("block", "allow", "fallback"),
    ),
    OptionSpec(
        "system_prompt",
        ("--guardbench-system-prompt",),
        "Tutor system prompt: a shipped name, a text file path, or none (send no system message).",
    ),
    OptionSpec(
        "report_dir", ("--guardbench-report-dir",), "Folder that receives one sub-folder per run (default: reports)."
    ),
    OptionSpec(
        "policy",
        ("--guardbench-policy",),
        "Scoring policy: assistant_policy_v2 (default; a harmful prompt is handled iff the response is safe) "
        "or refusal "
        "(it must also not be answered).",
        policy_name,
    ),
    OptionSpec(
        "mode",
        ("--guardbench-mode",),
        "gate: mishandled cases xfail and thresholds decide; strict: they fail.",
        choice("gate", "strict"),
    ),
    OptionSpec(
        "harmful_categories",
        ("--guardbench-harmful-categories",),
        "Comma list of categories that mark an unlabelled item harmful.",
        name_list,
        ini_type="linelist",
    ),
    OptionSpec("min_recall", ("--guardbench-min-recall",), "Gate: minimum system recall on harmful prompts.", fraction),
    OptionSpec(
        "max_fpr", ("--guardbench-max-fpr",), "Gate: maximum system false positive (over-refusal) rate.", fraction
    ),
    OptionSpec("max_ber", ("--guardbench-max-ber",), "Gate: maximum system balanced error rate.", fraction),
    OptionSpec(
        "min_coverage",
        ("--guardbench-min-coverage",),
        "Gate: minimum share of selected cases that were scored.",
        fraction,
    ),
    OptionSpec(
        "max_errors",
        ("--guardbench-max-errors",),
        "Gate: pipeline errors tolerated (default 0).",
        at_most(MAX_CASES, count),
    ),
    OptionSpec(
        "max_empty_rate",
        ("--guardbench-max-empty-rate",),
        "Gate: maximum share of tutor replies that are empty.",
        fraction,
    ),
    OptionSpec(
        "gate_interval",
        ("--guardbench-gate-interval",),
        "Gate on the point estimate or the 95% Wilson interval (inconclusive when it straddles).",
        choice("point", "wilson"),
    ),
    OptionSpec(
        "max_flip_rate",
        ("--guardbench-max-flip-rate",),
        "Gate: maximum share of base prompts whose correctness flips between original and any variant.",
        fraction,
    ),
    OptionSpec(
        "zero_tolerance",
        ("--guardbench-zero-tolerance",),
        "Comma list of categories where one harmful prompt answered fails the gate.",
        name_list,
        ini_type="linelist",
    ),
    OptionSpec(
        "baseline",
        ("--guardbench-baseline",),
        "A previous run folder: per-case flips and a McNemar test; fail on a significant regression.",
    ),
    OptionSpec(
        "scorecard_snapshot",
        ("--guardbench-scorecard-snapshot",),
        "A committed JSON of system and per-variant rates to compare with (written when missing).",
    ),
    OptionSpec(
        "scorecard_tolerance",
        ("--guardbench-scorecard-tolerance",),
        "How much worse than the scorecard snapshot a rate may get (default 0.02).",
        fraction,
    ),
    OptionSpec(
        "shard",
        ("--guardbench-shard",),
        "Run only shard i of n (i/n): a stable slice by base prompt, for a CI matrix; merge with guardbench merge.",
        shard,
    ),
    OptionSpec(
        "max_new_tokens",
        ("--guardbench-max-new-tokens",),
        "Token limit for each tutor answer (default: 64 for a local tutor, whose replies the embedded model "
        "loops to any limit; an API tutor answers up to its server's own limit).",
        at_most(MAX_NEW_TOKENS),
    ),
    OptionSpec(
        "batch_size",
        ("--guardbench-batch-size",),
        "Cases run together through a local model.",
        at_most(MAX_BATCH_SIZE),
    ),
    OptionSpec("model_cache", ("--guardbench-model-cache",), "Folder for converted local model weights."),
    OptionSpec(
        "offline",
        ("--guardbench-offline",),
        "Load Hugging Face models only from a folder or the local cache, never download (as HF_HUB_OFFLINE=1).",
        yes_no,
        flag=True,
    ),
    OptionSpec(
        "concurrency",
        ("--guardbench-concurrency",),
        "API calls in flight per model: N, or per role guardrail=N,tutor=N,judge=N (default 8); under -n the "
        "workers share it.",
        concurrency,
    ),
    OptionSpec(
        "api_processes",
        ("--guardbench-api-processes",),
        "Worker processes that make the API models' calls, shared by every API model of the run; default: 2 "
        "when the run is one process, every role is an API model and it makes 1,500 calls or more, else 1 (the "
        "calls are made in the test process, as always under -n).",
        at_most(MAX_API_PROCESSES),
    ),
    OptionSpec(
        "max_duration",
        ("--guardbench-max-duration",),
        "Start no case after this many seconds; the rest are reported as not run and the summary is marked incomplete.",
        seconds,
    ),
    OptionSpec(
        "timeout",
        ("--guardbench-timeout",),
        "Seconds one API call may take before it is retried (default 60).",
        positive_seconds,
    ),
    OptionSpec(
        "retries",
        ("--guardbench-retries",),
        "Retries of an API call after 429/5xx/timeouts/bad bodies, with backoff (default 3).",
        at_most(MAX_RETRIES, count),
    ),
    OptionSpec(
        "cache",
        ("--guardbench-cache",),
        "Response cache: off, read, write (read and record) or replay (a miss fails the case).",
        choice("off", "read", "write", "replay"),
    ),
    OptionSpec(
        "cache_path",
        ("--guardbench-cache-path",),
        "SQLite file of the response cache (default .guardbench/cache.sqlite under the rootdir).",
    ),
    OptionSpec(
        "resume",
        ("--guardbench-resume",),
        "A run folder to finish: its finished cases are reused, only missing or errored ones run.",
    ),
    OptionSpec(
        "batch_api",
        ("--guardbench-batch-api",),
        "Roles whose calls go through the provider's Batch API (guardrail,tutor,judge or all); resumable.",
        name_list,
    ),
    OptionSpec(
        "batch_poll",
        ("--guardbench-batch-poll",),
        "Seconds between polls of a Batch API batch (default 10).",
        positive_seconds,
    ),
    OptionSpec(
        "judge_check",
        ("--guardbench-judge-check",),
        "Human-labelled responses (a JSONL file or a shipped dataset's name) to score the run's judge against; a low "
        "kappa marks the scorecard low-confidence.",
    ),
    OptionSpec(
        "min_judge_kappa",
        ("--guardbench-min-judge-kappa",),
        "Cohen's kappa the judge needs on --guardbench-judge-check, or on --guardbench-labels (default 0.6).",
        fraction,
    ),
    OptionSpec(
        "labels",
        ("--guardbench-labels",),
        "A person's labels of this run's own replies (a JSONL file from guardbench audit --design random or "
        "stratified, or a shipped dataset's name): the scorecards are corrected by them, the judge's kappa on "
        "them decides LOW CONFIDENCE, and the gate decides recall and FPR on the corrected 95% intervals; "
        "repeatable, for a second labeller's file and the settled rows.",
        repeatable=True,
        ini_type="linelist",
    ),
    OptionSpec(
        "attacker",
        ("--guardbench-attacker",),
        "Also run each harmful prompt as an attack conversation whose user turns this attacker writes toward it: "
        "scripted (fixed templates, no model) or any model --tutor takes.",
    ),
    OptionSpec(
        "attacker_turns",
        ("--guardbench-attacker-turns",),
        "Most user turns an attack conversation has; its last scripted turn is the prompt itself (default 4).",
        at_most(MAX_ATTACKER_TURNS),
    ),
    OptionSpec(
        "progress",
        ("--guardbench-progress",),
        "Seconds between progress lines (cases done/total, rate, errors); 0 turns them off (default 30).",
        seconds,
    ),
)
OPTIONS_BY_NAME = {spec.name: spec for spec in OPTIONS}
