# Neighbours of accept_tpch.sql that dpsql refuses for privacy (or totality), for free. One query per line,
# ending in "-- ErrorClass: message fragment".
# ---- per-order rows: raw rows, not aggregates
SELECT * FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date) -- QueryError: SELECT * would release raw rows
SELECT o_order_id, o_priority FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date) -- QueryError: dpsql releases aggregates only
# ---- correlation not tied to the outer row's person
SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_line_no = o_order_id AND l_ship_date > o_order_date) -- QueryError: o_order_id and l_line_no are neither
SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_part_id = o_order_id) -- QueryError: o_order_id and l_part_id are neither
SELECT COUNT(*) AS n FROM orders WHERE NOT EXISTS (SELECT * FROM lineitems WHERE l_ship_date > o_order_date AND l_quantity > 40) -- QueryError: none of its conditions on the outer row is such an equality
SELECT COUNT(*) AS n FROM lineitems l1 WHERE EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_line_no = l1.l_line_no AND l2.l_part_id <> l1.l_part_id) -- QueryError: l_line_no and l2.l_line_no are neither
SELECT COUNT(*) AS n FROM lineitems l1 WHERE EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_part_id <> l1.l_part_id) -- QueryError: none of its conditions on the outer row is such an equality
SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_quantity > 40) -- QueryError: must be tied to the outer rows
SELECT COUNT(*) AS n FROM orders WHERE o_order_id NOT IN (SELECT l_order_id FROM lineitems WHERE l_ship_date > o_order_date) -- QueryError: a NOT IN whose subquery reads the outer row is not supported
SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT l_order_id FROM lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date GROUP BY l_order_id) -- QueryError: a subquery that groups rows may refer to the outer query once
SELECT COUNT(*) AS n FROM lineitems l1 WHERE l1.l_quantity > (SELECT AVG(l2.l_quantity) FROM lineitems l2 WHERE l2.l_order_id = l1.l_order_id) -- QueryError: scalar and correlated subqueries in WHERE are not supported
# ---- dates: amounts from columns, boundaries dpsql does not count
SELECT COUNT(*) AS n FROM orders WHERE DATE_ADD(o_order_date, o_customer_id) > DATE '1995-01-01' -- QueryError: an amount computed from a column is not supported
SELECT COUNT(*) AS n FROM orders WHERE DATE_DIFF(o_order_date, DATE '1995-01-01', WEEK) > 3 -- QueryError: BigQuery counts WEEK boundaries its own way
SELECT COUNT(*) AS n FROM orders WHERE DATE_SUB('day', o_order_date, o_order_date) > 1 -- QueryError: function DATE_SUB() is not allowed
