"""Install instructions in the docs work as written: dpsql is installed from its repository
(``pip install .``, ``pip install ".[sqlalchemy]"``), never by a name no registry serves."""
import re
import shlex

from tests.paths import ROOT

DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
PIP = re.compile(r"pip install ([^`\n]+)")


def dpsql_by_name(command: str) -> list:
    """The arguments of ``pip install ...`` that ask a registry for dpsql itself."""
    return [a for a in shlex.split(command) if re.fullmatch(r"dpsql(\[[\w,]+\])?([<>=~!].*)?", a)]


def test_no_doc_installs_dpsql_by_name():
    wrong = [f"{doc.name}: pip install {m.group(1)}" for doc in DOCS
             for m in PIP.finditer(doc.read_text("utf-8")) if dpsql_by_name(m.group(1))]
    assert wrong == [], "dpsql is installed from its repository (pip install \".[extra]\"):\n" + \
        "\n".join(wrong)


def test_the_check_finds_an_install_by_name():
    assert dpsql_by_name("'dpsql[sqlalchemy]'") and dpsql_by_name("dpsql==0.1")
    assert not dpsql_by_name('".[sqlalchemy]"') and not dpsql_by_name("'psycopg[binary]'")
