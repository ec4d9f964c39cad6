"""`dpsql ledger report`: the DP release table of a ledger (interfaces layer).

Reads the ledger under a shared lock, creates and changes nothing, and prints the table
of dpsql.report as markdown, standalone HTML or JSON.
"""
from __future__ import annotations

import os
import sys

from . import report
from .accounting import remaining
from .ledger import Ledger


def add_parser(led_sub) -> None:
    rep = led_sub.add_parser(
        "report", help="print a ledger's DP release table (markdown, HTML or JSON)",
        description="Print the DP release table of a ledger: per release its time, query, "
        "privacy unit and contribution bound, epsilon/delta/rho, and per statistic its "
        "mechanism, scale, bounds and 95%% accuracy; with the totals and the budget left. "
        "--format html writes a standalone page (no scripts, no network) with a chart of the "
        "budget spent over time.")
    rep.add_argument("file", metavar="FILE", nargs="?", help="the ledger file (or --ledger)")
    rep.add_argument("--ledger", metavar="FILE", dest="ledger_file")
    rep.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")


def run(args, usage_error) -> int:
    path = args.ledger_file or args.file
    if path is None:
        raise usage_error("ledger report needs the ledger: --ledger FILE")
    if args.ledger_file and args.file and args.ledger_file != args.file:
        raise usage_error("give the ledger once: FILE or --ledger FILE")
    if not os.path.lexists(path):
        raise FileNotFoundError(f"ledger file not found: {path}")
    led = Ledger(path, create=False)      # refuses anything but a ledger, creates nothing
    records = [dict(r.__dict__, replay=False) for r in led.records()]
    spending, budget = led.spending(), led.budget
    from .accounting import reported
    text = report.render(records, budget, reported(spending, budget), spending,
                         remaining(spending, budget), args.format)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
