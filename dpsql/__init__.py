"""dpsql: differentially private SQL over DuckDB, with SmartNoise-compatible metadata.

The data flow, one module per step: ``parse`` -> ``validate`` -> ``plan``
(``statistics``, ``rewrite``; the cost) -> ``accounting`` (check) -> ``execute``
-> ``accounting`` (charge) -> ``release`` (noise, from ``noise``/``mechanisms``)
-> post-processing on noisy values -> result; ``reader`` runs them in that order.
"""
import logging as _logging

# Residual engine failures are logged for the operator, never shown to the analyst:
# without a handler configured by the operator, nothing reaches stderr.
_logging.getLogger("dpsql").addHandler(_logging.NullHandler())

from .api.dbapi import (BINARY, DATETIME, NUMBER, ROWID, STRING, Binary, Date, DateFromTicks, Time,
                    TimeFromTicks, Timestamp, TimestampFromTicks, connect)
from .errors import (BudgetExceededError, DatabaseError, DataError, Error, IntegrityError,
                     InterfaceError, InternalError, LedgerError, MetadataError, NotSupportedError,
                     OperationalError, ProgrammingError, QueryError, Warning)
from .metadata.model import Metadata
from .privacy.params import DEFAULT_DELTA, Budget, Mechanism, Mechanisms, Privacy, Stat
from .api.reader import Reader
from .api.session import from_connection, from_df

__version__ = "0.1.0"

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"


def _register_sqlalchemy_dialect() -> None:
    """``create_engine("dpsql://")`` without reinstalling (the entry point in pyproject.toml
    does it for an installed dpsql). SQLAlchemy is optional: without it, nothing happens."""
    try:
        from sqlalchemy.dialects import registry
    except ImportError:
        return
    registry.register("dpsql", "dpsql.api.sqlalchemy", "DpsqlDialect")


_register_sqlalchemy_dialect()

__all__ = ["Budget", "BudgetExceededError", "DataError", "DatabaseError", "DEFAULT_DELTA", "Error",
           "IntegrityError", "InterfaceError", "InternalError", "LedgerError", "Mechanism", "Mechanisms",
           "Metadata", "MetadataError", "NotSupportedError", "OperationalError", "Privacy",
           "ProgrammingError", "QueryError", "Reader", "Stat", "Warning", "connect",
           "from_connection", "from_df", "BINARY", "DATETIME", "NUMBER", "ROWID", "STRING",
           "Binary", "Date", "DateFromTicks", "Time", "TimeFromTicks", "Timestamp",
           "TimestampFromTicks"]
