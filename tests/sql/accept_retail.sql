# Queries dpsql answers over the retail star schema (tests/data/retail.yaml + retail_*.csv):
# customers (private_id customer_id), orders -> customers, lineitems -> orders (references),
# parts and nations (public). One query per line, ending in "-- ok".
SELECT COUNT(*) AS n FROM retail.orders -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers GROUP BY segment -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1995-01-01' GROUP BY priority -- ok
SELECT n.region, COUNT(*) AS n FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT l.return_flag, SUM(l.quantity) AS q, AVG(l.price) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id JOIN retail.parts p ON p.part_id = l.part_id GROUP BY p.brand -- ok
# ---- correlated filters through references (lineitems.order_id -> orders.order_id)
SELECT COUNT(*) AS n FROM retail.orders o WHERE EXISTS (SELECT * FROM retail.lineitems l WHERE l.order_id = o.order_id AND l.return_flag = 'R') -- ok
SELECT COUNT(*) AS n FROM retail.orders o WHERE NOT EXISTS (SELECT * FROM retail.lineitems l WHERE l.order_id = o.order_id AND l.return_flag = 'R') -- ok
SELECT COUNT(*) AS n FROM retail.orders o WHERE o.order_id IN (SELECT order_id FROM retail.lineitems GROUP BY order_id HAVING SUM(quantity) > 100) -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders o WHERE o.order_id NOT IN (SELECT order_id FROM retail.lineitems GROUP BY order_id HAVING SUM(quantity) > 100) GROUP BY priority -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers c WHERE EXISTS (SELECT * FROM retail.orders o WHERE o.customer_id = c.customer_id AND o.priority = '1-URGENT') GROUP BY segment -- ok
SELECT l.return_flag, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE o.order_id IN (SELECT order_id FROM retail.lineitems WHERE discount >= 0.09) GROUP BY l.return_flag -- ok
SELECT AVG(t.q) AS q FROM (SELECT order_id, SUM(quantity) AS q FROM retail.lineitems GROUP BY order_id) t JOIN retail.orders o ON t.order_id = o.order_id -- ok
