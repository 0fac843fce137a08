"""A pytest run whose response cache cannot be opened: exit 4, one line naming the option and the path,
never SQLite's "unable to open database file"."""

from __future__ import annotations

from tests.conftest import write_project


def test_a_pytest_run_whose_cache_cannot_be_opened_is_exit_4_naming_the_option(pytester):
    write_project(pytester)
    (pytester.path / "cache.sqlite").mkdir()
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "--guardbench-cache=write", "--guardbench-cache-path=cache.sqlite"
    )
    assert result.ret == 4, result.stdout.str()
    text = result.stdout.str() + result.stderr.str()
    said = f"--guardbench-cache-path {pytester.path / 'cache.sqlite'}: is a folder, not a response cache file"
    assert said in text, text[-2000:]
    assert "unable to open database file" not in text and "Traceback" not in text
