"""dpsql: differentially private SQL over DuckDB, with SmartNoise-compatible metadata.

The data flow, one module per step: ``parse`` -> ``validate`` -> ``plan``
(``statistics``, ``rewrite``; the cost) -> ``accounting`` (check) -> ``execute``
-> ``accounting`` (charge) -> ``release`` (noise, from ``noise``/``mechanisms``)
-> post-processing on noisy values -> result; ``reader`` runs them in that order.
"""
# Light at import: only the exceptions. The rest of the API (pandas, DuckDB, sqlglot)
# is imported on first use of any other name, all at once, as an eager import would,
# so that the ``dpsql`` command can take over Ctrl-C before it loads (dpsql.cli).
from .errors import (BudgetExceededError, DatabaseError, DataError, Error, IntegrityError,
                     InterfaceError, InternalError, LedgerError, MetadataError, NotSupportedError,
                     OperationalError, ProgrammingError, QueryError, Warning)

_LAZY = {
    ".api.dbapi": ["BINARY", "DATETIME", "NUMBER", "ROWID", "STRING", "Binary", "Date",
                   "DateFromTicks", "Time", "TimeFromTicks", "Timestamp", "TimestampFromTicks",
                   "connect"],
    ".metadata.model": ["Metadata"],
    ".privacy.params": ["DEFAULT_DELTA", "Budget", "Mechanism", "Mechanisms", "Privacy", "Stat"],
    ".api.reader": ["Reader"],
    ".api.session": ["from_connection", "from_df"],
}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module 'dpsql' has no attribute {name!r}")
    from importlib import import_module
    for module, names in _LAZY.items():
        found = import_module(module, __name__)
        for each in names:
            globals()[each] = getattr(found, each)
    if name in globals():
        return globals()[name]
    raise AttributeError(f"module 'dpsql' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {n for names in _LAZY.values() for n in names})


__version__ = "0.1.0"

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"


def _register_sqlalchemy_dialect() -> None:
    """``create_engine("dpsql://")``: the entry point in pyproject.toml registers the dialect
    for an installed dpsql; a SQLAlchemy already imported also learns it here (an install
    older than the entry point). SQLAlchemy is never imported by ``import dpsql``: it is
    optional, and heavy enough to delay the command's Ctrl-C handling."""
    import sys
    if sys.modules.get("sqlalchemy") is None:
        return
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
