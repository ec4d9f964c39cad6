# Queries dpsql refuses over the shop data set (tests/data/shop.yaml + shop_*.csv).
# One query per line, ending in "-- ErrorClass: fragment of the message".
# ---- syntax and statements
SELECT COUNT(*) FROM shop.orders WHERE channel = 'web' AND -- QueryError: cannot parse the query
SELECT channel COUNT(*) FROM shop.orders GROUP BY channel -- QueryError: cannot parse the query
DELETE FROM shop.orders WHERE channel = 'web' -- QueryError: only SELECT queries are answered
# ---- unknown names, ambiguity
SELECT COUNT(*) FROM shop.products -- QueryError: unknown table 'shop.products'
SELECT COUNT(*) AS n FROM shop.orders o JOIN shop.orders_archive a ON o.order_id = a.order_id -- QueryError: unknown table 'shop.orders_archive'
SELECT COUNT(price) FROM shop.orders -- QueryError: unknown column price in SELECT
SELECT COUNT(*) FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.customer_id WHERE customer_id > 3 -- QueryError: column name 'customer_id' is ambiguous
SELECT COUNT(*) FROM (SELECT * EXCLUDE (customer_id) FROM shop.orders) o JOIN shop.customers c ON o.customer_id = c.customer_id -- QueryError: o has no column 'customer_id'
# ---- raw rows
SELECT * FROM shop.orders -- QueryError: SELECT * would release raw rows
SELECT channel FROM shop.orders -- QueryError: is neither grouped nor aggregated
SELECT region, channel, COUNT(*) FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.customer_id GROUP BY region -- QueryError: column "channel" in SELECT is neither grouped
# ---- GROUP BY the privacy unit (directly and through references)
SELECT customer_id, COUNT(*) FROM shop.customers GROUP BY customer_id -- QueryError: privacy unit
SELECT customer_id, COUNT(*) FROM shop.orders GROUP BY customer_id -- QueryError: uses the privacy unit's id
SELECT o.customer_id, SUM(i.amount) FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.customer_id -- QueryError: uses the privacy unit's id
# ---- aggregates without bounds or of the wrong type
SELECT SUM(order_id) FROM shop.orders -- QueryError: has no lower and upper bound in the metadata
SELECT SUM(channel) FROM shop.orders -- QueryError: column 'channel' is of type string
SELECT AVG(i.level) FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- QueryError: column 'level' has no lower and upper bound
SELECT SUM(i.amount / (i.amount - 10)) FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id -- QueryError: the divisor can be 0
SELECT MEDIAN(order_id) FROM shop.orders -- QueryError: the candidates of a quantile are a grid
SELECT MEDIAN(channel) FROM shop.orders -- QueryError: column 'channel' is of type string
# ---- order_items reaches its person only through orders on order_id (the plan adds the join
# when the query has none; one the query writes must be on exactly that key)
SELECT COUNT(*) FROM (SELECT amount FROM shop.order_items) i -- QueryError: keep order_id among the columns of the subquery
SELECT COUNT(*) FROM shop.order_items i JOIN (VALUES (1, 2)) AS v(order_id, customer_id) ON i.order_id = v.order_id JOIN shop.customers c ON c.customer_id = v.customer_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.order_items i JOIN shop.orders o ON i.amount = o.order_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.order_items i JOIN shop.orders o ON i.level = o.order_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.order_items i JOIN (SELECT order_id + 1 AS order_id, customer_id FROM shop.orders) o ON i.order_id = o.order_id -- QueryError: not renamed from or computed by the query
SELECT COUNT(*) FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.customer_id JOIN shop.order_items i ON i.order_id = c.customer_id -- QueryError: join them on exactly that
# ---- public tables only, LEFT/RIGHT joins keeping public rows
SELECT COUNT(*) FROM shop.levels -- QueryError: the query reads public tables only
SELECT name, COUNT(*) FROM shop.levels GROUP BY name -- QueryError: the query reads public tables only
SELECT COUNT(*) FROM shop.levels a JOIN (VALUES (1)) AS v(level) USING (level) -- QueryError: the query reads public tables only
SELECT COUNT(*) FROM shop.levels l LEFT JOIN shop.orders o ON l.level = o.order_id -- QueryError: keeps a public table's unmatched rows
SELECT COUNT(*) FROM shop.levels l LEFT JOIN shop.customers c ON c.customer_id = l.level -- QueryError: keeps a public table's unmatched rows
SELECT COUNT(*) FROM shop.orders o RIGHT JOIN shop.levels l ON l.level = o.order_id -- QueryError: keeps a public table's unmatched rows
SELECT COUNT(*) FROM (SELECT customer_id, channel FROM shop.orders UNION ALL SELECT level, name FROM shop.levels) -- QueryError: every part must hold rows of the same kind
# ---- private x private joins not on the privacy unit
SELECT COUNT(*) FROM shop.orders a JOIN shop.orders b ON a.order_id = b.order_id -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c JOIN shop.orders o ON c.customer_id = o.order_id -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c CROSS JOIN shop.orders o -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.customer_id OR c.region = o.channel -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c FULL JOIN shop.orders o ON o.customer_id = c.customer_id -- QueryError: FULL JOIN with a private table
SELECT COUNT(*) FROM shop.customers c NATURAL JOIN shop.orders o -- QueryError: write JOIN ... ON or USING
# ---- comma joins: a WHERE equality on the person (or on the reference) makes them joins; anything
# else leaves a CROSS JOIN of private tables
SELECT COUNT(*) FROM shop.customers c, shop.orders o -- QueryError: or for FROM a, b: WHERE a.pid = b.pid
SELECT COUNT(*) FROM shop.customers c, shop.orders o WHERE c.customer_id = o.customer_id OR c.region = o.channel -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c, shop.orders o WHERE c.customer_id = o.order_id -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c, shop.orders o WHERE c.customer_id + 0 = o.customer_id -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM shop.customers c, shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE c.customer_id = o.customer_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.orders o, shop.order_items i WHERE i.amount = o.order_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.orders o, shop.order_items i WHERE i.order_id + 0 = o.order_id -- QueryError: join them on exactly that
SELECT COUNT(*) FROM shop.orders o JOIN shop.order_items i ON i.order_id = o.order_id JOIN shop.order_items j ON j.order_id = o.order_id -- QueryError: earlier joins already match each row of shop.orders
# ---- semi-joins not on the id, subqueries
SELECT COUNT(*) FROM shop.customers WHERE region IN (SELECT channel FROM shop.orders) -- QueryError: both sides must be the privacy unit's id
SELECT COUNT(*) FROM shop.customers c WHERE EXISTS (SELECT 1 FROM shop.orders o WHERE o.channel = 'web') -- QueryError: must be tied to the outer rows
SELECT COUNT(*) FROM shop.customers WHERE customer_id IN (SELECT customer_id FROM shop.orders) OR region = 'west' -- QueryError: joined to the rest of WHERE by AND
SELECT COUNT(*) FROM shop.orders WHERE order_id > (SELECT AVG(order_id) FROM shop.orders) -- QueryError: scalar and correlated subqueries in WHERE
# NOT IN over private rows whose column may be NULL: SQL's NOT IN is then true for no row (docs/sql.md, NOT IN and NULLs)
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id NOT IN (SELECT order_id FROM shop.orders WHERE channel = 'web') -- QueryError: may be NULL (the metadata does not declare it nullable: false)
# ---- correlated filters that are not within one person
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i WHERE i.level = o.order_id) -- QueryError: order_id and level are neither, so whether a row stays could depend on other persons' rows
SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM shop.order_items i WHERE i.order_id = o.customer_id) -- QueryError: customer_id and order_id are neither
SELECT COUNT(*) AS n FROM shop.orders WHERE customer_id IN (SELECT order_id FROM shop.order_items) -- QueryError: or one key that the metadata's references tie to one person's rows
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i WHERE i.amount > 400) -- QueryError: or by a key that references tie to one person
# an unqualified name two tables of the subquery share is ambiguous there, never the outer query's (SQL looks inside first)
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i JOIN shop.orders o2 ON i.order_id = o2.order_id WHERE order_id = o.order_id) -- QueryError: column name 'order_id' is ambiguous
# several conditions on the outer row: one of them must tie the inner rows to the outer row's person (docs/sql.md)
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM shop.order_items i WHERE i.level = o.order_id AND i.amount > o.order_id) -- QueryError: order_id and i.level are neither
SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM shop.order_items i WHERE i.amount > o.order_id AND i.level < o.order_id) -- QueryError: none of its conditions on the outer row is such an equality
SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT order_id FROM shop.order_items i WHERE i.order_id = o.order_id AND i.amount > o.order_id GROUP BY order_id) -- QueryError: a subquery that groups rows may refer to the outer query once
SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id WHERE i.amount > (SELECT AVG(amount) FROM shop.order_items) -- QueryError: ask for the aggregate as a query of its own and use the released value as a literal or ? parameter
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT level FROM shop.order_items GROUP BY level) -- QueryError: GROUP BY inside 'IN (SELECT ...)' must include order_id: the rows of shop.order_items belong to persons only through order_id -> shop.orders.order_id
SELECT COUNT(*) AS n FROM (SELECT level, COUNT(*) AS c FROM shop.order_items GROUP BY level) t -- QueryError: GROUP BY inside 't' must include order_id
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT MAX(amount) AS m FROM shop.order_items GROUP BY order_id) -- QueryError: must select order_id, the key it groups by
SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT level FROM shop.levels GROUP BY level) -- QueryError: reads public rows only, which dpsql does not aggregate inside a query
SELECT region, COUNT(*) FROM shop.customers GROUP BY region HAVING COUNT(*) > (SELECT 1) -- QueryError: subqueries and references to other tables
# ---- set operations
SELECT COUNT(*) FROM (SELECT customer_id FROM shop.orders UNION SELECT customer_id FROM shop.customers) -- QueryError: UNION (without ALL) in 'subquery'
SELECT COUNT(*) FROM (SELECT customer_id FROM shop.orders INTERSECT SELECT customer_id FROM shop.customers) -- QueryError: INTERSECT over private rows is not supported
SELECT COUNT(*) FROM shop.orders UNION SELECT COUNT(*) FROM shop.customers -- QueryError: UNION (without ALL) of queries is not supported
# ---- subqueries: LIMIT, windows, grouping persons together, second per-person aggregation
SELECT COUNT(*) FROM (SELECT * FROM shop.orders LIMIT 100) -- QueryError: LIMIT/OFFSET inside 'subquery' is not supported
SELECT COUNT(*) FROM (SELECT customer_id, ROW_NUMBER() OVER (PARTITION BY customer_id) AS r FROM shop.orders) WHERE r = 1 -- QueryError: window functions are not supported
SELECT channel, COUNT(*) OVER (PARTITION BY channel) FROM shop.orders -- QueryError: window functions (OVER) are not supported
SELECT AVG(n) FROM (SELECT customer_id, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS m FROM shop.orders GROUP BY customer_id) GROUP BY customer_id) -- QueryError: aggregates per person a second time
SELECT COUNT(*) FROM (SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel) -- QueryError: does not include the privacy unit's id (customer_id, which references shop.customers.customer_id)
SELECT COUNT(*) FROM (SELECT o.channel, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel) -- QueryError: does not include the privacy unit's id (customer_id, which references shop.customers.customer_id)
# ---- LIMIT, ORDER BY, functions, literals, reserved names
SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel LIMIT 99999999999999999999 -- QueryError: is beyond the largest LIMIT
SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel ORDER BY 5 -- QueryError: ORDER BY 5 is out of range
SELECT COUNT(*) AS n FROM shop.orders WHERE levenshtein(channel, 'web') < 2 -- QueryError: LEVENSHTEIN() is not allowed in WHERE
SELECT COUNT(*) AS n FROM shop.orders WHERE regexp_matches(channel, 'w.b') -- QueryError: is not allowed in WHERE
SELECT COUNT(*) FROM shop.orders WHERE order_id = 'abc' -- QueryError: 'abc' is not a number
SELECT COUNT(*) AS n FROM shop.customers c JOIN (SELECT customer_id AS _dpsql_pid FROM shop.orders) o ON o._dpsql_pid = c.customer_id -- QueryError: starts with _dpsql, which is reserved
# ---- column lists after an alias: not longer than the columns; a name makes no column the person or a reference
SELECT COUNT(*) AS n FROM (SELECT c.customer_id, COUNT(o.order_id) FROM shop.customers c LEFT JOIN shop.orders o ON c.customer_id = o.customer_id GROUP BY c.customer_id) AS per_customer (customer_id, n_orders, extra) -- QueryError: 'per_customer' has 2 columns but 3 names are given
SELECT COUNT(*) AS n FROM shop.customers c JOIN (SELECT customer_id, order_id FROM shop.orders) AS t (order_id, customer_id) ON c.customer_id = t.customer_id -- QueryError: must equate their privacy units
SELECT COUNT(*) AS n FROM shop.order_items i JOIN (SELECT customer_id, order_id FROM shop.orders) AS o (order_id, customer_id) ON i.order_id = o.order_id -- QueryError: join them on exactly that
SELECT COUNT(*) AS n FROM (SELECT level, order_id FROM shop.order_items) AS i (order_id, level) JOIN shop.orders o ON i.order_id = o.order_id -- QueryError: join them on exactly that
SELECT pid, COUNT(*) AS n FROM shop.orders AS o (oid, pid) GROUP BY pid -- QueryError: uses the privacy unit's id
SELECT COUNT(*) AS n FROM shop.customers WHERE customer_id IN (SELECT customer_id FROM shop.orders AS o (customer_id, cid)) -- QueryError: both sides must be the privacy unit's id
SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id HAVING SUM(k) > 2) t -- QueryError: unknown column k in HAVING
# an outer SELECT of an aggregation may only read its columns
SELECT x FROM (SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel) t -- QueryError: unknown column x in the outer query
SELECT channel, n FROM (SELECT DISTINCT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel) t -- QueryError: SELECT DISTINCT over aggregates inside a subquery
SELECT n_orders FROM (SELECT customer_id, COUNT(*) AS n_orders FROM shop.orders GROUP BY customer_id) t -- QueryError: uses the privacy unit's id
# BigQuery's per-unit aggregation of a table that reaches its person through references needs the column it reaches it by
SELECT WITH DIFFERENTIAL_PRIVACY AVG(amount) AS a FROM (SELECT level, amount FROM shop.order_items) t -- QueryError: select order_id in the CTE or subquery it reads
