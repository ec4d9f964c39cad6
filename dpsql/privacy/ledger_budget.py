"""A ledger file's budget as JSON: written in its header, read back by any later dpsql.

Owns: the budget's JSON form. ``{"epsilon": 3.0, "delta": 1e-06}`` (basic composition),
``{"rho": 0.5, "delta": 1e-06}`` (zCDP), and for a budget composed by dp-accounting
``{"epsilon": 1.0, "delta": 1e-06, "accountant": "pld"}`` (or ``"rdp"``). A header
without ``accountant`` is read as before it existed (basic, or zCDP with rho).
"""
from __future__ import annotations

from .composition import COMPOSED
from .params import Budget


def budget_json(budget: Budget | None):
    if budget is None:
        return None
    if budget.zcdp:
        return {"rho": budget.rho, "delta": budget.delta}
    out = {"epsilon": budget.epsilon, "delta": budget.delta}
    if budget.accountant in COMPOSED:
        out["accountant"] = budget.accountant
    return out


def same_budget(a: Budget, b: Budget) -> bool:
    # JSON round-trips floats exactly, so equality is exact.
    return (a.epsilon == b.epsilon and a.rho == b.rho and float(a.delta) == float(b.delta)
            and a.accountant == b.accountant)


def fmt_budget(b: Budget | None) -> str:
    if b is None:
        return "none"
    if b.zcdp:
        return f"(rho={b.rho:.6g}, delta={b.delta:.3g})"
    kind = f", accountant={b.accountant}" if b.accountant in COMPOSED else ""
    return f"(epsilon={b.epsilon:.6g}, delta={b.delta:.3g}{kind})"


def read_budget(value) -> Budget | None:
    if value is None:
        return None
    if value.get("rho") is not None:
        return Budget(rho=float(value["rho"]), delta=float(value["delta"]))
    accountant = value.get("accountant")
    if accountant is not None and accountant not in COMPOSED:
        raise ValueError(f"unknown accountant {accountant!r}")
    return Budget(float(value["epsilon"]), float(value["delta"]), accountant=accountant)
