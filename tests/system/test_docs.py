"""Every ```python block in README.md and docs/*.md runs as written, from the repo root."""
import re

import pytest

from tests.paths import ROOT

DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCKS = [(doc, i, block) for doc in DOCS
          for i, block in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text("utf-8"), re.S))]


@pytest.mark.parametrize("doc,index,block", BLOCKS,
                         ids=[f"{d.name}#{i}" for d, i, _ in BLOCKS])
def test_python_block_runs(doc, index, block, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(block, f"{doc.name} block {index}", "exec"), {"__name__": "__doc_example__"})
