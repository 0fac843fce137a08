"""`sorted_json(value)`: `json.dumps(value, sort_keys=True, ensure_ascii=False)`, byte for byte, without
the set-up `dumps` makes at every call: the C encoder it builds for these options, built once. A
record's line in results.jsonl is written with it, a million times in the finish of a large run, and
the set-up was a fifth of each (tests/unit/test_record_line.py holds it to `json.dumps`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable


def _sorted_json_encoder() -> Callable[[object], str]:
    encoder = getattr(json.encoder, "c_make_encoder", None)
    if encoder is None:  # no C encoder (another Python): plain dumps
        return functools.partial(json.dumps, sort_keys=True, ensure_ascii=False)
    # The arguments JSONEncoder.iterencode gives it for these options: `default` refusing what is not
    # JSON, the default separators, sorted keys, NaN allowed; no check for cycles (kept across calls,
    # its bookkeeping could outlive a call that failed; a record is a tree).
    encode = encoder(
        None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ": ", ", ", True, False, True
    )
    return lambda value: "".join(encode(value, 0))


sorted_json = _sorted_json_encoder()
