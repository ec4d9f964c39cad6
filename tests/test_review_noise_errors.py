"""Review of issue 3: calibrate must raise only dpsql errors (one exception tree).

zcdp.rho_for scans alpha only up to 1 + e^23; for a small per-statistic epsilon
with a small delta the optimum lies beyond, rho_for raises a builtin ValueError
and calibrate lets it escape (it only maps InternalError to QueryError).
"""
import math

import pytest

from dpsql.privacy import zcdp
from dpsql.errors import Error, QueryError
from dpsql.mechanisms.additive import calibrate
from dpsql.privacy.params import Mechanism


@pytest.mark.parametrize("eps,delta", [(1e-9, 1e-15), (1e-8, 1e-15)])
def test_tiny_epsilon_gaussian_raises_dpsql_error_or_calibrates(eps, delta):
    try:
        m = calibrate(Mechanism.discrete_gaussian, l1=1, l2=1, epsilon=eps, delta=delta,
                      integer=True, groups=1)
    except Error:
        return                                   # a dpsql error is acceptable
    assert 0 < m.epsilon <= eps                  # or a valid calibration


@pytest.mark.parametrize("eps,delta", [(1e-9, 1e-15), (1e-12, 1e-300), (1e-3, 1e-10)])
def test_rho_for_finds_positive_rho_for_tiny_epsilon(eps, delta):
    """The alpha scan reaches past the optimum a* ~ 2 log(1/delta) / epsilon (1 + e^23
    was the old end, about 1e10): a positive rho exists and is found, and it is valid."""
    rho, alpha = zcdp.rho_for(eps, delta)
    assert rho > eps ** 2 / (4 * math.log(1 / delta))      # at least the classic bound
    assert zcdp.epsilon_at(rho, delta, alpha) <= eps * (1 + 1e-9)
    assert zcdp.delta_for(rho, eps) <= delta * (1 + 1e-8)


@pytest.mark.parametrize("eps,delta,says", [
    (1e-300, 1e-10, "out of range"),       # a valid rho, but sigma beyond the sampler's range
    (1e-300, 1e-300, "cannot be calibrated"),   # rho_for's ValueError: rho underflows
])
def test_uncalibratable_epsilon_is_a_query_error_saying_what_to_change(eps, delta, says):
    with pytest.raises(QueryError, match=f"{says}.*larger epsilon"):
        calibrate(Mechanism.discrete_gaussian, l1=1, l2=1, epsilon=eps, delta=delta,
                  integer=True, groups=1)
