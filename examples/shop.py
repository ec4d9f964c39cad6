"""A three-table shop: the person (a customer) reached through foreign keys, a public lookup table.

examples/data/shop.yaml describes
- shop.customers: one row per customer; customer_id is the private_id;
- shop.orders: customer_id references customers.customer_id, so each order is its
  customer's; a customer has at most 20 orders, in at most 3 channels (max_groups) and at
  most 10 per channel (max_rows_per_group);
- shop.order_items: order_id references orders.order_id, so an item belongs to the customer
  of its order, reached by joining orders; at most 50 items per customer;
- shop.levels: public (no private rows), a lookup table of item levels.
Run: python examples/shop.py
"""
from pathlib import Path

import dpsql

DATA = Path(__file__).parent / "data"
tables = {f"shop.{t}": DATA / f"shop_{t}.csv"
          for t in ("customers", "orders", "order_items", "levels")}
reader = dpsql.from_df(tables, metadata=DATA / "shop.yaml",
                       privacy=dpsql.Privacy(epsilon=0.5, delta=1e-7),
                       budget=dpsql.Budget(epsilon=3.0, delta=1e-6))

# Orders per channel: channel has public values, and the table bounds groups per customer,
# so the count's sensitivity is 3 x 10 = 30 orders rather than max_ids = 20 per group.
orders = "SELECT channel, COUNT(*) AS orders FROM shop.orders GROUP BY channel"
print(reader.execute_df(orders))       # true: phone 1113, store 3237, web 6532

# Revenue per channel: order_items reach their customer through orders. An order_id that
# shop.orders gives to two customers would be dropped; at most 50 items per customer.
revenue = """
    SELECT o.channel, SUM(i.amount) AS revenue, AVG(i.amount) AS mean_item
    FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id
    GROUP BY o.channel"""
print(reader.explain(revenue))         # the join, the bound it gives, where truncation happens
print(reader.execute_df(revenue))      # true revenue: phone 165,577, store 496,769, web 974,822

# Items per level name: the public table's names are a public key set (no threshold).
levels = """
    SELECT l.name, COUNT(*) AS items
    FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id
    JOIN shop.levels l ON i.level = l.level
    GROUP BY l.name"""
print(reader.execute_df(levels))

# Customers with no web order: an anti-join on the person.
no_web = """
    SELECT region, COUNT(*) AS customers FROM shop.customers
    WHERE customer_id NOT IN (SELECT customer_id FROM shop.orders WHERE channel = 'web')
    GROUP BY region"""
print(reader.execute_df(no_web))
print("spent (epsilon, delta):", reader.spent)
