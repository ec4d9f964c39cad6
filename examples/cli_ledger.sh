#!/usr/bin/env bash
# The dpsql command line with a ledger: a session budget that outlives each command.
#
# Two queries (epsilon 1.0, then 0.5) spend the whole budget of 1.5 recorded in the ledger
# file; a third query is refused before it reads any data (exit code 5) and costs nothing;
# `dpsql ledger show` then prints what was spent and every release.
#
# Run from anywhere: bash examples/cli_ledger.sh   (PYTHON=/path/to/python to pick one)
set -euo pipefail

cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
tmpdir="$(mktemp -d)"
trap 'rm -rf "$tmpdir"' EXIT
ledger="$tmpdir/session.ledger"   # a real session keeps it somewhere safe, not in /tmp

dpsql() {
    "$PY" -m dpsql "$@"
}
query() {  # query EPSILON SQL: one release on examples/data/PUMS.csv, charged to the ledger
    dpsql query --metadata data/PUMS.yaml --table PUMS.PUMS=data/PUMS.csv \
        --ledger "$ledger" --budget 1.5 --epsilon "$1" "$2"
}

echo "== 1. COUNT by sex at epsilon 1.0 (the ledger is created with budget 1.5)"
query 1.0 "SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex"

echo
echo "== 2. average income of people 65 and older at epsilon 0.5 (spends the rest)"
query 0.5 "SELECT AVG(income) AS mean_income FROM PUMS.PUMS WHERE age >= 65"

echo
echo "== 3. one more query at epsilon 0.5: the ledger refuses it, nothing is run or spent"
query 0.5 "SELECT COUNT(*) AS n FROM PUMS.PUMS" || echo "refused as expected (exit $?)"

echo
echo "== the ledger"
dpsql ledger show "$ledger"
