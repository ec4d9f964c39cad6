"""The ``dpsql`` command line (also ``python -m dpsql``).

Owns: turning shell arguments into one reader call and its result into text.
It adds no second path to the engine: ``dpsql query`` builds a reader with
``dpsql.from_df`` / ``dpsql.from_connection`` exactly as Python code does. A
session that outlives one invocation is a ledger file (``dpsql.privacy.ledger``);
the engine charges it before it returns a result, so an answer is printed
only after its cost is on disk.

Every failure is one line on stderr and an exit code per class (see
``EXIT_CODES``); a traceback is never shown.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

from . import interrupt
from .text import (EXIT_BUDGET, EXIT_CODES, EXIT_DATA, EXIT_INTERNAL, EXIT_METADATA,
                   EXIT_OK, EXIT_QUERY, EXIT_USAGE, BindingError, ConfigurationError,
                   UsageError, _pair, _require_file, _warn, _write, format_rows)
from .parsers import build_parser
from ..errors import Error, MetadataError, ProgrammingError, QueryError

# ----------------------------------------------------------------- commands

def _read_sql(text: str) -> str:
    sql = sys.stdin.read() if text == "-" else text
    if not sql.strip():
        raise UsageError("the SQL is empty" + (" (nothing on stdin)" if text == "-" else ""))
    return sql


def cmd_query(args) -> int:
    from ..privacy.params import Privacy

    _check_query_args(args)
    sql = _read_sql(args.sql)
    _require_file(args.metadata, "metadata file")
    tables = _query_tables(args)
    size = {"epsilon": args.epsilon} if args.rho is None else {"rho": args.rho}
    privacy = Privacy(**size) if args.delta is None else Privacy(**size, delta=args.delta)
    ledger, dry = None, args.explain or args.accuracy_target is not None
    if args.ledger is not None and not (dry and not os.path.exists(args.ledger)):
        # --explain and --accuracy-target leave no trace: they never create a ledger.
        from ..privacy.ledger import Ledger
        ledger = Ledger(args.ledger, args.budget)
    con = None
    try:
        # The engine warns that a session without a budget enforces nothing; the
        # CLI says it in its own terms, once a release has been made (main()
        # scopes this filter with catch_warnings).
        warnings.filterwarnings("ignore", message="dpsql: no budget set")
        if (args.engine or "").lower() == "spark":
            con = _spark_session(args.spark_master)
            source = {"connection": con, "tables": tables or None}
        else:
            source = ({"database": args.engine} if args.engine and args.engine.lower() != "duckdb"
                      else {"database": args.database} if args.database else {"tables": tables})
        if ledger is None and args.budget is not None:    # a ledger not created yet
            source["budget"] = args.budget
        reader, owned = _open(args.metadata, privacy=privacy, ledger=ledger, **source)
        con = con or owned
        reader.progress = sys.stderr.isatty()   # tqdm's bar, on a terminal only
        if args.accuracy_target is not None:
            from ..api.accuracy_target import summary
            _write(summary(reader, sql, args.accuracy_target,
                           0.05 if args.accuracy is None else 1 - args.accuracy))
            return EXIT_OK
        if args.explain:
            note = _ledger_note(args.ledger, ledger, reader, sql)
            _write(reader.explain(sql).rstrip("\n") + "\n" + note)
            return EXIT_OK
        (header, rows), replayed = _execute(reader, ledger, sql, args)
    finally:
        if con is not None:
            (con.stop if hasattr(con, "stop") else con.close)()
    _write(format_rows(header, rows, args.format))
    if replayed:
        sys.stderr.write(f"dpsql: replayed: cost 0; ledger {args.ledger} holds this query's "
                         "release (the same SQL, privacy and plan), shown again without "
                         "reading the data; --fresh makes a new release, paid for\n")
    if ledger is None:
        _warn("without --ledger this release is not recorded and nothing limits what "
              "repeated queries spend; use --ledger FILE --budget E")
    elif ledger.budget is None:
        _warn(f"ledger {args.ledger} has no budget: spending is recorded but nothing is "
              "enforced; give --budget E to set one")
    return EXIT_OK


def _execute(reader, ledger, sql: str, args) -> tuple:
    """(the result, whether it was a replay: the ledger's new records are replays only)."""
    before = len(ledger.records()) if ledger is not None else 0
    if args.accuracy is not None:    # charged (and fsynced) before it returns
        frame = reader.execute_with_accuracy_df(sql, alpha=1 - args.accuracy,
                                                replay=not args.fresh)
        from ..api.present import frame_rows
        result = (list(frame.columns), frame_rows(frame))
    else:       # rows without pandas: the command's start-up (docs/performance.md)
        header, *rows = reader.execute(sql, replay=not args.fresh)
        result = (list(header), rows)
    added = ledger.records()[before:] if ledger is not None else []
    return result, bool(added) and all(r.replay for r in added)


def _open(metadata: str, **session) -> tuple:
    """``open_session``, with data that does not bind to the metadata (a --table it lacks)
    told as such rather than as a refused query."""
    from ..api.session import open_session
    try:
        return open_session(metadata, **session)
    except ProgrammingError as err:
        if isinstance(err, (QueryError, MetadataError)):
            raise
        raise BindingError(f"{err}; bind the tables of {metadata} (--table SCHEMA.TABLE=PATH "
                           "with a table it describes, --database or --engine)") from None


def _spark_session(master: str | None):
    """A Spark session for one command (engines/spark/session.py)."""
    from ..engines.spark.session import SparkMissing, command_session
    try:
        return command_session(master)
    except SparkMissing:
        raise UsageError("--engine spark needs pyspark (pip install pyspark) and Java 17") from None


def _check_query_args(args) -> None:
    """Refuse combinations of query options that do not name one data source and session."""
    if args.budget is not None and args.ledger is None:
        raise UsageError("--budget needs --ledger FILE: one invocation is not a session; the "
                         "ledger keeps the budget across invocations")
    if args.spark_master is not None and (args.engine or "").lower() != "spark":
        raise UsageError("--spark-master needs --engine spark")
    if (args.engine or "").lower() == "spark":
        if args.database:
            raise UsageError("--engine spark reads the catalog's tables and --table Parquet "
                             "files; leave out --database")
        return
    if args.engine is not None and args.engine.lower() != "duckdb":
        if not args.engine.startswith(("postgresql://", "postgres://")):
            raise UsageError("--engine takes duckdb, spark or a postgresql:// URL")
        if args.database or args.table:
            raise UsageError("--engine postgresql://... reads the server's own tables; leave "
                             "out --table and --database")
        if "@" in args.engine.split("//", 1)[1].split("/", 1)[0] and ":" in \
                args.engine.split("//", 1)[1].split("@", 1)[0]:
            raise UsageError("--engine: put the password in PGPASSWORD or ~/.pgpass, not in "
                             "the URL (a command line is visible to other users)")
        return
    if args.database and args.table:
        raise UsageError("give either --table files or --database, not both")
    if not args.database and not args.table:
        raise UsageError("give the data: --table SCHEMA.TABLE=PATH (repeatable), "
                         "--database FILE.duckdb or --engine postgresql://...")


def _query_tables(args) -> dict:
    """The --table bindings by name, each file checked to exist (and the --database file)."""
    tables = {}
    spark = (args.engine or "").lower() == "spark"
    for name, path in args.table:
        if name in tables:
            raise UsageError(f"--table {name} is given twice")
        if spark and ("://" in path or os.path.isdir(path)):
            tables[name] = path        # a Parquet directory, or on the cluster's file system
            continue
        _require_file(path, f"data file of {name}")
        tables[name] = path
    if args.database:
        _require_file(args.database, "database file")
    return tables


def _ledger_note(path: str, ledger, reader, sql: str) -> str:
    """For --explain with a ledger: would the query fit what remains?"""
    if ledger is None:
        return ""
    from ..privacy.accounting import exceeds
    budget, spent = ledger.budget, ledger.spent()
    if budget is None:
        return f"\nledger {path}: spent {_pair(*spent)}; no budget\n"
    plan = reader._plan(sql)
    verdict = ("would be refused" if exceeds(ledger.spending(), plan.spend, budget,
                                             ledger.tally(), plan.events) else "fits")
    remaining = ledger.remaining()
    return (f"\nledger {path}: remaining {_pair(*remaining)}; "
            f"this query {verdict}\n")


# ----------------------------------------------------------------- errors

def classify(exc: BaseException) -> tuple:
    """(exit code, label) for an exception; the CLI's one error contract."""
    from .. import errors
    from ..privacy.ledger import LedgerError
    # A DuckDB error can only come from a DuckDB already loaded: a failure before it was
    # (a usage error) must not pay for importing it.
    duckdb = sys.modules.get("duckdb")
    duck = (duckdb.Error,) if duckdb is not None else ()
    table = [
        (UsageError, EXIT_USAGE, "usage error"),
        (BindingError, EXIT_QUERY, "data binding error"),
        (ConfigurationError, EXIT_QUERY, "configuration error"),
        (errors.BudgetExceededError, EXIT_BUDGET, "budget exceeded"),
        (errors.MetadataError, EXIT_METADATA, "metadata error"),
        (errors.QueryError, EXIT_QUERY, "query refused"),
        (LedgerError, EXIT_BUDGET, "ledger error"),
        (errors.DataError, EXIT_DATA, "data error"),
        (errors.OperationalError, EXIT_DATA, "data error"),
        (errors.InternalError, EXIT_INTERNAL, "internal error"),
        (errors.ProgrammingError, EXIT_QUERY, "query refused"),
        (errors.NotSupportedError, EXIT_QUERY, "not supported"),
        (OSError, EXIT_DATA, "I/O error"),
    ]
    if duck:
        table.append((duck, EXIT_DATA, "database error"))
    for kinds, code, label in table:
        if isinstance(exc, kinds):
            return code, label
    return EXIT_INTERNAL, "internal error"


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"{exc.strerror}: {exc.filename}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _error_text(exc: BaseException, code: int, label: str) -> str:
    """``dpsql: <label>: <what>``; metadata with several problems: one per line after it,
    as ``dpsql metadata check`` lists them."""
    problems = getattr(exc, "problems", None)
    if isinstance(exc, Error) and problems and len(problems) > 1:
        head = " ".join(str(exc).strip().splitlines()[0].split())
        return (f"dpsql: {label}: {head}; fix each of them:\n"
                + "".join(f"  {' '.join(str(p).split())}\n" for p in problems))
    text = _one_line(exc)
    if code == EXIT_INTERNAL and not isinstance(exc, Error):
        text = f"{type(exc).__name__}: {text}"
    return f"dpsql: {label}: {text}\n"


def _show_warning(message, category, filename, lineno, file=None, line=None):
    text = " ".join(str(message).split())
    text = text[len("dpsql: "):] if text.startswith("dpsql: ") else text
    sys.stderr.write(f"dpsql: warning: {text}\n")


def main(argv=None) -> int:
    """Run one command in-process; returns the exit code (the console script's entry
    point, ``dpsql.cli.main``, calls it after taking over Ctrl-C)."""
    with warnings.catch_warnings(), interrupt.raising():
        warnings.showwarning = _show_warning  # one line on stderr, no source line
        try:
            return _dispatch(argv)
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        except KeyboardInterrupt:
            return _interrupted()
        except BrokenPipeError:
            # Whoever read our stdout went away (e.g. `| head`): nothing to report.
            # Point stdout at /dev/null so the interpreter's final flush is quiet.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback
            if interrupt.caused(exc) or interrupt.received():  # DuckDB's RuntimeError(...)
                return _interrupted()
            code, label = classify(exc)
            sys.stderr.write(_error_text(exc, code, label))
            return code


def _interrupted() -> int:
    interrupt.quiet_from_now()
    interrupt.say(sys.stderr.write)
    return interrupt.EXIT_INTERRUPTED


def _dispatch(argv) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "query":
        return cmd_query(args)
    if args.command == "ledger" and args.ledger_command == "show":
        from . import report as cli_report
        return cli_report.cmd_ledger_show(args)
    if args.command == "ledger" and args.ledger_command == "report":
        from . import report as cli_report
        return cli_report.run(args, UsageError)
    if args.command == "metadata" and args.metadata_command == "bounds":
        from . import bounds as cli_bounds
        return cli_bounds.run(args)
    if args.command == "metadata" and args.metadata_command in ("check", "init"):
        from . import metadata as cli_metadata
        return cli_metadata.run(args)
    if args.command == "serve":
        from . import serve as cli_serve
        return cli_serve.run(args)
    raise UsageError("give a command: query, ledger show or report, metadata check, init or "
                     "bounds, serve (see 'dpsql --help')")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
