"""Steps 6-8: exact aggregates -> noisy statistics -> the analyst's result.

``noise`` is the only place exact values meet noise (and the threshold);
``intervals`` computes confidence intervals from noisy values and public facts;
``explain`` and ``report`` render a plan and a session's releases as text.
"""
