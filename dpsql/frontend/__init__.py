"""Step 1: SQL text -> a typed, allow-listed tree.

``parse`` reads the text (with ``params`` binding query parameters as literals);
``allowed`` is the allow-list of row-level constructs, as data; ``binding``
resolves names to columns; ``typecheck`` types a bound expression by the
allow-list and makes it total, with ``literals`` (literal types), ``decimals``
(constant number arithmetic, exact) and ``temporal`` (dates, times and intervals);
``ranges`` decides which integer operations cannot fail. Nothing here knows about plans, noise or engines beyond the
engine types of the metadata's types.
"""
