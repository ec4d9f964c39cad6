# Queries dpsql answers over PUMS.PUMS (tests/data/PUMS_pid.yaml + PUMS_pid.csv; private_id pid).
# One query per line, ending in "-- ok".
# ---- basic aggregates
SELECT COUNT(*) FROM PUMS.PUMS -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS -- ok
SELECT COUNT(age) AS n FROM PUMS.PUMS -- ok
SELECT SUM(age) AS s FROM PUMS.PUMS -- ok
SELECT AVG(income) AS a FROM PUMS.PUMS -- ok
SELECT VAR(age) AS v FROM PUMS.PUMS -- ok
SELECT VARIANCE(income) AS v FROM PUMS.PUMS -- ok
SELECT VAR_POP(age) AS v FROM PUMS.PUMS -- ok
SELECT STDDEV(income) AS sd FROM PUMS.PUMS -- ok
SELECT STD(age) AS sd FROM PUMS.PUMS -- ok
SELECT STDDEV_POP(age) AS sd FROM PUMS.PUMS -- ok
SELECT COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a, VAR(age) AS v, STDDEV(age) AS sd FROM PUMS.PUMS -- ok
# ---- COUNT DISTINCT
SELECT COUNT(DISTINCT pid) AS persons FROM PUMS.PUMS -- ok
SELECT COUNT(DISTINCT educ) AS d FROM PUMS.PUMS -- ok
SELECT COUNT(DISTINCT age // 10) AS d FROM PUMS.PUMS -- ok
SELECT APPROX_COUNT_DISTINCT(educ) AS d FROM PUMS.PUMS -- ok
SELECT sex, APPROX_COUNT_DISTINCT(pid) AS persons FROM PUMS.PUMS GROUP BY sex -- ok
# ---- grouping sets: one release, the privacy split over the sets (issue 37)
SELECT sex, married, COUNT(*) AS n FROM PUMS.PUMS GROUP BY ROLLUP(sex, married) -- ok
SELECT sex, married, COUNT(*) AS n, AVG(income) AS a FROM PUMS.PUMS GROUP BY CUBE(sex, married) -- ok
SELECT age // 10 AS decade, COUNT(*) AS n FROM PUMS.PUMS GROUP BY GROUPING SETS ((decade), ()) -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY ROLLUP (sex) -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY CUBE (sex, race) -- ok
# ---- GROUP BY non-public keys (thresholded)
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex -- ok
SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex -- ok
SELECT sex, race, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex, race -- ok
SELECT married, SUM(income) AS s FROM PUMS.PUMS GROUP BY married ORDER BY s DESC -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY 1 -- ok
SELECT p.sex, COUNT(*) AS n FROM PUMS.PUMS AS p GROUP BY p.sex -- ok
SELECT DISTINCT sex FROM PUMS.PUMS -- ok
SELECT DISTINCT sex, married FROM PUMS.PUMS -- ok
SELECT CONCAT(sex, '-', married) AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY k -- ok
SELECT sex || married AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY k -- ok
# ---- GROUP BY keys made public by the query (booleans, CASE literals, integer buckets)
SELECT age > 50 AS old, COUNT(*) AS n FROM PUMS.PUMS GROUP BY old -- ok
SELECT age // 10 AS decade, COUNT(*) AS n FROM PUMS.PUMS GROUP BY decade -- ok
SELECT age // 10 * 10 + 5 AS mid, COUNT(*) AS n FROM PUMS.PUMS GROUP BY mid -- ok
SELECT FLOOR(age / 5) AS b, COUNT(*) AS n FROM PUMS.PUMS GROUP BY b -- ok
SELECT age % 7 AS r, COUNT(*) AS n FROM PUMS.PUMS GROUP BY r -- ok
SELECT SIGN(age - 50) AS s, COUNT(*) AS n FROM PUMS.PUMS GROUP BY s -- ok
SELECT CASE WHEN income > 100000 THEN 'high' WHEN income > 30000 THEN 'mid' ELSE 'low' END AS band, COUNT(*) AS n FROM PUMS.PUMS GROUP BY band -- ok
SELECT IF(married = '1', 'married', 'single') AS m, AVG(income) AS a FROM PUMS.PUMS GROUP BY m -- ok
SELECT COALESCE(CASE WHEN age < 18 THEN 'minor' END, 'adult') AS grp, COUNT(*) AS n FROM PUMS.PUMS GROUP BY grp -- ok
# a condition copied into a guard's comparison is bracketed on every engine (review 43, F1)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE NULLIF(age > 50, TRUE) IS NULL -- ok
SELECT COUNT(NULLIF(age > 50, income > 3)) AS a, COUNT(*) FILTER (WHERE NULLIF(sex = '1', age > 50) IS NULL) AS b FROM PUMS.PUMS -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE COALESCE(NULLIF(age BETWEEN 3 AND 50, age IN (1, 2)), FALSE) -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE NULLIF(NOT age > 50, age > 50 = TRUE) -- ok
# ---- WHERE: BETWEEN, IN, LIKE, CASE, arithmetic, functions, literal conversion
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age BETWEEN 30 AND 40 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age NOT BETWEEN 30 AND 40 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ IN ('9', '10', '11') -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE race NOT IN ('1', '2') -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = 1 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age = '30' -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IS DISTINCT FROM 30 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ LIKE '1%' -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ NOT LIKE '1_' -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ ILIKE '1%' -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age * 2 + 1 > 81 AND income - 1000 < 50000 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CASE WHEN sex = '1' THEN age > 40 ELSE age > 50 END -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE NOT (age > 50 OR income < 1000) -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ IS NOT NULL AND (age > 50) IS TRUE -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE LENGTH(educ) = 2 AND UPPER(sex) = '1' -- ok
SELECT AVG(LENGTH(educ)) AS a, SUM(LENGTH(UPPER(sex) || '-' || married)) AS s FROM PUMS.PUMS -- ok
WITH t AS (SELECT CONCAT(sex, educ) AS k FROM PUMS.PUMS) SELECT SUM(LENGTH(k)) AS s FROM t -- ok
SELECT SUM(LENGTH(educ)) AS s, MEDIAN(LENGTH(sex)) AS m FROM PUMS.PUMS -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE LEFT(CAST(educ AS VARCHAR), 1) = '1' AND 'varchar(1)' <> educ -- ok
SELECT educ AS char, COUNT(*) AS "varchar" FROM PUMS.PUMS GROUP BY educ -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE STARTS_WITH(educ, '1') OR CONTAINS(race, '2') -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE SUBSTRING(educ, 1, 1) = '1' -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ABS(age - 50) < 10 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ROUND(income / 1000.0) > 30 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE SQRT(income) > 100 AND LN(age + 1) > 3 -- ok
SELECT COUNT(*) AS n, SUM(age) AS s FROM PUMS.PUMS WHERE income > 0 AND income <= 500000 AND sex <> '0' -- ok
SELECT COUNT(*) AS n FROM PUMS WHERE age > 40 -- ok
SELECT COUNT(*) AS n FROM pums.pums WHERE AGE > 40 -- ok
# ---- CAST
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS INTEGER) >= 12 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ::INT BETWEEN 9 AND 12 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE TRY_CAST(race AS BIGINT) = 1 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(income AS VARCHAR) LIKE '%000' -- ok
SELECT AVG(CAST(age > 50 AS INTEGER)) AS share_old FROM PUMS.PUMS -- ok
SELECT CAST(COUNT(*) AS INTEGER) AS n FROM PUMS.PUMS -- ok
# ---- query-only failures that plan to NULL (answered, not refused)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 99999999999999999999999999999999999999999 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 1 // 0 -- ok
# a zero divisor is NULL on every engine (DuckDB 2's / alone gives +-inf and NaN)
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE (age / 0) IS NULL AND (age // 0.0) IS NULL AND (age % 0) IS NULL -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE (5 / 0) IS NULL AND (0 / 0) IS NULL AND (0.0 // 0) IS NULL -- ok
SELECT SUM(LEAST(GREATEST(income / (age - age), 0), 10)) AS s, COUNT(income / (age - age)) AS n FROM PUMS.PUMS -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex HAVING COUNT(*) / 0 IS NULL -- ok
# ---- derived bounds in aggregate arguments, FILTER
SELECT SUM(CASE WHEN married = '1' THEN 1 ELSE 0 END) AS n_married FROM PUMS.PUMS -- ok
SELECT AVG(age - 30) AS a, SUM(income * 0.1) AS tax FROM PUMS.PUMS -- ok
SELECT SUM(income / 1000) AS k FROM PUMS.PUMS -- ok
SELECT SUM(LEAST(GREATEST(income, 10000), 100000)) AS s FROM PUMS.PUMS -- ok
SELECT SUM(ROUND(income / 1000.0)) AS s FROM PUMS.PUMS -- ok
SELECT AVG(POWER(age, 2)) AS a FROM PUMS.PUMS -- ok
SELECT AVG(SQRT(income)) AS a FROM PUMS.PUMS -- ok
SELECT COUNT(CASE WHEN age > 60 THEN 1 END) AS seniors FROM PUMS.PUMS -- ok
SELECT COUNT(*) FILTER (WHERE income > 50000) AS rich, COUNT(*) AS n FROM PUMS.PUMS -- ok
SELECT SUM(income) FILTER (WHERE sex = '1') AS s1, AVG(age) FILTER (WHERE married = '0') AS a0 FROM PUMS.PUMS -- ok
# ---- expressions over aggregates, ROUND
SELECT ROUND(AVG(income), 2) AS a FROM PUMS.PUMS -- ok
SELECT ROUND(AVG(income), -3) AS a, ROUND(STDDEV(age), 1) AS sd FROM PUMS.PUMS -- ok
SELECT SUM(income) / COUNT(*) AS mean_income FROM PUMS.PUMS -- ok
SELECT COUNT(*) * 1000 AS scaled FROM PUMS.PUMS -- ok
SELECT POWER(SUM(age), 2) AS p FROM PUMS.PUMS -- ok
# ---- HAVING, ORDER BY, LIMIT, OFFSET, TOP
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex HAVING COUNT(*) > 10 -- ok
SELECT sex, SUM(income) AS income FROM PUMS.PUMS GROUP BY sex HAVING income > 100000 -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY n DESC -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY 2 -- ok
SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY CAST(sex AS INTEGER) * -1 DESC -- ok
SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ ORDER BY educ LIMIT 3 -- ok
SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ ORDER BY n DESC LIMIT 3 OFFSET 1 -- ok
SELECT TOP 2 educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ -- ok
SELECT educ, COUNT(*) AS n, AVG(income) AS mean_income FROM PUMS.PUMS WHERE age BETWEEN 25 AND 64 GROUP BY educ HAVING n > 20 ORDER BY mean_income DESC LIMIT 5 -- ok
# ---- quantiles, MEDIAN, MIN, MAX
SELECT MEDIAN(income) AS m FROM PUMS.PUMS -- ok
SELECT MEDIAN(age) AS m FROM PUMS.PUMS -- ok
SELECT sex, MEDIAN(income) AS m, QUANTILE_CONT(age, [0.25, 0.75]) AS q FROM PUMS.PUMS GROUP BY sex -- ok
SELECT QUANTILE_CONT(income, 0.9) AS p90 FROM PUMS.PUMS -- ok
SELECT QUANTILE_DISC(age, 0.5) AS q FROM PUMS.PUMS -- ok
SELECT QUANTILE(age, 0.25) AS q FROM PUMS.PUMS -- ok
SELECT APPROX_QUANTILE(income, 0.5) AS q FROM PUMS.PUMS -- ok
SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY income) AS m FROM PUMS.PUMS -- ok
SELECT PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY age DESC) AS m FROM PUMS.PUMS -- ok
SELECT MIN(age) AS lo, MAX(age) AS hi FROM PUMS.PUMS -- ok
SELECT MEDIAN(income / 1000) AS m FROM PUMS.PUMS -- ok
SELECT educ, MEDIAN(income) / 1000 AS k, MAX(age) - MIN(age) AS span, AVG(age) AS a FROM PUMS.PUMS GROUP BY educ -- ok
SELECT age > 60 AS old, MEDIAN(income) AS m, COUNT(*) AS n FROM PUMS.PUMS GROUP BY old -- ok
SELECT MEDIAN(income) FILTER (WHERE sex = '0') AS m FROM PUMS.PUMS -- ok
# ---- CTEs and subqueries in FROM
WITH adults AS (SELECT *, age // 10 * 10 AS decade FROM PUMS.PUMS WHERE age BETWEEN 25 AND 64) SELECT decade, sex, COUNT(*) AS n, AVG(income) AS mean_income FROM adults GROUP BY decade, sex -- ok
WITH a AS (SELECT pid, age, income FROM PUMS.PUMS WHERE age > 30), b AS (SELECT *, income / 1000 AS k FROM a AS x WHERE x.age < 80) SELECT COUNT(*) AS n, AVG(k) AS mk FROM b -- ok
SELECT COUNT(*) AS n, SUM(y.age) AS s FROM (SELECT * FROM (SELECT age, sex FROM PUMS.PUMS) AS x WHERE age > 50 ORDER BY age) AS y -- ok
WITH t AS (SELECT * EXCLUDE (income) FROM PUMS.PUMS) SELECT COUNT(*) AS n, AVG(age) AS a FROM t -- ok
# ---- per-person aggregation
SELECT AVG(n) AS a, COUNT(*) AS persons FROM (SELECT pid, COUNT(*) AS n FROM PUMS.PUMS GROUP BY pid) -- ok
SELECT n, COUNT(*) AS persons FROM (SELECT pid, COUNT(*) AS n FROM PUMS.PUMS GROUP BY pid) GROUP BY n -- ok
SELECT AVG(s) AS a FROM (SELECT pid, SUM(income) AS s FROM PUMS.PUMS GROUP BY pid) AS t -- ok
SELECT COUNT(*) AS n FROM (SELECT pid, income * income AS x FROM PUMS.PUMS GROUP BY pid, income * income) t -- ok
SELECT x, COUNT(*) AS n FROM (SELECT pid, age * age + income AS x FROM PUMS.PUMS GROUP BY pid, age * age + income) t GROUP BY x -- ok
SELECT AVG(top) AS a FROM (SELECT pid, MAX(income) AS top, MIN(age) AS low FROM PUMS.PUMS GROUP BY pid) -- ok
SELECT COUNT(*) AS n FROM (SELECT pid FROM PUMS.PUMS GROUP BY pid HAVING AVG(age) > 40) -- ok
SELECT sex, COUNT(*) AS persons FROM (SELECT pid, sex FROM PUMS.PUMS GROUP BY pid, sex) GROUP BY sex -- ok
SELECT COUNT(*) AS n FROM (SELECT DISTINCT pid, educ FROM PUMS.PUMS) -- ok
# ---- self-joins on the privacy unit, semi- and anti-joins, VALUES lookups
SELECT COUNT(*) AS n FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS a JOIN (SELECT pid FROM PUMS.PUMS WHERE income > 50000) b ON a.pid = b.pid WHERE a.age > 40 -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE pid IN (SELECT pid FROM PUMS.PUMS WHERE income > 100000) -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS p WHERE EXISTS (SELECT 1 FROM PUMS.PUMS q WHERE q.pid = p.pid AND q.age > 60) -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE pid NOT IN (SELECT pid FROM PUMS.PUMS WHERE married = '1') -- ok
SELECT region, COUNT(*) AS n FROM PUMS.PUMS p JOIN (VALUES ('1', 'north'), ('2', 'south')) AS r(race, region) USING (race) GROUP BY region -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE race IN (SELECT race FROM (VALUES ('1'), ('3')) AS v(race)) -- ok
# ---- UNION ALL (of rows, and of whole queries)
SELECT COUNT(*) AS n FROM (SELECT age FROM PUMS.PUMS UNION ALL SELECT age FROM PUMS.PUMS) -- ok
SELECT COUNT(*) AS n FROM (SELECT pid, age FROM PUMS.PUMS WHERE sex = '0' UNION ALL SELECT pid, age FROM PUMS.PUMS WHERE sex = '1') u -- ok
SELECT 'men' AS who, COUNT(*) AS n FROM PUMS.PUMS WHERE sex = '0' UNION ALL SELECT 'women', COUNT(*) FROM PUMS.PUMS WHERE sex = '1' -- ok
# ---- date functions (PUMS has no date column: over casts)
SELECT CAST('2020-02-29' AS DATE) AS d, COUNT(*) AS n FROM PUMS.PUMS GROUP BY 1 -- ok
SELECT YEAR(CAST(CAST(1950 + age AS VARCHAR) || '-01-01' AS DATE)) AS y, COUNT(*) AS n FROM PUMS.PUMS GROUP BY y -- ok
SELECT MONTH(CAST('2021-06-01' AS DATE)) AS m, COUNT(*) AS n FROM PUMS.PUMS GROUP BY m -- ok
# ---- BigQuery's differential-privacy syntax (docs/sql.md)
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 100000, delta = 1e-6, privacy_unit_column = pid) COUNT(*) AS n FROM PUMS.PUMS -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 1, privacy_unit_column = pid) sex, AVG(income, contribution_bounds_per_group => (0, 100000)) AS avg_income, COUNT(*, contribution_bounds_per_group => (0, 1)) AS n FROM PUMS.PUMS GROUP BY sex -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = p.pid) p.married, SUM(p.income, contribution_bounds_per_group => (0, 250000)) AS s FROM PUMS.PUMS p WHERE p.age > 30 GROUP BY p.married ORDER BY s DESC -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = 3) educ, VAR_POP(age, contribution_bounds_per_row => (18, 80)) AS v, STDDEV_POP(income, contribution_bounds_per_row => (0, 100000)) AS sd FROM PUMS.PUMS GROUP BY educ -- ok
SELECT WITH DIFFERENTIAL_PRIVACY sex, PERCENTILE_CONT(age, 0.5, contribution_bounds_per_row => (0, 100)) AS median_age FROM PUMS.PUMS GROUP BY sex -- ok
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e5) age // 10 AS decade, AVG(income) AS a FROM PUMS.PUMS WHERE income > 0 GROUP BY 1 HAVING COUNT(*) > 10 -- ok
WITH adults AS (SELECT pid, income FROM PUMS.PUMS WHERE age >= 18) SELECT WITH DIFFERENTIAL_PRIVACY AVG(income, contribution_bounds_per_group => (0, 200000)) AS a FROM adults -- ok
# Two-column moments (dpsql.plan.bivariate)
SELECT CORR(age, income) AS r, COVAR_POP(age, income) AS c, COVAR_SAMP(age, income) AS cs FROM PUMS.PUMS -- ok
SELECT sex, REGR_SLOPE(income, age) AS b, REGR_INTERCEPT(income, age) AS a FROM PUMS.PUMS WHERE age >= 18 GROUP BY sex -- ok
SELECT MODE(sex) AS m FROM PUMS.PUMS -- ok
# A public key grid whose values leave 64 bits (eighteenth review of issue 33: PostgreSQL refused it, Spark wrapped the keys): each such value is NULL, not a key
SELECT v.k * 4611686018427387904 AS z, COUNT(*) AS n FROM PUMS.PUMS p JOIN (VALUES (30), (40), (50)) v(k) ON p.age = v.k GROUP BY v.k * 4611686018427387904 -- ok
SELECT v.k * 2305843009213693952 AS z, COUNT(*) AS n FROM PUMS.PUMS p JOIN (VALUES (1), (2), (3), (4), (30), (40)) v(k) ON p.age = v.k GROUP BY v.k * 2305843009213693952 -- ok
# ---- review 39, F3: integer literal arithmetic beyond 64 bits is NULL at plan time (PostgreSQL refused it)
SELECT COUNT(-(-9223372036854775808)) AS n FROM PUMS.PUMS -- ok
SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE -(-9223372036854775807 - 1) IS NULL -- ok
SELECT COUNT(age + 9223372036854775807 * 2) AS n FROM PUMS.PUMS WHERE 9223372036854775807 + 1 IS NULL -- ok
