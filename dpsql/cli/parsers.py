"""The ``dpsql`` command line's arguments: every parser, declared without importing the engine.

Owns: what each command accepts and its --help. Nothing here imports pandas, DuckDB,
sqlglot or the report module: ``dpsql --help`` and a usage error answer in the time the
interpreter takes to start (tests/system/test_cli_startup.py checks what ``--help``
imports; tests/benchmarks/bench_cli.py times it). A command's own modules are imported
by ``dpsql.cli.command`` when that command runs.
"""
from __future__ import annotations

import argparse
import math
import sys

from .text import EXIT_CODES, UsageError
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
    """E[,D[,pld|rdp]] for an (epsilon, delta) budget (composed by that accountant);
    rho=R[,D] for a zCDP one."""
    from ..errors import ProgrammingError
    from ..privacy.params import Budget
    eps, _, rest = text.partition(",")
    delta, _, accountant = rest.partition(",")
    if eps.startswith("rho="):
        rho = _positive_float(eps[4:])
        return Budget(rho=rho, delta=_delta(delta)) if delta else Budget(rho=rho)
    try:
        return Budget(_positive_float(eps), *([_delta(delta)] if delta else []),
                      accountant=accountant or None)
    except ProgrammingError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


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
    top.add_argument("--version", action=_Version, nargs=0, help="print dpsql's version and exit")
    # The commands are listed in the epilog, sub-actions included, one line each. prog:
    # a subcommand's usage and errors name it "dpsql query", not the top usage line.
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                             help=argparse.SUPPRESS, prog="dpsql")
    _add_query_parser(sub)
    _add_ledger_parser(sub)
    _add_metadata_parser(sub)
    _add_serve_parser(sub)
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
    size.add_argument("--accuracy-target", type=_positive_float, metavar="X",
                      help="print the smallest epsilon at which every noisy statistic is "
                      "within X of its exact value (at --accuracy's level, default 0.95), and "
                      "how many such queries the budget left buys; runs nothing, spends "
                      "nothing")
    q.add_argument("--delta", type=_delta, metavar="D",
                   help=f"the most this query may cost in delta (default {DEFAULT_DELTA:g}; "
                   "spent only by statistics that need it)")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output: aligned table (default), CSV with a header, or JSON objects")
    q.add_argument("--ledger", metavar="FILE",
                   help="a ledger file keeping this session's spending across invocations")
    q.add_argument("--budget", type=_budget, metavar="E[,D[,pld|rdp]]",
                   help="the session's total (with --ledger; fixed when the ledger is "
                   "created; default delta 1e-6); E,D,pld or E,D,rdp: composed by "
                   "dp-accounting's PLD or RDP accountant; rho=R[,D] for a zCDP session")
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
    led_sub = led.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=_Parser,
                                 prog="dpsql ledger")
    show = led_sub.add_parser("show", help="print a ledger's budget, spent, remaining and "
                              "releases")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--format", choices=("table", "json"), default="table")
    rep = led_sub.add_parser(
        "report", help="print a ledger's DP release table (markdown, HTML or JSON)",
        description="Print the DP release table of a ledger: per release its time, query, "
        "privacy unit and contribution bound, epsilon/delta/rho, and per statistic its "
        "mechanism, scale, bounds and 95%% accuracy; with the totals and the budget left. "
        "--format html writes a standalone page (no scripts, no network) with a chart of the "
        "budget spent over the releases, numbered as the table's rows. Replays are listed, "
        "costing 0.")
    rep.add_argument("file", metavar="FILE", nargs="?", help="the ledger file (or --ledger)")
    rep.add_argument("--ledger", metavar="FILE", dest="ledger_file")
    rep.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")


def _add_metadata_parser(sub) -> None:
    meta = sub.add_parser("metadata", help="write or check a metadata file")
    meta_sub = meta.add_subparsers(dest="metadata_command", metavar="ACTION",
                                   parser_class=_Parser, prog="dpsql metadata")
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
        description="Estimate DP lower and upper bounds of a numeric column (the edges of the "
        "powers of two whose noisy counts clear a threshold, docs/cli.md); it spends EPSILON of "
        "the data's privacy budget (record it with --ledger), and says so when the table is too "
        "small for it. With --write, store them in the metadata file.")
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


def _add_serve_parser(sub) -> None:
    serve = sub.add_parser(
        "serve", help="serve the data owner's tables to analysts over the PostgreSQL protocol",
        description="Serve the tables of a deployment file to its analysts over the "
        "PostgreSQL wire protocol (psql, psycopg, JDBC, BI tools connect unchanged), each "
        "analyst with their own budget and ledger. See docs/deployment.md.")
    serve.add_argument("--config", metavar="FILE", help="the deployment file (YAML)")
    serve.add_argument("--check", action="store_true",
                       help="check the deployment file, print what would be served, and exit")
    serve.add_argument("--hash-password", action="store_true",
                       help="read a password and print its SCRAM-SHA-256 verifier")


class _Version(argparse.Action):
    """--version: the installed distribution's version, looked up only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(f"dpsql {_version()}\n", sys.stdout)   # as argparse does
        parser.exit()


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("dpsql")
    except Exception:  # noqa: BLE001 - not installed, e.g. run from a source tree
        return "(source tree)"
