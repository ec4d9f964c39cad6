"""Every ```python block in README.md and docs/*.md runs as written, from the repo root, and
prints what the doc shows.

A block that prints is followed by an ```output block with its printed text (stdout),
compared by ``tests.system.doc_output``'s conventions: ``~`` before a noisy number, ``...``
for elided text or lines. A block that prints without an ```output block fails, so no doc
can show a result the code no longer gives.
"""
import re

import pytest

from tests.paths import ROOT
from tests.system.doc_output import output_matches

DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```\n(?:[ \t]*\n)*(?:```output\n(.*?)```)?", re.S)
BLOCKS = [(doc, i, m.group(1), m.group(2)) for doc in DOCS
          for i, m in enumerate(BLOCK.finditer(doc.read_text("utf-8")))]


@pytest.mark.parametrize("doc,index,block,output", BLOCKS,
                         ids=[f"{d.name}#{i}" for d, i, _, _ in BLOCKS])
def test_python_block_runs_and_prints_what_the_doc_shows(doc, index, block, output,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    exec(compile(block, f"{doc.name} block {index}", "exec"), {"__name__": "__doc_example__"})
    printed = capsys.readouterr().out.splitlines()
    if output is None:
        assert not [x for x in printed if x.strip()], (
            f"{doc.name} block {index} prints, but no ```output block follows it:\n"
            + "\n".join(printed))
        return
    assert output_matches(output.splitlines(), printed), (
        f"{doc.name} block {index} printed:\n" + "\n".join(printed)
        + "\n\nbut the doc shows:\n" + output)


def test_output_blocks_follow_python_blocks():
    """An ```output block anywhere else would never be compared."""
    for doc in DOCS:
        text = doc.read_text("utf-8")
        compared = sum(1 for m in BLOCK.finditer(text) if m.group(2) is not None)
        assert text.count("```output\n") == compared, doc.name
