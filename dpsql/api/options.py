"""A session's ``privacy=`` and ``budget=`` as the user may give them: a ``Privacy`` or a
``Budget``, or a number (the epsilon), checked when the session is made (``dpsql.from_df``,
``from_connection``, ``connect``, a ``Reader``), never at its first query.
"""
from __future__ import annotations

from ..errors import ProgrammingError
from ..privacy.params import Budget, Privacy


def session_privacy(privacy) -> Privacy:
    """``privacy=`` of a session as a Privacy: None is the default (epsilon 1 per query), a
    number is epsilon per query; anything else is refused here, when the session is made."""
    if privacy is None:
        return Privacy()
    if isinstance(privacy, Privacy):
        privacy.check()
        return privacy
    if isinstance(privacy, (int, float)) and not isinstance(privacy, bool):
        return Privacy(epsilon=privacy)
    raise ProgrammingError(f"privacy= takes a dpsql.Privacy (e.g. dpsql.Privacy(epsilon=1.0)) "
                           f"or a number, the epsilon of each query; got "
                           f"{type(privacy).__name__} {privacy!r}")


def session_budget(budget) -> Budget | None:
    """``budget=`` of a session as a Budget: a number is the session's total epsilon (at
    Budget's default delta); None is no budget."""
    if budget is None or isinstance(budget, Budget):
        return budget
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        return Budget(epsilon=budget)
    raise ProgrammingError(f"budget= takes a dpsql.Budget (e.g. dpsql.Budget(epsilon=3.0)) or a "
                           f"number, the session's total epsilon; got {type(budget).__name__} "
                           f"{budget!r}")
