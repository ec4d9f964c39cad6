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

import argparse
import contextlib
import math
import os
import sys
import warnings

from . import interrupt
from .text import (EXIT_BUDGET, EXIT_CODES, EXIT_DATA, EXIT_INTERNAL, EXIT_METADATA,
                       EXIT_OK, EXIT_QUERY, EXIT_USAGE, UsageError, _pair, _require_file, _warn,
                       _write, format_frame, progress_line)
from ..errors import Error, OperationalError
from ..privacy.params import DEFAULT_DELTA

class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr, never the usage block."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ----------------------------------------------------------------- arguments

def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"a confidence level strictly between 0 and 1 (e.g. "
                                         f"0.95), got {text!r}")
    return value


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text!r}")
    return value


def _budget(text: str):
    """E[,D] for an (epsilon, delta) budget; rho=R[,D] for a zCDP one."""
    from ..privacy.params import Budget
    eps, _, delta = text.partition(",")
    if eps.startswith("rho="):
        rho = _positive_float(eps[4:])
        return Budget(rho=rho, delta=_delta(delta)) if delta else Budget(rho=rho)
    if delta:
        return Budget(_positive_float(eps), _delta(delta))
    return Budget(_positive_float(eps))


def _table(text: str) -> tuple:
    name, sep, path = text.partition("=")
    if not sep or not path or name.count(".") != 1 or "" in name.split("."):
        raise argparse.ArgumentTypeError(
            f"expected schema.table=PATH (e.g. PUMS.PUMS=PUMS.csv), got {text!r}")
    return name, path


def _query_table(text: str) -> tuple:
    """``query --table``: SCHEMA.TABLE=PATH, or TABLE=PATH for a table whose metadata
    schema name is empty (collection/''/table); the engine resolves the name."""
    name, sep, path = text.partition("=")
    if sep and path and name and "." not in name:
        return name, path
    try:
        return _table(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected SCHEMA.TABLE=PATH (e.g. PUMS.PUMS=PUMS.csv), or TABLE=PATH for a "
            f"table whose metadata schema name is empty, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    top = _Parser(prog="dpsql", description="Differentially private SQL over DuckDB.",
                  usage="dpsql [-h] [--version] COMMAND ...",
                  epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"dpsql {_version()}")
    # The commands are listed in the epilog, sub-actions included, one line each.
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                             help=argparse.SUPPRESS)
    _add_query_parser(sub)
    _add_ledger_parser(sub)
    _add_metadata_parser(sub)
    from . import serve as cli_serve
    cli_serve.add_parser(sub)
    top.epilog = _command_list(sub) + "\n" + EXIT_CODES
    return top


def _command_list(sub) -> str:
    """``commands:`` and one line per command (``ledger show``, ...), from the parsers'
    own help, so that --help cannot leave one out."""
    lines = []
    for action in sub._choices_actions:
        parser = sub.choices[action.dest]
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for choice in (nested[0]._choices_actions if nested else [action]):
            name = action.dest + (f" {choice.dest}" if nested else "")
            lines.append(f"  {name:<16}  {choice.help}")
    return "commands (each has --help):\n" + "\n".join(lines) + "\n"


def _add_query_parser(sub) -> None:
    q = sub.add_parser(
        "query", help="answer one SQL query with differential privacy",
        description="Answer one SQL aggregate query with differential privacy. Tables come "
        "from --table files (CSV or Parquet, read by DuckDB), a DuckDB database file opened "
        "read-only, a PostgreSQL server or Spark (--engine).", epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("--metadata", required=True, metavar="M.yaml",
                   help="SmartNoise-format metadata of the tables")
    q.add_argument("--table", action="append", type=_query_table, default=[],
                   metavar="SCHEMA.TABLE=PATH", help="bind a table to a .csv/.parquet file "
                   "(repeatable; TABLE=PATH if the metadata's schema name is empty)")
    q.add_argument("--database", metavar="FILE.duckdb",
                   help="a DuckDB database holding the tables (opened read-only)")
    q.add_argument("--engine", metavar="URL", default=None,
                   help="run where the data lives: a PostgreSQL server as a libpq URL "
                   "(postgresql://user@host/db; the password comes from PGPASSWORD or "
                   "~/.pgpass, never from the command line), or spark (its catalog's "
                   "tables, and --table bindings to Parquet); default: embedded DuckDB")
    q.add_argument("--spark-master", metavar="URL", default=None,
                   help="with --engine spark: the cluster's master URL (spark://host:7077, "
                   "yarn, k8s://...); default local[*], this machine")
    size = q.add_mutually_exclusive_group(required=True)
    size.add_argument("--epsilon", type=_positive_float, metavar="E",
                      help="the most this query may cost in epsilon, all its statistics "
                      "together")
    size.add_argument("--rho", type=_positive_float, metavar="R",
                      help="the query's privacy in zCDP instead of --epsilon")
    q.add_argument("--delta", type=_delta, metavar="D",
                   help=f"the most this query may cost in delta (default {DEFAULT_DELTA:g}; "
                   "spent only by statistics that need it)")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output: aligned table (default), CSV with a header, or JSON objects")
    q.add_argument("--ledger", metavar="FILE",
                   help="a ledger file keeping this session's spending across invocations")
    q.add_argument("--budget", type=_budget, metavar="E[,D]",
                   help="the session's total (with --ledger; fixed when the ledger is "
                   "created; default delta 1e-6); rho=R[,D] for a zCDP session")
    q.add_argument("--accuracy", type=_level, metavar="LEVEL",
                   help="after each noisy column C, add C_lo and C_hi: an interval holding "
                   "the exact answer of the bounded plan with this probability (e.g. 0.95); "
                   "costs nothing more")
    q.add_argument("--fresh", action="store_true",
                   help="a fresh release, paid for, even if the ledger holds this query's "
                   "release (by default the same query again is replayed, free)")
    q.add_argument("--explain", action="store_true",
                   help="print the bounded plan and each statistic's mechanism, scale and "
                   "95%% accuracy; runs nothing and spends nothing")
    q.add_argument("sql", metavar="SQL", help="the query, or - to read it from stdin")


def _add_ledger_parser(sub) -> None:
    led = sub.add_parser("ledger", help="inspect a ledger file")
    led_sub = led.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=_Parser)
    show = led_sub.add_parser("show", help="print a ledger's budget, spent, remaining and "
                              "releases")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--format", choices=("table", "json"), default="table")
    from . import report as cli_report
    cli_report.add_parser(led_sub)


def _add_metadata_parser(sub) -> None:
    meta = sub.add_parser("metadata", help="write or check a metadata file")
    meta_sub = meta.add_subparsers(dest="metadata_command", metavar="ACTION",
                                   parser_class=_Parser)
    check = meta_sub.add_parser("check", help="validate a metadata file and list every "
                                "problem with its path")
    check.add_argument("file", metavar="M.yaml")
    init = meta_sub.add_parser(
        "init", help="write a metadata skeleton from the data's schema to stdout",
        description="Write a SmartNoise-format metadata skeleton from the schema (column "
        "names and types) of data files. No value of the data is read into it: bounds and "
        "the privacy unit are left for the data owner.")
    init.add_argument("--table", action="append", type=_table, required=True,
                      metavar="SCHEMA.TABLE=PATH", help="a .csv/.parquet file (repeatable)")
    bounds = meta_sub.add_parser(
        "bounds", help="estimate a column's lower and upper bounds with differential privacy",
        description="Estimate DP lower and upper bounds of a numeric column (the 1% and 99% "
        "quantiles over log-spaced cells, docs/sql.md); it spends EPSILON of the data's privacy "
        "budget (record it with --ledger). With --write, store them in the metadata file.")
    bounds.add_argument("--metadata", required=True, metavar="M.yaml")
    bounds.add_argument("--table", action="append", type=_table, required=True,
                        metavar="SCHEMA.TABLE=PATH", help="the data file of the table (the first "
                        "--table is the one whose column is estimated)")
    bounds.add_argument("--column", required=True, metavar="C")
    bounds.add_argument("--epsilon", required=True, type=_positive_float, metavar="E")
    bounds.add_argument("--ledger", metavar="FILE", help="record the spending in this ledger")
    bounds.add_argument("--budget", type=_budget, metavar="E[,D]",
                        help="the ledger's budget (only with --ledger)")
    bounds.add_argument("--write", action="store_true",
                        help="store the bounds as lower/upper of the column in M.yaml")


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("dpsql")
    except Exception:  # noqa: BLE001 - not installed, e.g. run from a source tree
        return "(source tree)"


# ----------------------------------------------------------------- commands

def _read_sql(text: str) -> str:
    sql = sys.stdin.read() if text == "-" else text
    if not sql.strip():
        raise UsageError("the SQL is empty" + (" (nothing on stdin)" if text == "-" else ""))
    return sql


def cmd_query(args) -> int:
    from ..api.session import open_session
    from ..privacy.params import Privacy

    _check_query_args(args)
    sql = _read_sql(args.sql)
    _require_file(args.metadata, "metadata file")
    tables = _query_tables(args)
    size = {"epsilon": args.epsilon} if args.rho is None else {"rho": args.rho}
    privacy = Privacy(**size) if args.delta is None else Privacy(**size, delta=args.delta)
    ledger = None
    if args.ledger is not None and not (args.explain and not os.path.exists(args.ledger)):
        # --explain leaves no trace: it never creates a ledger.
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
        reader, owned = open_session(args.metadata, privacy=privacy, ledger=ledger, **source)
        con = con or owned
        reader.progress = progress_line()      # stderr on a terminal only
        if args.explain:
            note = _ledger_note(args.ledger, ledger, reader, sql)
            _write(reader.explain(sql).rstrip("\n") + "\n" + note)
            return EXIT_OK
        if args.accuracy is not None:    # charged (and fsynced) before it returns
            frame = reader.execute_with_accuracy_df(sql, alpha=1 - args.accuracy,
                                                    replay=not args.fresh)
        else:
            frame = reader.execute_df(sql, replay=not args.fresh)
    finally:
        if con is not None:
            (con.stop if hasattr(con, "stop") else con.close)()
    _write(format_frame(frame, args.format))
    if ledger is None:
        _warn("without --ledger this release is not recorded and nothing limits what "
              "repeated queries spend; use --ledger FILE --budget E")
    elif ledger.budget is None:
        _warn(f"ledger {args.ledger} has no budget: spending is recorded but nothing is "
              "enforced; give --budget E to set one")
    return EXIT_OK


def _spark_session(master: str | None):
    """A Spark session for one command (local[*] unless a master is given), quiet."""
    try:
        with warnings.catch_warnings():    # pyspark's own remarks on the pandas version
            warnings.simplefilter("ignore")
            from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError("--engine spark needs pyspark (pip install pyspark) and Java 17") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spark = (SparkSession.builder.master(master or "local[*]").appName("dpsql")
                     .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    except Exception as err:  # noqa: BLE001 - Java missing, a master unreachable: one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OperationalError(f"cannot start Spark: {first}") from None
    spark.sparkContext.setLogLevel("FATAL")
    return spark


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
    cost = reader._plan(sql).spend
    verdict = "would be refused" if exceeds(ledger.spending(), cost, budget) else "fits"
    remaining = ledger.remaining()
    return (f"\nledger {path}: remaining {_pair(*remaining)}; "
            f"this query {verdict}\n")


# ----------------------------------------------------------------- errors

def classify(exc: BaseException) -> tuple:
    """(exit code, label) for an exception; the CLI's one error contract."""
    from .. import errors
    from ..privacy.ledger import LedgerError
    try:
        import duckdb
        duck = (duckdb.Error,)
    except ImportError:  # pragma: no cover - duckdb is a dependency
        duck = ()
    table = [
        (UsageError, EXIT_USAGE, "usage error"),
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
