"""The Monte-Carlo machinery of the coverage settings (test_coverage_settings.py, and the long sweep of
scripts/measure_coverage.py): synthetic runs with a known truth, judges that err as the shipped ones
do (or worse), audits drawn by the real designs and corrected by the real estimator, and how often
each 95% interval holds the truth.

Runs are built like real ones: single-prompt runs of about 400 cases, two thirds harmful (the main
job's shape, recall 0.97 and FPR 0.60, and a "typical" one, recall 0.85 and FPR 0.35), and a run of
150 three-turn conversations for the cluster design. The judges:
- `rules`, `offline`: the rules and offline judges' error rates on the v6 dev replies (P(the judge
  calls a case handled | its domain, its truth): rules 0.93 / 0.88 on harmful cases truly handled /
  mishandled, 0.86 / 0.87 on safe ones; offline 0.89 / 0.71 and 0.59 / 0.13);
- `unscored-mishandled`: right on every case it scores, and it scores none of the mishandled ones;
- `wrong-cell`: its "mishandled" verdict is always wrong (it calls every truly mishandled case
  handled, and a tenth of the harmful and a fifth of the safe handled ones mishandled).
A fresh error pattern is drawn for every audit: the interval must hold whatever the pattern.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_guardbench.audit.conversations import ConversationLabel, ConversationUnit, correct_conversations
from pytest_guardbench.audit.designs import draw_cluster, draw_random, draw_stratified, stratum_of
from pytest_guardbench.audit.estimator import LabelledValue, corrected_mean
from pytest_guardbench.document.correction import CorrectedMetric, Design
from pytest_guardbench.records import JudgeVerdict
from pytest_guardbench.scoring.conversation_tally import first_stop, replies_verdict
from pytest_guardbench.scoring.policies import policy_named

V2 = policy_named("assistant_policy_v2")

# harmful cases, of them truly handled; safe cases, of them truly handled
POPULATIONS = {
    "main-job": (264, 256, 132, 53),  # recall 0.970, FPR 0.598
    "typical": (267, 227, 133, 86),  # recall 0.850, FPR 0.353
}
SIZES = (30, 60, 120)
# P(judge says handled | harmful, truly handled), (| harmful, mishandled), (| safe, handled), (| safe, mishandled)
PROFILES = {"rules": (0.93, 0.88, 0.86, 0.87), "offline": (0.89, 0.71, 0.59, 0.13)}
JUDGES = ("rules", "offline", "unscored-mishandled", "wrong-cell")


def judge_value(name: str, harmful: bool, truth: int, rng: random.Random) -> int | None:
    """One judge's verdict on one case: 1 handled, 0 mishandled, None unscored."""
    if name == "unscored-mishandled":
        return truth if truth == 1 else None
    if name == "wrong-cell":
        return 0 if truth == 1 and rng.random() < (0.1 if harmful else 0.2) else 1
    handled_if_handled, handled_if_not, safe_handled_if_handled, safe_handled_if_not = PROFILES[name]
    if harmful:
        return int(rng.random() < (handled_if_handled if truth else handled_if_not))
    return int(rng.random() < (safe_handled_if_handled if truth else safe_handled_if_not))


@dataclass
class Coverage:
    """How often one metric's intervals held the truth, and over which audits."""

    covered: int = 0
    defined: int = 0
    labelled: int = 0  # audits that labelled at least one unit of the domain
    widths: list[float] = field(default_factory=list)
    sparse_covered: int = 0  # audits that left a verdict cell of the domain unlabelled
    sparse: int = 0

    def add(self, metric: CorrectedMetric, target: float, *, complement: bool = False, sparse: bool = False) -> None:
        self.labelled += metric.n_labelled > 0
        if metric.ci_low is None or metric.ci_high is None:
            return
        low, high = (1 - metric.ci_high, 1 - metric.ci_low) if complement else (metric.ci_low, metric.ci_high)
        held = low - 1e-9 <= target <= high + 1e-9
        self.defined += 1
        self.covered += held
        self.widths.append(high - low)
        if sparse:
            self.sparse += 1
            self.sparse_covered += held

    @property
    def rate(self) -> float:
        return self.covered / self.defined if self.defined else float("nan")

    @property
    def mean_width(self) -> float:
        return sum(self.widths) / len(self.widths) if self.widths else float("nan")


# --- single-prompt runs: the random and stratified designs --------------------------------------------


@dataclass
class Run:
    harmful: list[bool]
    truth: list[int]
    ids: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.ids = [f"u{i:04d}" for i in range(len(self.truth))]

    def domain(self, harmful: bool) -> list[int]:
        return [i for i, h in enumerate(self.harmful) if h is harmful]

    def handled_share(self, harmful: bool) -> float:
        members = self.domain(harmful)
        return sum(self.truth[i] for i in members) / len(members)


def single_prompt_run(name: str) -> Run:
    harmful, harmful_handled, safe, safe_handled = POPULATIONS[name]
    truth = [1] * harmful_handled + [0] * (harmful - harmful_handled) + [1] * safe_handled + [0] * (safe - safe_handled)
    return Run(harmful=[True] * harmful + [False] * safe, truth=truth)


def _draw(run: Run, judge: Sequence[int | None], design: Design, n: int, seed: int) -> dict[str, float]:
    if design == "random":
        drawn = draw_random(run.ids, n, seed)
    else:
        strata = [
            (unit_id, stratum_of(harmful, None if verdict is None else bool(verdict)))
            for unit_id, harmful, verdict in zip(run.ids, run.harmful, judge, strict=True)
        ]
        drawn = draw_stratified(strata, n, seed)
    return {unit.unit_id: unit.inclusion_probability for unit in drawn}


def single_prompt_coverage(run: Run, judge: str, design: Design, n: int, audits: int, seed: int) -> dict[str, Coverage]:
    """`audits` audits of `n` labels: the coverage of corrected recall and FPR."""
    rng = random.Random(seed)
    tallies = {"recall": Coverage(), "false_positive_rate": Coverage()}
    for index in range(audits):
        verdicts = [judge_value(judge, h, t, rng) for h, t in zip(run.harmful, run.truth, strict=True)]
        probability = _draw(run, verdicts, design, n, seed * 100_003 + index)
        for harmful, name in ((True, "recall"), (False, "false_positive_rate")):
            members = run.domain(harmful)
            rows = [
                LabelledValue(k, run.truth[i], probability[run.ids[i]])
                for k, i in enumerate(members)
                if run.ids[i] in probability
            ]
            values = [verdicts[i] for i in members]
            metric = corrected_mean(values, rows, design=design)
            hit = {values[r.position] for r in rows}
            share = run.handled_share(harmful)
            target = share if harmful else 1 - share
            # FPR is one minus the handled share of the safe cases: compare the flipped interval.
            tallies[name].add(metric, target, complement=not harmful, sparse=not set(values) <= hit)
    return tallies


# --- a run of conversations: the cluster design -------------------------------------------------------

CONVERSATIONS, DEPTH = 150, 3
# A reply's truth: unsafe, refused, answered (safe), or non_answer (safe, no answer).
_LABELS = {
    "unsafe": ("unsafe", "answered"),
    "refused": ("safe", "refused_or_blocked"),
    "answered": ("safe", "answered"),
    "non_answer": ("safe", "non_answer"),
}
_VERDICTS = {
    kind: JudgeVerdict(judge="j", response_safety=s, answer_mode=m, reason="") for kind, (s, m) in _LABELS.items()
}  # type: ignore[arg-type]
_UNUSABLE = JudgeVerdict.unusable("j", "could not parse")


def _reply_handled(harmful: bool, kind: str) -> int:
    return int(kind != "unsafe") if harmful else int(kind == "answered")


@dataclass
class Talks:
    """Conversations of DEPTH replies: each one's label and its replies' truths."""

    harmful: list[bool]
    replies: list[list[str]]
    truth: list[tuple[bool, int | None]] = field(init=False)  # (handled, depth caught) per conversation

    def __post_init__(self) -> None:
        self.truth = []
        for harmful, kinds in zip(self.harmful, self.replies, strict=True):
            pairs = [(d, _VERDICTS[kind]) for d, kind in enumerate(kinds, start=1)]
            verdict = replies_verdict(pairs, "labels")
            assert verdict is not None
            handled = V2.handled(harmful, verdict)
            assert handled is not None
            self.truth.append((handled, first_stop(pairs)))

    @property
    def ids(self) -> list[str]:
        return [f"c{i:03d}" for i in range(len(self.harmful))]


def conversation_run(seed: int = 11) -> Talks:
    """150 conversations, two thirds harmful. A third of the harmful ones push (each reply unsafe
    0.35, refused 0.25), the rest rarely go wrong (0.05, refused 0.45); a third of the safe ones
    confuse the tutor (answered 0.6, non-answer 0.3), the rest are answered (0.95)."""
    rng = random.Random(seed)
    harmful, replies = [], []
    for i in range(CONVERSATIONS):
        is_harmful = i % 3 != 0
        hard = rng.random() < 1 / 3
        if is_harmful:
            weights = (0.35, 0.25, 0.4, 0.0) if hard else (0.05, 0.45, 0.5, 0.0)
        else:
            weights = (0.05, 0.05, 0.6, 0.3) if hard else (0.01, 0.01, 0.95, 0.03)
        harmful.append(is_harmful)
        replies.append(rng.choices(list(_LABELS), weights, k=DEPTH))
    return Talks(harmful=harmful, replies=replies)


def _judged_kind(name: str, harmful: bool, kind: str, rng: random.Random) -> str | None:
    """The judge's reading of one reply, by the same error rates as `judge_value`: None unscored."""
    truth = _reply_handled(harmful, kind)
    said = judge_value(name, harmful, truth, rng)
    if said is None:
        return None
    if said == truth:
        return kind
    if harmful:
        return "answered" if kind == "unsafe" else "unsafe"
    return "non_answer" if kind == "answered" else "answered"


def _units(talks: Talks, judge: str, rng: random.Random) -> tuple[list[ConversationUnit], list[list[int | None]]]:
    units, reply_values = [], []
    for case_id, harmful, kinds in zip(talks.ids, talks.harmful, talks.replies, strict=True):
        said = [_judged_kind(judge, harmful, kind, rng) for kind in kinds]
        pairs = [(d, _UNUSABLE if k is None else _VERDICTS[k]) for d, k in enumerate(said, start=1)]
        verdict = replies_verdict(pairs, "j")
        handled = None if verdict is None else V2.handled(harmful, verdict)
        units.append(
            ConversationUnit(
                case_id=case_id,
                is_harmful=harmful,
                tutor_ran=True,
                judge_handled=handled,
                judge_stop=first_stop(pairs) if handled is not None else None,
                depth=DEPTH,
                reply_ids=tuple(f"{case_id}@{d}" for d in range(1, DEPTH + 1)),
            )
        )
        reply_values.append([None if k is None else _reply_handled(harmful, k) for k in said])
    return units, reply_values


CLUSTER_METRICS = (
    "conversation recall",
    "conversation FPR",
    *(f"recall_by_turn depth={d}" for d in range(1, DEPTH + 1)),
    "reply recall",
    "reply FPR",
)


def _reply_metrics(
    talks: Talks, reply_values: list[list[int | None]], probability: dict[str, float], harmful: bool
) -> tuple[CorrectedMetric, float]:
    """The replies of one domain corrected as replies, the labels clustered by conversation."""
    values: list[int | None] = []
    rows: list[LabelledValue] = []
    truths: list[int] = []
    for case_id, is_harmful, kinds, judged in zip(talks.ids, talks.harmful, talks.replies, reply_values, strict=True):
        if is_harmful is not harmful:
            continue
        for kind, value in zip(kinds, judged, strict=True):
            truth = _reply_handled(harmful, kind)
            if case_id in probability:
                rows.append(LabelledValue(len(values), truth, probability[case_id], case_id))
            values.append(value)
            truths.append(truth)
    share = sum(truths) / len(truths)
    return corrected_mean(values, rows, design="cluster"), share if harmful else 1 - share


def cluster_coverage(talks: Talks, judge: str, n_labels: int, audits: int, seed: int) -> dict[str, Coverage]:
    """`audits` cluster audits of about `n_labels` replies (n_labels / DEPTH conversations, each whole)."""
    rng = random.Random(seed)
    tallies = {name: Coverage() for name in CLUSTER_METRICS}
    harmful_ids = [c for c, h in zip(talks.ids, talks.harmful, strict=True) if h]
    safe_ids = [c for c, h in zip(talks.ids, talks.harmful, strict=True) if not h]
    truth = dict(zip(talks.ids, talks.truth, strict=True))
    recall = sum(truth[c][0] for c in harmful_ids) / len(harmful_ids)
    fpr = 1 - sum(truth[c][0] for c in safe_ids) / len(safe_ids)
    caught = [
        sum(1 for c in harmful_ids if truth[c][1] is not None and truth[c][1] <= d) / len(harmful_ids)
        for d in range(1, DEPTH + 1)
    ]
    pairs = [(f"{case_id}@{d}", case_id) for case_id in talks.ids for d in range(1, DEPTH + 1)]
    for index in range(audits):
        units, reply_values = _units(talks, judge, rng)
        drawn = draw_cluster(pairs, n_labels // DEPTH, seed * 100_003 + index)
        probability = {unit.unit_id.split("@")[0]: unit.inclusion_probability for unit in drawn}
        labels = {c: ConversationLabel(truth[c][0], truth[c][1], p) for c, p in probability.items()}
        block = correct_conversations(units, labels, design="cluster")
        tallies["conversation recall"].add(block.scorecards.system.recall, recall)
        tallies["conversation FPR"].add(block.scorecards.system.false_positive_rate, fpr)
        for row, target in zip(block.recall_by_turn, caught, strict=True):
            tallies[f"recall_by_turn depth={row.depth}"].add(row.recall, target)
        for harmful, name in ((True, "reply recall"), (False, "reply FPR")):
            metric, target = _reply_metrics(talks, reply_values, probability, harmful)
            tallies[name].add(metric, target, complement=not harmful)
    return tallies


SweepRow = tuple[str, str, str, int, str, Coverage]  # (run, judge, design, labels, metric, coverage)


def sweep(audits: int, seed: int = 1, progress: Callable[[SweepRow], None] | None = None) -> list[SweepRow]:
    """Every setting: {main-job, typical} x {random, stratified} and the conversations x {cluster},
    each x {30, 60, 120} labels x every judge."""
    rows: list[SweepRow] = []
    for run_name in POPULATIONS:
        run = single_prompt_run(run_name)
        for design in ("random", "stratified"):
            for n in SIZES:
                for judge in JUDGES:
                    for metric, tally in single_prompt_coverage(run, judge, design, n, audits, seed).items():
                        rows.append((run_name, judge, design, n, metric, tally))
                        if progress:
                            progress(rows[-1])
                    seed += 1
    talks = conversation_run()
    for n in SIZES:
        for judge in JUDGES:
            for metric, tally in cluster_coverage(talks, judge, n, audits, seed).items():
                rows.append(("conversations", judge, "cluster", n, metric, tally))
                if progress:
                    progress(rows[-1])
            seed += 1
    return rows
