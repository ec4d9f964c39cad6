"""How a doc's sample output is compared with what its example prints (console blocks in
test_doc_console.py, ```output blocks after Python blocks in test_docs.py).

``~`` right before a number marks it noisy (any number matches); ``...`` inside a line
matches any text, and a line of just ``...`` any number of lines; runs of spaces, and of
dashes in table rules, match any length (column widths follow the numbers).
"""
import re

def _line_pattern(line: str) -> str:
    """A regex for one sample line (see the module docstring for the conventions)."""
    out, pos = [], 0
    text = " ".join(line.split())
    for m in re.finditer(r"~-?\d[\d.]*(?:e[+-]?\d+)?|\.\.\.|-{3,}| ", text):
        out.append(re.escape(text[pos:m.start()]))
        token = m.group(0)
        out.append(r"-?[\d.]+(?:e[+-]?\d+)?" if token.startswith("~") else
                   ".*" if token == "..." else "-+" if token.startswith("---") else r"\s+")
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return "".join(out)


def output_matches(sample: list, actual: list) -> bool:
    """Whether printed lines ``actual`` fit the sample lines (``...`` lines: any lines)."""
    want = [x for x in sample if x.strip()]
    got = [" ".join(x.split()) for x in actual if x.strip()]

    def fits(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i].strip() == "...":
            return any(fits(i + 1, k) for k in range(j, len(got) + 1))
        return (j < len(got) and re.fullmatch(_line_pattern(want[i]), got[j]) is not None
                and fits(i + 1, j + 1))
    return fits(0, 0)
