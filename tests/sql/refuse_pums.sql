# Queries dpsql refuses over PUMS.PUMS (tests/data/PUMS_pid.yaml + PUMS_pid.csv; private_id pid).
# One query per line, ending in "-- ErrorClass: fragment of the message".
# ---- syntax errors and statements other than one SELECT
SELEC COUNT(*) FROM PUMS.PUMS -- QueryError: cannot parse the query
SELECT COUNT(*) FROM PUMS.PUMS WHERE -- QueryError: cannot parse the query
SELECT COUNT(* FROM PUMS.PUMS -- QueryError: cannot parse the query
SELECT COUNT(*) FROM PUMS.PUMS WHERE age > 1 GROUP BY sex HAVING -- QueryError: cannot parse the query
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = 'abc -- QueryError: is never closed
SELECT COUNT(*) FROM PUMS.PUMS; SELECT 1 -- QueryError: expected one SQL statement, got 2
DELETE FROM PUMS.PUMS -- QueryError: only SELECT queries are answered
DROP TABLE PUMS.PUMS -- QueryError: only SELECT queries are answered
INSERT INTO PUMS.PUMS VALUES (1, '1', '1', '1', 1, '1', 1) -- QueryError: this statement is INSERT
UPDATE PUMS.PUMS SET age = 0 -- QueryError: this statement is UPDATE
CREATE TABLE t AS SELECT 1 -- QueryError: this statement is CREATE
PRAGMA version -- QueryError: only SELECT queries are answered
SELECT 1 -- QueryError: a SELECT without a FROM clause (the query or one of its subqueries)
# ---- unknown tables and columns
SELECT COUNT(*) FROM PUMS.Nope -- QueryError: unknown table 'PUMS.Nope'
SELECT COUNT(*) FROM nope -- QueryError: unknown table 'nope'
SELECT COUNT(nope) FROM PUMS.PUMS -- QueryError: unknown column nope in SELECT
SELECT COUNT(*) FROM PUMS.PUMS WHERE salary > 3 -- QueryError: unknown column salary in WHERE
SELECT COUNT(*) FROM PUMS.PUMS WHERE age || sex = 'x' -- QueryError: || needs string, but
SELECT COUNT(*) FROM PUMS.PUMS WHERE sex / 2 > 1 -- QueryError: / needs float or int, but
SELECT COUNT(*) FROM PUMS.PUMS WHERE sex // 2 > 1 -- QueryError: // needs float or int, but
SELECT COUNT(*) FROM PUMS.PUMS WHERE age IS DISTINCT FROM sex -- QueryError: IS DISTINCT FROM in WHERE: operands of different types
SELECT COUNT(*) FROM PUMS.PUMS WHERE STRPOS(age, 'a') > 0 -- QueryError: function STRPOS() needs string
SELECT COUNT(*) FROM PUMS.PUMS WHERE ISNAN(sex) -- QueryError: function ISNAN() needs float or int
SELECT COUNT(*) FROM (SELECT pid, COUNT(*) AS c FROM PUMS.PUMS GROUP BY pid) t WHERE nope > 1 -- QueryError: columns of t: pid, c
SELECT COUNT(*) FROM PUMS.PUMS p WHERE nope > 1 -- QueryError: columns of p: age, sex
SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid WHERE nope > 1 -- QueryError: columns of a, b: a.age
SELECT sex, COUNT(*) FROM PUMS.PUMS GROUP BY gender -- QueryError: unknown column gender in GROUP BY
SELECT SUM(income) FROM (SELECT * EXCLUDE (income) FROM PUMS.PUMS) -- QueryError: unknown column income in SELECT
SELECT COUNT(*) FROM (SELECT * EXCLUDE (nope) FROM PUMS.PUMS) -- QueryError: * EXCLUDE (nope): no such column
# ---- raw rows: SELECT *, non-aggregated columns
SELECT * FROM PUMS.PUMS -- QueryError: SELECT * would release raw rows
WITH a AS (SELECT * FROM PUMS.PUMS) SELECT * FROM a -- QueryError: SELECT * would release raw rows
SELECT age FROM PUMS.PUMS -- QueryError: is neither grouped nor aggregated
SELECT sex, age, COUNT(*) FROM PUMS.PUMS GROUP BY sex -- QueryError: column "age" in SELECT is neither grouped
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex HAVING age > 3 -- QueryError: column "age" in HAVING is neither grouped
SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ ORDER BY age -- QueryError: column "age" in ORDER BY is neither grouped
SELECT DISTINCT sex FROM PUMS.PUMS ORDER BY married -- QueryError: column "married" in ORDER BY is neither grouped
# ---- GROUP BY the privacy unit's id
SELECT pid, COUNT(*) FROM PUMS.PUMS GROUP BY pid -- QueryError: privacy unit
SELECT pid % 10 AS b, COUNT(*) AS n FROM PUMS.PUMS GROUP BY b -- QueryError: uses the privacy unit's id
SELECT x, COUNT(*) AS n FROM (SELECT pid AS x FROM PUMS.PUMS) GROUP BY x -- QueryError: uses the privacy unit's id
SELECT x, COUNT(*) AS n FROM (SELECT CAST(pid AS VARCHAR) AS x FROM PUMS.PUMS) GROUP BY x -- QueryError: uses the privacy unit's id
# ---- aggregates: types, bounds, nesting, unsupported
SELECT SUM(educ) FROM PUMS.PUMS -- QueryError: column 'educ' is of type string
SELECT AVG(sex) FROM PUMS.PUMS -- QueryError: need a numeric column (int or float)
SELECT SUM(pid) FROM PUMS.PUMS -- QueryError: has no lower and upper bound in the metadata
SELECT SUM(age / (age - 30)) FROM PUMS.PUMS -- QueryError: the divisor can be 0
SELECT SUM(CASE WHEN age > 50 THEN 'x' ELSE 1 END) AS s FROM PUMS.PUMS -- QueryError: operands of different types
SELECT AVG(income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income * income) FROM PUMS.PUMS -- QueryError: would be out of range
SELECT SUM(SUM(age)) FROM PUMS.PUMS -- QueryError: nested aggregates are not allowed
SELECT COUNT(*) FROM PUMS.PUMS WHERE COUNT(*) > 3 -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS GROUP BY COUNT(*) -- QueryError: is not allowed in GROUP BY
SELECT STRING_AGG(sex, ',') FROM PUMS.PUMS -- QueryError: is not supported; supported: COUNT
SELECT LIST(age) FROM PUMS.PUMS -- QueryError: is not supported; supported: COUNT
# ---- quantiles
SELECT MEDIAN(sex) FROM PUMS.PUMS -- QueryError: column 'sex' is of type string
SELECT QUANTILE_CONT(income, 1.5) FROM PUMS.PUMS -- QueryError: is outside [0, 1]
SELECT QUANTILE_CONT(income, age) FROM PUMS.PUMS -- QueryError: must be a number literal in [0, 1]
SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY income, age) FROM PUMS.PUMS -- QueryError: ordered by one expression
SELECT QUANTILE_CONT(income, []) FROM PUMS.PUMS -- QueryError: a list of quantiles takes 1 to 100 values
SELECT MEDIAN(MEDIAN(income)) FROM PUMS.PUMS -- QueryError: nested aggregates are not allowed
# ---- subqueries outside FROM, windows, other clauses
SELECT COUNT(*) FROM PUMS.PUMS WHERE age > (SELECT AVG(age) FROM PUMS.PUMS) -- QueryError: scalar and correlated subqueries in WHERE
SELECT (SELECT COUNT(*) FROM PUMS.PUMS) AS n -- QueryError: a SELECT without a FROM clause
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY (SELECT 1) -- QueryError: subqueries and references to other tables
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN (SELECT 1) -- QueryError: a SELECT without a FROM clause
SELECT COUNT(*) OVER () FROM PUMS.PUMS -- QueryError: window functions (OVER) are not supported
SELECT COUNT(*) FROM (SELECT pid, ROW_NUMBER() OVER () AS r FROM PUMS.PUMS) -- QueryError: window functions are not supported
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex WINDOW w AS (PARTITION BY sex) -- QueryError: WINDOW is not supported in a dpsql query
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex QUALIFY n > 1 -- QueryError: QUALIFY is not supported
SELECT COUNT(*) FROM PUMS.PUMS USING SAMPLE 10% -- QueryError: TABLESAMPLE (USING SAMPLE) is not supported
SELECT COUNT(*) FROM PUMS.PUMS TABLESAMPLE (10 PERCENT) -- QueryError: TABLESAMPLE (USING SAMPLE) on the table is not supported
SELECT PERCENTILE_CONT(1.5) WITHIN GROUP (ORDER BY age) AS m FROM PUMS.PUMS -- QueryError: the quantile p = 1.5 (line 1, column
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ISNAN(CAST('NaN' AS DOUBLE)) -- QueryError: is not a finite number
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(age AS DATE) IS NULL -- QueryError: CAST of an int to DATE is not supported
SELECT COUNT(*) AS n FROM PUMS.PUMS FOR UPDATE -- QueryError: is not supported in a dpsql query
SELECT COLUMNS('a.*') FROM PUMS.PUMS -- QueryError: COLUMNS(...) is not supported
SELECT DISTINCT ON (sex) sex FROM PUMS.PUMS -- QueryError: DISTINCT ON is not supported
# ---- LIMIT, OFFSET, positions
SELECT COUNT(*) FROM PUMS.PUMS LIMIT -1 -- QueryError: LIMIT must be a non-negative integer literal
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex LIMIT age -- QueryError: LIMIT must be a non-negative integer literal
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex LIMIT 99999999999999999999 -- QueryError: is beyond the largest LIMIT
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex LIMIT 1 OFFSET 99999999999999999999 -- QueryError: is beyond the largest OFFSET
SELECT COUNT(*) AS n FROM PUMS.PUMS GROUP BY 1.5 -- QueryError: GROUP BY 1.5 is not a position
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY 1e1 -- QueryError: ORDER BY 1e1 is not a position
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY 3 -- QueryError: ORDER BY 3 is out of range
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY -1 -- QueryError: out of range
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY 3 -- QueryError: GROUP BY 3 is out of range
# ---- functions and operators outside the allow-list
SELECT COUNT(*) FROM PUMS.PUMS WHERE no_such_function(age) > 1 -- QueryError: NO_SUCH_FUNCTION() is not allowed
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE levenshtein(educ, 'a') > 0 -- QueryError: LEVENSHTEIN() is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE repeat(educ, 3) = '' -- QueryError: REPEAT() is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE regexp_matches(educ, '1+') -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE random() < 0.5 -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE md5(educ) = '' -- QueryError: MD5() is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE hash(educ) > 0 -- QueryError: HASH() is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ SIMILAR TO '1' -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ GLOB '1*' -- QueryError: GLOB is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE lpad(educ, 5000, 'x') = '' -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE income & 1 = 1 -- QueryError: is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE typeof(age) = 'BIGINT' -- QueryError: TYPEOF() is not allowed in WHERE
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE current_date() > CAST('2020-01-01' AS DATE) -- QueryError: is not allowed in WHERE
SELECT age * INTERVAL 1 DAY AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY 1 -- QueryError: an INTERVAL can only be added to or subtracted from a date or timestamp (in GROUP BY)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE EXTRACT(epoch FROM CAST('2020-01-01' AS DATE)) > 0 -- QueryError: the part of EXTRACT/DATE_PART must be one of
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ROUND(income, 31) > 1 -- QueryError: must be an integer literal from -30 to 30
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ROUND(income, age) > 1 -- QueryError: must be an integer literal from -30 to 30
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ LIKE educ -- QueryError: the pattern of LIKE must be a string literal
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(age AS VARCHAR) LIKE '%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%' -- QueryError: a LIKE pattern may have at most 100 characters
# ---- casts and types
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(age AS VARINT) > 1 -- QueryError: CAST to VARINT is not allowed
SELECT CAST(age AS UHUGEINT) AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY CAST(age AS UHUGEINT) -- QueryError: is not allowed (in GROUP BY)
SELECT CAST(age AS INTERVAL) AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY 1 -- QueryError: CAST to INTERVAL is not allowed
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age = 'abc' -- QueryError: 'abc' is not a number
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > CAST('x' AS BIGINT) -- QueryError: 'x' (line 1, column 54, in WHERE) is not a number
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE COALESCE(age, 'x') > 1 -- QueryError: 'x' is not a number
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 1e999 -- QueryError: the number 1e999 (line 1, column 49, in WHERE)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex -- QueryError: WHERE needs a boolean condition
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age AND sex = '1' -- QueryError: AND needs boolean
# ---- parameters
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ? -- QueryError: 1 '?' placeholder(s) but 0 parameter(s)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > :x -- QueryError: dpsql's paramstyle is qmark
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > $1 -- QueryError: dpsql's paramstyle is qmark
# ---- table functions, public-only queries
SELECT COUNT(*) AS n FROM read_csv('/tmp/oldmain/tests/data/PUMS_pid.csv') -- QueryError: FROM must name a table from the metadata
SELECT COUNT(*) FROM (SELECT * FROM read_csv('tests/data/PUMS_pid.csv')) -- QueryError: (no table functions)
SELECT COUNT(*) FROM (VALUES (1), (2)) AS v(x) -- QueryError: the query reads public tables only
# ---- reserved _dpsql names
SELECT COUNT(*) AS n FROM (SELECT age AS _dpsql_pid FROM PUMS.PUMS) t -- QueryError: starts with _dpsql, which is reserved
SELECT COUNT(*) AS n FROM (SELECT age AS "_DPSQL_X" FROM PUMS.PUMS) t -- QueryError: starts with _dpsql, which is reserved
WITH _dpsql_t0 AS (SELECT * FROM PUMS.PUMS) SELECT COUNT(*) AS n FROM _dpsql_t0 -- QueryError: the name '_dpsql_t0'
SELECT COUNT(*) AS n FROM PUMS.PUMS AS _dpsql_src -- QueryError: the name '_dpsql_src'
SELECT COUNT(*) AS _dpsql_n FROM PUMS.PUMS -- QueryError: the name '_dpsql_n'
SELECT COUNT(*) AS n FROM PUMS.PUMS p CROSS JOIN (VALUES (1)) AS v(x) WHERE _dpsql_pid > 3 -- QueryError: the name '_dpsql_pid'
# ---- joins of private tables not on the id, unsupported join kinds
SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.age = b.age -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM PUMS.PUMS a CROSS JOIN PUMS.PUMS b -- QueryError: must equate their privacy units
SELECT COUNT(*) AS n FROM PUMS.PUMS AS a, PUMS.PUMS AS b -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid OR a.age = b.age -- QueryError: must equate their privacy units
SELECT COUNT(*) FROM PUMS.PUMS a FULL JOIN PUMS.PUMS b ON a.pid = b.pid -- QueryError: FULL JOIN with a private table
SELECT COUNT(*) FROM PUMS.PUMS a NATURAL JOIN PUMS.PUMS b -- QueryError: write JOIN ... ON or USING
SELECT COUNT(*) AS n FROM PUMS.PUMS a ASOF JOIN PUMS.PUMS b ON a.pid = b.pid AND a.age >= b.age -- QueryError: write JOIN ... ON or USING
SELECT COUNT(*) AS n FROM PUMS.PUMS a POSITIONAL JOIN PUMS.PUMS b -- QueryError: write JOIN ... ON or USING
SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid WHERE age > 3 -- QueryError: column name 'age' is ambiguous
SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS a ON a.pid = a.pid -- QueryError: the name 'a' stands for two tables
# ---- semi-joins not on the id
SELECT COUNT(*) FROM PUMS.PUMS WHERE age IN (SELECT age FROM PUMS.PUMS WHERE income > 1000) -- QueryError: both sides must be the privacy unit's id
SELECT COUNT(*) FROM PUMS.PUMS p WHERE EXISTS (SELECT 1 FROM PUMS.PUMS q WHERE q.income > 400000) -- QueryError: must be tied to the outer rows
SELECT COUNT(*) FROM PUMS.PUMS WHERE pid IN (SELECT pid FROM PUMS.PUMS WHERE age > 80) OR income > 100000 -- QueryError: joined to the rest of WHERE by AND
# ---- set operations
SELECT COUNT(*) FROM (SELECT pid FROM PUMS.PUMS UNION SELECT pid FROM PUMS.PUMS) -- QueryError: UNION (without ALL) in 'subquery'
SELECT COUNT(*) FROM (SELECT pid FROM PUMS.PUMS INTERSECT SELECT pid FROM PUMS.PUMS) -- QueryError: INTERSECT over private rows is not supported
SELECT COUNT(*) FROM (SELECT pid FROM PUMS.PUMS EXCEPT SELECT pid FROM PUMS.PUMS) -- QueryError: EXCEPT over private rows is not supported
SELECT COUNT(*) FROM (SELECT pid, age FROM PUMS.PUMS UNION ALL SELECT pid FROM PUMS.PUMS) -- QueryError: every part must have 2 column(s)
SELECT COUNT(*) FROM PUMS.PUMS UNION SELECT COUNT(*) FROM PUMS.PUMS -- QueryError: UNION (without ALL) of queries is not supported
SELECT COUNT(*) AS n FROM PUMS.PUMS UNION ALL SELECT COUNT(*), SUM(age) FROM PUMS.PUMS -- QueryError: must select the same number of columns
# ---- subqueries and CTEs: aggregation not per person, LIMIT, DISTINCT, names
SELECT COUNT(*) FROM (SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex) -- QueryError: does not include the privacy unit's id (pid)
SELECT COUNT(*) FROM (SELECT COUNT(*) AS n FROM PUMS.PUMS) -- QueryError: without GROUP BY mixes the rows of all persons
SELECT AVG(n) FROM (SELECT pid, COUNT(*) AS n FROM (SELECT pid, COUNT(*) AS m FROM PUMS.PUMS GROUP BY pid) GROUP BY pid) -- QueryError: aggregates per person a second time
SELECT COUNT(*) FROM (SELECT pid, COUNT(*) + 1 AS n FROM PUMS.PUMS GROUP BY pid) -- QueryError: is neither a GROUP BY key nor one aggregate
SELECT COUNT(*) FROM (SELECT DISTINCT educ FROM PUMS.PUMS) -- QueryError: must include the privacy unit's id among its columns
SELECT COUNT(*) FROM (SELECT DISTINCT ON (pid) * FROM PUMS.PUMS) -- QueryError: DISTINCT ON is not supported (inside 'subquery')
SELECT COUNT(*) FROM (SELECT * FROM PUMS.PUMS LIMIT 10) -- QueryError: LIMIT/OFFSET inside 'subquery' is not supported
SELECT COUNT(*) FROM (SELECT * FROM PUMS.PUMS OFFSET 10) -- QueryError: LIMIT/OFFSET inside 'subquery' is not supported
WITH RECURSIVE r AS (SELECT 1 AS x) SELECT COUNT(*) FROM r -- QueryError: WITH RECURSIVE is not supported
SELECT COUNT(*) FROM (SELECT pid, age AS pid FROM PUMS.PUMS) -- QueryError: two columns of 'subquery' are named 'pid'
SELECT COUNT(*) FROM (SELECT pid, age * 2 FROM PUMS.PUMS) -- QueryError: needs a name: write ... AS name
SELECT COUNT(*) FROM (SELECT pid FROM PUMS.PUMS) AS s(x, y) -- QueryError: 's' has 1 column but 2 names are given
SELECT COUNT(*) FROM (SELECT * REPLACE (age * 2 AS age) FROM PUMS.PUMS) -- QueryError: * REPLACE/RENAME is not supported
# ---- BigQuery's differential-privacy syntax (docs/sql.md)
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, epsilon = 2) COUNT(*) FROM PUMS.PUMS -- QueryError: the option epsilon is given twice
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 'high') COUNT(*) FROM PUMS.PUMS -- QueryError: the option epsilon must be a number literal
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 1) COUNT(*) FROM PUMS.PUMS -- QueryError: unknown option 'noise'
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = sex) COUNT(*) FROM PUMS.PUMS -- QueryError: dpsql's privacy unit is set by the metadata: pid
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 0) COUNT(*) FROM PUMS.PUMS -- QueryError: must be a whole number from 1
SELECT COUNT(*) AS n FROM (SELECT WITH DIFFERENTIAL_PRIVACY pid FROM PUMS.PUMS) t -- QueryError: only right after the outer SELECT
SELECT WITH DIFFERENTIAL_PRIVACY SUM(income, contribution_bounds_per_group => (100, 0)) AS s FROM PUMS.PUMS -- QueryError: the lower bound is above the upper bound
SELECT WITH DIFFERENTIAL_PRIVACY SUM(income, contribution_bounds_per_group => (0, 'x')) AS s FROM PUMS.PUMS -- QueryError: must be a number literal
SELECT WITH DIFFERENTIAL_PRIVACY AVG(income, contribution_bounds_per_group => (0, 1)) AS a, VAR_POP(age, contribution_bounds_per_row => (0, 1)) AS v FROM PUMS.PUMS -- QueryError: ask the per-row aggregates in a query of their own
SELECT CORR(age, income * 2) AS r FROM PUMS.PUMS -- QueryError: takes two columns
SELECT sex, MODE(age) AS m FROM PUMS.PUMS GROUP BY sex -- QueryError: must be the only item of the SELECT list
# ---- refusals name what the analyst wrote (thirteenth review of issue 33)
SELECT STRING_AGG(educ, ',') AS s FROM PUMS.PUMS -- QueryError: aggregate STRING_AGG (LISTAGG, GROUP_CONCAT) is not supported
SELECT LIST(educ) AS s FROM PUMS.PUMS -- QueryError: aggregate ARRAY_AGG (LIST) is not supported
SELECT QUANTILE_CONT(income, -0.1) AS q FROM PUMS.PUMS -- QueryError: the quantile p = -0.1 (line 1
SELECT QUANTILE_CONT(income, [0.2, -0.3]) AS q FROM PUMS.PUMS -- QueryError: the quantile p = -0.3 (line 1
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = $$ab$$ -- QueryError: a dollar-quoted string ($$...$$; write 'text') is not allowed
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = E'ab' -- QueryError: an escape string (E'...'; write 'text') is not allowed
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = N'ab' -- QueryError: a national string (N'...'; write 'text') is not allowed
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY ROLLUP(sex) ORDER BY n DESC -- QueryError: ORDER with GROUP BY ROLLUP, CUBE or GROUPING SETS is not supported
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY ALL -- QueryError: GROUP BY ALL
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE INITCAP(educ) = 'A' -- QueryError: function INITCAP() is not allowed in WHERE (INITCAP("educ"))
# ---- review 39, F3: messages show what was written, not dpsql's guards or sqlglot's names
SELECT SUM(STRPOS(SUBSTRING(educ, age, 1), 'a')) AS s FROM PUMS.PUMS -- QueryError: is unbounded: STRPOS(SUBSTRING("educ", "age", 1), 'a') (no bounds
SELECT SUM(income / age) AS s FROM PUMS.PUMS -- QueryError: is unbounded: "income" / "age" (the divisor
SELECT COUNT(MAKE_DATE(age, 13, 1)) AS n FROM PUMS.PUMS -- QueryError: not allowed in COUNT (MAKE_DATE("age", 13, 1))
SELECT COUNT(CAST(age AS HUGEINT)) AS n FROM PUMS.PUMS -- QueryError: CAST to HUGEINT is not allowed
# ---- review 40, F2: a function by the name written, DuckDB's other aggregates as aggregates
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE list_contains([1, 2], age) -- QueryError: function LIST_CONTAINS() is not allowed in WHERE (LIST_CONTAINS([1, 2], "age"))
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE json_extract(sex, '$.a') = 'x' -- QueryError: function JSON_EXTRACT() is not allowed
SELECT PRODUCT(age) AS p FROM PUMS.PUMS -- QueryError: aggregate PRODUCT() is not supported
SELECT sex, MAD(age) AS m FROM PUMS.PUMS GROUP BY sex -- QueryError: aggregate MAD() is not supported
SELECT COUNT(age::varint) AS n FROM PUMS.PUMS -- QueryError: CAST to VARINT is not allowed
# ---- review 41, F3: joins, time travel, subscripts and structs named as written
SELECT COUNT(*) AS n FROM PUMS.PUMS a ASOF JOIN PUMS.PUMS b ON a.pid = b.pid -- QueryError: ASOF in a join is not supported
SELECT COUNT(*) AS n FROM PUMS.PUMS a NATURAL JOIN PUMS.PUMS b -- QueryError: NATURAL in a join is not supported
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex[1] = 'a' -- QueryError: a subscript (x[i]) is not allowed in WHERE
# ---- review 42, F2
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE #1 > 1 -- QueryError: a column by position (#1) is not allowed
SELECT COUNT(*) AS n FROM PUMS.PUMS AT (VERSION => 1) -- QueryError: AT (...) (time travel) on the table is not supported (it would change which rows are counted
# ---- review 44, F3: a text type's length is refused, not dropped
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS VARCHAR(1)) = '1' -- QueryError: a cast to VARCHAR(...) (line 1
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ::CHAR(2) = '1' -- QueryError: a cast to CHAR(...)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS CHAR) = '1' -- QueryError: a cast to CHAR (line 1
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS "varchar"(1)) = '1' -- QueryError: a cast to VARCHAR(...)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE TRY_CAST(CASE WHEN age > 3 THEN educ END AS CHARACTER) = '1' -- QueryError: a cast to CHARACTER (line 1
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(age AS CHARACTER VARYING(3)) = '1' -- QueryError: cut with LEFT(x, n)
