"""How sessions and their texts show in a terminal and in a notebook.

Owns: ``Text`` (``reader.explain``: a ``str`` that a notebook shows as a preformatted
block, not as an escaped string), ``HTMLPage`` (``reader.report(format="html")``: a
``str`` that a notebook renders, sandboxed) and the summary of a session shown by the
``repr`` of a ``Reader`` and of a DB-API ``Connection``: its tables, the privacy of one
query, the budget, what was spent and the ledger's path. Metadata and accounting only:
never a data value. And the progress bar of ``reader.progress = True``: tqdm's
notebook-aware bar (a widget in Jupyter, a line on stderr in a terminal), and ``Progress``,
which polls the engine while a query reads the data.
"""
from __future__ import annotations

import html
import re
import threading

__all__ = ["HTMLPage", "Progress", "Text", "progress_bar", "progress_callback", "session_fields",
           "session_html", "session_summary"]


class Text(str):
    """Plain text (equal to the same ``str``) shown in a notebook as a preformatted block."""

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        longest = max((len(run) for run in re.findall(r"`+", self)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}text\n{self}\n{fence}\n"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str.__str__(self))}</pre>"


class HTMLPage(str):
    """A whole HTML document (equal to the same ``str``), rendered by a notebook in a
    sandboxed frame: its styles and its Content-Security-Policy stay inside it."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return (f'<iframe sandbox="" srcdoc="{html.escape(str.__str__(self), quote=True)}" '
                'style="width:100%;height:32em;border:1px solid #ccc;resize:vertical">'
                "</iframe>")


def _pair(kind: str, value, delta) -> str:
    return f"{kind}={value:g}, delta={delta:g}"


def _privacy(p) -> str:
    if getattr(p, "rho", None) is not None:
        return _pair("rho", p.rho, p.delta)
    return _pair("epsilon", p.epsilon, p.delta)


def _budget(b) -> str:
    if b is None:
        return "none (spending tracked, not limited)"
    if b.accountant in ("pld", "rdp"):
        return f"{_privacy(b)} composed by the {b.accountant.upper()} accountant"
    return _privacy(b)


def session_fields(reader) -> list:
    """(label, text) of a reader's session: tables, privacy, budget, spent, ledger."""
    accountant = reader.accountant
    try:
        spent = _pair("epsilon", *accountant.spent)
        budget = _budget(accountant.budget)
    except Exception as err:    # a ledger that cannot be read: a repr must not raise
        spent = budget = f"unavailable ({type(err).__name__})"
    fields = [("tables", ", ".join(reader.metadata.tables) or "none"),
              ("privacy per query", _privacy(reader.privacy)),
              ("budget", budget), ("spent", spent)]
    ledger = accountant.ledger
    if ledger is not None:
        fields.append(("ledger", str(getattr(ledger, "path", ledger))))
    return fields


def session_summary(reader) -> str:
    """One line: ``tables: ...; privacy per query: ...; budget: ...; spent: ...``."""
    return "; ".join(f"{label}: {text}" for label, text in session_fields(reader))


def session_html(title: str, reader) -> str:
    rows = "".join(f"<tr><th style=\"text-align:left\">{html.escape(label)}</th>"
                   f"<td style=\"text-align:left\">{html.escape(text)}</td></tr>"
                   for label, text in session_fields(reader))
    return f"<div><strong>{html.escape(title)}</strong><table>{rows}</table></div>"


PROGRESS_LABEL = "dpsql: reading the data"


def progress_bar(label: str = PROGRESS_LABEL):
    """A ``reader.progress`` callback that draws tqdm's bar (``tqdm.auto``: a widget in a
    Jupyter notebook, a line on stderr in a terminal), from 0 to 100%, removed when the
    query is done (``None``). tqdm is imported at the first percentage, that is, only once
    a query has read data for a second."""
    state: dict = {}

    def show(percent) -> None:
        bar = state.get("bar")
        if percent is None:
            if bar is not None:
                bar.close()
                state.clear()
            return
        if bar is None:
            from tqdm.auto import tqdm
            bar = state["bar"] = tqdm(total=100, desc=label, leave=False, unit="%",
                                      bar_format="{desc}: {percentage:3.0f}%|{bar}| "
                                                 "[{elapsed}<{remaining}]")
            if isinstance(getattr(bar, "nrows", None), int) and bar.nrows <= 0:
                bar.ncols, bar.nrows = 80, 24    # a terminal that reports no size: tqdm
                                                 # would draw nothing
        bar.n = min(max(float(percent), 0.0), 100.0)
        bar.refresh()
    return show


def progress_callback(progress):
    """What ``reader.progress`` asks for, as a callback or None: True is tqdm's bar
    (``progress_bar``), a callable is called with the percentage, None/False is nothing."""
    if progress is True:
        return progress_bar()
    if progress is None or progress is False or callable(progress):
        return progress or None
    from ..errors import ProgrammingError
    raise ProgrammingError(f"reader.progress takes True (a progress bar: a widget in a "
                           f"notebook, stderr in a terminal), a callable or None, not "
                           f"{type(progress).__name__}")


class Progress:
    """Polls the engine's progress every quarter second after the first second of a run,
    telling ``callback``; says None at the end if it said anything. No callback, or an
    engine without progress (PostgreSQL, Spark): nothing happens."""

    def __init__(self, engine, callback) -> None:
        self.engine, self.callback = engine, callback
        self.done = threading.Event()
        self.told = False

    def __enter__(self):
        if self.callback is not None and hasattr(self.engine, "progress"):
            self.thread = threading.Thread(target=self._poll, daemon=True)
            self.thread.start()
        return self

    def _poll(self) -> None:
        if self.done.wait(1.0):
            return
        while not self.done.wait(0.25):
            value = self.engine.progress()
            if value is not None:
                self.told = True
                self.callback(value)

    def __exit__(self, *exc) -> None:
        self.done.set()
        if getattr(self, "thread", None) is not None:
            self.thread.join()
            if self.told:
                self.callback(None)
