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


MOVED = {
    "dpsql.accounting": "dpsql.privacy.accounting", "dpsql.accuracy": "dpsql.release.intervals",
    "dpsql.cli_bounds": "dpsql.cli.bounds", "dpsql.cli_metadata": "dpsql.cli.metadata",
    "dpsql.cli_report": "dpsql.cli.report", "dpsql.cli_text": "dpsql.cli.text",
    "dpsql.dbapi": "dpsql.api.dbapi", "dpsql.execute": "dpsql.engines.duckdb.engine",
    "dpsql.explain": "dpsql.release.explain", "dpsql.ledger": "dpsql.privacy.ledger",
    "dpsql.metadata_reading": "dpsql.metadata.reading", "dpsql.noise": "dpsql.mechanisms.samplers",
    "dpsql.params": "dpsql.frontend.params", "dpsql.parse": "dpsql.frontend.parse",
    "dpsql.quantile_mechanism": "dpsql.mechanisms.quantile",
    "dpsql.quantile_plan": "dpsql.plan.quantiles", "dpsql.reader": "dpsql.api.reader",
    "dpsql.report": "dpsql.release.report", "dpsql.rewrite": "dpsql.plan.rewrite",
    "dpsql.sql": "dpsql.frontend", "dpsql.sql.allowed": "dpsql.frontend.allowed",
    "dpsql.sql.binding": "dpsql.frontend.binding", "dpsql.sql.ranges": "dpsql.frontend.ranges",
    "dpsql.sql.typecheck": "dpsql.frontend.typecheck", "dpsql.statistic": "dpsql.plan.statistic",
    "dpsql.statistics": "dpsql.plan.statistics", "dpsql.validate": "dpsql.plan.validate",
    "dpsql.zcdp": "dpsql.privacy.zcdp",
    # moved since (issue 35: shared by DuckDB's and PostgreSQL's dialects)
    "dpsql.engines.duckdb.filters": "dpsql.engines.filters",
}
"""Module paths of the layout before the modules moved into the pipeline's folders (commit
3c22ea1), and of modules moved since -> where each module is now. An old path still
imports, as the very module at its new place, with a FutureWarning once (the module is then
cached under the old name)."""


class _MovedModules:
    """The import finder and loader of the old module paths in ``MOVED`` (and nothing else)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in MOVED:
            return None
        from importlib.machinery import ModuleSpec
        return ModuleSpec(name, _MovedModules, is_package=name == "dpsql.sql")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module) -> None:
        import sys
        from importlib import import_module
        old, new = module.__name__, MOVED[module.__name__]
        import warnings
        # stacklevel 2: the importing line (warnings skips importlib's own frames).
        warnings.warn(f"{old} has moved to {new}: import it from there ({old} is an alias "
                      "kept for scripts written against an earlier layout of dpsql's modules, "
                      "and will be removed)", FutureWarning, stacklevel=2)
        sys.modules[old] = import_module(new)


def _install_moved_modules() -> None:
    import sys
    if not any(finder is _MovedModules for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules)


_install_moved_modules()

__all__ = ["Budget", "BudgetExceededError", "DataError", "DatabaseError", "DEFAULT_DELTA", "Error",
           "IntegrityError", "InterfaceError", "InternalError", "LedgerError", "Mechanism", "Mechanisms",
           "Metadata", "MetadataError", "NotSupportedError", "OperationalError", "Privacy",
           "ProgrammingError", "QueryError", "Reader", "Stat", "Warning", "connect",
           "from_connection", "from_df", "BINARY", "DATETIME", "NUMBER", "ROWID", "STRING",
           "Binary", "Date", "DateFromTicks", "Time", "TimeFromTicks", "Timestamp",
           "TimestampFromTicks"]
