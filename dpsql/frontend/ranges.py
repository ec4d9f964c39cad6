"""Which integer operations cannot fail, from the 64-bit ranges of their operands.

Owns: the exact range and engine width of an integer expression when every
integer column may hold any BIGINT (the engine type of ``int``; the data are not
trusted to respect the metadata's bounds). DuckDB computes ``1 + 2147483647`` in
32 bits and ``SIGN(x) + 127`` in 8 (a literal takes the other operand's type
when it fits): the width of an operation is that of its widest operand, and a
literal is assumed as narrow as its value allows. Assuming a width narrower than
DuckDB's only keeps a TRY that was not needed. ``typecheck`` wraps an integer ``+ - * // % -x ABS`` in
``TRY(...)`` only when this range says it could overflow or divide by zero or
-1: ``age // 10 * 10`` and ``CASE ... THEN 1 ELSE 0 END + 1`` need no guard,
which lets DuckDB use its fast paths (TRY costs up to 2x on a grouped query).
"""
from __future__ import annotations

from sqlglot import exp

INT64 = (-2 ** 63, 2 ** 63 - 1, 64)
_CAST_RANGES = {"BIGINT": INT64, "INT": (-2 ** 31, 2 ** 31 - 1, 32), "SMALLINT": (-2 ** 15, 2 ** 15 - 1, 16),
                "TINYINT": (-2 ** 7, 2 ** 7 - 1, 8)}


def fits(bounds) -> bool:
    if bounds is None:
        return False
    lo, hi, bits = bounds
    return -2 ** (bits - 1) <= lo and hi <= 2 ** (bits - 1) - 1


def divisor_safe(bounds) -> bool:
    """Integer division cannot fail: the divisor is never 0, nor -1 (MIN // -1 overflows)."""
    return bounds is not None and (bounds[0] > 0 or bounds[1] < -1)


def _hull(parts):
    if any(p is None for p in parts) or not parts:
        return None
    return min(p[0] for p in parts), max(p[1] for p in parts), max(p[2] for p in parts)


def trunc_div(x, y: int):
    """x / y truncated toward zero (DuckDB's integer division), exactly; an infinite
    dividend stays infinite."""
    if not isinstance(x, int):
        return x if y > 0 else -x
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _mul(a, b):
    return 0 if a == 0 or b == 0 else a * b       # 0 x infinity is 0 here


def int_range(node: exp.Expression, column_range):
    """Exact (lo, hi, bits) of an integer expression, or None if it is not one we know.

    ``column_range(name)``: the (lo, hi, bits) a column may hold, or None. Typing
    passes any BIGINT; ``dpsql.plan.bounds`` passes unbounded columns to find
    intervals that hold whatever the data are. Ends may be infinite floats."""
    columns = column_range
    if isinstance(node, (exp.Paren, exp.Try)):
        return int_range(node.this, columns)
    if isinstance(node, exp.Literal) and not node.is_string:
        return _literal_range(node)
    if isinstance(node, exp.Column):
        return column_range(node.name.lower())
    if isinstance(node, exp.Neg):
        return _neg_range(node, columns)
    if isinstance(node, exp.Abs):
        return _abs_range(node, columns)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        return _arithmetic_range(node, columns)
    if isinstance(node, (exp.IntDiv, exp.Mod)):
        return _division_range(node, columns)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _CAST_RANGES.get(node.to.this.value)
    if isinstance(node, exp.Case):
        return _case_range(node, columns)
    if isinstance(node, exp.Nullif):
        return int_range(node.this, columns)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("greatest", "least", "coalesce"):
        return _pick_range(node, columns)
    if isinstance(node, exp.Sign):
        return -1, 1, 8
    return None


def _literal_range(node: exp.Literal):
    text = node.this.replace("_", "")
    if not text.isdigit():
        return None
    value = int(text)
    # An integer literal takes the type of the other operand when it fits there
    # (SIGN(x) + 127 is TINYINT in DuckDB): assume its narrowest type.
    bits = next((b for b in (8, 16, 32, 64) if value < 2 ** (b - 1)), 128)
    return value, value, bits


def _neg_range(node: exp.Neg, columns):
    literal = node.this.this if isinstance(node.this, exp.Paren) else node.this
    if isinstance(literal, exp.Literal) and not literal.is_string and literal.this.isdigit():
        # A negative literal is folded into one constant of the type that holds it:
        # -9223372036854775808 is a BIGINT, not a negated HUGEINT.
        value = -int(literal.this)
        bits = next((b for b in (8, 16, 32, 64) if value >= -2 ** (b - 1)), 128)
        return value, value, bits
    inner = int_range(node.this, columns)
    return None if inner is None else (-inner[1], -inner[0], inner[2])


def _abs_range(node: exp.Abs, columns):
    inner = int_range(node.this, columns)
    if inner is None:
        return None
    top = max(abs(inner[0]), abs(inner[1]))
    return (0 if inner[0] <= 0 <= inner[1] else min(abs(inner[0]), abs(inner[1])), top,
            inner[2])


def _arithmetic_range(node: exp.Expression, columns):
    """``+ - *``: exact ends from the operands' ends, at the wider operand's width."""
    a, b = int_range(node.this, columns), int_range(node.expression, columns)
    if a is None or b is None:
        return None
    bits = max(a[2], b[2])
    if isinstance(node, exp.Add):
        return a[0] + b[0], a[1] + b[1], bits
    if isinstance(node, exp.Sub):
        return a[0] - b[1], a[1] - b[0], bits
    products = [_mul(x, y) for x in a[:2] for y in b[:2]]
    return min(products), max(products), bits


def _division_range(node: exp.Expression, columns):
    """``// %``: None unless the divisor can be neither 0 nor -1."""
    a, b = int_range(node.this, columns), int_range(node.expression, columns)
    if a is None or not divisor_safe(b):
        return None
    if isinstance(node, exp.IntDiv):
        # DuckDB truncates; the quotient is monotone in each operand for a divisor
        # of one sign, so the extremes are at the corners.
        quotients = [trunc_div(x, y) for x in a[:2] for y in b[:2]]
        return min(quotients), max(quotients), max(a[2], b[2])
    m = max(abs(b[0]), abs(b[1])) - 1
    return (-m if a[0] < 0 else 0), (m if a[1] > 0 else 0), max(a[2], b[2])


def _case_range(node: exp.Case, columns):
    branches = [i.args.get("true") for i in node.args.get("ifs") or []]
    if node.args.get("default") is not None:
        branches.append(node.args["default"])
    return _hull([int_range(b, columns) if not isinstance(b, exp.Null) else (0, 0, 8)
                  for b in branches])


def _pick_range(node: exp.Anonymous, columns):
    """GREATEST / LEAST / COALESCE of integer arguments."""
    parts = [int_range(a, columns) for a in node.expressions]
    name = str(node.this).lower()
    if name == "coalesce" or any(p is None for p in parts):
        return _hull(parts)
    pick = max if name == "greatest" else min     # NULL arguments are skipped
    return (pick(p[0] for p in parts), pick(p[1] for p in parts), max(p[2] for p in parts))


def cannot_fail(node: exp.Expression, kinds: dict) -> bool:
    """An integer ``node`` (its operands already guarded) never raises on any input.

    ``kinds``: column name -> language type; an int column may hold any BIGINT."""
    def columns(name):
        return INT64 if kinds.get(name) == "int" else None
    if isinstance(node, (exp.IntDiv, exp.Mod)):
        return divisor_safe(int_range(node.expression, columns)) and \
            int_range(node.this, columns) is not None
    return fits(int_range(node, columns))
