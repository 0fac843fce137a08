"""What the plugin declares and checks at configure time: its options and ini keys, its markers, the
units a run can name, which role this process has under xdist, and the controller's checks before
any case runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_guardbench.settings.options import OPTIONS, ConfigError

if TYPE_CHECKING:
    from pytest_guardbench.run.inputs import RunInputs
    from pytest_guardbench.run.preflight import PreflightInBackground
    from pytest_guardbench.run.units import Units


def add_options(parser: pytest.Parser) -> None:
    """Every `--guardbench-*` option with its ini key, and `--guardbench-list`."""
    group = parser.getgroup("guardbench", "child-safety stress tests (pytest-guardbench)")
    for spec in OPTIONS:
        cli_help = spec.help.replace("%", "%%")  # argparse %-formats help strings
        if spec.repeatable:
            group.addoption(*spec.flags, dest=spec.dest, action="append", default=None, help=cli_help)
        elif spec.flag:
            group.addoption(*spec.flags, dest=spec.dest, action="store_const", const=True, default=None, help=cli_help)
        else:
            group.addoption(*spec.flags, dest=spec.dest, type=spec.parse, default=None, help=cli_help)
        parser.addini(spec.ini_key, spec.help, type=spec.ini_type, default=[] if spec.ini_type == "linelist" else "")
    group.addoption(
        "--guardbench-list",
        action="store_true",
        dest="guardbench_list",
        default=False,
        help="List variants, guards, tutors, judges and system prompts, then exit.",
    )


MARKERS = (
    (
        "guardbench(pack, variant, harmful, category): a generated guardbench case; "
        "select with -m \"guardbench(variant='typo')\"."
    ),
    "harmful: a guardbench case whose prompt is labelled harmful.",
    "harmless: a guardbench case whose prompt is labelled safe.",
    "unlabelled: a guardbench case without a label (runs, never scored).",
)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def spawns_workers(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller that will start workers (`-n N` with N > 0)."""
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "numprocesses", None))


def registered_units(config: pytest.Config) -> Units:
    """The built-in units, and those conftest files and plugins register through our hooks."""
    from pytest_guardbench.run.units import builtin_units

    units = builtin_units()
    config.hook.pytest_guardbench_register_providers(registry=units.tutors)
    config.hook.pytest_guardbench_register_guards(registry=units.guards)
    config.hook.pytest_guardbench_register_judges(registry=units.judges)
    config.hook.pytest_guardbench_register_mutators(registry=units.mutators)
    return units


def check_before_cases(config: pytest.Config, inputs: RunInputs) -> PreflightInBackground | None:
    """The controller's checks before any case runs: the files the run compares itself with, a
    report folder that can be written, and every model answering once. Under xdist the models are
    asked while the workers start (the preflight in the background is waited on before any worker is
    sent a test); a resumed folder is only touched after the models answered, so a resume asks them here."""
    from pytest_guardbench.run.preflight import PreflightInBackground, preflight
    from pytest_guardbench.runfolder.comparison_inputs import check_comparison_inputs
    from pytest_guardbench.runfolder.folder import writable_problem

    settings = inputs.settings
    check_comparison_inputs(settings, bool(getattr(config.option, "update_snapshots", False)))
    unwritable = writable_problem(settings.report_dir)
    if unwritable:
        raise ConfigError(unwritable)
    if spawns_workers(config) and settings.resume is None:
        return PreflightInBackground(inputs)
    preflight(inputs)
    return None
