-- Catalog queries real clients send, captured from a PostgreSQL 15 server's statement
-- log (log_statement = 'all') while psql 15, SQLAlchemy 2.1.9 (postgresql+psycopg) and
-- pandas 3.1.1 browsed a database holding one table "PUMS"."PUMS"
-- (age bigint, sex text, educ text, race text, income bigint, married text); "hand" entries
-- are written by hand, in the shape such clients use. Each entry: a "-- <client>: <what>"
-- line, a "-- params: <JSON>" line (the $n values as the server received them, text), a
-- "-- columns: <JSON>" line (the result column names PostgreSQL returned), then the SQL.
-- psql's \d names the table by the oid its first query returned ('16385' here); tests
-- substitute the catalog's own.
-- psql: \dt
-- params: []
-- columns: ["Schema", "Name", "Type", "Owner"]
SELECT n.nspname as "Schema",
	  c.relname as "Name",
	  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
	  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
	FROM pg_catalog.pg_class c
	     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
	WHERE c.relkind IN ('r','p','')
	      AND n.nspname <> 'pg_catalog'
	      AND n.nspname !~ '^pg_toast'
	      AND n.nspname <> 'information_schema'
	  AND pg_catalog.pg_table_is_visible(c.oid)
	ORDER BY 1,2;
-- next
-- psql: \dt "PUMS".*
-- params: []
-- columns: ["Schema", "Name", "Type", "Owner"]
SELECT n.nspname as "Schema",
	  c.relname as "Name",
	  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
	  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
	FROM pg_catalog.pg_class c
	     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
	WHERE c.relkind IN ('r','p','t','s','')
	  AND n.nspname OPERATOR(pg_catalog.~) '^(PUMS)$' COLLATE pg_catalog.default
	ORDER BY 1,2;
-- next
-- psql: \dt PUMS.*
-- params: []
-- columns: ["Schema", "Name", "Type", "Owner"]
SELECT n.nspname as "Schema",
	  c.relname as "Name",
	  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
	  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
	FROM pg_catalog.pg_class c
	     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
	WHERE c.relkind IN ('r','p','t','s','')
	  AND n.nspname OPERATOR(pg_catalog.~) '^(pums)$' COLLATE pg_catalog.default
	ORDER BY 1,2;
-- next
-- psql: \dn
-- params: []
-- columns: ["Name", "Owner"]
SELECT n.nspname AS "Name",
	  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
	FROM pg_catalog.pg_namespace n
	WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
	ORDER BY 1;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["oid", "nspname", "relname"]
SELECT c.oid,
	  n.nspname,
	  c.relname
	FROM pg_catalog.pg_class c
	     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relname OPERATOR(pg_catalog.~) '^(PUMS)$' COLLATE pg_catalog.default
	  AND n.nspname OPERATOR(pg_catalog.~) '^(PUMS)$' COLLATE pg_catalog.default
	ORDER BY 2, 3;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity", "relhasoids", "relispartition", "?column?", "reltablespace", "reloftype", "relpersistence", "relreplident", "amname"]
SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
	FROM pg_catalog.pg_class c
	 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
	LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
	WHERE c.oid = '16385';
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["attname", "format_type", "pg_get_expr", "attnotnull", "attcollation", "attidentity", "attgenerated"]
SELECT a.attname,
	  pg_catalog.format_type(a.atttypid, a.atttypmod),
	  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
	   FROM pg_catalog.pg_attrdef d
	   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
	  a.attnotnull,
	  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
	   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
	  a.attidentity,
	  a.attgenerated
	FROM pg_catalog.pg_attribute a
	WHERE a.attrelid = '16385' AND a.attnum > 0 AND NOT a.attisdropped
	ORDER BY a.attnum;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["polname", "polpermissive", "array_to_string", "pg_get_expr", "pg_get_expr", "cmd"]
SELECT pol.polname, pol.polpermissive,
	  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
	  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
	  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
	  CASE pol.polcmd
	    WHEN 'r' THEN 'SELECT'
	    WHEN 'a' THEN 'INSERT'
	    WHEN 'w' THEN 'UPDATE'
	    WHEN 'd' THEN 'DELETE'
	    END AS cmd
	FROM pg_catalog.pg_policy pol
	WHERE pol.polrelid = '16385' ORDER BY 1;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["oid", "stxrelid", "nsp", "stxname", "columns", "ndist_enabled", "deps_enabled", "mcv_enabled", "stxstattarget"]
SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
	pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
	  'd' = any(stxkind) AS ndist_enabled,
	  'f' = any(stxkind) AS deps_enabled,
	  'm' = any(stxkind) AS mcv_enabled,
	stxstattarget
	FROM pg_catalog.pg_statistic_ext
	WHERE stxrelid = '16385'
	ORDER BY nsp, stxname;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["pubname", "?column?", "?column?"]
SELECT pubname
	     , NULL
	     , NULL
	FROM pg_catalog.pg_publication p
	     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
	     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
	WHERE pc.oid ='16385' and pg_catalog.pg_relation_is_publishable('16385')
	UNION
	SELECT pubname
	     , pg_get_expr(pr.prqual, c.oid)
	     , (CASE WHEN pr.prattrs IS NOT NULL THEN
	         (SELECT string_agg(attname, ', ')
	           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
	                pg_catalog.pg_attribute
	          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
	        ELSE NULL END) FROM pg_catalog.pg_publication p
	     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
	     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
	WHERE pr.prrelid = '16385'
	UNION
	SELECT pubname
	     , NULL
	     , NULL
	FROM pg_catalog.pg_publication p
	WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('16385')
	ORDER BY 1;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["oid"]
SELECT c.oid::pg_catalog.regclass
	FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
	WHERE c.oid = i.inhparent AND i.inhrelid = '16385'
	  AND c.relkind != 'p' AND c.relkind != 'I'
	ORDER BY inhseqno;
-- next
-- psql: \d "PUMS"."PUMS"
-- params: []
-- columns: ["oid", "relkind", "inhdetachpending", "pg_get_expr"]
SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
	FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
	WHERE c.oid = i.inhrelid AND i.inhparent = '16385'
	ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;
-- next
-- sqlalchemy: connect (dialect initialize)
-- params: []
-- columns: ["version"]
select pg_catalog.version()
-- next
-- sqlalchemy: connect (dialect initialize)
-- params: []
-- columns: ["current_schema"]
select current_schema()
-- next
-- sqlalchemy: connect (dialect initialize)
-- params: []
-- columns: ["transaction_isolation"]
show transaction isolation level
-- next
-- sqlalchemy: connect (dialect initialize)
-- params: []
-- columns: ["standard_conforming_strings"]
show standard_conforming_strings
-- next
-- sqlalchemy: connect (dialect initialize)
-- params: ["hstore"]
-- columns: ["name", "oid", "array_oid", "regtype", "delimiter"]
SELECT
	    typname AS name, oid, typarray AS array_oid,
	    oid::regtype::text AS regtype, typdelim AS delimiter
	FROM pg_type t
	WHERE t.oid = to_regtype($1)
	ORDER BY t.oid
-- next
-- sqlalchemy: inspect(engine).get_schema_names()
-- params: ["pg/_"]
-- columns: ["nspname"]
SELECT pg_catalog.pg_namespace.nspname 
	FROM pg_catalog.pg_namespace 
	WHERE (pg_catalog.pg_namespace.nspname NOT LIKE $1::VARCHAR || '%' ESCAPE '/') ORDER BY pg_catalog.pg_namespace.nspname
-- next
-- sqlalchemy: inspect(engine).get_table_names(schema='PUMS')
-- params: ["r", "p", "t", "PUMS"]
-- columns: ["relname"]
SELECT pg_catalog.pg_class.relname 
	FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
	WHERE pg_catalog.pg_class.relkind = ANY (ARRAY[$1::VARCHAR, $2::VARCHAR]) AND pg_catalog.pg_class.relpersistence != $3::VARCHAR AND pg_catalog.pg_namespace.nspname = $4::VARCHAR
-- next
-- sqlalchemy: inspect(engine).get_columns('PUMS', schema='PUMS')
-- params: ["", "always", "a", "start", "increment", "minvalue", "maxvalue", "cache", "cycle", "", "0", "name", "schema", "0", "r", "p", "f", "v", "m", "PUMS", "PUMS"]
-- columns: ["name", "format_type", "default", "not_null", "table_name", "comment", "generated", "identity_options", "collation"]
SELECT pg_catalog.pg_attribute.attname AS name, pg_catalog.format_type(pg_catalog.pg_attribute.atttypid, pg_catalog.pg_attribute.atttypmod) AS format_type, CASE WHEN pg_catalog.pg_attribute.atthasdef THEN (SELECT pg_catalog.pg_get_expr(pg_catalog.pg_attrdef.adbin, pg_catalog.pg_attrdef.adrelid) AS pg_get_expr_1 
	FROM pg_catalog.pg_attrdef 
	WHERE pg_catalog.pg_attribute.atthasdef AND pg_catalog.pg_attrdef.adrelid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attrdef.adnum = pg_catalog.pg_attribute.attnum) ELSE NULL END AS "default", pg_catalog.pg_attribute.attnotnull AS not_null, pg_catalog.pg_class.relname AS table_name, pg_catalog.pg_description.description AS comment, pg_catalog.pg_attribute.attgenerated AS generated, CASE WHEN (pg_catalog.pg_attribute.attidentity != $1::VARCHAR) THEN (SELECT json_build_object($2::VARCHAR, pg_catalog.pg_attribute.attidentity = $3::VARCHAR, $4::VARCHAR, pg_catalog.pg_sequence.seqstart, $5::VARCHAR, pg_catalog.pg_sequence.seqincrement, $6::VARCHAR, pg_catalog.pg_sequence.seqmin, $7::VARCHAR, pg_catalog.pg_sequence.seqmax, $8::VARCHAR, pg_catalog.pg_sequence.seqcache, $9::VARCHAR, pg_catalog.pg_sequence.seqcycle) AS json_build_object_1 
	FROM pg_catalog.pg_sequence 
	WHERE pg_catalog.pg_attribute.attidentity != $10::VARCHAR AND pg_catalog.pg_sequence.seqrelid = CAST(CAST(pg_catalog.pg_get_serial_sequence(CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT), pg_catalog.pg_attribute.attname) AS REGCLASS) AS OID)) ELSE NULL END AS identity_options, CASE WHEN (pg_catalog.pg_attribute.attcollation != $11::INTEGER AND (SELECT pg_catalog.pg_type.typcollation 
	FROM pg_catalog.pg_type 
	WHERE pg_catalog.pg_type.oid = pg_catalog.pg_attribute.atttypid) != pg_catalog.pg_attribute.attcollation) THEN (SELECT json_build_object($12::VARCHAR, pg_catalog.pg_collation.collname, $13::VARCHAR, CASE WHEN pg_catalog.pg_collation_is_visible(pg_catalog.pg_collation.oid) THEN NULL ELSE pg_catalog.pg_namespace.nspname END) AS json_build_object_9 
	FROM pg_catalog.pg_collation JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_collation.collnamespace 
	WHERE pg_catalog.pg_collation.oid = pg_catalog.pg_attribute.attcollation) ELSE NULL END AS collation 
	FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_class.oid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attribute.attnum > $14::SMALLINT AND NOT pg_catalog.pg_attribute.attisdropped LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_description.objsubid = pg_catalog.pg_attribute.attnum JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
	WHERE pg_catalog.pg_class.relkind = ANY (ARRAY[$15::VARCHAR, $16::VARCHAR, $17::VARCHAR, $18::VARCHAR, $19::VARCHAR]) AND pg_catalog.pg_namespace.nspname = $20::VARCHAR AND pg_catalog.pg_class.relname IN ($21::VARCHAR) ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_attribute.attnum
-- next
-- sqlalchemy: inspect(engine).has_table('PUMS', schema='PUMS')
-- params: ["PUMS", "r", "p", "f", "v", "m", "PUMS"]
-- columns: ["relname"]
SELECT pg_catalog.pg_class.relname 
	FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
	WHERE pg_catalog.pg_class.relname IN ($1::VARCHAR) AND pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR, $5::VARCHAR, $6::VARCHAR]) AND pg_catalog.pg_namespace.nspname = $7::VARCHAR
-- next
-- pandas: read_sql('SELECT count(*) FROM "PUMS"."PUMS"', engine): is the text a table name?
-- params: ["SELECT count(*) FROM \"PUMS\".\"PUMS\"", "r", "p", "f", "v", "m", "pg_catalog"]
-- columns: ["relname"]
SELECT pg_catalog.pg_class.relname 
	FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
	WHERE pg_catalog.pg_class.relname IN ($1::VARCHAR) AND pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR, $5::VARCHAR, $6::VARCHAR]) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $7::VARCHAR
-- next
-- hand: SELECT version()
-- params: []
-- columns: ["version"]
SELECT version()
-- next
-- hand: current_database/user
-- params: []
-- columns: ["current_database", "current_user", "session_user", "current_schema"]
SELECT current_database(), current_user, session_user, current_schema()
-- next
-- hand: current_schemas
-- params: []
-- columns: ["current_schemas"]
SELECT current_schemas(true)
-- next
-- hand: information_schema.tables
-- params: []
-- columns: ["table_catalog", "table_schema", "table_name", "table_type"]
SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY table_schema, table_name
-- next
-- hand: information_schema.columns
-- params: ["PUMS", "PUMS"]
-- columns: ["table_schema", "table_name", "column_name", "ordinal_position", "data_type", "is_nullable"]
SELECT table_schema, table_name, column_name, ordinal_position, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
-- next
-- hand: information_schema.schemata
-- params: []
-- columns: ["schema_name"]
SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT LIKE 'pg_%' AND schema_name <> 'information_schema' ORDER BY 1
-- next
-- hand: pg_tables
-- params: []
-- columns: ["schemaname", "tablename"]
SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2
-- next
-- hand: SELECT 1
-- params: []
-- columns: ["?column?"]
SELECT 1
