"""Review of issue 3: calibrate must raise only dpsql errors (one exception tree).

zcdp.rho_for scans alpha only up to 1 + e^23; for a small per-statistic epsilon
with a small delta the optimum lies beyond, rho_for raises a builtin ValueError
and calibrate lets it escape (it only maps InternalError to QueryError).
"""
import pytest

from dpsql.errors import Error
from dpsql.mechanisms import calibrate
from dpsql.privacy import Mechanism


@pytest.mark.parametrize("eps,delta", [(1e-9, 1e-15), (1e-8, 1e-15)])
def test_tiny_epsilon_gaussian_raises_dpsql_error_or_calibrates(eps, delta):
    try:
        m = calibrate(Mechanism.discrete_gaussian, l1=1, l2=1, epsilon=eps, delta=delta,
                      integer=True, groups=1)
    except Error:
        return                                   # a dpsql error is acceptable
    assert 0 < m.epsilon <= eps                  # or a valid calibration
