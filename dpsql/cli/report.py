"""`dpsql ledger show` and `dpsql ledger report` (interfaces layer).

Both read the ledger under a shared lock and create or change nothing: ``show`` prints its
budget, spending and releases; ``report`` the DP release table of dpsql.release.report as markdown,
standalone HTML or JSON.
"""
from __future__ import annotations

import json
import os
import sys

from .text import EXIT_OK, _num, _pair, _write, render_table
from ..privacy.ledger import Ledger
from ..privacy.ledger_budget import budget_json


def run(args, usage_error) -> int:
    path = args.ledger_file or args.file
    if path is None:
        raise usage_error("ledger report needs the ledger: --ledger FILE")
    if args.ledger_file and args.file and args.ledger_file != args.file:
        raise usage_error("give the ledger once: FILE or --ledger FILE")
    if not os.path.lexists(path):
        raise FileNotFoundError(f"ledger file not found: {path}")
    from ..privacy.spend import remaining
    from ..privacy.zcdp import reported
    from ..release import report        # pandas: only for this command
    led = Ledger(path, create=False)      # refuses anything but a ledger, creates nothing
    records = led.records()
    spending, budget = led.spending(), led.budget
    tally = led.tally()
    text = report.render(records, budget, reported(spending, budget, tally), spending,
                         remaining(spending, budget, tally), args.format)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_ledger_show(args) -> int:
    if not os.path.lexists(args.file):
        raise FileNotFoundError(f"ledger file not found: {args.file}")
    led = Ledger(args.file, create=False)  # refuses anything but a ledger, creates nothing
    budget, spent, remaining, records = led.budget, led.spent(), led.remaining(), led.records()
    if args.format == "json":
        doc = {"path": led.path,
               "budget": budget_json(budget),
               "spent": {"epsilon": spent[0], "delta": spent[1]},
               "remaining": None if remaining is None else {
                   ("rho" if budget.zcdp else "epsilon"): remaining[0],
                                                            "delta": remaining[1]},
               "releases": [{k: v for k, v in r.__dict__.items()
                             if k not in ("details", "events")} for r in records]}
        if budget is not None and budget.zcdp:     # rho only where it is the currency
            doc["spent_rho"] = led.spending()[2]
        else:
            for release in doc["releases"]:
                release.pop("rho", None)
                release.pop("rho_delta", None)
        _write(json.dumps(doc, indent=2) + "\n")
        return EXIT_OK
    lines = [f"ledger:    {led.path}",
             "budget:    " + ("none (spending is recorded, nothing is enforced)"
                              if budget is None else _budget_text(budget)),
             f"spent:     {_pair(*spent)}",
             "remaining: " + ("unlimited" if remaining is None else
                              f"rho={remaining[0]:.6g}, delta={remaining[1]:.3g}"
                              if budget.zcdp else _pair(*remaining)),
             f"releases:  {_count(records)}"]
    out = "\n".join(lines) + "\n"
    if records:
        rows = [(r.time, _num(r.epsilon), _num(r.delta),
                 ("(replay) " if r.replay else "") + " ".join(r.query.split())) for r in records]
        out += "\n" + render_table(("time (UTC)", "epsilon", "delta", "query"), rows,
                                   numeric=(False, True, True, False))
    _write(out)
    return EXIT_OK


def _budget_text(budget) -> str:
    if budget.zcdp:
        return (f"rho={budget.rho:.6g} (zCDP), reported at delta={budget.delta:.3g}; "
                "remaining is (rho, delta for thresholds)")
    if budget.accountant in ("pld", "rdp"):
        return (f"{_pair(budget.epsilon, budget.delta)}, composed by the "
                f"{budget.accountant.upper()} accountant; remaining is (epsilon less the "
                "composed epsilon, delta for thresholds)")
    return _pair(budget.epsilon, budget.delta)


def _count(records: list) -> str:
    """Charged releases, and the replays (free) the ledger lists with them."""
    replays = sum(1 for r in records if r.replay)
    return f"{len(records) - replays}" + (f" (and {replays} free replay(s))" if replays else "")
