"""Metadata: every shipped SmartNoise file loads, defaults, round trip, errors, lookup."""
from __future__ import annotations

import copy
import datetime as dt
import io
import json
import re

import jsonschema
import pytest
import yaml

from dpsql.errors import Error, MetadataError
from dpsql.metadata.model import COLUMN_TYPES, Column, Metadata, Table, check, json_schema

from tests.paths import DATA, ROOT

YAML_FILES = sorted(DATA.glob("*.yaml"))


def pums_dict() -> dict:
    with open(DATA / "PUMS.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def problems_of(doc) -> list[str]:
    with pytest.raises(MetadataError) as info:
        Metadata.load(doc)
    lines = str(info.value).splitlines()
    assert lines[1:] == info.value.problems == check(doc)
    return info.value.problems


# ---------------------------------------------------------------- loading

def test_there_are_shipped_files():
    assert len(YAML_FILES) >= 7


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_every_shipped_file_loads_and_is_queryable(path):
    m = Metadata.load(path)
    assert check(path) == [] and check(str(path)) == []
    assert m.tables
    for name, table in m.tables.items():
        assert name == table.full_name
        # public tables and tables reached through references are usable in joins
        assert table.privacy_unit_problem is None
        assert all(c.type in COLUMN_TYPES for c in table.columns.values())


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_every_shipped_file_matches_the_json_schema_alone(path):
    # External tools can validate with the schema file and nothing else.
    with open(path, encoding="utf-8") as f:
        jsonschema.validate(yaml.safe_load(f), json_schema(),
                            cls=jsonschema.Draft202012Validator)


def test_schema_is_valid_draft_2020_12_and_is_the_file_in_the_repo():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    on_disk = json.loads((ROOT / "metadata_schemas" / "smartnoise_metadata.schema.json")
                         .read_text("utf-8"))
    assert schema == on_disk
    assert schema["$defs"]["column"]["properties"]["type"]["enum"] == list(COLUMN_TYPES)


def test_pums_defaults():
    m = Metadata.load(DATA / "PUMS.yaml")
    assert (m.collection, m.engine, list(m.tables)) == ("PUMS", None, ["PUMS.PUMS"])
    t = m.tables["PUMS.PUMS"]
    assert (t.schema, t.name, t.full_name) == ("PUMS", "PUMS", "PUMS.PUMS")
    assert t.row_privacy is True and t.rows == 1000
    assert (t.max_ids, t.sample_max_ids, t.censor_dims, t.clamp_counts, t.clamp_columns,
            t.use_dpsu, t.rows_exact) == (1, True, True, False, True, False, None)
    assert list(t.columns) == ["age", "sex", "educ", "race", "income", "married"]
    assert t.private_ids == []
    age = t.columns["age"]
    assert age == Column("age", "int", lower=0, upper=100)
    assert isinstance(age.lower, int) and age.bounded
    sex = t.columns["sex"]
    assert (sex.type, sex.private_id, sex.nullable, sex.missing_value, sex.sensitivity,
            sex.cardinality, sex.values, sex.bounded) == (
        "string", False, True, None, None, None, None, False)


def test_private_id_files():
    pid = Metadata.load(DATA / "PUMS_pid.yaml")
    assert pid.collection == "" and list(pid.tables) == ["PUMS.PUMS"]
    t = pid.tables["PUMS.PUMS"]
    assert t.private_ids == ["pid"] and t.row_privacy is False and t.max_ids == 1
    two = Metadata.load(DATA / "PUMS_two_table.yaml")
    assert two.tables["PUMS.PUMS_null"].max_ids == 3
    assert two.tables["PUMS.PUMS"].row_privacy is True
    large = Metadata.load(DATA / "PUMS_large.yaml").tables["PUMS.PUMS_large"]
    assert large.censor_dims is False and large.columns["income"].lower == 0.0
    assert isinstance(large.columns["income"].upper, float)
    assert large.columns["married"].type == "boolean"


def test_engine_key_and_explicit_table_options_are_kept():
    m = Metadata.load(DATA / "reddit.yaml")
    assert (m.collection, m.engine) == ("reddit", "csv")
    t = m.find_table("reddit.reddit")
    assert (t.max_ids, t.rows, t.private_ids) == (500, 500000, ["author"])
    assert t.columns["ngram"].cardinality == 10000
    assert m.to_dict()["engine"] == "csv"


def test_student_book_example():
    t = Metadata.load(DATA / "student.yaml").find_table("MySchema.MyTable")
    assert t.columns["G3"].upper == 20 and t.columns["school"].cardinality == 2
    assert t.rows == 649 and t.row_privacy


def test_dict_input_and_metadata_passthrough():
    m = Metadata.load(pums_dict())
    assert m == Metadata.load(DATA / "PUMS.yaml")
    assert Metadata.load(m) is m
    assert check(m) == []


def test_stream_input():
    with open(DATA / "PUMS.yaml", encoding="utf-8") as f:
        assert Metadata.load(f) == Metadata.load(DATA / "PUMS.yaml")


def test_yaml_booleans_in_both_spellings():
    text = ("c:\n  s:\n    t:\n      row_privacy: true\n      censor_dims: False\n"
            "      a: {type: int, private_id: TRUE}\n")
    t = Metadata.load(io.StringIO(text)).tables["s.t"]
    assert t.row_privacy is True and t.censor_dims is False and t.columns["a"].private_id


def test_smartnoise_dict_form_with_name_inside_columns():
    # SmartNoise's documented dict form repeats the column name inside the column.
    doc = {"": {"MySchema": {"MyTable": {
        "max_ids": 1, "row_privacy": False,
        "user_id": {"name": "user_id", "type": "int", "private_id": True},
        "age": {"name": "age", "type": "int", "upper": 100, "lower": 0}}}}}
    t = Metadata.load(doc).find_table("MySchema.MyTable")
    assert t.private_ids == ["user_id"] and t.columns["age"].bounded
    assert "name" not in t.to_dict()["age"]


def test_values_extension_and_type_coercions():
    doc = pums_dict()
    cols = doc["PUMS"]["PUMS"]["PUMS"]
    cols["sex"]["values"] = ["0", "1"]
    cols["age"].update(lower=0.0, upper=100.0, values=[18, 19.0], missing_value=30.0)
    cols["income"]["type"] = "float"
    cols["when"] = {"type": "datetime", "values": [dt.date(2020, 1, 1), "2021-06-30T12:00"],
                    "missing_value": dt.date(2000, 1, 1)}
    t = Metadata.load(doc).tables["PUMS.PUMS"]
    assert t.columns["sex"].values == ("0", "1")
    age = t.columns["age"]
    assert (age.lower, age.upper, age.values, age.missing_value) == (0, 100, (18, 19), 30)
    assert all(type(v) is int for v in (age.lower, age.upper, *age.values, age.missing_value))
    assert age.nullable is False  # a missing_value replaces NULL (SmartNoise rule)
    assert type(t.columns["income"].lower) is float
    assert t.columns["when"].values[0] == dt.date(2020, 1, 1)


def test_numpy_scalars_in_a_dict_are_plain_python_after_loading():
    np = pytest.importorskip("numpy")
    doc = {"c": {"s": {"t": {"row_privacy": np.bool_(True), "rows": np.int64(7),
                             "a": {"type": "float", "lower": np.float32(1.5),
                                   "upper": np.int64(3), "values": (np.int64(2),)}}}}}
    t = Metadata.load(doc).tables["s.t"]
    assert t.row_privacy is True and type(t.rows) is int
    a = t.columns["a"]
    assert (type(a.lower), type(a.upper), a.values) == (float, float, (2.0,))


def test_rows_may_be_any_int_and_sensitivity_needs_no_bounds_without_clamping():
    doc = pums_dict()
    table = doc["PUMS"]["PUMS"]["PUMS"]
    table.update(rows=-5, clamp_columns=False)
    table["extra"] = {"type": "float", "sensitivity": 3}
    t = Metadata.load(doc).tables["PUMS.PUMS"]
    assert t.rows == -5 and t.columns["extra"].sensitivity == 3.0
    assert not t.columns["extra"].bounded


# ------------------------------------------------------------- round trip

@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_round_trip(path):
    m = Metadata.load(path)
    d = m.to_dict()
    assert Metadata.load(d) == m
    assert Metadata.load(yaml.safe_load(yaml.safe_dump(d, sort_keys=False))) == m
    assert Metadata.load(copy.deepcopy(d)).to_dict() == d


def test_round_trip_keeps_extensions_and_non_defaults():
    doc = {"engine": "duckdb", "C": {"": {"t": {
        "max_ids": 4, "sample_max_ids": False, "clamp_counts": True, "rows_exact": 7,
        "id": {"type": "string", "private_id": True, "nullable": False},
        "k": {"type": "int", "values": [3, 1, 2], "cardinality": 0},
        "f": {"type": "float", "lower": -1.5, "upper": 2, "missing_value": 0.5,
              "sensitivity": 1.25}}}}}
    m = Metadata.load(doc)
    assert list(m.tables) == ["t"] and m.tables["t"].full_name == "t"
    d = m.to_dict()
    assert d["C"][""]["t"]["k"] == {"type": "int", "cardinality": 0, "values": [3, 1, 2]}
    assert d["C"][""]["t"]["f"]["nullable"] is False
    assert d["C"][""]["t"]["rows_exact"] == 7
    assert Metadata.load(d) == m and hash(Metadata.load(d)) == hash(m)


def test_pums_to_dict_is_smartnoise_shaped():
    assert Metadata.load(DATA / "PUMS.yaml").to_dict() == {"PUMS": {"PUMS": {"PUMS": {
        "row_privacy": True, "rows": 1000,
        "age": {"type": "int", "lower": 0, "upper": 100},
        "sex": {"type": "string"}, "educ": {"type": "string"}, "race": {"type": "string"},
        "income": {"type": "int", "lower": 0, "upper": 500000},
        "married": {"type": "string"}}}}}


# ------------------------------------------------------------------ errors

def one_change(change):
    doc = pums_dict()
    change(doc["PUMS"]["PUMS"]["PUMS"])
    return doc


ERROR_CASES = [
    ("bad type", lambda t: t["age"].update(type="integerish"),
     "PUMS.PUMS.age.type: 'integerish' is not one of ['int', 'float', 'string', 'boolean', "
     "'datetime']"),
    ("missing type", lambda t: t["age"].pop("type"),
     "PUMS.PUMS.age: 'type' is a required property"),
    ("lower > upper", lambda t: t["age"].update(lower=101),
     "PUMS.PUMS.age.lower: lower 101 is greater than upper 100"),
    ("bounds on string", lambda t: t["sex"].update(lower=0),
     "PUMS.PUMS.sex.lower: bounds are only allowed on int and float columns"),
    ("non-integer bound on int", lambda t: t["age"].update(upper=99.5),
     "PUMS.PUMS.age.upper: 99.5 is not an integer"),
    ("infinite bound", lambda t: t["age"].update(upper=float("inf")),
     "PUMS.PUMS.age.upper: inf is not a finite float"),
    ("bound beyond float range", lambda t: t["age"].update(upper=10**400),
     "PUMS.PUMS.age.upper: 1000"),
    ("bound is text", lambda t: t["age"].update(upper="100"),
     "PUMS.PUMS.age.upper: '100' is not of type 'number'"),
    ("max_ids zero", lambda t: t.update(row_privacy=False, max_ids=0),
     "PUMS.PUMS.max_ids: 0 is less than the minimum of 1"),
    ("max_ids not int", lambda t: t.update(row_privacy=False, max_ids=1.5),
     "PUMS.PUMS.max_ids: 1.5 is not of type 'integer'"),
    ("max_ids with row privacy", lambda t: t.update(max_ids=2),
     "PUMS.PUMS.max_ids: must be 1 (or absent) when row_privacy is true"),
    ("boolean as text", lambda t: t.update(row_privacy="yes"),
     "PUMS.PUMS.row_privacy: 'yes' is not of type 'boolean'"),
    ("rows not int", lambda t: t.update(rows="many"),
     "PUMS.PUMS.rows: 'many' is not of type 'integer'"),
    ("unknown table key", lambda t: t.update(max_id=2),
     "PUMS.PUMS.max_id: is neither a table key (max_ids, row_privacy"),
    ("empty column", lambda t: t.update(age=None),
     "PUMS.PUMS.age: is neither a table key"),
    ("unknown column key", lambda t: t["age"].update(uper=3),
     "PUMS.PUMS.age.uper: unknown column key; column keys are type, private_id"),
    ("values of wrong type", lambda t: t["sex"].update(values=["0", 1]),
     "PUMS.PUMS.sex.values.1: 1 is not a value of type string"),
    ("values not a list", lambda t: t["sex"].update(values="0,1"),
     "PUMS.PUMS.sex.values: '0,1' is not of type 'array'"),
    ("values empty", lambda t: t["sex"].update(values=[]),
     "PUMS.PUMS.sex.values: [] should be non-empty"),
    ("values repeated", lambda t: t["age"].update(values=[1, 1]),
     "PUMS.PUMS.age.values: [1, 1] has non-unique elements"),
    ("values not scalars", lambda t: t["age"].update(values=[[1]]),
     "PUMS.PUMS.age.values.0: [1] is not of type 'string', 'number', 'boolean'"),
    ("values on private id", lambda t: t["age"].update(private_id=True, values=[1]),
     "PUMS.PUMS.age.values: a private_id column cannot list public values"),
    ("missing_value wrong type", lambda t: t["age"].update(missing_value="n/a"),
     "PUMS.PUMS.age.missing_value: 'n/a' is not a value of type int"),
    ("missing_value bad date", lambda t: t.update(d={"type": "datetime", "missing_value": "x"}),
     "PUMS.PUMS.d.missing_value: 'x' is not a value of type datetime"),
    ("sensitivity on string", lambda t: t["sex"].update(sensitivity=1),
     "PUMS.PUMS.sex.sensitivity: only int and float columns have a sensitivity"),
    ("sensitivity without bounds", lambda t: t.update(x={"type": "float", "sensitivity": 1}),
     "PUMS.PUMS.x.sensitivity: a sensitivity without both bounds needs clamp_columns: false"),
    ("sensitivity zero", lambda t: t["age"].update(sensitivity=0),
     "PUMS.PUMS.age.sensitivity: 0 is less than or equal to the minimum of 0"),
    ("negative cardinality", lambda t: t["sex"].update(cardinality=-1),
     "PUMS.PUMS.sex.cardinality: -1 is less than the minimum of 0"),
    ("cardinality below values", lambda t: t["sex"].update(cardinality=1, values=["0", "1"]),
     "PUMS.PUMS.sex.cardinality: 1 is smaller than the 2 listed values"),
    ("private_id as text", lambda t: t["age"].update(private_id="True"),
     "PUMS.PUMS.age.private_id: 'True' is not of type 'boolean'"),
    ("name differs from key", lambda t: t["age"].update(name="years"),
     "PUMS.PUMS.age.name: 'years' differs from the column's key 'age'"),
    ("columns differ in case", lambda t: t.update(AGE={"type": "int"}),
     "PUMS.PUMS.AGE: differs from column 'age' only in case"),
    ("no columns", lambda t: [t.pop(k) for k in list(t) if isinstance(t[k], dict)],
     "PUMS.PUMS: table has no columns"),
    ("non-string column name", lambda t: t.update({True: {"type": "int"}}),
     "PUMS.PUMS.True: name True is not a string; quote it"),
]


@pytest.mark.parametrize("change,expected", [c[1:] for c in ERROR_CASES],
                         ids=[c[0] for c in ERROR_CASES])
def test_each_error_names_its_path(change, expected):
    problems = problems_of(one_change(change))
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems


def test_all_problems_are_reported_at_once_in_file_order():
    def many(t):
        t.update(row_privacy="no", bogus=1)
        t["age"].update(type="integerish")
        t["income"].update(lower=10, upper=5)
        t["sex"].update(lower=0, values=[0])
    problems = problems_of(one_change(many))
    assert [p.split(":")[0] for p in problems] == [
        "PUMS.PUMS.row_privacy", "PUMS.PUMS.age.type", "PUMS.PUMS.sex.lower",
        "PUMS.PUMS.sex.values.0", "PUMS.PUMS.income.lower", "PUMS.PUMS.bogus"]
    with pytest.raises(MetadataError) as info:
        Metadata.load(one_change(many))
    assert str(info.value).startswith("invalid metadata (dict): 6 problem(s)\n")
    assert isinstance(info.value, Error)


def test_top_level_errors():
    assert check({"A": {}, "B": {}})[0].startswith(
        "metadata: expected exactly one collection besides 'engine', found 'A', 'B'")
    assert check({"engine": "csv"})[0].startswith("metadata: expected exactly one collection")
    assert check({})[0].startswith("metadata: expected a mapping")
    assert check(["PUMS"])[0].startswith("metadata must be a YAML path, a dict or a Metadata")
    assert check({"engine": 3, "c": {"s": {"t": {"a": {"type": "int"}}}}}) == [
        "engine: 3 is not of type 'string', 'null'"]
    assert check({"c": []}) == ["collection 'c': [] is not of type 'object'"]
    assert check({"c": {"": None}}) == ["schema '': None is not of type 'object'"]
    assert check({"c": {"s": {}}}) == ["s: {} should be non-empty"]


def test_names_with_dots_or_clashing_case_are_refused():
    doc = {"c": {"s.x": {"t": {"a": {"type": "int"}}},
                 "S": {"t": {"a": {"type": "int"}}, "T": {"a": {"type": "int"}},
                       "u.v": {"a": {"type": "int"}}}}}
    assert check(doc) == [
        "s.x: a schema name must not contain '.'",
        "S.T: differs from table S.t only in case; SQL names are case-insensitive, rename one",
        "S.u.v: a table name must not contain '.'"]


def test_file_errors(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(MetadataError, match="metadata file not found: .*missing.yaml"):
        Metadata.load(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("c: [\n")
    assert check(broken)[0].startswith("not valid YAML:")
    dup = tmp_path / "dup.yaml"
    dup.write_text("c:\n  s:\n    t:\n      a: {type: int}\n      a: {type: float}\n"
                   "      yes: {type: int}\n")
    assert check(dup) == [
        "line 5: key 'a' repeats the key of line 4 in the same mapping; YAML would silently "
        "keep only the last one, remove one of them",
        "s.t.True: name True is not a string; quote it in the YAML file (YAML reads unquoted "
        "yes/no/on/off as booleans)"]


# ------------------------------------------------------------------ lookup

@pytest.fixture(scope="module")
def two():
    doc = {"Coll": {"PUMS": {"PUMS": {"row_privacy": True, "age": {"type": "int"}},
                             "Other": {"pid": {"type": "int", "private_id": True}}},
                    "Second": {"pums": {"row_privacy": True, "x": {"type": "int"}}}}}
    return Metadata.load(doc)


def test_find_table_by_schema_and_name_case_insensitive(two):
    assert two.find_table("PUMS.PUMS") is two.tables["PUMS.PUMS"]
    assert two.find_table("pums.pums") is two.tables["PUMS.PUMS"]
    assert two.find_table("second.PUMS") is two.tables["Second.pums"]
    assert two.find_table("PUMS.nope") is None and two.find_table("nope.PUMS") is None


def test_find_table_bare_name_only_if_unambiguous(two):
    assert two.find_table("other") is two.tables["PUMS.Other"]
    assert two.find_table("pums") is None
    assert [t.full_name for t in two.matching_tables("pums")] == ["PUMS.PUMS", "Second.pums"]
    assert two.matching_tables("nope") == []


def test_find_table_with_collection(two):
    assert two.find_table("coll.PUMS.PUMS") is two.tables["PUMS.PUMS"]
    assert two.find_table("other.PUMS.PUMS") is None
    assert two.find_table("a.b.c.d") is None
    anonymous = Metadata.load(DATA / "PUMS_pid.yaml")  # collection ""
    assert anonymous.find_table("anything.PUMS.PUMS") is anonymous.tables["PUMS.PUMS"]


def test_table_without_schema():
    m = Metadata.load({"": {"": {"T": {"row_privacy": True, "a": {"type": "int"}}}}})
    assert list(m.tables) == ["T"] and m.find_table("t").full_name == "T"
    assert m.find_table(".t") is m.tables["T"] and m.find_table("x.t") is None


def test_column_lookup_is_case_insensitive():
    t = Metadata.load(DATA / "student.yaml").find_table("myschema.mytable")
    assert t.column("g3") is t.columns["G3"] and t.column("G3").name == "G3"
    assert t.column("nope") is None


def test_privacy_unit_problem_follows_smartnoise():
    # SmartNoise loads these tables and refuses every query on them.
    neither = Table("s", "t", {"a": Column("a", "int")})
    both = Table("s", "t", {"a": Column("a", "int", private_id=True)}, row_privacy=True)
    assert "no private_id column and row_privacy is false" in neither.privacy_unit_problem
    assert "sets row_privacy: true and also marks a as private_id" in both.privacy_unit_problem
    assert Metadata.load({"c": {"s": {"t": {"a": {"type": "int"}}}}}).tables["s.t"] == neither


def test_objects_are_immutable_and_hashable():
    m = Metadata.load(DATA / "PUMS.yaml")
    t = m.tables["PUMS.PUMS"]
    with pytest.raises(AttributeError):
        t.max_ids = 5
    with pytest.raises(AttributeError):
        t.columns["age"].upper = 5
    assert len({m, Metadata.load(DATA / "PUMS.yaml")}) == 1 and len({t, t}) == 1


# -------------------------------------------------------------------- docs

def test_python_examples_in_the_docs_run(monkeypatch):
    text = (ROOT / "docs" / "metadata.md").read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    for block in blocks:
        exec(compile(block, "docs/metadata.md", "exec"), {})


def test_yaml_examples_in_the_docs_load():
    text = (ROOT / "docs" / "metadata.md").read_text("utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        if "# invalid" in block:
            assert check(io.StringIO(block))
        else:
            assert check(io.StringIO(block)) == [], block
