"""The one exception tree of dpsql.

Owns: every error dpsql raises. The PEP 249 classes are the roots so that the
DB-API connector, the CLI and the Python API share one hierarchy: a caller can
catch ``dpsql.Error`` (which *is* the PEP 249 ``Error``) and get everything.
Messages say what is wrong, where, and what to do; they never quote values
from the private data.
"""


class Warning(Exception):  # noqa: A001 - name fixed by PEP 249
    """PEP 249 warning (not raised for privacy matters; those are errors)."""


class Error(Exception):
    """Base of every dpsql error (PEP 249 ``Error``)."""


class InterfaceError(Error):
    """Misuse of the connector itself (closed cursor, bad parameters)."""


class DatabaseError(Error):
    """Errors related to the database (PEP 249)."""


class DataError(DatabaseError):
    """The data could not be read or does not fit its metadata."""


class OperationalError(DatabaseError):
    """The session cannot proceed (budget, ledger, engine failure)."""


class IntegrityError(DatabaseError):
    """PEP 249 class; dpsql is read-only and never raises it."""


class InternalError(DatabaseError):
    """A bug in dpsql: please report it."""


class ProgrammingError(DatabaseError):
    """The query or the metadata is wrong; fix it and try again."""


class NotSupportedError(DatabaseError):
    """The operation is valid SQL/DB-API but dpsql does not offer it."""


class QueryError(ProgrammingError):
    """The SQL is refused: not parseable, not supported, or not private."""


class EngineRefusal(QueryError):
    """The engine cannot run the plan dpsql made of the query: its dry run, on rows of NULLs,
    failed, so the failure depends on the query alone and cost nothing. ``engine_text`` is the
    engine's own message, which ``dpsql serve`` keeps for the operator's audit log."""

    def __init__(self, engine_text: str) -> None:
        super().__init__(f"the engine refuses the query: {engine_text}")
        self.engine_text = engine_text


class MetadataError(ProgrammingError):
    """The metadata is invalid; the message names the path of the problem."""


class BudgetExceededError(OperationalError):
    """The query would exceed the session budget; nothing was run or spent."""


class LedgerError(OperationalError):
    """The ledger refuses the session: budget conflict, damaged or foreign file.

    A ``dpsql.OperationalError``; the CLI exits with the budget/ledger code.
    """


def warn(message: str, category=UserWarning) -> None:
    """``warnings.warn`` attributed to the caller's line: the first frame outside the
    dpsql package (Python 3.11 has no ``skip_file_prefixes``), so that a warning from a
    ``reader.execute_df`` points at the script that called it, not into dpsql."""
    import os
    import sys
    import warnings
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
