# Queries dpsql answers over the shop data set (tests/data/shop.yaml + shop_*.csv): customers (private_id
# customer_id), orders -> customers (references), order_items -> orders (references), levels (public).
# One query per line, ending in "-- ok". The shop has no date column: date functions are over casts.
# ---- single tables: COUNT, COUNT DISTINCT
SELECT COUNT(*) AS n FROM shop.customers -- ok
SELECT COUNT(*) AS n FROM shop.orders -- ok
SELECT COUNT(*) AS n FROM customers -- ok
SELECT COUNT(DISTINCT customer_id) AS buyers FROM shop.orders -- ok
SELECT COUNT(DISTINCT region) AS regions FROM shop.customers -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE channel = 'fax' -- ok
# ---- GROUP BY a public key (channel: values in the metadata; max_groups/max_rows_per_group)
SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel ORDER BY n DESC -- ok
SELECT channel, COUNT(DISTINCT customer_id) AS buyers FROM shop.orders GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders WHERE channel IN ('web', 'phone') GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders WHERE channel LIKE 'w%' GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders WHERE channel = 'fax' GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel HAVING channel <> 'store' -- ok
SELECT channel = 'web' AS online, COUNT(*) AS n FROM shop.orders GROUP BY online -- ok
SELECT DISTINCT channel FROM shop.orders -- ok
SELECT TOP 2 channel, COUNT(*) AS n FROM shop.orders GROUP BY channel ORDER BY n DESC -- ok
# ---- GROUP BY non-public keys (thresholded)
SELECT region, COUNT(*) AS n FROM shop.customers GROUP BY region -- ok
SELECT order_id, COUNT(*) AS n FROM shop.orders GROUP BY order_id -- ok
SELECT UPPER(region) AS r, COUNT(*) AS n FROM shop.customers GROUP BY r -- ok
SELECT region, COUNT(*) AS n FROM shop.customers GROUP BY region HAVING n > 50 ORDER BY region LIMIT 3 -- ok
# ---- thresholded on a count of distinct persons (max_groups on shop.orders; released or added)
SELECT order_id // 2000 AS block, COUNT(*) AS n FROM shop.orders GROUP BY order_id // 2000 -- ok
SELECT order_id // 2000 AS block FROM shop.orders GROUP BY order_id // 2000 -- ok
SELECT order_id // 2000 AS block, COUNT(DISTINCT customer_id) AS buyers FROM shop.orders GROUP BY order_id // 2000 -- ok
SELECT i.level, COUNT(*) AS n, COUNT(DISTINCT o.customer_id) AS buyers FROM shop.orders o JOIN shop.order_items i ON o.order_id = i.order_id GROUP BY i.level -- ok
# ---- WHERE
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id BETWEEN 1000 AND 5000 -- ok
SELECT COUNT(*) AS n FROM shop.customers WHERE LENGTH(region) > 4 AND region NOT LIKE '%th' -- ok
SELECT COUNT(*) AS n FROM shop.customers WHERE CAST(customer_id AS VARCHAR) LIKE '1%' -- ok
# ---- order_items through orders (references), SUM/AVG/VAR/STDDEV
SELECT o.channel, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel -- ok
SELECT o.channel, COUNT(*) AS items, AVG(i.amount) AS a FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel ORDER BY a DESC -- ok
SELECT SUM(i.amount) AS s, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o USING (order_id) -- ok
SELECT VAR(i.amount) AS v, STDDEV(i.amount) AS sd FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT VAR_POP(i.amount) AS v, STDDEV_POP(i.amount) AS sd FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT COUNT(DISTINCT i.order_id) AS orders FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT o.channel, COUNT(DISTINCT o.customer_id) AS buyers FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel -- ok
SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.level = 2 -- ok
SELECT COUNT(*) AS n, SUM(i.amount) AS s FROM (SELECT order_id, amount FROM shop.order_items WHERE amount > 10) i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT COUNT(*) AS n FROM shop.orders o LEFT JOIN shop.order_items i ON i.order_id = o.order_id -- ok
# ---- comma joins: FROM a, b WHERE a.x = b.y plans as the INNER JOIN (a JOIN b ON a.x = b.y)
SELECT c.region, SUM(i.amount) AS s FROM shop.customers c, shop.orders o, shop.order_items i WHERE c.customer_id = o.customer_id AND o.order_id = i.order_id GROUP BY c.region -- ok
SELECT o.channel, COUNT(*) AS n FROM shop.order_items i, shop.orders o WHERE i.order_id = o.order_id AND i.amount > 100 GROUP BY o.channel -- ok
SELECT l.name, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id, shop.levels l WHERE l.level = i.level GROUP BY l.name -- ok
SELECT COUNT(*) AS n FROM shop.customers c, shop.orders o WHERE (c.customer_id = o.customer_id) AND (c.region = 'west' OR o.channel = 'web') -- ok
SELECT COUNT(*) AS n FROM shop.orders, shop.customers WHERE orders.customer_id = customers.customer_id AND region = 'north' -- ok
# ---- order_items alone: the plan joins shop.orders on order_id to find each item's person
SELECT SUM(amount) AS s FROM shop.order_items WHERE amount > 100 -- ok
SELECT COUNT(*) AS n FROM shop.order_items -- ok
SELECT level, COUNT(*) AS n, AVG(amount) AS a FROM shop.order_items GROUP BY level -- ok
SELECT l.name, COUNT(*) AS n, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.levels l ON i.level = l.level GROUP BY l.name -- ok
SELECT COUNT(*) AS n FROM shop.order_items i, shop.levels l WHERE i.level = l.level AND l.name = 'plus' -- ok
SELECT COUNT(*) AS n, SUM(amount) AS s FROM (SELECT order_id, amount FROM shop.order_items WHERE amount > 10) i -- ok
WITH big AS (SELECT * FROM shop.order_items WHERE amount > 100) SELECT COUNT(*) AS n, MEDIAN(amount) AS m FROM big -- ok
SELECT COUNT(*) AS n FROM shop.order_items i JOIN (VALUES (1)) AS v(order_id) USING (order_id) -- ok
# ---- derived bounds, CASE, buckets, ROUND, CAST, FILTER
SELECT CASE WHEN i.amount >= 100 THEN 'large' WHEN i.amount >= 20 THEN 'medium' ELSE 'small' END AS size, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY size -- ok
SELECT i.amount // 100 AS bucket, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY bucket -- ok
SELECT ROUND(i.amount, -2) AS r, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY r -- ok
SELECT SUM(ROUND(i.amount)) AS s, ROUND(AVG(i.amount), 2) AS a FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT SUM(CAST(i.amount AS INTEGER)) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT SUM(i.amount * 1.2) AS gross FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.amount BETWEEN 10 AND 200 -- ok
SELECT SUM(i.amount) FILTER (WHERE o.channel = 'web') AS web, SUM(i.amount) FILTER (WHERE o.channel <> 'web') AS other FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT SUM(CASE WHEN o.channel = 'web' THEN 1 ELSE 0 END) AS web_items FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
# ---- HAVING, ORDER BY, LIMIT, expressions over aggregates
SELECT o.channel, SUM(i.amount) / COUNT(*) AS per_item FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel HAVING COUNT(*) > 100 -- ok
SELECT o.channel, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel ORDER BY s DESC LIMIT 2 -- ok
# ---- quantiles, MEDIAN, MIN, MAX
SELECT MEDIAN(i.amount) AS m FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT QUANTILE_CONT(i.amount, [0.1, 0.5, 0.9]) AS q FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT o.channel, MIN(i.amount) AS lo, MAX(i.amount) AS hi FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel -- ok
SELECT PERCENTILE_DISC(0.75) WITHIN GROUP (ORDER BY i.amount) AS p75 FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT MIN(n) AS lo, MAX(n) AS hi FROM (SELECT customer_id, COUNT(*) AS n FROM shop.orders GROUP BY customer_id) -- ok
# ---- joins with customers (on the privacy unit) and with the public levels table
SELECT c.region, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id JOIN shop.customers c ON o.customer_id = c.customer_id GROUP BY c.region -- ok
SELECT region, COUNT(*) AS n FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.customer_id GROUP BY region -- ok
SELECT c.region, o.channel, COUNT(*) AS n FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.customer_id GROUP BY c.region, o.channel -- ok
SELECT COUNT(*) AS n FROM shop.orders o JOIN shop.customers c USING (customer_id) WHERE c.region = 'west' AND o.channel = 'web' -- ok
SELECT COUNT(*) AS n FROM shop.orders a JOIN shop.orders b ON a.customer_id = b.customer_id -- ok
SELECT l.name, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id JOIN shop.levels l ON i.level = l.level GROUP BY l.name -- ok
SELECT l.name, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id JOIN shop.levels l ON i.level = l.level WHERE o.channel = 'web' GROUP BY l.name ORDER BY s DESC -- ok
SELECT SUM(l.level) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id JOIN shop.levels l ON i.level = l.level -- ok
SELECT COUNT(*) AS n FROM shop.orders o CROSS JOIN shop.levels l -- ok
SELECT l.name, COUNT(*) AS n FROM shop.orders o CROSS JOIN shop.levels l GROUP BY l.name -- ok
SELECT r.zone, COUNT(*) AS n FROM shop.customers c JOIN (VALUES ('north', 'N'), ('south', 'S'), ('west', 'W'), ('east', 'E')) AS r(region, zone) USING (region) GROUP BY r.zone -- ok
# ---- semi- and anti-joins
SELECT COUNT(*) AS n FROM shop.customers c LEFT JOIN shop.orders o ON o.customer_id = c.customer_id WHERE o.customer_id IS NULL -- ok
SELECT COUNT(*) AS n FROM shop.customers WHERE customer_id IN (SELECT customer_id FROM shop.orders WHERE channel = 'phone') -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE customer_id IN (SELECT customer_id FROM shop.customers WHERE region = 'west') -- ok
SELECT COUNT(*) AS n FROM shop.customers WHERE customer_id NOT IN (SELECT customer_id FROM shop.orders) -- ok
SELECT COUNT(*) AS n FROM shop.customers c WHERE EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = c.customer_id AND o.channel = 'store') -- ok
SELECT COUNT(*) AS n FROM shop.customers c WHERE NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = c.customer_id) -- ok
SELECT COUNT(*) AS n FROM shop.customers WHERE region IN (SELECT region FROM (VALUES ('north'), ('south')) AS v(region)) -- ok
SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.level IN (SELECT level FROM shop.levels WHERE name = 'plus') -- ok
# ---- correlated filters through references (order_items.order_id -> orders.order_id)
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 400) -- ok
SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 400) -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT 1 FROM shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 300) GROUP BY channel -- ok
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i WHERE i.order_id = o.order_id AND i.amount > o.order_id) -- ok
WITH x AS (SELECT * FROM shop.order_items) SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM x WHERE order_id = o.order_id AND channel = 'web') -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT order_id FROM shop.order_items GROUP BY order_id HAVING SUM(amount) > 300) -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id NOT IN (SELECT order_id FROM shop.order_items WHERE level = 2) -- ok
SELECT SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.order_id IN (SELECT order_id FROM shop.orders WHERE channel = 'web') -- ok
SELECT COUNT(*) AS n FROM (SELECT order_id, SUM(amount) AS s FROM shop.order_items GROUP BY order_id) t JOIN shop.orders o ON t.order_id = o.order_id WHERE t.s > 300 -- ok
# ---- per-person aggregation, CTEs
SELECT AVG(n) AS orders_per_customer FROM (SELECT customer_id, COUNT(*) AS n FROM shop.orders GROUP BY customer_id) -- ok
SELECT n, COUNT(*) AS customers FROM (SELECT customer_id, COUNT(*) AS n FROM shop.orders GROUP BY customer_id) GROUP BY n -- ok
SELECT AVG(spent) AS a, MEDIAN(spent) AS m FROM (SELECT o.customer_id, SUM(i.amount) AS spent FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.customer_id) t -- ok
SELECT AVG(n) AS a FROM (SELECT o.customer_id, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.customer_id) -- ok
SELECT COUNT(*) AS big_spenders FROM (SELECT o.customer_id FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.customer_id HAVING SUM(i.amount) > 1000) -- ok
SELECT channel, COUNT(*) AS customers FROM (SELECT customer_id, channel FROM shop.orders GROUP BY customer_id, channel) GROUP BY channel -- ok
SELECT channel, COUNT(*) AS n FROM (SELECT DISTINCT customer_id, channel FROM shop.orders) GROUP BY channel -- ok
SELECT c.region, AVG(t.n) AS a FROM shop.customers c JOIN (SELECT customer_id, COUNT(*) AS n FROM shop.orders GROUP BY customer_id) t ON t.customer_id = c.customer_id GROUP BY c.region -- ok
SELECT COUNT(*) AS n FROM (SELECT o.customer_id, c.region FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.customer_id GROUP BY o.customer_id, c.region) -- ok
WITH web AS (SELECT * FROM shop.orders WHERE channel = 'web') SELECT COUNT(*) AS n, COUNT(DISTINCT customer_id) AS c FROM web -- ok
WITH items AS (SELECT i.amount, o.channel, o.customer_id FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id), big AS (SELECT * FROM items WHERE amount > 100) SELECT channel, COUNT(*) AS n, AVG(amount) AS a FROM big GROUP BY channel -- ok
# ---- UNION ALL
SELECT COUNT(*) AS n FROM (SELECT customer_id FROM shop.orders WHERE channel = 'web' UNION ALL SELECT customer_id FROM shop.orders WHERE channel = 'store') u -- ok
SELECT 'customers' AS what, COUNT(*) AS n FROM shop.customers UNION ALL SELECT 'orders', COUNT(*) FROM shop.orders -- ok
# ---- date functions (over casts of literals)
SELECT MONTH(CAST('2024-03-01' AS DATE)) AS m, COUNT(*) AS n FROM shop.orders GROUP BY m -- ok
SELECT DATE_TRUNC('month', CAST('2024-03-17' AS TIMESTAMP)) AS t, COUNT(*) AS n FROM shop.orders GROUP BY 1 -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE EXTRACT(year FROM CAST('2024-03-17' AS DATE)) = 2024 -- ok
# ---- column lists after an alias (a rename: each column keeps its identity), HAVING by an alias per person
SELECT n_orders, COUNT(*) AS n FROM (SELECT c.customer_id, COUNT(o.order_id) FROM shop.customers c LEFT JOIN shop.orders o ON c.customer_id = o.customer_id GROUP BY c.customer_id) AS per_customer (customer_id, n_orders) GROUP BY n_orders -- ok
WITH per_customer (customer_id, n_orders) AS (SELECT customer_id, COUNT(*) FROM shop.orders GROUP BY customer_id) SELECT n_orders, COUNT(*) AS n FROM per_customer GROUP BY n_orders -- ok
WITH spent (customer_id, total) AS (SELECT o.customer_id, SUM(i.amount) FROM shop.orders o JOIN shop.order_items i ON o.order_id = i.order_id GROUP BY o.customer_id) SELECT COUNT(*) AS n, AVG(total) AS a FROM spent -- ok
SELECT ch, COUNT(*) AS n FROM shop.orders AS o (oid, cid, ch) GROUP BY ch -- ok
SELECT o.channel, SUM(i.amt) AS s FROM (SELECT order_id, amount FROM shop.order_items) AS i (oid, amt) JOIN shop.orders o ON i.oid = o.order_id GROUP BY o.channel -- ok
SELECT COUNT(*) AS n FROM shop.order_items i JOIN (SELECT customer_id, order_id FROM shop.orders) AS o (order_id, customer_id) ON i.order_id = o.customer_id -- ok
SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id HAVING k > 2) t -- ok
SELECT k > 5 AS big, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id HAVING k > 2) t GROUP BY k > 5 -- ok
SELECT COUNT(*) AS n FROM (SELECT customer_id AS c, COUNT(*) AS k FROM shop.orders GROUP BY c HAVING k > 2 ORDER BY k) t -- ok
SELECT COUNT(*) AS n, SUM(k) AS s FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id HAVING MAX(order_id) > 8000 UNION ALL SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id) u -- ok
# ---- BigQuery's differential-privacy syntax (docs/sql.md)
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 3, privacy_unit_column = customer_id) channel, COUNT(*, contribution_bounds_per_group => (0, 5)) AS n FROM shop.orders GROUP BY channel -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 5) channel, COUNT(*) AS n FROM shop.orders GROUP BY channel -- ok
SELECT WITH DIFFERENTIAL_PRIVACY o.channel, AVG(i.amount) AS a, SUM(i.amount, contribution_bounds_per_group => (0, 1000)) AS s FROM shop.orders o JOIN shop.order_items i ON o.order_id = i.order_id GROUP BY o.channel -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = c.customer_id) c.region, COUNT(*, contribution_bounds_per_group => (0, 3)) AS n FROM shop.customers c JOIN shop.orders o ON c.customer_id = o.customer_id GROUP BY c.region -- ok
# ---- dates moved by INTERVAL literals, DATE_DIFF (constants: the shop has no date column)
SELECT COUNT(*) AS n FROM shop.orders WHERE CAST('2024-03-17' AS DATE) + INTERVAL 1 MONTH > TIMESTAMP '2024-04-01' -- ok
SELECT DATE_DIFF('day', DATE '2024-01-01', CAST('2024-03-01' AS DATE)) AS d, COUNT(*) AS n FROM shop.orders GROUP BY d -- ok
SELECT channel, COUNT(*) AS n FROM shop.orders WHERE DATE_ADD(TIMESTAMP '2024-01-31 10:00:00', INTERVAL '1 month 2 hours') = TIMESTAMP '2024-02-29 12:00:00' GROUP BY channel -- ok
# ---- exact decimal literals
SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.amount BETWEEN 41.50 + 0.02 AND 100.1 - 0.1 -- ok
SELECT SUM(i.amount * (1 - 0.15)) AS net, COUNT(*) FILTER (WHERE i.amount = 41.50 + 0.02) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- ok
SELECT COUNT(*) AS n FROM shop.orders WHERE 0.1 + 0.2 = 0.3 AND order_id > 1.5 * 1000 -- ok
# a per-order aggregate of order_items, read alone: the plan adds the join to orders after it
SELECT COUNT(*) AS n, SUM(s) AS total FROM (SELECT order_id, SUM(amount) AS s FROM shop.order_items GROUP BY order_id) t -- ok
# an outer SELECT of one aggregating CTE or subquery: the aggregation is the release, the outer query post-processes it
WITH revenue (region, total) AS (SELECT c.region, SUM(i.amount) FROM shop.customers c JOIN shop.orders o ON c.customer_id = o.customer_id JOIN shop.order_items i ON o.order_id = i.order_id GROUP BY c.region) SELECT region, total FROM revenue -- ok
WITH revenue (region, total) AS (SELECT c.region, SUM(i.amount) FROM shop.customers c, shop.orders o, shop.order_items i WHERE c.customer_id = o.customer_id AND o.order_id = i.order_id GROUP BY c.region) SELECT region, total / 1000 AS k FROM revenue WHERE total > 1000 ORDER BY k DESC LIMIT 2 -- ok
SELECT * FROM (SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel) t ORDER BY n -- ok
# its own HAVING, ORDER BY and LIMIT bind to its own SELECT list and apply first; the outer clauses then apply to the groups kept
SELECT channel FROM (SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel ORDER BY n DESC LIMIT 2) t -- ok
SELECT channel AS c, n AS orders FROM (SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel HAVING n > 10) t -- ok
# Private selection over public keys (dpsql.plan.selection)
SELECT channel FROM shop.orders GROUP BY channel ORDER BY COUNT(*) DESC LIMIT 2 -- ok
SELECT MODE(channel) AS c FROM shop.orders WHERE customer_id > 10 -- ok
