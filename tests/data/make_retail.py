"""Writes the retail star schema (retail.yaml, retail_*.csv): a TPC-H-like test data set.

Also tpch_*.csv (metadata tpch.yaml): the rows of the first 150 customers, with TPC-H's
column names (c_, o_, l_ prefixes: no two tables share a name), for the SQL analysts write
over such schemas (unqualified names in correlated subqueries).

Four levels: a customer (the person), their orders (at most 30), each order's lines (at
most 7), and public dimensions (parts, nations) with several columns. Synthetic and
seeded, so the files are reproducible: ``python tests/data/make_retail.py``.
"""
from datetime import date, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NATIONS = [(0, "ALGERIA", "AFRICA"), (1, "BRAZIL", "AMERICA"), (2, "CANADA", "AMERICA"),
           (3, "CHINA", "ASIA"), (4, "FRANCE", "EUROPE"), (5, "GERMANY", "EUROPE"),
           (6, "INDIA", "ASIA"), (7, "JAPAN", "ASIA"), (8, "KENYA", "AFRICA"),
           (9, "PERU", "AMERICA")]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
BRANDS = ["Brand#11", "Brand#12", "Brand#23", "Brand#34", "Brand#45"]
TYPES = ["ECONOMY BRASS", "LARGE STEEL", "PROMO TIN", "SMALL COPPER", "STANDARD NICKEL"]


TPCH_CUSTOMERS = 150
TPCH_PREFIX = {"customers": "c_", "orders": "o_", "lineitems": "l_"}


def write(name: str, header: list, rows, prefix: str = "retail") -> None:
    with open(HERE / f"{prefix}_{name}.csv", "w") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")


def main() -> None:
    rng = np.random.default_rng(22)
    write("nations", ["nation_key", "name", "region"], NATIONS)
    parts = [(p, BRANDS[p % 5], TYPES[(p // 5) % 5], 1 + (p * 7) % 50) for p in range(1, 201)]
    write("parts", ["part_id", "brand", "type", "size"], parts)
    customers, orders, lines = [], [], []
    start = date(1992, 1, 1)
    for c in range(1, 601):
        customers.append((c, int(rng.integers(0, 10)), SEGMENTS[int(rng.integers(0, 5))]))
        for _ in range(int(rng.integers(0, 31))):
            o = len(orders) + 1
            day = start + timedelta(days=int(rng.integers(0, 2557)))
            orders.append((o, c, day, PRIORITIES[int(rng.integers(0, 5))]))
            for n in range(1, int(rng.integers(1, 8)) + 1):
                quantity = int(rng.integers(1, 51))
                price = round(quantity * float(rng.uniform(9, 200)), 2)
                discount = int(rng.integers(0, 11)) / 100
                ship = day + timedelta(days=int(rng.integers(1, 122)))
                lines.append((o, n, int(rng.integers(1, 201)), quantity, price, discount, ship,
                              "RAN"[int(rng.integers(0, 3))]))
    write("customers", ["customer_id", "nation_key", "segment"], customers)
    write("orders", ["order_id", "customer_id", "order_date", "priority"], orders)
    write("lineitems", ["order_id", "line_no", "part_id", "quantity", "price", "discount",
                        "ship_date", "return_flag"], lines)
    write_tpch(customers, orders, lines)


def write_tpch(customers: list, orders: list, lines: list) -> None:
    """The first TPCH_CUSTOMERS customers' rows under TPC-H-style prefixed names."""
    kept = [c for c in customers if c[0] <= TPCH_CUSTOMERS]
    kept_orders = [o for o in orders if o[1] <= TPCH_CUSTOMERS]
    last = max(o[0] for o in kept_orders)
    for name, header, rows in (
            ("customers", ["customer_id", "nation_key", "segment"], kept),
            ("orders", ["order_id", "customer_id", "order_date", "priority"], kept_orders),
            ("lineitems", ["order_id", "line_no", "part_id", "quantity", "price", "discount",
                           "ship_date", "return_flag"], [r for r in lines if r[0] <= last])):
        write(name, [TPCH_PREFIX[name] + h for h in header], rows, "tpch")


if __name__ == "__main__":
    main()
