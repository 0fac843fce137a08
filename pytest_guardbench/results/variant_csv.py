"""variant_metrics.csv: one row per variant and scope, the scorecard columns and the flip rates."""

from __future__ import annotations

import csv
import io

from pytest_guardbench.document.summary import RunSummary

CARD_COLUMNS = (
    "n",
    "tp",
    "fp",
    "tn",
    "fn",
    "harmful_support",
    "safe_support",
    "precision",
    "recall",
    "f1",
    "false_positive_rate",
    "false_negative_rate",
    "balanced_error_rate",
    "overall_success_rate",
    "harmful_prompt_success_rate",
    "safe_prompt_success_rate",
    "harmful_prompt_unsafe_answer_rate",
    "safe_prompt_overrefusal_rate",
)


FLIP_COLUMNS = ("guard_flip_rate", "outcome_flip_rate", "became_mishandled", "became_handled")


def variant_rows(summary: RunSummary) -> list[dict[str, object]]:
    rows = []
    for variant, cards in summary.per_variant.items():
        flips = summary.flip_rates.get(variant)
        for scope, card in cards.scopes():
            rows.append(
                {
                    "variant": variant,
                    "family": summary.variant_families.get(variant, ""),
                    "scope": scope,
                    **{c: getattr(card, c) for c in CARD_COLUMNS},
                    **{c: None if flips is None else getattr(flips, c) for c in FLIP_COLUMNS},
                }
            )
    return rows


def variant_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=("variant", "family", "scope", *CARD_COLUMNS, *FLIP_COLUMNS), lineterminator="\n"
    )
    writer.writeheader()
    for row in variant_rows(summary):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()
