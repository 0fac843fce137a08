"""Moved to `tests/builders.py`. Kept only for the modules that still import it from here and could not
be edited in the same change (tests/providers/test_hf_guards.py, tests/providers/test_openai_compat.py,
tests/plugin/test_engine_runs.py, tests/plugin/test_shards.py, tests/pipeline/test_pipeline.py,
tests/pipeline/test_cut_off_pipeline.py, tests/unit/runfolder/test_correct.py): point them at
`tests.builders` and delete this file."""

from tests.builders import REFUSAL, V2, case, record, table

__all__ = ["REFUSAL", "V2", "case", "record", "table"]
