# Queries dpsql answers over the retail star schema (tests/data/retail.yaml + retail_*.csv):
# customers (private_id customer_id), orders -> customers, lineitems -> orders (references),
# parts and nations (public). One query per line, ending in "-- ok".
SELECT COUNT(*) AS n FROM retail.orders -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers GROUP BY segment -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1995-01-01' GROUP BY priority -- ok
SELECT n.region, COUNT(*) AS n FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT l.return_flag, SUM(l.quantity) AS q, AVG(l.price) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id JOIN retail.parts p ON p.part_id = l.part_id GROUP BY p.brand -- ok
SELECT n_orders, COUNT(*) AS n FROM (SELECT c.customer_id, COUNT(o.order_id) FROM retail.customers c LEFT JOIN retail.orders o ON c.customer_id = o.customer_id GROUP BY c.customer_id) AS per_customer (customer_id, n_orders) GROUP BY n_orders -- ok
WITH per_customer (customer_id, n_orders) AS (SELECT customer_id, COUNT(*) FROM retail.orders GROUP BY customer_id) SELECT n_orders, COUNT(*) AS n FROM per_customer GROUP BY n_orders -- ok
WITH lines (customer_id, n_lines, qty) AS (SELECT o.customer_id, COUNT(*), SUM(l.quantity) FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY o.customer_id) SELECT n_lines > 50 AS many, COUNT(*) AS n, SUM(qty) AS q FROM lines GROUP BY n_lines > 50 -- ok
SELECT p, COUNT(*) AS n FROM retail.orders AS o (oid, cid, d, p) GROUP BY p -- ok
SELECT l.flag, SUM(l.q) AS q FROM (SELECT order_id, quantity, return_flag FROM retail.lineitems) AS l (oid, q, flag) JOIN retail.orders o ON l.oid = o.order_id GROUP BY l.flag -- ok
SELECT COUNT(*) AS n FROM retail.lineitems l JOIN (SELECT customer_id, order_id FROM retail.orders) AS o (order_id, customer_id) ON l.order_id = o.customer_id -- ok
SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM retail.orders GROUP BY customer_id HAVING k > 10) t -- ok
SELECT k > 20 AS big, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM retail.orders GROUP BY customer_id HAVING k > 5) t GROUP BY k > 20 -- ok
SELECT COUNT(*) AS n FROM (SELECT o.customer_id AS c, SUM(l.quantity) AS q FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY c HAVING q > 1000 ORDER BY q) t -- ok
# ---- BigQuery's differential-privacy syntax (docs/sql.md)
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 3) l.return_flag, SUM(l.quantity, contribution_bounds_per_group => (0, 200)) AS q, AVG(l.price, contribution_bounds_per_group => (0, 5000)) AS p FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.return_flag -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 5, privacy_unit_column = customer_id) priority, COUNT(*, contribution_bounds_per_group => (0, 4)) AS n FROM retail.orders GROUP BY priority -- ok
SELECT WITH DIFFERENTIAL_PRIVACY segment, VAR_POP(nation_key, contribution_bounds_per_row => (0, 5)) AS v FROM retail.customers GROUP BY segment -- ok
# a table that reaches its person through references (lineitems -> orders -> customers): per customer, the join written into the per-person aggregation
SELECT WITH DIFFERENTIAL_PRIVACY return_flag, SUM(quantity, contribution_bounds_per_group => (0, 200)) AS q, AVG(price) AS p FROM retail.lineitems GROUP BY return_flag -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = customer_id) p.brand, COUNT(*, contribution_bounds_per_group => (0, 10)) AS n FROM retail.lineitems l JOIN retail.parts p ON l.part_id = p.part_id GROUP BY p.brand -- ok
# ---- GROUP BY keys not public: thresholded on rows or on distinct persons
SELECT o.priority, l.return_flag, l.line_no, COUNT(*) AS n FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY o.priority, l.return_flag, l.line_no -- ok
SELECT l.line_no FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.line_no -- ok
SELECT l.line_no, COUNT(DISTINCT o.customer_id) AS buyers FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY l.line_no -- ok
SELECT YEAR(order_date) AS y, COUNT(*) AS n, COUNT(DISTINCT customer_id) AS buyers FROM retail.orders GROUP BY YEAR(order_date) -- ok
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
# ---- correlated filters through references (lineitems.order_id -> orders.order_id)
SELECT COUNT(*) AS n FROM retail.orders o WHERE EXISTS (SELECT * FROM retail.lineitems l WHERE l.order_id = o.order_id AND l.return_flag = 'R') -- ok
SELECT COUNT(*) AS n FROM retail.orders o WHERE NOT EXISTS (SELECT * FROM retail.lineitems l WHERE l.order_id = o.order_id AND l.return_flag = 'R') -- ok
SELECT COUNT(*) AS n FROM retail.orders o WHERE o.order_id IN (SELECT order_id FROM retail.lineitems GROUP BY order_id HAVING SUM(quantity) > 100) -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders o WHERE o.order_id NOT IN (SELECT order_id FROM retail.lineitems GROUP BY order_id HAVING SUM(quantity) > 100) GROUP BY priority -- ok
SELECT segment, COUNT(*) AS n FROM retail.customers c WHERE EXISTS (SELECT * FROM retail.orders o WHERE o.customer_id = c.customer_id AND o.priority = '1-URGENT') GROUP BY segment -- ok
# unqualified names in a correlated subquery: the innermost table that has the name (order_id is lineitems'), then outward (docs/sql.md)
SELECT priority, COUNT(*) AS n FROM retail.orders o WHERE EXISTS (SELECT * FROM retail.lineitems l WHERE order_id = o.order_id AND ship_date > order_date + INTERVAL 100 DAY) GROUP BY priority -- ok
SELECT priority, COUNT(*) AS n FROM retail.orders WHERE EXISTS (SELECT * FROM retail.lineitems WHERE lineitems.order_id = orders.order_id AND ship_date > order_date) GROUP BY priority -- ok
# several conditions on the outer row, tied to its person by the order's key
SELECT COUNT(*) AS n FROM retail.lineitems l1 WHERE EXISTS (SELECT * FROM retail.lineitems l2 WHERE l2.order_id = l1.order_id AND l2.part_id <> l1.part_id) -- ok
SELECT return_flag, COUNT(*) AS n FROM retail.lineitems l1 WHERE NOT EXISTS (SELECT * FROM retail.lineitems l2 WHERE l2.order_id = l1.order_id AND l2.part_id <> l1.part_id) GROUP BY return_flag -- ok
# dates as other dialects spell them: DATE_SUB(t, INTERVAL ...), DATE_ADD(t, n days), BigQuery's DATE_DIFF(a, b, PART)
SELECT COUNT(*) AS n FROM retail.orders WHERE DATE_SUB(order_date, INTERVAL 3 MONTH) >= DATE '1994-01-01' AND DATE_ADD(order_date, 10) < DATE '1996-01-01' -- ok
SELECT DATE_DIFF(l.ship_date, o.order_date, MONTH) AS months, COUNT(*) AS n FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY 1 -- ok
SELECT COUNT(*) AS n FROM retail.orders WHERE TIMESTAMP_ADD(order_date, INTERVAL 36 HOUR) < DATE '1996-01-01' AND TIMESTAMP_SUB(order_date, INTERVAL 2 DAY) >= DATE '1992-01-01' AND DATETIME_ADD(order_date, INTERVAL 1 MONTH) > DATETIME_SUB(order_date, INTERVAL '1' YEAR) -- ok
SELECT l.return_flag, COUNT(*) AS n FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id WHERE o.order_id IN (SELECT order_id FROM retail.lineitems WHERE discount >= 0.09) GROUP BY l.return_flag -- ok
SELECT AVG(t.q) AS q FROM (SELECT order_id, SUM(quantity) AS q FROM retail.lineitems GROUP BY order_id) t JOIN retail.orders o ON t.order_id = o.order_id -- ok
# ---- three levels (customers -> orders -> lineitems), comma joins, and lineitems alone (the plan
# joins retail.orders on order_id to find each line's person)
SELECT c.segment, COUNT(*) AS n, SUM(l.price) AS s FROM retail.customers c JOIN retail.orders o ON c.customer_id = o.customer_id JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY c.segment -- ok
SELECT c.segment, COUNT(*) AS n, SUM(l.price) AS s FROM retail.customers c, retail.orders o, retail.lineitems l WHERE c.customer_id = o.customer_id AND o.order_id = l.order_id GROUP BY c.segment -- ok
SELECT p.brand, SUM(l.quantity) AS q FROM retail.lineitems l, retail.orders o, retail.parts p WHERE l.order_id = o.order_id AND p.part_id = l.part_id GROUP BY p.brand -- ok
SELECT n.region, SUM(l.quantity) AS q FROM retail.customers c JOIN retail.nations n ON c.nation_key = n.nation_key, retail.orders o, retail.lineitems l WHERE o.customer_id = c.customer_id AND l.order_id = o.order_id GROUP BY n.region -- ok
SELECT return_flag, COUNT(*) AS n, SUM(price) AS s FROM retail.lineitems GROUP BY return_flag -- ok
SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l, retail.parts p WHERE p.part_id = l.part_id GROUP BY p.brand -- ok
SELECT AVG(discount) AS d, SUM(quantity) AS q FROM retail.lineitems WHERE ship_date >= DATE '1996-01-01' AND return_flag = 'R' -- ok
# an outer SELECT of one aggregating CTE: post-processing of its release
WITH by_flag (flag, revenue) AS (SELECT l.return_flag, SUM(l.price * (1 - l.discount)) FROM retail.lineitems l WHERE l.ship_date <= DATE '1998-12-01' - INTERVAL '90' DAY GROUP BY l.return_flag) SELECT flag, revenue FROM by_flag ORDER BY flag -- ok
# ---- FROM lists in any order (joined along the WHERE equalities) and a join condition common to every branch of an OR (issue 34)
SELECT n.region, COUNT(*) AS n FROM retail.parts p, retail.nations n, retail.lineitems l, retail.orders o, retail.customers c WHERE p.part_id = l.part_id AND l.order_id = o.order_id AND o.customer_id = c.customer_id AND c.nation_key = n.nation_key GROUP BY n.region -- ok
SELECT p.brand, SUM(l.quantity) AS q FROM retail.customers c, retail.lineitems l, retail.parts p, retail.orders o WHERE l.order_id = o.order_id AND o.customer_id = c.customer_id AND p.part_id = l.part_id AND c.segment = 'BUILDING' GROUP BY p.brand -- ok
SELECT COUNT(*) AS n FROM retail.nations n, retail.customers c JOIN retail.orders o ON c.customer_id = o.customer_id WHERE n.nation_key = c.nation_key AND n.region = 'ASIA' -- ok
SELECT SUM(l.price * (1 - l.discount)) AS revenue FROM retail.lineitems l, retail.parts p WHERE (p.part_id = l.part_id AND p.brand = 'Brand#12' AND l.quantity < 10) OR (p.part_id = l.part_id AND p.brand = 'Brand#23' AND l.quantity BETWEEN 10 AND 20) -- ok
SELECT COUNT(*) AS n FROM retail.parts p, retail.lineitems l, retail.orders o WHERE (l.part_id = p.part_id AND o.order_id = l.order_id AND p.size < 10) OR (p.part_id = l.part_id AND l.order_id = o.order_id AND o.priority = '1-URGENT') OR (p.part_id = l.part_id AND l.order_id = o.order_id AND p.size > 40) -- ok
