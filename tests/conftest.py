"""Shared fixtures: the real data sets shipped in tests/data, and readers over them.

The data frames are session-scoped and shared by every test: a test that changes one
works on a copy (``frame.copy()``, ``dict(frames)``).
"""
import os
from pathlib import Path

import pandas as pd
import pytest

import dpsql

from tests.paths import DATA, RETAIL_TABLES, SHOP_TABLES, TPCH_TABLES


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def pums() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS.csv")


@pytest.fixture(scope="session")
def pums_pid() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_pid.csv")


@pytest.fixture(scope="session")
def pums_dup() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_dup.csv")


@pytest.fixture(scope="session")
def pums_null() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_null.csv")


@pytest.fixture(scope="session")
def student() -> pd.DataFrame:
    return pd.read_csv(DATA / "student.csv")


@pytest.fixture(scope="session")
def clinic_frames() -> dict:
    """The clinic data set (metadata tests/data/clinic.yaml) as frames, visit_time parsed."""
    visits = pd.read_csv(DATA / "visits.csv")
    visits["visit_time"] = pd.to_datetime(visits["visit_time"])
    return {"clinic.persons": pd.read_csv(DATA / "persons.csv"), "clinic.visits": visits,
            "clinic.visits_archive": pd.read_csv(DATA / "visits_archive.csv")}


@pytest.fixture(scope="session")
def shop_tables() -> dict:
    """The shop's tables as CSV paths (table name -> path), as dpsql.from_df takes them."""
    return dict(SHOP_TABLES)


@pytest.fixture(scope="session")
def pums_reader(pums):
    """A factory of readers over PUMS.PUMS: ``pums_reader(privacy=..., budget=...)``.

    By default the data are tests/data/PUMS.csv and the metadata PUMS.yaml; ``data=`` and
    ``metadata=`` replace them; every other keyword goes to ``dpsql.from_df``."""
    def open_reader(data=None, metadata=DATA / "PUMS.yaml", **kw):
        return dpsql.from_df(pums if data is None else data, metadata, **kw)
    return open_reader


@pytest.fixture(scope="session")
def shop_reader(shop_tables):
    """A factory of readers over the shop (its CSV files and tests/data/shop.yaml):
    ``shop_reader(privacy=..., budget=...)``; keywords go to ``dpsql.from_df``."""
    def open_reader(**kw):
        return dpsql.from_df(shop_tables, DATA / "shop.yaml", **kw)
    return open_reader


@pytest.fixture(scope="session")
def retail_reader():
    """A factory of readers over the retail star schema (tests/data/retail.yaml: customers,
    orders, lineitems, public parts and nations); keywords go to ``dpsql.from_df``."""
    def open_reader(**kw):
        return dpsql.from_df(dict(RETAIL_TABLES), DATA / "retail.yaml", **kw)
    return open_reader


@pytest.fixture(scope="session")
def plain():
    """Plain DuckDB over the shop, retail and tpch CSV files (schemas ``shop``, ``retail``,
    ``tpch``), for comparing a release at large epsilon with the exact answer: ``plain.sql(q).df()``."""
    import duckdb
    con = duckdb.connect()
    for name, path in {**SHOP_TABLES, **RETAIL_TABLES, **TPCH_TABLES}.items():
        schema = name.split(".")[0]
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv_auto('{path}')")
    yield con
    con.close()


# -- markers, xdist groups and order ------------------------------------------------------
# Every test is marked by its directory (pyproject.toml registers the markers; addopts has
# --strict-markers): tests/engines -> engines, tests/server -> server, tests/neighbours ->
# neighbours, tests/properties -> properties, each of these also ``slow``; SLOW_FILES,
# SLOW_TESTS and the accepted lines of the SQL fixture files get ``slow`` too.
# ``python -m pytest -n auto -m "not slow"`` is the quick subset (README).

SLOW_FAMILIES = ("engines", "server", "neighbours", "properties")

SLOW_FILES = {
    # Outside the slow families, files of real processes (the CLI, scripts, examples),
    # seconds per test.
    "system/test_cli.py", "system/test_cli_signals.py", "system/test_cli_startup.py",
    "system/test_examples.py", "system/test_doc_console.py", "system/test_person_threshold.py",
    "system/test_cli_messages.py",
}

SLOW_TESTS = {
    # Single tests (all their parameters together) of 2.5 s or more in a serial run at load
    # 5-8 on 2 cores, or about 1 s of CPU or more, or waiting on a subprocess. The quick
    # subset's run names any other test over QUICK_LIMIT of CPU, to be added here.
    "unit/test_noise.py::test_a_small_calls_time_does_not_follow_its_noise",
    "unit/test_noise.py::test_a_small_calls_rounds_do_not_follow_its_noise",
    "unit/test_noise.py::test_a_small_gaussian_calls_rounds_do_not_follow_its_noise",
    "safety/test_parse_safety.py::test_a_500_term_or_chain_is_answered",
    "safety/test_parse_safety.py::test_or_chain_beyond_the_node_limit_is_query_error_suggesting_in",
    "safety/test_hostile_dates_decimals.py::"
    "test_extremes_are_null_or_a_free_refusal_that_does_not_depend_on_the_data",            # 31 s
    "unit/test_allowed.py::test_entry_never_fails_on_extreme_values",                      # 14 s
    "unit/test_post_rows.py::"
    "test_python_answers_every_grouped_fixture_post_processing_as_duckdb_does",          # 18 s
    "unit/test_prune.py::"
    "test_every_accepted_fixture_query_computes_the_same_with_its_relations_cut",         # 40 s
    # issue 37: sessions answered until refused, measured against dp-accounting's own counts
    "unit/test_composed_budgets.py::test_pld_answers_as_many_counts_as_dp_accountings_own_count",
    "unit/test_composed_budgets.py::test_rdp_answers_as_many_counts_as_dp_accountings_own_count",
    "unit/test_composed_budgets.py::test_zcdp_count_for_comparison",
    "unit/test_composed_budgets.py::"
    "test_a_composed_release_on_neighbouring_data_sets_stays_within_the_pld_epsilon",
    "unit/test_composed_budgets.py::test_a_ledger_keeps_the_accountant_and_its_events",
    "unit/test_composed_budgets.py::test_never_fewer_answers_than_basic_composition",
    "unit/test_composed_budgets.py::"
    "test_discrete_gaussian_counts_compose_as_the_librarys_discrete_gaussian",
    "safety/test_crash_inputs.py::test_long_cte_chains_are_refused_quickly",               # 10 s
    "safety/test_crash_inputs.py::test_text_copied_more_than_the_limit_is_refused_for_free",
    "safety/test_crash_inputs.py::test_deeply_nested_expressions_are_query_errors",
    "system/test_engine.py::test_truncation_is_random_not_first_rows",
    "system/test_column_lists.py::test_answers_match_duckdb",
    "unit/test_mechanisms.py::test_threshold",
    "system/test_report.py::test_cli_invocations_replay_through_the_ledger_and_fresh_pays",
    "system/test_report.py::test_html_report_stands_alone_and_escapes_what_the_analyst_wrote",
    "system/test_joins.py::test_refused_for_free",
    "system/test_joins.py::test_more_joins_answer_within_noise",
    "system/test_bigquery_syntax.py::test_dbapi_and_cli_read_the_options",
    "system/test_bigquery_syntax.py::test_refusals_are_free_and_say_what_to_do",
    "system/test_bigquery_syntax.py::test_bigquerys_documented_answers_without_noise",
    "system/test_bigquery_syntax.py::test_row_level_forms_need_no_privacy_unit_column",
    "safety/test_ledger_safety.py::test_hard_links_to_one_ledger_share_its_lock_and_never_overspend",
    "safety/test_ledger_safety.py::test_the_cli_refuses_an_empty_file_and_a_fifo_as_ledger",
    "system/test_quantiles.py::test_each_function_matches_duckdb_at_large_epsilon",
    "system/test_relational.py::test_answers_match_duckdb_at_large_epsilon",
    "unit/test_noise.py::test_discrete_gaussian_goodness_of_fit",
    "unit/test_noise.py::test_discrete_gaussian_every_centre_is_exact",
    "unit/test_intervals.py::test_every_interval_kind_covers_the_exact_answer",
    "unit/test_intervals.py::test_cli_accuracy_adds_interval_columns_and_validates_the_level",
    "system/test_star_joins.py::test_retail_comma_joins_plan_as_the_inner_joins",
    "system/test_star_joins.py::test_a_from_list_in_any_order_joins_along_its_equalities",  # 8 s
    "system/test_dbapi.py::test_dbapi_pandas_and_cursor_share_one_ledger_across_processes",
    "safety/test_hostile_cases.py::test_case4_var_of_narrow_integer_storage_never_overflows",
    "unit/test_bounds.py::test_integer_arithmetic_never_raises_on_any_bigint",
    "safety/test_column_lists.py::"
    "test_order_items_reach_their_person_through_the_real_order_id_only",
    "unit/test_architecture.py::test_no_import_circle",
    "safety/test_duckdb_guards.py::"
    "test_let_renders_though_duckdb_sql_was_rendered_before_dpsql_was_imported",   # subprocess
    # CPU seconds (process and its subprocesses), measured under -n 2
    "system/test_sqlalchemy.py::test_importing_dpsql_needs_no_sqlalchemy",          # subprocess
    "system/test_report.py::test_replays_are_the_same_rows_with_a_ledger_as_without",  # CLI
    "system/test_dates_decimals.py::test_count_matches_plain_duckdb",                 # 2.2
    "system/test_bounds_estimate.py::test_pums_income_and_age_get_tight_bounds",      # 1.5
    "system/test_bounds_estimate.py::test_values_at_the_edges_of_bins_and_types_are_inside",
    "system/test_relational.py::test_refused_for_free",                               # 1.3
    "system/test_column_lists.py::test_an_outer_select_of_an_aggregating_cte_is_its_release",
    "system/test_joins.py::test_the_issue_queries_answer_within_noise",               # 1.3
    "unit/test_bounds.py::test_guaranteed_intervals_contain_engine_values",           # 1.3
    "unit/test_noise.py::test_tail_frequencies",                                      # 1.3
    "system/test_star_joins.py::test_shop_comma_joins_plan_as_the_inner_joins",       # 1.1
    "system/test_correlated.py::test_retail_matches_plain_duckdb",                    # 1.1
    "system/test_correlated.py::test_shop_matches_plain_duckdb",                      # 1.0
    "unit/test_mechanisms.py::test_release_noise_distribution_end_to_end",            # 1.0
    "unit/test_noise.py::test_low_bits_uniform_at_large_scale",                       # 0.9
    # named by the quick subset's run of 2026-12-01 (CPU seconds, -n 2)
    "unit/test_post_scalar.py::"
    "test_python_answers_every_fixture_post_processing_row_as_duckdb_does",              # 12
    "unit/test_plan_cache_weight.py::"
    "test_kept_plans_of_large_statements_keep_a_bounded_number_of_objects",              # 11
    "unit/test_present.py::test_rows_are_execute_df_rows_for_every_fixture_query",      # 15
    "safety/test_statistics_limit.py::test_a_statement_at_the_limit_is_answered",       # 8.8
    "safety/test_statement_limits.py::test_three_reads_are_answered",                   # 3.1
    "unit/test_collector.py::test_overlapping_plans_still_collect_their_garbage",       # 2.0
    "safety/test_duckdb_guards.py::test_the_limit_on_guards_counts_every_part_of_a_statement",
    "safety/test_duckdb_guards.py::test_a_statement_has_at_most_256_guards",            # 1.1
    "unit/test_parens.py::test_the_engine_reads_the_trees_value",                       # 1.0
    "unit/test_ledger.py::"
    "test_simultaneous_charges_that_do_not_fit_together_let_exactly_one_through",        # 1.0
}

QUICK_LIMIT = 1.0
"""CPU seconds (the test's process and the subprocesses it waited for; wall time on a shared
machine says more about the load): a test of the quick subset (-m "not slow") that takes
more is named at the end of the run, to be marked slow here (SLOW_TESTS) or made faster."""

PARALLEL_ORDER = ("engines", "properties", "neighbours", "server", "system/test_sql_fixtures.py")
SERIAL_ORDER = ("unit", "safety", "system", "server", "neighbours", "properties", "engines")
"""Families (directories) and files, in the order their tests are queued; the rest after, in
collection order. Under xdist the longest work first (test_sql_fixtures.py is one group of
565 tests, the longest outside the slow families); serially the quickest first."""

SERVER_FIXTURES = {"spark_tables": "spark", "spark": "spark", "postgres": "postgres"}
"""Session fixtures that start a server -> its xdist group: every test using one (from the
same conftest) runs on the same worker, so that the run starts each server once, not once
per worker (session fixtures are per worker under xdist)."""


def _relative(item) -> tuple:
    from tests.paths import TESTS
    try:
        return Path(str(item.path)).resolve().relative_to(TESTS).parts
    except ValueError:
        return ()


def _group(item, parts: tuple) -> str | None:
    """The xdist group (``--dist loadgroup``) of a test, or None to schedule it alone: the
    server it needs, else its file when it uses a module- or class-scoped fixture (built
    once on the worker that runs the whole file)."""
    infos = getattr(item, "_fixtureinfo", None)
    defs = getattr(infos, "name2fixturedefs", {}) if infos is not None else {}
    for name, server in SERVER_FIXTURES.items():
        if name in item.fixturenames and defs.get(name):
            return f"{server}:{defs[name][-1].baseid}"
    for name in item.fixturenames:
        found = defs.get(name)
        if found and found[-1].scope in ("module", "class", "package"):
            return "file:" + "/".join(parts)
    return None


def _accepted_fixture_line(item, parts: tuple) -> bool:
    """A line of an accept_*.sql fixture file (tests/system/test_sql_fixtures.py): each runs
    its query (320 of them, a third of the quick subset's CPU); the refusals only plan."""
    spec = getattr(item, "callspec", None)
    return "/".join(parts) == "system/test_sql_fixtures.py" and spec is not None \
        and spec.id.startswith("accept_")


def pytest_ignore_collect(collection_path, config):
    """With exactly -m "not slow", the slow families' directories are not collected at all
    (every test there is slow): the workers do not import them."""
    from tests.paths import TESTS
    if " ".join((config.getoption("markexpr") or "").split()) == "not slow" \
            and collection_path.parent == TESTS and collection_path.name in SLOW_FAMILIES:
        return True
    return None


@pytest.hookimpl(tryfirst=True)   # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = _relative(item)
        family = parts[0] if len(parts) > 1 else None
        if family in SLOW_FAMILIES:
            item.add_marker(getattr(pytest.mark, family))
            item.add_marker(pytest.mark.slow)
        elif "/".join(parts) in SLOW_FILES or \
                "/".join(parts) + "::" + getattr(item, "originalname", item.name) in SLOW_TESTS \
                or _accepted_fixture_line(item, parts):
            item.add_marker(pytest.mark.slow)
        group = _group(item, parts)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Under xdist (a worker collects; --no-loadscope-reorder keeps this order) the slowest
    # work goes first, so that no long group starts last while the other worker idles;
    # run serially, the quick families go first, so that the dots start at once.
    distributed = hasattr(config, "workerinput")
    order = {name: i for i, name in enumerate(PARALLEL_ORDER if distributed else SERIAL_ORDER)}

    def rank(item) -> int:
        parts = _relative(item)
        return order.get("/".join(parts), order.get(parts[0] if len(parts) > 1 else "",
                                                    len(order)))
    ranks = {id(item): rank(item) for item in items}
    items.sort(key=lambda item: ranks[id(item)])          # stable: collection order within


class _GroupsCheck:
    """Under --dist loadgroup xdist appends ``@group`` to a grouped test's node id, which is
    how the controller learns the groups. Where it cannot (pytest 9.2 with pytest-xdist 3.8,
    pytest-xdist#1386: the test extra pins pytest below 9.2), say so once: every worker
    would then start its own PostgreSQL and Spark."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):
            return
        lost = [i for i in items if "@" not in i.nodeid and any(i.iter_markers("xdist_group"))]
        if lost:
            import warnings
            warnings.warn(pytest.PytestWarning(
                f"{len(lost)} tests lost their xdist group (pytest {pytest.__version__}: see "
                "pytest-xdist#1386); each worker starts its own servers"))


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(_GroupsCheck(), "dpsql-groups-check")


_cpu_start = pytest.StashKey[float]()
_slow_unmarked: dict = {}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[_cpu_start] = _cpu()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" and _cpu_start in item.stash:
        outcome.get_result().user_properties.append(("cpu", _cpu() - item.stash[_cpu_start]))


def pytest_runtest_logreport(report):
    """The quick subset's tests over QUICK_LIMIT (under xdist the reports, with their
    user_properties, reach the controller, which prints the summary)."""
    cpu = dict(report.user_properties).get("cpu")
    if report.when == "teardown" and cpu is not None and cpu > QUICK_LIMIT \
            and "slow" not in report.keywords:
        _slow_unmarked[report.nodeid] = cpu


def pytest_terminal_summary(terminalreporter, config):
    if "not slow" not in (config.getoption("markexpr") or "") or not _slow_unmarked:
        return
    terminalreporter.section(f"quick subset: tests over {QUICK_LIMIT:g} s of CPU (mark them "
                             "slow in tests/conftest.py, SLOW_TESTS)")
    for nodeid, cpu in sorted(_slow_unmarked.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{cpu:6.2f}s {nodeid}")
