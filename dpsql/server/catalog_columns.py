"""The columns of the catalog relations dpsql answers, as PostgreSQL 15 names and orders
them, and the PostgreSQL types it lists (data, not code: ``catalog_build`` reads them).

Owns: which relations exist in the catalog at all (the allow-list a catalog statement is
checked against) and their columns. A relation is a line ``name column:code ...`` (longer
ones go on over indented lines); a column's code is its type in the catalog's DuckDB:
o oid (BIGINT), p regproc (a function's name, VARCHAR), n name, text or "char" (VARCHAR),
b boolean, i smallint or integer, I bigint, r real, f double, a text[] or aclitem[]
(VARCHAR[]), O oid[] (BIGINT[]), s int2vector (SMALLINT[]), t timestamptz.
"""
from __future__ import annotations

CODES = {"o": "BIGINT", "p": "VARCHAR", "n": "VARCHAR", "b": "BOOLEAN", "i": "INTEGER",
         "I": "BIGINT", "r": "REAL", "f": "DOUBLE", "a": "VARCHAR[]", "O": "BIGINT[]",
         "s": "SMALLINT[]", "t": "TIMESTAMPTZ"}

PG_CATALOG = """
pg_am oid:o amname:n amhandler:p amtype:n
pg_attrdef oid:o adrelid:o adnum:i adbin:n
pg_attribute attrelid:o attname:n atttypid:o attstattarget:i attlen:i attnum:i attndims:i
    attcacheoff:i atttypmod:i attbyval:b attalign:n attstorage:n attcompression:n
    attnotnull:b atthasdef:b atthasmissing:b attidentity:n attgenerated:n attisdropped:b
    attislocal:b attinhcount:i attcollation:o attacl:a attoptions:a attfdwoptions:a
    attmissingval:n
pg_auth_members roleid:o member:o grantor:o admin_option:b
pg_class oid:o relname:n relnamespace:o reltype:o reloftype:o relowner:o relam:o
    relfilenode:o reltablespace:o relpages:i reltuples:r relallvisible:i reltoastrelid:o
    relhasindex:b relisshared:b relpersistence:n relkind:n relnatts:i relchecks:i
    relhasrules:b relhastriggers:b relhassubclass:b relrowsecurity:b relforcerowsecurity:b
    relispopulated:b relreplident:n relispartition:b relrewrite:o relfrozenxid:o
    relminmxid:o relacl:a reloptions:a relpartbound:n
pg_collation oid:o collname:n collnamespace:o collowner:o collprovider:n
    collisdeterministic:b collencoding:i collcollate:n collctype:n colliculocale:n
    collversion:n
pg_constraint oid:o conname:n connamespace:o contype:n condeferrable:b condeferred:b
    convalidated:b conrelid:o contypid:o conindid:o conparentid:o confrelid:o
    confupdtype:n confdeltype:n confmatchtype:n conislocal:b coninhcount:i connoinherit:b
    conkey:s confkey:s conpfeqop:O conppeqop:O conffeqop:O confdelsetcols:s conexclop:O
    conbin:n
pg_database oid:o datname:n datdba:o encoding:i datlocprovider:n datistemplate:b
    datallowconn:b datconnlimit:i datfrozenxid:o datminmxid:o dattablespace:o datcollate:n
    datctype:n daticulocale:n datcollversion:n datacl:a
pg_db_role_setting setdatabase:o setrole:o setconfig:a
pg_depend classid:o objid:o objsubid:i refclassid:o refobjid:o refobjsubid:i deptype:n
pg_description objoid:o classoid:o objsubid:i description:n
pg_enum oid:o enumtypid:o enumsortorder:r enumlabel:n
pg_event_trigger oid:o evtname:n evtevent:n evtowner:o evtfoid:o evtenabled:n evttags:a
pg_extension oid:o extname:n extowner:o extnamespace:o extrelocatable:b extversion:n
    extconfig:O extcondition:a
pg_foreign_table ftrelid:o ftserver:o ftoptions:a
pg_index indexrelid:o indrelid:o indnatts:i indnkeyatts:i indisunique:b
    indnullsnotdistinct:b indisprimary:b indisexclusion:b indimmediate:b indisclustered:b
    indisvalid:b indcheckxmin:b indisready:b indislive:b indisreplident:b indkey:s
    indcollation:O indclass:O indoption:s indexprs:n indpred:n
pg_indexes schemaname:n tablename:n indexname:n tablespace:n indexdef:n
pg_inherits inhrelid:o inhparent:o inhseqno:i inhdetachpending:b
pg_language oid:o lanname:n lanowner:o lanispl:b lanpltrusted:b lanplcallfoid:o
    laninline:o lanvalidator:o lanacl:a
pg_matviews schemaname:n matviewname:n matviewowner:n tablespace:n hasindexes:b
    ispopulated:b definition:n
pg_namespace oid:o nspname:n nspowner:o nspacl:a
pg_opclass oid:o opcmethod:o opcname:n opcnamespace:o opcowner:o opcfamily:o opcintype:o
    opcdefault:b opckeytype:o
pg_partitioned_table partrelid:o partstrat:n partnatts:i partdefid:o partattrs:s
    partclass:O partcollation:O partexprs:n
pg_policy oid:o polname:n polrelid:o polcmd:n polpermissive:b polroles:O polqual:n
    polwithcheck:n
pg_proc oid:o proname:n pronamespace:o proowner:o prolang:o procost:r prorows:r
    provariadic:o prosupport:p prokind:n prosecdef:b proleakproof:b proisstrict:b
    proretset:b provolatile:n proparallel:n pronargs:i pronargdefaults:i prorettype:o
    proargtypes:O proallargtypes:O proargmodes:a proargnames:a proargdefaults:n
    protrftypes:O prosrc:n probin:n prosqlbody:n proconfig:a proacl:a
pg_publication oid:o pubname:n pubowner:o puballtables:b pubinsert:b pubupdate:b
    pubdelete:b pubtruncate:b pubviaroot:b
pg_publication_namespace oid:o pnpubid:o pnnspid:o
pg_publication_rel oid:o prpubid:o prrelid:o prqual:n prattrs:s
pg_range rngtypid:o rngsubtype:o rngmultitypid:o rngcollation:o rngsubopc:o rngcanonical:p
    rngsubdiff:p
pg_rewrite oid:o rulename:n ev_class:o ev_type:n ev_enabled:n is_instead:b ev_qual:n
    ev_action:n
pg_roles rolname:n rolsuper:b rolinherit:b rolcreaterole:b rolcreatedb:b rolcanlogin:b
    rolreplication:b rolconnlimit:i rolpassword:n rolvaliduntil:t rolbypassrls:b
    rolconfig:a oid:o
pg_sequence seqrelid:o seqtypid:o seqstart:I seqincrement:I seqmax:I seqmin:I seqcache:I
    seqcycle:b
pg_sequences schemaname:n sequencename:n sequenceowner:n data_type:n start_value:I
    min_value:I max_value:I increment_by:I cycle:b cache_size:I last_value:I
pg_settings name:n setting:n unit:n category:n short_desc:n extra_desc:n context:n
    vartype:n source:n min_val:n max_val:n enumvals:a boot_val:n reset_val:n sourcefile:n
    sourceline:i pending_restart:b
pg_shdescription objoid:o classoid:o description:n
pg_statistic_ext oid:o stxrelid:o stxname:n stxnamespace:o stxowner:o stxstattarget:i
    stxkeys:s stxkind:a stxexprs:n
pg_tables schemaname:n tablename:n tableowner:n tablespace:n hasindexes:b hasrules:b
    hastriggers:b rowsecurity:b
pg_tablespace oid:o spcname:n spcowner:o spcacl:a spcoptions:a
pg_trigger oid:o tgrelid:o tgparentid:o tgname:n tgfoid:o tgtype:i tgenabled:n
    tgisinternal:b tgconstrrelid:o tgconstrindid:o tgconstraint:o tgdeferrable:b
    tginitdeferred:b tgnargs:i tgattr:s tgargs:n tgqual:n tgoldtable:n tgnewtable:n
pg_type oid:o typname:n typnamespace:o typowner:o typlen:i typbyval:b typtype:n
    typcategory:n typispreferred:b typisdefined:b typdelim:n typrelid:o typsubscript:p
    typelem:o typarray:o typinput:p typoutput:p typreceive:p typsend:p typmodin:p
    typmodout:p typanalyze:p typalign:n typstorage:n typnotnull:b typbasetype:o
    typtypmod:i typndims:i typcollation:o typdefaultbin:n typdefault:n typacl:a
pg_user usename:n usesysid:o usecreatedb:b usesuper:b userepl:b usebypassrls:b passwd:n
    valuntil:t useconfig:a
pg_views schemaname:n viewname:n viewowner:n definition:n
"""

INFORMATION_SCHEMA = """
check_constraints constraint_catalog:n constraint_schema:n constraint_name:n
    check_clause:n
column_privileges grantor:n grantee:n table_catalog:n table_schema:n table_name:n
    column_name:n privilege_type:n is_grantable:n
columns table_catalog:n table_schema:n table_name:n column_name:n ordinal_position:i
    column_default:n is_nullable:n data_type:n character_maximum_length:i
    character_octet_length:i numeric_precision:i numeric_precision_radix:i numeric_scale:i
    datetime_precision:i interval_type:n interval_precision:i character_set_catalog:n
    character_set_schema:n character_set_name:n collation_catalog:n collation_schema:n
    collation_name:n domain_catalog:n domain_schema:n domain_name:n udt_catalog:n
    udt_schema:n udt_name:n scope_catalog:n scope_schema:n scope_name:n
    maximum_cardinality:i dtd_identifier:n is_self_referencing:n is_identity:n
    identity_generation:n identity_start:n identity_increment:n identity_maximum:n
    identity_minimum:n identity_cycle:n is_generated:n generation_expression:n
    is_updatable:n
constraint_column_usage table_catalog:n table_schema:n table_name:n column_name:n
    constraint_catalog:n constraint_schema:n constraint_name:n
constraint_table_usage table_catalog:n table_schema:n table_name:n constraint_catalog:n
    constraint_schema:n constraint_name:n
key_column_usage constraint_catalog:n constraint_schema:n constraint_name:n
    table_catalog:n table_schema:n table_name:n column_name:n ordinal_position:i
    position_in_unique_constraint:i
referential_constraints constraint_catalog:n constraint_schema:n constraint_name:n
    unique_constraint_catalog:n unique_constraint_schema:n unique_constraint_name:n
    match_option:n update_rule:n delete_rule:n
schemata catalog_name:n schema_name:n schema_owner:n default_character_set_catalog:n
    default_character_set_schema:n default_character_set_name:n sql_path:n
sequences sequence_catalog:n sequence_schema:n sequence_name:n data_type:n
    numeric_precision:i numeric_precision_radix:i numeric_scale:i start_value:n
    minimum_value:n maximum_value:n increment:n cycle_option:n
table_constraints constraint_catalog:n constraint_schema:n constraint_name:n
    table_catalog:n table_schema:n table_name:n constraint_type:n is_deferrable:n
    initially_deferred:n enforced:n nulls_distinct:n
table_privileges grantor:n grantee:n table_catalog:n table_schema:n table_name:n
    privilege_type:n is_grantable:n with_hierarchy:n
tables table_catalog:n table_schema:n table_name:n table_type:n
    self_referencing_column_name:n reference_generation:n user_defined_type_catalog:n
    user_defined_type_schema:n user_defined_type_name:n is_insertable_into:n is_typed:n
    commit_action:n
views table_catalog:n table_schema:n table_name:n view_definition:n check_option:n
    is_updatable:n is_insertable_into:n is_trigger_updatable:n is_trigger_deletable:n
    is_trigger_insertable_into:n
"""

TYPES = """
16 bool 1 t b B t 0 1000 boolin boolout c p 0 / 17 bytea -1 f b U f 0 1001 byteain byteaout
i x 0 / 18 char 1 t b Z f 0 1002 charin charout c p 0 / 19 name 64 f b S f 18 1003 namein
nameout c p 950 / 20 int8 8 t b N f 0 1016 int8in int8out d p 0 / 21 int2 2 t b N f 0 1005
int2in int2out s p 0 / 22 int2vector -1 f b A f 21 1006 int2vectorin int2vectorout i p 0 /
23 int4 4 t b N f 0 1007 int4in int4out i p 0 / 24 regproc 4 t b N f 0 1008 regprocin
regprocout i p 0 / 25 text -1 f b S t 0 1009 textin textout i x 100 / 26 oid 4 t b N t 0
1028 oidin oidout i p 0 / 27 tid 6 f b U f 0 1010 tidin tidout s p 0 / 28 xid 4 t b U f 0
1011 xidin xidout i p 0 / 29 cid 4 t b U f 0 1012 cidin cidout i p 0 / 30 oidvector -1 f b A
f 26 1013 oidvectorin oidvectorout i p 0 / 114 json -1 f b U f 0 199 json_in json_out i x 0
/ 142 xml -1 f b U f 0 143 xml_in xml_out i x 0 / 143 _xml -1 f b A f 142 0 array_in
array_out i x 0 / 194 pg_node_tree -1 f b Z f 0 0 pg_node_tree_in pg_node_tree_out i x 100 /
199 _json -1 f b A f 114 0 array_in array_out i x 0 / 650 cidr -1 f b I f 0 651 cidr_in
cidr_out i m 0 / 651 _cidr -1 f b A f 650 0 array_in array_out i x 0 / 700 float4 4 t b N f
0 1021 float4in float4out i p 0 / 701 float8 8 t b N t 0 1022 float8in float8out d p 0 / 705
unknown -2 f p X f 0 0 unknownin unknownout c p 0 / 790 money 8 t b N f 0 791 cash_in
cash_out d p 0 / 791 _money -1 f b A f 790 0 array_in array_out d x 0 / 829 macaddr 6 f b U
f 0 1040 macaddr_in macaddr_out i p 0 / 869 inet -1 f b I t 0 1041 inet_in inet_out i m 0 /
1000 _bool -1 f b A f 16 0 array_in array_out i x 0 / 1001 _bytea -1 f b A f 17 0 array_in
array_out i x 0 / 1002 _char -1 f b A f 18 0 array_in array_out i x 0 / 1003 _name -1 f b A
f 19 0 array_in array_out i x 950 / 1005 _int2 -1 f b A f 21 0 array_in array_out i x 0 /
1006 _int2vector -1 f b A f 22 0 array_in array_out i x 0 / 1007 _int4 -1 f b A f 23 0
array_in array_out i x 0 / 1008 _regproc -1 f b A f 24 0 array_in array_out i x 0 / 1009
_text -1 f b A f 25 0 array_in array_out i x 100 / 1010 _tid -1 f b A f 27 0 array_in
array_out i x 0 / 1011 _xid -1 f b A f 28 0 array_in array_out i x 0 / 1012 _cid -1 f b A f
29 0 array_in array_out i x 0 / 1013 _oidvector -1 f b A f 30 0 array_in array_out i x 0 /
1014 _bpchar -1 f b A f 1042 0 array_in array_out i x 100 / 1015 _varchar -1 f b A f 1043 0
array_in array_out i x 100 / 1016 _int8 -1 f b A f 20 0 array_in array_out d x 0 / 1021
_float4 -1 f b A f 700 0 array_in array_out i x 0 / 1022 _float8 -1 f b A f 701 0 array_in
array_out d x 0 / 1028 _oid -1 f b A f 26 0 array_in array_out i x 0 / 1033 aclitem 12 f b U
f 0 1034 aclitemin aclitemout i p 0 / 1034 _aclitem -1 f b A f 1033 0 array_in array_out i x
0 / 1040 _macaddr -1 f b A f 829 0 array_in array_out i x 0 / 1041 _inet -1 f b A f 869 0
array_in array_out i x 0 / 1042 bpchar -1 f b S f 0 1014 bpcharin bpcharout i x 100 / 1043
varchar -1 f b S f 0 1015 varcharin varcharout i x 100 / 1082 date 4 t b D f 0 1182 date_in
date_out i p 0 / 1083 time 8 t b D f 0 1183 time_in time_out d p 0 / 1114 timestamp 8 t b D
f 0 1115 timestamp_in timestamp_out d p 0 / 1115 _timestamp -1 f b A f 1114 0 array_in
array_out d x 0 / 1182 _date -1 f b A f 1082 0 array_in array_out i x 0 / 1183 _time -1 f b
A f 1083 0 array_in array_out d x 0 / 1184 timestamptz 8 t b D t 0 1185 timestamptz_in
timestamptz_out d p 0 / 1185 _timestamptz -1 f b A f 1184 0 array_in array_out d x 0 / 1186
interval 16 f b T t 0 1187 interval_in interval_out d p 0 / 1187 _interval -1 f b A f 1186 0
array_in array_out d x 0 / 1231 _numeric -1 f b A f 1700 0 array_in array_out i x 0 / 1266
timetz 12 f b D f 0 1270 timetz_in timetz_out d p 0 / 1270 _timetz -1 f b A f 1266 0
array_in array_out d x 0 / 1560 bit -1 f b V f 0 1561 bit_in bit_out i x 0 / 1561 _bit -1 f
b A f 1560 0 array_in array_out i x 0 / 1562 varbit -1 f b V t 0 1563 varbit_in varbit_out i
x 0 / 1563 _varbit -1 f b A f 1562 0 array_in array_out i x 0 / 1700 numeric -1 f b N f 0
1231 numeric_in numeric_out i m 0 / 2205 regclass 4 t b N f 0 2210 regclassin regclassout i
p 0 / 2206 regtype 4 t b N f 0 2211 regtypein regtypeout i p 0 / 2210 _regclass -1 f b A f
2205 0 array_in array_out i x 0 / 2211 _regtype -1 f b A f 2206 0 array_in array_out i x 0 /
2249 record -1 f p P f 0 2287 record_in record_out d x 0 / 2277 anyarray -1 f p P f 0 0
anyarray_in anyarray_out d x 0 / 2278 void 4 t p P f 0 0 void_in void_out i p 0 / 2283
anyelement 4 t p P f 0 0 anyelement_in anyelement_out i p 0 / 2287 _record -1 f p P f 2249 0
array_in array_out d x 0 / 2950 uuid 16 f b U f 0 2951 uuid_in uuid_out c p 0 / 2951 _uuid
-1 f b A f 2950 0 array_in array_out i x 0 / 3802 jsonb -1 f b U f 0 3807 jsonb_in jsonb_out
i x 0 / 3807 _jsonb -1 f b A f 3802 0 array_in array_out i x 0 / 4089 regnamespace 4 t b N f
0 4090 regnamespacein regnamespaceout i p 0 / 4090 _regnamespace -1 f b A f 4089 0 array_in
array_out i x 0
"""
"""PostgreSQL's own types in pg_catalog, ``/``-separated: oid typname typlen typbyval typtype
typcategory typispreferred typelem typarray typinput typoutput typalign typstorage
typcollation."""


def relations(text: str) -> dict:
    """{name: [(column, DuckDB type), ...]} of one of the texts above."""
    out, name = {}, None
    for line in text.strip("\n").splitlines():
        words = line.split()
        if not line.startswith(" "):
            name, words = words[0], words[1:]
            out[name] = []
        out[name] += [(w.split(":")[0], CODES[w.split(":")[1]]) for w in words]
    return out


def types() -> list:
    """The rows of ``TYPES`` as tuples (numbers as int, t/f as bool)."""
    rows = []
    for item in " ".join(TYPES.split()).split(" / "):
        f = item.split(" ")
        rows.append((int(f[0]), f[1], int(f[2]), f[3] == "t", f[4], f[5], f[6] == "t",
                     int(f[7]), int(f[8]), f[9], f[10], f[11], f[12], int(f[13])))
    return rows
