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
import pandas as pd
from sqlglot import exp

from ..errors import LedgerError, ProgrammingError
from ..privacy.params import Stat
from ..privacy.spend import Spend

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
                              "delta": float(part.threshold_delta)}
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
def _stat_text(s: dict) -> str:
    bounds = ", ".join(f"{k} in [{a:g}, {b:g}]" for k, (a, b) in s.get("bounds", {}).items())
    return (f"{s['label']}: {s['mechanism']} scale {s['scale']:.4g}, epsilon {s['epsilon']:.4g}"
            + (f", {bounds}" if bounds else "") + f", 95% accuracy {s['accuracy95']}")


def frame(records: list) -> pd.DataFrame:
    """One row per release (``dpsql.privacy.records.ReleaseRecord``)."""
    rows = []
    for r in records:
        parts = (r.details or {}).get("parts") or [{}]
        rows.append({
            "time": r.time, "query": r.query, "replay": bool(r.replay),
            "privacy_unit": "; ".join(p.get("unit", "?") for p in parts),
            "max_ids": ", ".join(str(p.get("max_ids", "?")) for p in parts),
            "epsilon": r.epsilon, "delta": r.delta, "rho": r.rho,
            "statistics": "; ".join(_stat_text(s) for p in parts for s in p.get("statistics", [])),
            "threshold": "; ".join(f"{t['statistic']} >= {t['tau']:.4g} (delta {t['delta']:.2g})"
                                   for p in parts if (t := p.get("threshold"))),
        })
    columns = ["time", "query", "replay", "privacy_unit", "max_ids", "epsilon", "delta", "rho",
               "statistics", "threshold"]
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
    if remaining is not None:
        out["remaining"] = {("rho" if budget.zcdp else "epsilon"): remaining[0],
                            "delta": remaining[1]}
    return out


def render(records: list, budget, spent: tuple, spending: tuple, remaining, fmt: str):
    """The release table in ``fmt``: a DataFrame, or markdown, HTML or JSON text."""
    if fmt not in FORMATS:
        raise ProgrammingError(f"report format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    table = frame(records)
    if fmt == "dataframe":
        return table
    totals = _totals(budget, spent, spending, remaining)
    if fmt == "json":
        return json.dumps({"releases": table.to_dict(orient="records"),
                           "details": [r.details for r in records], **totals}, indent=2)
    if fmt == "markdown":
        return _markdown(table, totals)
    return _html(table, totals, records)


_MD_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]()!#~{}|])")


def _md_cell(value) -> str:
    """One cell of a GFM table, all of it text: whatever a query holds (a parameter, a
    name) cannot end the row, start a block (a heading, a list) or make a link, an image,
    code, emphasis or HTML. Every line break becomes a space; the backslash and the
    punctuation that starts markup are backslash-escaped (the backslash with the rest,
    in one pass, so nothing is escaped twice); then HTML's < > & " ' become entities
    (after the escaping, so the "#" and ";" of an entity stay as they are)."""
    text = _MD_LINE_BREAK.sub(" ", str(value))
    return html.escape(_MD_PUNCTUATION.sub(r"\\\1", text), quote=True)


def _markdown(table: pd.DataFrame, totals: dict) -> str:
    lines = ["# DP release table", "", _summary(totals), ""]
    cols = list(table.columns)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |"
              for row in table.itertuples(index=False, name=None)]
    return "\n".join(lines) + "\n"


def _summary(totals: dict) -> str:
    budget = totals["budget"]
    text = (f"Spent: epsilon {totals['spent_epsilon']:.6g}, delta {totals['spent_delta']:.3g}"
            f" (rho {totals['spent_rho']:.6g}). ")
    if budget is None:
        return text + "No budget: spending is recorded, nothing is enforced."
    text += "Budget: " + ", ".join(f"{k} {v:.6g}" for k, v in budget.items()) + ". "
    if "remaining" in totals:
        text += "Left: " + ", ".join(f"{k} {v:.6g}" for k, v in totals["remaining"].items()) + "."
    return text


def _chart(records: list, totals: dict) -> str:
    """Cumulative spending against release number, with the budget line: inline SVG."""
    zcdp = bool(totals["budget"] and "rho" in totals["budget"])
    key = "rho" if zcdp else "epsilon"
    values = np.cumsum([float(getattr(r, key) or 0.0) for r in records]) if records else np.zeros(0)
    limit = totals["budget"][key] if totals["budget"] else None
    top = max([limit or 0.0, float(values[-1]) if values.size else 0.0, 1e-12])
    w, h, pad = 480, 180, 30
    pts = [(pad, h - pad)] + [(pad + (w - 2 * pad) * (i + 1) / max(len(values), 1),
                               h - pad - (h - 2 * pad) * v / top) for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
           f'aria-label="{key} spent over releases">',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#888"/>',
           f'<polyline fill="none" stroke="#1f5fa8" stroke-width="2" points="{path}"/>']
    if limit:
        y = h - pad - (h - 2 * pad) * limit / top
        out.append(f'<line x1="{pad}" y1="{y:.1f}" x2="{w - pad}" y2="{y:.1f}" stroke="#c0392b" '
                   f'stroke-dasharray="4 3"/><text x="{w - pad}" y="{y - 4:.1f}" font-size="11" '
                   f'text-anchor="end">budget {key} {limit:.4g}</text>')
    out.append(f'<text x="{pad}" y="{pad - 8}" font-size="11">{key} spent (cumulative); '
               f'{len(values)} release(s)</text></svg>')
    return "".join(out)


def _html(table: pd.DataFrame, totals: dict, records: list) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>"
                   for row in table.itertuples(index=False, name=None))
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;text-align:left}"
             "td:nth-child(2){font-family:monospace;white-space:pre-wrap}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">"
            f"<title>DP release table</title><style>{style}</style></head><body>"
            f"<h1>DP release table</h1><p>{esc(_summary(totals))}</p>{_chart(records, totals)}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            "<p>Each release: the query as asked (parameters bound), the privacy unit and its "
            "contribution bound, its cost, and per noisy statistic the mechanism, noise scale, "
            "epsilon share, the bounds it was clamped to and its 95% accuracy (noise only, not "
            "the bias of clamping or truncation). Replays cost nothing.</p></body></html>\n")
