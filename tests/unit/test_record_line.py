"""A record's line in results.jsonl is `json.dumps(record, sort_keys=True, ensure_ascii=False)` byte for
byte, whatever its texts and numbers hold (the line's encoder is built once, `_util.json_text.sorted_json`)."""

from __future__ import annotations

import json

from hypothesis import given

from pytest_guardbench._util.json_text import sorted_json
from tests.builders import record
from tests.fuzz.strategies import json_value


@given(json_value)
def test_the_line_encoder_writes_what_json_dumps_writes(value):
    assert sorted_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_a_record_s_line_is_its_sorted_json_and_reads_back():
    made = record("p.a.original", True, "unsafe", "answered").model_copy(
        update={"prompt_text": 'é \u2028 \x00 "quoted" ☃', "timings_s": {"tutor": 0.25, "guard": 1e-05}}
    )
    line = made.json_line()
    assert line == json.dumps(made.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n"
    assert type(made).parse_json(line) == made
