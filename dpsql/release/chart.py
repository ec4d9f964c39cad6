"""The HTML release table's chart: cumulative budget spent over the releases, as inline SVG.

Owns: the chart only (dpsql.release.report builds the page around it). The x axis counts
releases, numbered as the table's rows (1, 2, ...); the y axis is epsilon spent (rho in
a zCDP session), from 0. Each release is a marker at its cumulative spending, labelled
with its number while the labels fit (a replay is a hollow marker: it costs nothing);
the budget, when there is one, is a dashed line labelled with its value. Nothing is
loaded and nothing runs: plain SVG elements, and every text that comes from a query
(a marker's tooltip) is escaped.
"""
from __future__ import annotations

import html
import math

import numpy as np

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 84, 60, 52
MAX_LABELLED = 30
"""More releases than this: markers keep their tooltips, the x ticks carry the numbers."""
_AXIS, _LINE, _BUDGET = "#444", "#1f5fa8", "#c0392b"


def nice_ticks(top: float, count: int = 5) -> list:
    """0, step, ..., up to the first multiple of a 1-2-2.5-5 step at or above ``top``."""
    top = max(float(top), 1e-12)
    rough = top / count
    mag = 10 ** math.floor(math.log10(rough))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= rough * (1 - 1e-9))
    n = max(1, math.ceil(top / step - 1e-9))
    return [round(i * step, 12) for i in range(n + 1)]


def _x_ticks(n: int) -> list:
    """Release numbers to tick: every one up to 12 releases, else a 1-2-5 step."""
    if n <= 12:
        return list(range(1, n + 1))
    step = next(s for s in (2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 10 ** 9)
                if n / s <= 12)
    return ([1] if step < 10 else []) + list(range(step, n + 1, step))   # 1 would sit on 0


def _tick_text(v: float) -> str:
    return f"{v:.6g}"


def chart(records: list, budget: dict | None, totals=None) -> str:
    """The SVG for ``records`` (dpsql.privacy.records.ReleaseRecord, in table order) and
    the session's budget (``{"epsilon": E, ...}`` or ``{"rho": R, ...}``, or None).
    ``totals``: the spend after each release when it is not the running sum of their
    costs (a budget composed by the PLD or RDP accountant)."""
    key = "rho" if budget and "rho" in budget else "epsilon"
    costs = [float(getattr(r, key) or 0.0) for r in records]
    values = np.asarray(totals, dtype=float) if totals is not None else (
        np.cumsum(costs) if costs else np.zeros(0))
    limit = float(budget[key]) if budget and budget.get(key) is not None else None
    top = max([limit or 0.0, float(values[-1]) if values.size else 0.0])
    yticks = nice_ticks(top * 1.08 if top > 0 else 1.0)
    n, plot_w, plot_h = len(costs), WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: float) -> float:
        return LEFT + plot_w * i / (n + 0.5 if n else 1)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / yticks[-1])

    label = "rho (zCDP)" if key == "rho" else "epsilon"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="sans-serif" '
           f'aria-label="{label} spent (cumulative) over {n} release(s)">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
           f'<text data-role="title" x="10" y="20" font-size="14">{label} spent '
           f'(cumulative) over {n} release(s)</text>']
    out += _axes(n, yticks, x, y, label)
    if limit is not None:
        at, end = y(limit), WIDTH - RIGHT
        out.append(f'<line data-role="budget" x1="{LEFT}" y1="{at:.1f}" x2="{end}" '
                   f'y2="{at:.1f}" stroke="{_BUDGET}" stroke-dasharray="6 4"/>'
                   f'<text data-role="budget-label" x="{end + 6}" y="{at - 2:.1f}" '
                   f'font-size="11" fill="{_BUDGET}">budget<tspan x="{end + 6}" '
                   f'dy="13">{key} {limit:.4g}</tspan></text>')
    out += _series(records, costs, values, x, y)
    out.append("</svg>")
    return "".join(out)


def _axes(n: int, yticks: list, x, y, label: str) -> list:
    """Both axes with their ticks, tick labels, light grid lines and titles."""
    base, right = y(0.0), WIDTH - RIGHT
    out = []
    for v in yticks:
        out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{right}" y2="{y(v):.1f}" '
                   f'stroke="#e4e4e4"/>' if v else "")
        out.append(f'<line data-role="ytick" x1="{LEFT - 5}" y1="{y(v):.1f}" x2="{LEFT}" '
                   f'y2="{y(v):.1f}" stroke="{_AXIS}"/><text data-role="ytick-label" '
                   f'x="{LEFT - 8}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">'
                   f'{_tick_text(v)}</text>')
    for i in _x_ticks(n):
        out.append(f'<line data-role="xtick" x1="{x(i):.1f}" y1="{base:.1f}" x2="{x(i):.1f}" '
                   f'y2="{base + 5:.1f}" stroke="{_AXIS}"/><text data-role="xtick-label" '
                   f'x="{x(i):.1f}" y="{base + 18:.1f}" font-size="11" text-anchor="middle">'
                   f'{i}</text>')
    out.append(f'<line data-role="x-axis" x1="{LEFT}" y1="{base:.1f}" x2="{right}" '
               f'y2="{base:.1f}" stroke="{_AXIS}"/><line data-role="y-axis" x1="{LEFT}" '
               f'y1="{TOP}" x2="{LEFT}" y2="{base:.1f}" stroke="{_AXIS}"/>')
    out.append(f'<text x="{(LEFT + right) / 2:.1f}" y="{HEIGHT - 10}" font-size="12" '
               f'text-anchor="middle">release (numbered as in the table)</text>')
    out.append(f'<text data-role="y-title" x="10" y="{TOP - 18}" font-size="12">{label} spent'
               '</text>')
    if not n:
        out.append(f'<text x="{(LEFT + right) / 2:.1f}" y="{(TOP + base) / 2:.1f}" '
                   f'font-size="12" text-anchor="middle" fill="#777">no releases yet</text>')
    return out


def _series(records: list, costs: list, values, x, y) -> list:
    """The cumulative line from 0, and a numbered marker per release (tooltips escaped)."""
    if not costs:
        return []
    points = [(x(0), y(0.0))] + [(x(i + 1), y(float(v))) for i, v in enumerate(values)]
    out = [f'<polyline data-role="spent" fill="none" stroke="{_LINE}" stroke-width="2" '
           f'points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in points)}"/>']
    labelled = len(costs) <= MAX_LABELLED
    radius = min(4.5, max(1.5, (x(1) - x(0)) / 3))     # dense markers shrink, never hide
    for i, (r, cost, total) in enumerate(zip(records, costs, values), start=1):
        px, py = x(i), y(float(total))
        replay = bool(getattr(r, "replay", False))
        tip = html.escape(f"release {i}{' (replay, free)' if replay else ''}: cost {cost:.6g}, "
                          f"total {float(total):.6g}; {' '.join(str(r.query).split())}")
        fill = "#fff" if replay else _LINE
        out.append(f'<g><title>{tip}</title><circle data-role="marker" data-release="{i}" '
                   f'data-replay="{str(replay).lower()}" cx="{px:.1f}" cy="{py:.1f}" '
                   f'r="{radius:.1f}" fill="{fill}" stroke="{_LINE}" stroke-width="1.5"/></g>')
        if labelled:
            out.append(f'<text data-role="marker-label" x="{px:.1f}" y="{py - 9:.1f}" '
                       f'font-size="10" text-anchor="middle">{i}</text>')
    if any(getattr(r, "replay", False) for r in records):
        out.append(f'<circle cx="{WIDTH - 118}" cy="16" r="4.5" fill="#fff" '
                   f'stroke="{_LINE}" stroke-width="1.5"/><text x="{WIDTH - 108}" '
                   f'y="20" font-size="11">replay (costs 0)</text>')
    return out
