# Queries dpsql answers over the retail star schema (tests/data/retail.yaml + retail_*.csv):
# customers (private_id customer_id), orders -> customers, lineitems -> orders (references),
# parts and nations (public). One query per line, ending in "-- ok".
SELECT COUNT(*) AS n FROM retail.orders -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers GROUP BY segment -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1995-01-01' GROUP BY priority -- ok
SELECT n.region, COUNT(*) AS n FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT l.return_flag, SUM(l.quantity) AS q, AVG(l.price) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id JOIN retail.parts p ON p.part_id = l.part_id GROUP BY p.brand -- ok
# ---- BigQuery's differential-privacy syntax (docs/sql.md)
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 3) l.return_flag, SUM(l.quantity, contribution_bounds_per_group => (0, 200)) AS q, AVG(l.price, contribution_bounds_per_group => (0, 5000)) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 5, privacy_unit_column = customer_id) priority, COUNT(*, contribution_bounds_per_group => (0, 4)) AS n FROM retail.orders GROUP BY priority -- ok
SELECT WITH DIFFERENTIAL_PRIVACY segment, VAR_POP(nation_key, contribution_bounds_per_row => (0, 5)) AS v FROM retail.customers GROUP BY segment -- ok
