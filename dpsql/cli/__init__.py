"""The ``dpsql`` command (step 10, a client of ``dpsql.api``).

``command`` parses the arguments and dispatches; ``text`` holds the exit codes and
the table and error rendering every subcommand shares; ``report``, ``bounds`` and
``metadata`` are the subcommands that are more than a call of the reader.
"""
from .command import main

__all__ = ["main"]
