"""Step 8 (after the result): what a session released, for people and for replays.

Owns: the JSON-safe description of a release (privacy unit, contribution bounds, each
statistic's mechanism, scale, sensitivity, bounds, share and accuracy, the threshold), the
encoding of stored noisy statistics (what a replay through a ledger needs), and the DP
release table of the book's chapters 12 and 13 as a DataFrame, markdown, JSON or a
standalone HTML page (no scripts, no network, every analyst-written text escaped).
"""
from __future__ import annotations

import hashlib
import html
import json
import re

import numpy as np
from sqlglot import exp

from ..errors import LedgerError, ProgrammingError
from ..mechanisms.quantile import rank_error_text
from ..privacy.composition import COMPOSED, Tally, events_of
from ..privacy.spend import Spend
from .chart import chart

FORMATS = ("dataframe", "markdown", "html", "json")
MAX_STORED_VALUES = 100_000
"""A release with more noisy values (all columns, all groups) is not stored in a ledger:
it stays replayable within its session only, and the ledger stays small to read."""


# -- describing a release --------------------------------------------------------------
def _parts(plan) -> list:
    return list(getattr(plan, "parts", None) or [plan])


def _unit(part) -> dict:
    relation = part.query.relation
    k = max(1, relation.k)
    if relation.pid is None:
        out = {"unit": "row (row_privacy)", "max_ids": k}
    else:
        out = {"unit": f"person ({relation.pid})", "max_ids": k}
    if relation.group_bounds and part.query.keys:
        out["max_groups"], out["max_rows_per_group"] = (int(x) for x in relation.group_bounds)
    return out


def _bounds(part, stat) -> dict:
    out = {}
    table = part.query.table
    for col in stat.aggregate.find_all(exp.Column):
        try:
            c = table.column(col.name)
        except Exception:       # a derived field or another table's column: no bounds here
            c = None
        if c is not None and getattr(c, "lower", None) is not None and c.upper is not None:
            out[c.name] = [c.lower, c.upper]
    return out


def _statistic(part, stat) -> dict:
    m = stat.mechanism
    entry = {"name": stat.name, "label": stat.label, "kind": stat.stat.value,
             "epsilon": float(m.epsilon), "bounds": _bounds(part, stat)}
    entry.update(m.report(stat))
    return entry


def details(plan) -> dict:
    """What the release table shows of one release, JSON-safe (computed once per plan:
    plans are cached, and exact Gaussian tails cost about a millisecond)."""
    cached = getattr(plan, "_report_details", None)
    if cached is not None:
        return cached
    parts = []
    for part in _parts(plan):
        d = {**_unit(part), "tables": [t.full_name for t in part.query.relation.tables],
             "statistics": [_statistic(part, s) for s in part.statistics], "threshold": None}
        if part.threshold is not None:
            d["threshold"] = {"statistic": part.threshold.name, "tau": float(part.tau),
                              "delta": float(part.threshold_delta),
                              "counts": "persons" if part.threshold.persons else "rows"}
        parts.append(d)
    out = {"parts": parts}
    try:
        plan._report_details = out
    except AttributeError:
        pass
    return out


def fingerprint(plan, privacy_key, explained: list) -> str:
    """What makes two requests one release across processes: the query with its
    parameters bound, the privacy, and the plan the metadata gives it (``explained``:
    the explain text of each part, with its engine SQL and every mechanism): a changed
    bound, type or contribution limit is a new release."""
    text = repr((plan.key_sql, privacy_key, list(explained)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- stored noisy statistics -------------------------------------------------------------
def encode(noisy: list) -> list:
    """Noisy statistics per part (name -> numpy array) as JSON-safe lists."""
    out = []
    for columns in noisy:
        part = {}
        for name, values in columns.items():
            arr = np.asarray(values)
            if arr.dtype.kind == "M":
                part[name] = {"dtype": str(arr.dtype), "values": arr.view(np.int64).tolist()}
            elif arr.dtype.kind == "O":
                part[name] = {"dtype": "object",
                              "values": [v if v is None or isinstance(v, (str, bool, int, float))
                                         else str(v) for v in arr.tolist()]}
            elif arr.dtype.kind == "f":
                part[name] = {"dtype": str(arr.dtype), "values": [float(v).hex() for v in arr]}
            else:
                part[name] = {"dtype": str(arr.dtype), "values": arr.tolist()}
        out.append(part)
    return out


def decode(stored) -> list:
    try:
        out = []
        for part in stored:
            columns = {}
            for name, col in part.items():
                dtype, values = col["dtype"], col["values"]
                if dtype.startswith("datetime64"):
                    columns[name] = np.array(values, dtype=np.int64).view(dtype)
                elif dtype == "object":
                    columns[name] = np.array(values, dtype=object)
                elif dtype.startswith("float"):
                    columns[name] = np.array([float.fromhex(v) for v in values], dtype=dtype)
                else:
                    columns[name] = np.array(values, dtype=dtype)
            out.append(columns)
        return out
    except (KeyError, TypeError, ValueError) as err:
        raise LedgerError(f"a stored release in the ledger cannot be read ({err}); the file "
                          "was edited or damaged. Ask with replay=False for a fresh release.") from None


# -- the release table --------------------------------------------------------------------
_OLD_RANK_TEXT = re.compile(r"^(\d+%): rank within ([0-9.e+-]+) rows of the best cell's "
                            r"\(.*?<= best \+ [0-9.e+-]+\)(.*)$")


def _accuracy_text(s: dict) -> str:
    """A statistic's 95% accuracy in words: "+/-x" for additive noise; for a quantile,
    how far (in rows) the released value's rank may be from the true quantile's. Ledgers
    written before the plain wording are reworded here."""
    acc = str(s.get("accuracy95", "?"))
    old = _OLD_RANK_TEXT.match(acc)
    if old:
        acc = rank_error_text(float(old.group(2)), old.group(1)) + old.group(3)
    return f"accuracy: {acc}" if s.get("kind") == "quantile" else f"95% accuracy {acc}"


def _stat_text(s: dict) -> str:
    bounds = ", ".join(f"{k} in [{a:g}, {b:g}]" for k, (a, b) in s.get("bounds", {}).items())
    return (f"{s['label']}: {s['mechanism']} scale {s['scale']:.4g}, epsilon {s['epsilon']:.4g}"
            + (f", {bounds}" if bounds else "") + f", {_accuracy_text(s)}")


def _threshold_text(part: dict) -> str:
    """The threshold in words, naming the statistic by its label (not its internal name)."""
    t = part["threshold"]
    label = next((s.get("label") for s in part.get("statistics", [])
                  if s.get("name") == t["statistic"]), None)
    what = "a noisy count of distinct persons" if t.get("counts") == "persons" else "a noisy count"
    count = f"{what} ({label})" if label else what
    return (f"groups with {count} below {t['tau']:.4g} are withheld "
            f"(a group held by one person shows with probability <= {t['delta']:.2g})")


def frame(records: list):
    """One row per release (``dpsql.privacy.records.ReleaseRecord``), numbered from 1 in
    ``release`` as the HTML chart's markers are: a pandas DataFrame (pandas is loaded
    here, not with this module, which every release uses for ``details``)."""
    import pandas as pd
    rows = []
    for number, r in enumerate(records, start=1):
        parts = (r.details or {}).get("parts") or [{}]
        rows.append({
            "release": number, "time": r.time, "query": r.query, "replay": bool(r.replay),
            "privacy_unit": "; ".join(p.get("unit", "?") for p in parts),
            "max_ids": ", ".join(str(p.get("max_ids", "?")) for p in parts),
            "epsilon": r.epsilon, "delta": r.delta, "rho": r.rho,
            "statistics": "; ".join(_stat_text(s) for p in parts for s in p.get("statistics", [])),
            "threshold": "; ".join(_threshold_text(p) for p in parts if p.get("threshold")),
        })
    columns = ["release", "time", "query", "replay", "privacy_unit", "max_ids", "epsilon",
               "delta", "rho", "statistics", "threshold"]
    return pd.DataFrame(rows, columns=columns)


def _totals(budget, spent: tuple, spending: tuple, remaining) -> dict:
    out = {"spent_epsilon": spent[0], "spent_delta": spent[1],
           "spent_rho": Spend.of(spending).rho}
    if budget is None:
        out["budget"] = None
    elif budget.zcdp:
        out["budget"] = {"rho": budget.rho, "delta": budget.delta}
    else:
        out["budget"] = {"epsilon": budget.epsilon, "delta": budget.delta}
    if budget is not None:
        out["accountant"] = budget.accountant     # how "spent" was composed
    if remaining is not None:
        out["remaining"] = {("rho" if budget.zcdp else "epsilon"): remaining[0],
                            "delta": remaining[1]}
    return out


def render(records: list, budget, spent: tuple, spending: tuple, remaining, fmt: str):
    """The release table in ``fmt``: a DataFrame, or markdown, HTML or JSON text."""
    if fmt not in FORMATS:
        raise ProgrammingError(f"report format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    table = frame(records)
    zcdp = budget is not None and budget.zcdp
    if not zcdp:        # rho is a zCDP session's currency: elsewhere it only confuses
        table = table.drop(columns=["rho"])
    if fmt == "dataframe":
        return table
    totals = _totals(budget, spent, spending, remaining)
    if not zcdp:
        totals.pop("spent_rho")
    if fmt == "json":
        return json.dumps({"releases": table.to_dict(orient="records"),
                           "details": [r.details for r in records], **totals}, indent=2)
    if fmt == "markdown":
        return _markdown(table, totals)
    return _html(table, totals, records)


_MD_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_MD_PUNCTUATION = re.compile(r"([\\`*_~\[\]<>&|$])")


def _md_cell(value) -> str:
    """One cell of a GFM table, all of it text: whatever a query holds (a parameter, a
    name) cannot end the row, start a block or make a link, an image, code, emphasis,
    math, an entity or HTML. Every line break becomes a space (so nothing can start a
    heading or a list: a row's line starts with its pipe); then the backslash and what
    markdown reads as markup inside a line are backslash-escaped, in one pass (so nothing
    is escaped twice): ``\\ ` * _ ~ [ ] < > & | $``. Nothing else is touched: quotes and
    parentheses stay as written, and the text holds no HTML entity (``\\&`` shows an
    ampersand, ``\\<`` a less-than sign)."""
    text = _MD_LINE_BREAK.sub(" ", str(value))
    return _MD_PUNCTUATION.sub(r"\\\1", text)


def _markdown(table, totals: dict) -> str:
    lines = ["# DP release table", "", _summary(totals), ""]
    cols = list(table.columns)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |"
              for row in table.itertuples(index=False, name=None)]
    return "\n".join(lines) + "\n"


def _summary(totals: dict) -> str:
    budget = totals["budget"]
    rho = f" (rho {totals['spent_rho']:.6g})" if "spent_rho" in totals else ""
    how = {"pld": " (composed by the PLD accountant)",
           "rdp": " (composed by the RDP accountant)"}.get(totals.get("accountant"), "")
    text = (f"Spent: epsilon {totals['spent_epsilon']:.6g}, delta {totals['spent_delta']:.3g}"
            f"{rho}{how}. ")
    if budget is None:
        return text + "No budget: spending is recorded, nothing is enforced."
    text += "Budget: " + ", ".join(f"{k} {v:.6g}" for k, v in budget.items()) + ". "
    if "remaining" in totals:
        text += "Left: " + ", ".join(f"{k} {v:.6g}" for k, v in totals["remaining"].items()) + "."
    return text


def _composed_totals(records: list, totals: dict) -> list | None:
    """The composed epsilon after each release, under a PLD or RDP budget; else None."""
    kind = totals.get("accountant")
    if kind not in COMPOSED:
        return None
    tally, thresholds, out = Tally(), 0.0, []
    for record in records:
        tally.add(record.events if record.events is not None else events_of(record.cost))
        thresholds += record.rho_delta
        out.append(tally.epsilon(kind, totals["budget"]["delta"] - thresholds))
    return out


def _html(table, totals: dict, records: list) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in table.columns)
    body = "".join(("<tr class=\"replay\">" if replay else "<tr>")
                   + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>"
                   for row, replay in zip(table.itertuples(index=False, name=None), table.replay))
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;text-align:left}"
             "td:nth-child(3){font-family:monospace;white-space:pre-wrap}tr.replay{color:#555}"
             "svg{display:block;margin:1em 0}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">"
            f"<title>DP release table</title><style>{style}</style></head><body>"
            f"<h1>DP release table</h1><p>{esc(_summary(totals))}</p>"
            f"{chart(records, totals['budget'], _composed_totals(records, totals))}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            "<p>Each release: the query as asked (parameters bound), the privacy unit and its "
            "contribution bound, its cost, and per noisy statistic the mechanism, noise scale, "
            "epsilon share, the bounds it was clamped to and its 95% accuracy (noise only, not "
            "the bias of clamping or truncation). Replays cost nothing. The chart's markers are "
            "the releases, numbered as the rows (a hollow marker is a replay).</p></body></html>\n")
