# SQL as analysts write it over a schema whose column names are unique across tables (tests/data/tpch.yaml:
# c_, o_, l_ prefixes; customers are the person, orders and lineitems reach them through references).
# One query per line, ending in "-- ok". Refused neighbours: refuse_tpch.sql.
# ---- unqualified columns in correlated subqueries: the innermost table that has the name, then outward
SELECT o_priority, COUNT(*) FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date) GROUP BY o_priority -- ok
SELECT o_priority, COUNT(*) AS n FROM tpch.orders WHERE EXISTS (SELECT * FROM tpch.lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date + INTERVAL 90 DAY) GROUP BY o_priority -- ok
SELECT o_priority, COUNT(*) AS n FROM orders WHERE NOT EXISTS (SELECT * FROM lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date + INTERVAL 100 DAY) GROUP BY o_priority -- ok
SELECT o_priority, COUNT(*) AS n FROM orders o WHERE EXISTS (SELECT 1 FROM lineitems l WHERE l_order_id = o_order_id AND l_return_flag = 'R') GROUP BY o_priority -- ok
SELECT c_segment, COUNT(*) AS n FROM customers WHERE EXISTS (SELECT * FROM orders WHERE o_customer_id = c_customer_id AND o_priority = '1-URGENT') GROUP BY c_segment -- ok
SELECT COUNT(*) AS n FROM orders WHERE o_order_id IN (SELECT l_order_id FROM lineitems WHERE l_ship_date > o_order_date + INTERVAL 100 DAY) -- ok
# ---- several conditions on the outer row, one of them tying the rows to the outer row's person
SELECT COUNT(*) AS n FROM lineitems l1 WHERE EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_order_id = l1.l_order_id AND l2.l_part_id <> l1.l_part_id) -- ok
SELECT COUNT(*) AS n FROM lineitems l1 WHERE NOT EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_order_id = l1.l_order_id AND l2.l_part_id <> l1.l_part_id) -- ok
SELECT l1.l_return_flag, COUNT(*) AS n FROM lineitems l1 WHERE EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_order_id = l1.l_order_id AND l2.l_part_id <> l1.l_part_id AND l2.l_ship_date > l1.l_ship_date) GROUP BY l1.l_return_flag -- ok
SELECT COUNT(*) AS n FROM lineitems l1 WHERE l_ship_date > DATE '1995-01-01' AND EXISTS (SELECT * FROM lineitems l2 WHERE l2.l_order_id = l1.l_order_id AND l2.l_part_id <> l1.l_part_id) AND NOT EXISTS (SELECT * FROM lineitems l3 WHERE l3.l_order_id = l1.l_order_id AND l3.l_part_id <> l1.l_part_id AND l3.l_quantity > l1.l_quantity) -- ok
SELECT COUNT(*) AS n FROM customers c WHERE EXISTS (SELECT * FROM orders o WHERE o.o_customer_id = c.c_customer_id AND o.o_priority <> c.c_segment) -- ok
# ---- dates as other dialects spell them
SELECT COUNT(*) AS n FROM orders WHERE DATE_SUB(o_order_date, INTERVAL 30 DAY) > DATE '1995-01-01' -- ok
SELECT COUNT(*) AS n FROM orders WHERE DATE_ADD(o_order_date, 30) > DATE '1998-01-01' -- ok
SELECT COUNT(*) AS n FROM orders WHERE DATE_SUB(o_order_date, 30) > DATE '1995-01-01' -- ok
SELECT COUNT(*) AS n, AVG(LEAST(GREATEST(DATE_DIFF(l_ship_date, o_order_date, DAY), 0), 200)) AS d FROM lineitems JOIN orders ON l_order_id = o_order_id -- ok
SELECT DATE_DIFF(DATE '1999-01-01', o_order_date, YEAR) AS y, COUNT(*) AS n FROM orders GROUP BY 1 -- ok
SELECT COUNT(*) AS n FROM lineitems JOIN orders ON l_order_id = o_order_id WHERE DATE_DIFF(l_ship_date, o_order_date, MONTH) >= 2 -- ok
