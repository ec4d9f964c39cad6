"""The ``dpsql`` command (step 10, a client of ``dpsql.api``).

``command`` parses the arguments and dispatches; ``text`` holds the exit codes and
the table and error rendering every subcommand shares; ``report``, ``bounds`` and
``metadata`` are the subcommands that are more than a call of the reader;
``interrupt`` is what Ctrl-C does.

``main`` here is the console entry point (the ``dpsql`` script and ``python -m
dpsql``): it takes over Ctrl-C before anything heavy is imported, then runs
``dpsql.cli.command.main``, which is also the function to call in-process.
"""


HEAVY = (("query",), ("serve",), ("metadata", "bounds"), ("metadata", "init"),
         ("ledger", "report"))
"""Commands that load DuckDB and pandas (``query`` loads pandas only with ``--accuracy``:
it reads its rows without it; docs/performance.md, "The CLI")."""
LIBRARIES = ("duckdb", "numpy", "yaml", "jsonschema")
"""What every heavy command imports, among them every library whose C code prints an
error of its own imports (numpy's and rpds', under jsonschema, call ``PyErr_Print``): a
Ctrl-C landing in one of those printed a traceback before ``dpsql: interrupted`` (once
in a clean-clone CI run, at 0.15 s). Imported here, they finish before the command starts
or the process ends at once."""


def _load_engine_libraries(argv) -> None:
    """Import DuckDB and pandas, for the commands that use them, while a Ctrl-C still ends
    the process at once: a ``KeyboardInterrupt`` raised inside a C extension's import
    aborted the interpreter (exit -6, "nanobind: ...") in about 2% of Ctrl-Cs at 0.1 s."""
    import sys
    args = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    if any(a in ("-h", "--help", "--version", "--hash-password") for a in args):
        return
    if not any(tuple(args[:len(c)]) == c for c in HEAVY) or not _parses(args):
        return
    plain_query = args[:1] == ["query"] and not any(
        a == "--accuracy" or a.startswith("--accuracy=") for a in args)
    for name in LIBRARIES if plain_query else LIBRARIES + ("pandas",):
        try:
            __import__(name)
        except ImportError:            # reported by the command that needs it
            pass


def _parses(args: list) -> bool:
    """Whether the arguments parse (a usage error loads no engine library: the command
    then reports it, from its own parse)."""
    import contextlib
    import io
    from .parsers import build_parser
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(args)
    except (SystemExit, Exception):   # noqa: BLE001 - the parser's UsageError, or --help
        return False
    return True


def main(argv=None) -> int:
    """Entry point of the ``dpsql`` process; returns the exit code."""
    from . import interrupt
    interrupt.at_start()          # before pandas and DuckDB load: Ctrl-C exits 130
    _load_engine_libraries(argv)
    from .command import main as run
    code = run(argv)
    if code == interrupt.EXIT_INTERRUPTED:
        interrupt.leave()
    return code


__all__ = ["main"]
