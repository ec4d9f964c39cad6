# Queries dpsql refuses over the retail star schema (tests/data/retail.yaml + retail_*.csv).
# One query per line, ending in "-- ErrorClass: fragment of the message".
# ---- FROM lists: what no equality joins stays a CROSS JOIN, refused between private rows (issue 34)
SELECT COUNT(*) AS n FROM retail.parts p, retail.nations n, retail.lineitems l, retail.orders o, retail.customers c WHERE p.part_id = l.part_id AND l.order_id = o.order_id AND c.nation_key = n.nation_key -- QueryError: must equate their privacy units
SELECT COUNT(*) AS n FROM retail.orders o, retail.parts p, retail.lineitems l, retail.customers c WHERE p.part_id = l.part_id AND l.line_no = o.order_id AND o.customer_id = c.customer_id -- QueryError: join them on exactly that
# ---- an OR whose branches do not all hold the join condition: the rows are not joined on it
SELECT COUNT(*) AS n FROM retail.customers c, retail.orders o WHERE (c.customer_id = o.customer_id AND c.segment = 'BUILDING') OR o.priority = '1-URGENT' -- QueryError: must equate their privacy units
SELECT COUNT(*) AS n FROM retail.parts p, retail.lineitems l, retail.orders o WHERE (p.part_id = l.part_id AND l.order_id = o.order_id AND p.brand = 'Brand#12') OR (p.part_id = l.part_id AND p.brand = 'Brand#23') -- QueryError: join them on exactly that
SELECT COUNT(*) AS n FROM retail.customers c, retail.orders o WHERE (c.customer_id = o.customer_id AND c.segment = 'BUILDING') OR (c.customer_id = o.customer_id + 1 AND o.priority = '1-URGENT') -- QueryError: must equate their privacy units
SELECT TIMESTAMP_DIFF(l.ship_date, o.order_date, HOUR) AS h, COUNT(*) AS n FROM retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY 1 -- QueryError: TIMESTAMP_DIFF (BigQuery's whole units elapsed) is not supported
