"""The ``dpsql`` command (step 10, a client of ``dpsql.api``).

``command`` parses the arguments and dispatches; ``text`` holds the exit codes and
the table and error rendering every subcommand shares; ``report``, ``bounds`` and
``metadata`` are the subcommands that are more than a call of the reader;
``interrupt`` is what Ctrl-C does.

``main`` here is the console entry point (the ``dpsql`` script and ``python -m
dpsql``): it takes over Ctrl-C before anything heavy is imported, then runs
``dpsql.cli.command.main``, which is also the function to call in-process.
"""


def main(argv=None) -> int:
    """Entry point of the ``dpsql`` process; returns the exit code."""
    from . import interrupt
    interrupt.at_start()          # before pandas and DuckDB load: Ctrl-C exits 130
    from .command import main as run
    code = run(argv)
    if code == interrupt.EXIT_INTERRUPTED:
        interrupt.leave()
    return code


__all__ = ["main"]
