"""Privacy: what an analyst asks for and what a session may spend (used by every step).

``params`` holds the user's parameters (``Privacy``, ``Budget``, ``Mechanisms``);
``spend`` the named cost of a query and its arithmetic; ``accounting`` the session
accountant (check before running, charge before returning); ``ledger`` the spending
that outlives the process; ``zcdp`` the conversion between zCDP and (epsilon, delta).
Nothing here imports a later step of the pipeline.
"""
from .params import DEFAULT_DELTA, Budget, Mechanism, Mechanisms, Privacy, Stat

__all__ = ["DEFAULT_DELTA", "Budget", "Mechanism", "Mechanisms", "Privacy", "Stat"]
