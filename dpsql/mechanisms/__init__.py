"""Noise mechanisms (used by step 3 to cost a plan and by step 6 to release it).

``base`` is the protocol every mechanism implements (calibrated from a sensitivity
and a privacy target; it releases, states its accuracy and threshold, describes
itself and its cost); ``additive`` is Laplace and Gaussian noise on a grid,
``quantile`` is permute-and-flip over a candidate grid, and ``samplers`` holds the
exact integer samplers both draw from.
"""
