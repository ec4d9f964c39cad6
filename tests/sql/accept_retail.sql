# Queries dpsql answers over the retail star schema (tests/data/retail.yaml + retail_*.csv):
# customers (private_id customer_id), orders -> customers, lineitems -> orders (references),
# parts and nations (public). One query per line, ending in "-- ok".
SELECT COUNT(*) AS n FROM retail.orders -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers GROUP BY segment -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1995-01-01' GROUP BY priority -- ok
SELECT n.region, COUNT(*) AS n FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT l.return_flag, SUM(l.quantity) AS q, AVG(l.price) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id JOIN retail.parts p ON p.part_id = l.part_id GROUP BY p.brand -- ok
# ---- GROUP BY keys not public: thresholded on rows or on distinct persons
SELECT o.priority, l.return_flag, l.line_no, COUNT(*) AS n FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY o.priority, l.return_flag, l.line_no -- ok
SELECT l.line_no FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.line_no -- ok
SELECT l.line_no, COUNT(DISTINCT o.customer_id) AS buyers FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.line_no -- ok
SELECT YEAR(order_date) AS y, COUNT(*) AS n, COUNT(DISTINCT customer_id) AS buyers FROM retail.orders GROUP BY YEAR(order_date) -- ok
