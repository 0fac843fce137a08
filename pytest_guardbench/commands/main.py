"""`guardbench` console script: assembles one parser from the subcommands, each a thin module of
this package, and runs the one named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from pytest_guardbench import __version__
from pytest_guardbench._util.terminal import inert_output
from pytest_guardbench.commands import (
    audit,
    compare,
    correct,
    expand,
    import_seed,
    init,
    judge_quality,
    label_agreement,
    merge,
    mutators,
    rejudge,
    screen,
)

from pytest_guardbench.commands.exit_status import INTERRUPTED, USAGE_ERROR, exit_status_table

# In the order `guardbench --help` lists them.
SUBCOMMANDS = (
    init,
    expand,
    rejudge,
    import_seed,
    merge,
    compare,
    judge_quality,
    audit,
    correct,
    screen,
    label_agreement,
    mutators,
)


class CommandParser(argparse.ArgumentParser):
    """argparse with the project's usage-error status: 4, as pytest's, since 2 means interrupted here."""

    def error(self, message: str) -> NoReturn:
        from pytest_guardbench._util.redact import redact

        self.print_usage(sys.stderr)
        # argparse quotes the argument it refuses ("invalid choice: '...'"): a key pasted there is not echoed.
        self.exit(USAGE_ERROR, f"{self.prog}: error: {redact(message)}\n")


def build_parser() -> CommandParser:
    """The parser `main` runs; the docs render the command reference from it."""
    parser = CommandParser(
        prog="guardbench",
        description="pytest-guardbench helper commands.",
        epilog=f"exit statuses (of these commands and of pytest runs):\n{exit_status_table()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pytest-guardbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for subcommand in SUBCOMMANDS:
        subcommand.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Whatever it meets ends in a documented status with one line on stderr: an
    error guardbench raises on purpose carries its own status (a bad input file or option: 4), an
    unreadable or unwritable file is a usage error naming it (4), and anything else is a bug (3),
    said as one line, never a traceback. Every line is redacted: an input may quote a key. Everything
    printed, argparse's errors included, passes the terminal boundary (`_util.terminal`): a reply, a
    file or an argument cannot steer the terminal."""
    with inert_output():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    import contextlib
    import os

    from pytest_guardbench._util.redact import redact
    from pytest_guardbench.commands.exit_status import FAILED, INTERNAL_ERROR
    from pytest_guardbench.errors import GuardbenchError, RunFolderError
    from pytest_guardbench.providers.base import ProviderError

    args = build_parser().parse_args(argv)

    def say(message: str) -> None:
        # Made encodable: a lone surrogate from a non-UTF-8 argument or file name must not turn the
        # message itself into a crash.
        text = redact(f"guardbench {args.command}: {message}")
        print(text.encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr)

    def first_line(exc: BaseException) -> str:
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__

    def internal_error(exc: BaseException) -> int:
        say(f"internal error (a bug: please report it): {type(exc).__name__}: {first_line(exc)}")
        return INTERNAL_ERROR

    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        print(f"guardbench {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except GuardbenchError as exc:
        # A kind whose status depends on when it happens: here, at the end of a command, a call that
        # failed is 1 and a run folder that cannot be read or written is 4 (the exit-status table).
        status = exc.exit_status
        if status is None:
            status = (
                FAILED if isinstance(exc, ProviderError) else USAGE_ERROR if isinstance(exc, RunFolderError) else None
            )
        if status is None or status == INTERNAL_ERROR:
            return internal_error(exc)
        say(first_line(exc))
        return int(status)
    except BrokenPipeError:
        # The reader of the output went away (`| head`): nothing is wrong with the input or with
        # guardbench. Quietly, so the interpreter's last flush does not print a traceback either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED
    except OSError as exc:
        if exc.filename is None:
            return internal_error(exc)
        say(f"{exc.filename}: {exc.strerror or first_line(exc)}")
        return USAGE_ERROR
    except Exception as exc:  # noqa: BLE001 - the one place a bug becomes one line, not a traceback
        return internal_error(exc)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
