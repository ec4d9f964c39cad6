"""Step 7, the short way for a few released groups: a grouped query's post-processing in
Python.

A grouped query releases one row per group, and its post-processing is most often the keys
and arithmetic on each row's noisy statistics, ordered by the keys (``SELECT sex, COUNT(*),
AVG(age) ... GROUP BY sex``). A round trip through the post-processing DuckDB costs about
1.5-2 ms (parsing, binding and planning the post query each time), the larger part of a
fresh release's fixed cost; the same work on a handful of rows costs tens of microseconds.

``grouped(post, ...)`` takes exactly one shape: the SELECT list names keys (passed through)
or arithmetic that ``post_scalar`` has a rule for, over the plan's noisy table under its
NULL-restoring projection, ordered by plain columns (outputs, keys or statistics), each
ascending or descending, NULLs first or last, among which every key (so the order is total:
no tie is left to an engine's sort), optionally cut by a literal LIMIT and OFFSET; nothing
else (no WHERE, HAVING, DISTINCT). Keys must be integers, booleans or text: their order in
Python is DuckDB's (text: UTF-8 byte order, which is code point order; -0.0 ties with
0.0). Any other shape, more than ``MAX_ROWS`` rows, or a value outside the region where the
two agree (as ``post_scalar``: NaN, infinities, division by zero, BIGINT
overflow) leaves the table to DuckDB, so the answer is always DuckDB's:
tests/unit/test_post_rows.py compares both on every grouped fixture query with random
released tables. Only released values are read: this is post-processing, free of privacy
cost whichever path answers.
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from .postprocess import plain_column
from .post_scalar import Outside, compile_node, kind_of

# Past a few hundred released rows DuckDB's vectorised evaluation is the cheaper one: for
# a text key, a count and an AVG, Python took 0.31 ms at 64 rows, 1.29 ms at 256 and 5.46 ms
# at 1,024, DuckDB 2.3-2.8 ms at every size (docs/performance.md, "Fixed cost per query,
# seventh round"). 64 leaves room for SELECT lists several times longer.
MAX_ROWS = 64
_OUTER = ("where", "group", "having", "joins", "distinct", "with_", "qualify", "windows")
_KEY_KINDS = "ibO"        # BIGINT, BOOLEAN, VARCHAR (object arrays of str)


def grouped(post: exp.Select, noisy_table: str, columns: dict, keys: list):
    """A function ``noisy -> {output: array}`` evaluating ``post`` in Python (None where
    DuckDB must answer), or None when ``post`` is not of the shape taken here.
    ``columns``: the noisy table's columns and numpy dtypes; ``keys``: its key columns."""
    if not keys or any(post.args.get(k) for k in _OUTER):
        return None
    dtypes = {name: np.dtype(t) for name, t in columns.items()}
    if any(dtypes.get(k) is None or dtypes[k].kind not in _KEY_KINDS for k in keys):
        return None
    inner = _inner_columns(post, noisy_table, keys)
    cut = _cut(post)
    if inner is None or cut is None:
        return None
    # the statistics the outer SELECT may read: those the inner projection passes on
    stats = {name: t.kind for name, t in dtypes.items() if name not in keys and name in inner
             and t in (np.dtype(np.int64), np.dtype(np.float64))}
    outputs = []
    for item in post.expressions:
        if not isinstance(item, exp.Alias):
            return None
        node = item.this
        if isinstance(node, exp.Column) and not node.table and node.name in keys:
            outputs.append((item.alias, node.name, None))
            continue
        fn = compile_node(node, set(stats))
        kind = None if fn is None else kind_of(node, stats)
        if kind is None or not kind[1]:
            return None
        outputs.append((item.alias, fn, np.dtype(np.int64 if kind[0] == "i" else np.float64)))
    order = _order(post, outputs, keys, set(stats))
    if order is None:
        return None
    return lambda noisy: _run(outputs, order, cut, list(keys), set(stats), noisy)


def _inner_columns(post: exp.Select, noisy_table: str, keys: list):
    """The inner projection's names if it is exactly ``SELECT CASE WHEN k_null THEN NULL
    ELSE k END AS k, ..., s, ... FROM noisy`` (keys first), else None."""
    source = post.args.get("from_")
    inner = source.this if source is not None else None
    if not isinstance(inner, exp.Subquery) or not isinstance(inner.this, exp.Select):
        return None
    select = inner.this
    table = select.args.get("from_")
    if (table is None or not isinstance(table.this, exp.Table)
            or table.this.name != noisy_table or table.this.args.get("db")
            or any(v for k, v in select.args.items() if k not in ("expressions", "from_"))):
        return None
    names = []
    for i, item in enumerate(select.expressions):
        if i < len(keys):
            if not _restores_null(item, keys[i]):
                return None
        elif not isinstance(item, exp.Column) or item.table:
            return None
        names.append(item.alias_or_name)
    return names


def _restores_null(item, key: str) -> bool:
    if not isinstance(item, exp.Alias) or item.alias != key:
        return False
    case = item.this
    if not isinstance(case, exp.Case) or case.this is not None or len(case.args["ifs"]) != 1:
        return False
    branch, default = case.args["ifs"][0], case.args.get("default")
    return (isinstance(branch.this, exp.Column) and branch.this.name == key + "_null"
            and not branch.this.table and isinstance(branch.args.get("true"), exp.Null)
            and isinstance(default, exp.Column) and default.name == key and not default.table)


def _cut(post: exp.Select):
    """(offset, limit or None) of literal non-negative integers, or None for another cut."""
    found = []
    for part in ("offset", "limit"):
        node = post.args.get(part)
        value = node.expression if node is not None else None
        if node is None:
            found.append(0 if part == "offset" else None)
        elif (isinstance(node, (exp.Limit, exp.Offset)) and isinstance(value, exp.Literal)
              and not value.is_string and value.this.isdigit()
              and not any(v for k, v in node.args.items() if k != "expression")):
            found.append(int(value.this))
        else:
            return None
    return tuple(found)


def _order(post: exp.Select, outputs: list, keys: list, stats: set):
    """The ORDER BY as (name, is an output, descending, NULLs first) per term, or None
    unless each term is a plain column naming one output or one inner column (never
    both), and the terms name every key (directly or as an output passing it on)."""
    order = post.args.get("order")
    if order is None:
        return None
    passed = {alias: fn for alias, fn, dtype in outputs if dtype is None}
    aliases = {alias for alias, _, _ in outputs}
    terms, covered = [], set()
    for term in order.expressions:
        if (not isinstance(term, exp.Ordered) or term.args.get("with_fill")
                or not isinstance(term.this, exp.Column) or term.this.table):
            return None
        name = term.this.name
        if (name in aliases) == (name in keys or name in stats):
            return None
        covered.add(passed.get(name, name))
        terms.append((name, name in aliases, bool(term.args.get("desc")),
                      bool(term.args.get("nulls_first"))))
    return terms if covered >= set(keys) else None


def _run(outputs, order: list, cut: tuple, keys: list, stats: set, noisy: dict):
    rows = _rows(noisy, keys, stats)
    if rows is None:
        return None
    values = {}
    try:
        for name, fn, dtype in outputs:
            if dtype is None:
                values[name] = [row[fn] for row in rows]
                continue
            values[name] = [fn(row) for row in rows]
            if any((dtype.kind == "i") != (type(v) is int) for v in values[name]):
                return None
    except Outside:
        return None
    index = list(range(len(rows)))
    for name, is_output, desc, nulls_first in reversed(order):     # stable: last term first
        column = values[name] if is_output else [row[name] for row in rows]
        nulls = [i for i in index if column[i] is None]
        index = sorted((i for i in index if column[i] is not None),
                       key=column.__getitem__, reverse=desc)
        index = nulls + index if nulls_first else index + nulls
    offset, limit = cut
    index = index[offset:] if limit is None else index[offset:offset + limit]
    out = {}
    for name, fn, dtype in outputs:
        picked = [values[name][i] for i in index]
        out[name] = (_key_array(picked, noisy[fn].dtype) if dtype is None
                     else np.array(picked, dtype=dtype))
    return out


def _rows(noisy: dict, keys: list, stats: set):
    """The released rows as dicts of Python values (keys None where NULL), or None where a
    column is not a plain array of the kinds evaluated here."""
    first = next(iter(noisy.values()), None)
    n = len(first) if isinstance(first, np.ndarray) else -1
    if not 0 < n <= MAX_ROWS:
        return None
    lists = {}
    for name, values in noisy.items():
        if (isinstance(values, np.ma.MaskedArray) or not isinstance(values, np.ndarray)
                or values.shape != (n,)):
            return None
        kind = values.dtype.kind
        if name in stats:
            if kind not in "if" or kind == "f" and not np.isfinite(values).all():
                return None
        elif name in keys:
            if kind not in _KEY_KINDS or kind == "O" and not all(type(v) is str for v in values):
                return None
        elif kind != "b":                  # the keys' NULL flags
            return None
        lists[name] = values.tolist()
    for key in keys:
        lists[key] = [None if null else value
                      for value, null in zip(lists[key], lists[key + "_null"])]
    names = [name for name in lists if name in stats or name in keys]
    return [{name: lists[name][i] for name in names} for i in range(n)]


def _key_array(values: list, dtype: np.dtype):
    """A key column as DuckDB's result reaches the analyst: its masked array (NULLs masked)
    through the post-processor's own conversion (engines/postprocess.plain_column)."""
    mask = np.array([v is None for v in values], dtype=np.bool_)
    fill = "" if dtype.kind == "O" else 0
    data = np.array([fill if v is None else v for v in values], dtype=dtype)
    return plain_column(np.ma.MaskedArray(data, mask) if mask.any() else data)
