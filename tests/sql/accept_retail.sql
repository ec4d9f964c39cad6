# Queries dpsql answers over the retail star schema (tests/data/retail.yaml + retail_*.csv):
# customers (private_id customer_id), orders -> customers, lineitems -> orders (references),
# parts and nations (public). One query per line, ending in "-- ok".
SELECT COUNT(*) AS n FROM retail.orders -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers GROUP BY segment -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1995-01-01' GROUP BY priority -- ok
SELECT n.region, COUNT(*) AS n FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT l.return_flag, SUM(l.quantity) AS q, AVG(l.price) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id JOIN retail.parts p ON p.part_id = l.part_id GROUP BY p.brand -- ok
# ---- dates moved by INTERVAL literals, DATE_DIFF (docs/sql.md, "Dates and intervals")
SELECT COUNT(*) AS n FROM retail.orders WHERE order_date <= DATE '1998-12-01' - INTERVAL '90' DAY -- ok
SELECT COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1994-01-01' + INTERVAL '1' YEAR -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date + INTERVAL '3 months' >= DATE '1998-01-01' GROUP BY priority -- ok
SELECT COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE o.order_date + INTERVAL 30 DAY < l.ship_date -- ok
SELECT COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE l.ship_date BETWEEN o.order_date + INTERVAL 1 WEEK AND DATE_ADD(o.order_date, INTERVAL '1 month 15 days') -- ok
SELECT l.return_flag, AVG(LEAST(GREATEST(DATE_DIFF('day', o.order_date, l.ship_date), 0), 200)) AS d FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT DATEDIFF('month', o.order_date, l.ship_date) > 1 AS late, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id GROUP BY late -- ok
SELECT DATE_DIFF('year', DATE '1992-01-01', order_date) AS y, COUNT(*) AS n FROM retail.orders GROUP BY y -- ok
SELECT EXTRACT(month FROM INTERVAL 2 WEEK + order_date) AS m, COUNT(*) AS n FROM retail.orders GROUP BY m -- ok
SELECT COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE DATE_DIFF('hour', o.order_date, l.ship_date - INTERVAL 36 HOUR) < 24 * 7 -- ok
# ---- exact decimal literals (docs/sql.md, "Exact decimals")
SELECT COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE l.discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 -- ok
SELECT SUM(l.price * l.discount) AS revenue FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE o.order_date >= DATE '1994-01-01' AND o.order_date < DATE '1994-01-01' + INTERVAL '1' YEAR AND l.discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l.quantity < 24 -- ok
SELECT l.discount AS d, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE l.discount IN (0.01 + 0.02, 0.1 - 0.05, 0.3 * 0.1) GROUP BY d -- ok
