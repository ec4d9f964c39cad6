"""What one SQL statement from a client does: the server's dispatch, one statement at a time.

Owns: the meaning of a statement received over the wire, and the SQLSTATE of every
failure. Transaction and session commands (BEGIN, SET, SHOW, RESET, DISCARD) act on
the connection's settings only; catalog queries go to the metadata-only catalog
(``dpsql.server.catalog``) and cost nothing; ``EXPLAIN q`` is dpsql's explain; any
other statement is a dpsql query of the analyst's account, at the session's
privacy (``SET dpsql.epsilon = 0.5``), which may never exceed the owner's per-query cap.
Runs in a worker thread; the connection (``dpsql.server.connection``) encodes the result.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from .. import errors
from ..privacy.params import Privacy
from .catalog import PARAMETERS, SETTINGS
from .timeouts import duration
from .catalog_build import DPSQL_SETTINGS
from .lexing import split_statements, strip, unquoted, without_comments  # noqa: F401 - split_statements: its users import it here

# Matched against the statement without its trailing ";" and blanks (``_bare``): no
# pattern has two quantifiers that can share a run of characters, so each is linear in
# the statement's length (``(.+?)\s*;?\s*$`` had taken minutes on 10,000 blanks).
_SET = re.compile(r"^set\s+(session\s+|local\s+)?([a-z_][a-z0-9_.]*)(?:\s*=\s*|\s+to\s+)(.+)$",
                  re.S | re.I)
_SET_TZ = re.compile(r"^set\s+(session\s+|local\s+)?time\s+zone\s+(.+)$", re.S | re.I)
_SHOW = re.compile(r"^show\s+([a-z_][a-z0-9_. ]*)$", re.S | re.I)
_RESET = re.compile(r"^reset\s+([a-z_][a-z0-9_.]*|all)$", re.S | re.I)
CLIENT_SETTINGS = {"application_name", "client_encoding", "datestyle", "timezone",
                   "extra_float_digits", "search_path", "statement_timeout", "intervalstyle",
                   "client_min_messages", "standard_conforming_strings", "bytea_output",
                   "lc_monetary", "lc_numeric", "lc_time", "default_transaction_isolation",
                   "transaction_isolation", "idle_in_transaction_session_timeout",
                   "lock_timeout", "jit", "geqo", "transaction_read_only"}
MAX_SETTING_CHARS = 1024
FIXED = {"client_encoding": {"utf8", "unicode", "'utf8'", "'unicode'"},
         "standard_conforming_strings": {"on", "'on'"}}


class ServerError(errors.OperationalError):
    """A statement refused by the server itself, with its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


@dataclass
class Result:
    """Columns ((name, type name) pairs; none for a command), rows, and the command tag."""

    tag: str
    columns: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    cost: tuple | None = None
    size: int = 0                   # bytes the rows hold (DataRow messages, encoded by the worker)
    notice: str | None = None       # a WARNING sent before the command's completion
    notice_code: str = "25P01"      # its SQLSTATE


@dataclass
class SessionState:
    """One connection's analyst, settings and transaction state."""

    account: object
    catalog: object
    client: str = ""
    database: str | None = None                     # the startup message's, for the catalog
    settings: dict = field(default_factory=dict)
    in_transaction: bool = False
    saved: dict = field(default_factory=dict)       # the settings at BEGIN
    local: dict = field(default_factory=dict)       # SET LOCAL: name -> the value before
    aborted: bool = False           # a statement failed in the transaction (25P02 until it ends)
    savepoints: list = field(default_factory=list)  # (name, settings, local), oldest first
    cancel: threading.Event = field(default_factory=threading.Event)
    cancel_requested: bool = False      # a cancel that came before the worker took over

    @property
    def user(self) -> str:
        return self.account.analyst.name

    def privacy(self, default: Privacy) -> Privacy:
        """The privacy of this session's next query: the owner's default, as SET changes it."""
        values = {k.split(".")[1]: self.settings[k] for k in DPSQL_SETTINGS if k in self.settings}
        if not values:
            return default
        if "rho" in values:
            return Privacy(rho=values["rho"], delta=values.get("delta", default.delta))
        return Privacy(epsilon=values.get("epsilon", default.epsilon if default.rho is None else 1.0),
                       delta=values.get("delta", default.delta))


def _bare(text: str) -> str:
    """A stripped statement without its trailing semicolons."""
    return text.rstrip().rstrip(";").rstrip()


def first_word(sql: str) -> str:
    found = re.match(r"[A-Za-z_]+", strip(sql))
    return found.group(0).lower() if found else ""


_COMMANDS = {"begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release",
             "prepare", "set", "reset", "show"}
"""First words whose statement text the commands below read (comments removed first)."""


def session_command(state: SessionState, sql: str, default: Privacy) -> Result | None:
    """The result of a transaction or session command, or None for anything else."""
    word = first_word(sql)
    text = _bare(without_comments(sql).strip()) if word in _COMMANDS else ""
    if state.aborted and word not in ("rollback", "abort", "commit", "end"):
        raise ServerError("current transaction is aborted, commands ignored until end of "
                          "transaction block: ROLLBACK (or ROLLBACK TO a savepoint)", "25P02")
    done = _transaction(state, text, word)
    if done is not None:
        return done
    if word == "copy":
        raise ServerError("COPY is not supported by dpsql serve: it answers aggregate "
                          "queries only (SELECT ... GROUP BY); read the result rows instead",
                          "0A000")
    if word == "set" and _SET_TRANSACTION.match(text):
        return _set_transaction(state, text)
    if word == "set":
        return _set(state, text, default)
    if word == "reset":
        return _reset(state, text)
    if word == "show":
        return _show(state, text, default)
    if word in ("discard", "deallocate", "unlisten", "close"):
        if word == "discard":
            state.settings.clear()
        return Result({"discard": "DISCARD ALL", "close": "CLOSE CURSOR"}.get(word, word.upper()))
    return None


_ROLLBACK_TO = re.compile(r"^rollback\s+(?:work\s+|transaction\s+)?to\s+(?:savepoint\s+)?(.+)$",
                          re.S | re.I)
_RELEASE = re.compile(r"^release\s+(?:savepoint\s+)?(.+)$", re.S | re.I)
_SAVEPOINT = re.compile(r"^savepoint\s+(.+)$", re.S | re.I)
_NAME = re.compile(r'^(?:([a-z_][a-z0-9_$]*)|"((?:[^"]|"")+)")$', re.I)


def _transaction(state: SessionState, text: str, word: str) -> Result | None:
    """BEGIN, COMMIT, ROLLBACK and savepoints, as PostgreSQL runs them on the connection's
    settings (a read-only server has nothing else to undo; a charge is never undone)."""
    if word in ("begin", "start"):
        level = _modes(_BEGIN.sub("", text), "BEGIN")
        if state.in_transaction:
            return Result("BEGIN", notice="there is already a transaction in progress",
                          notice_code="25001")
        state.saved, state.local, state.savepoints = dict(state.settings), {}, []
        state.in_transaction = True
        if level:
            state.local["transaction_isolation"] = state.settings.get("transaction_isolation")
            state.settings["transaction_isolation"] = level
        return Result("BEGIN")
    if re.match(r"(commit|rollback)\s+prepared\b|prepare\s+transaction\b", text, re.I):
        raise ServerError("prepared transactions are disabled: dpsql serve is read only",
                          "55000")
    if word in ("savepoint", "release") or (word == "rollback" and _ROLLBACK_TO.match(text)):
        return _savepoint(state, text, word)
    if word in ("commit", "end", "rollback", "abort"):
        if not state.in_transaction:
            return Result("ROLLBACK" if word in ("rollback", "abort") else "COMMIT",
                          notice="there is no transaction in progress")
        rollback = word in ("rollback", "abort") or state.aborted
        if rollback:
            state.settings = dict(state.saved)
        _end_local(state)
        state.in_transaction, state.aborted, state.savepoints = False, False, []
        return Result("ROLLBACK" if rollback else "COMMIT")
    return None


def _end_local(state: SessionState) -> None:
    for name, before in state.local.items():      # SET LOCAL ends with its transaction
        if before is None:
            state.settings.pop(name, None)
        else:
            state.settings[name] = before
    state.local = {}


def _savepoint(state: SessionState, text: str, word: str) -> Result:
    pattern, what = {"savepoint": (_SAVEPOINT, "SAVEPOINT"), "release": (_RELEASE, "RELEASE"),
                     "rollback": (_ROLLBACK_TO, "ROLLBACK")}[word]
    found = _NAME.match(pattern.match(text).group(1).strip()) if pattern.match(text) else None
    if found is None:
        raise ServerError(f"{what} takes one savepoint name: {what} name", "42601")
    name = found.group(1).lower() if found.group(1) else found.group(2).replace('""', '"')
    if not state.in_transaction:
        shown = {"release": "RELEASE SAVEPOINT", "rollback": "ROLLBACK TO SAVEPOINT"}
        raise ServerError(f"{shown.get(word, 'SAVEPOINT')} can only be used in transaction "
                          "blocks", "25P01")
    if word == "savepoint":
        if len(state.savepoints) >= MAX_SAVEPOINTS:
            raise ServerError(f"too many savepoints in this transaction (at most "
                              f"{MAX_SAVEPOINTS}); RELEASE some", "54000")
        state.savepoints.append((name, dict(state.settings), dict(state.local)))
        return Result("SAVEPOINT")
    names = [kept[0] for kept in state.savepoints]
    if name not in names:
        raise ServerError(f'savepoint "{name}" does not exist', "3B001")
    at = len(names) - 1 - names[::-1].index(name)     # the newest of that name
    if word == "release":
        del state.savepoints[at:]
        return Result("RELEASE")
    _, settings, local = state.savepoints[at]
    state.settings, state.local, state.aborted = dict(settings), dict(local), False
    del state.savepoints[at + 1:]
    return Result("ROLLBACK")


MAX_SAVEPOINTS = 64
"""Each savepoint keeps a copy of the connection's settings (a few dozen short values)."""
_SET_TRANSACTION = re.compile(
    r"^set\s+(session\s+characteristics\s+as\s+)?transaction\s+(.+)$", re.S | re.I)
_MODE = re.compile(r"\s*(isolation\s+level\s+(serializable|repeatable\s+read|read\s+committed|"
                   r"read\s+uncommitted)|read\s+only|read\s+write|(?:not\s+)?deferrable)"
                   r"\s*(?:,|$)", re.I)


def _set_transaction(state: SessionState, text: str) -> Result:
    """SET TRANSACTION and SET SESSION CHARACTERISTICS AS TRANSACTION: every isolation level
    and READ ONLY are what dpsql serve is already (its answers never change within a
    transaction); READ WRITE is refused, as a read-only PostgreSQL standby refuses it."""
    found = _SET_TRANSACTION.match(text)
    session, level = bool(found.group(1)), _modes(found.group(2), "SET TRANSACTION")
    if session:
        if level:
            state.settings["default_transaction_isolation"] = level
        return Result("SET")
    if not state.in_transaction:
        return Result("SET", notice="SET TRANSACTION can only be used in transaction blocks")
    if level:
        state.local.setdefault("transaction_isolation", state.settings.get("transaction_isolation"))
        state.settings["transaction_isolation"] = level
    return Result("SET")


_BEGIN = re.compile(r"^(begin|start)(\s+(work|transaction)\b)?", re.I)


def _modes(modes: str, what: str) -> str | None:
    """The isolation level among a transaction's modes (None if not given), or ServerError
    for a mode PostgreSQL does not know (42601) or READ WRITE (25006)."""
    level, at = None, 0
    while at < len(modes.strip()):
        mode = _MODE.match(modes, at)
        if mode is None:
            raise ServerError(f"{what} takes ISOLATION LEVEL ..., READ ONLY or [NOT] "
                              "DEFERRABLE, separated by commas", "42601")
        if " ".join(mode.group(1).lower().split()) == "read write":
            raise ServerError("cannot set transaction read-write mode: dpsql serve is read "
                              "only", "25006")
        level = " ".join(mode.group(2).lower().split()) if mode.group(2) else level
        at = mode.end()
    return level


def opened(account, catalog, client: str, params: dict, default: Privacy) -> SessionState:
    """A new connection's session: its startup ``options`` (``-c name=value``,
    ``--name=value``, as libpq's PGOPTIONS) applied as SETs, and a timeout given as a
    startup parameter, both checked as SET checks them; ServerError if one is refused
    (review 44, F1: ``options=-c statement_timeout=1`` was ignored, even an invalid one)."""
    state = SessionState(account, catalog, client=client,
                         database=params.get("database") or params.get("user"))
    state.interrupt = None
    pairs = [(k, v) for k, v in params.items() if k.lower() in SETTINGS]
    words = re.findall(r"(?:\\.|[^\s\\])+", params.get("options") or "")
    words = [re.sub(r"\\(.)", r"\1", w) for w in words]
    at = 0
    while at < len(words):
        word, at = words[at], at + 1
        if word == "-c" and at < len(words):
            word, at = "-c" + words[at], at + 1
        if not (word.startswith("-c") or word.startswith("--")) or "=" not in word:
            raise ServerError(f"invalid command-line argument for server process: "
                              f"{word[:40]}; give options as -c name=value", "42601")
        name, value = word[2:].split("=", 1)
        pairs.append((name.replace("-", "_"), value))
    for name, value in pairs:
        state.settings[name.lower()] = _value(state, name.lower(), value, default)
    return state


def _set(state: SessionState, text: str, default: Privacy) -> Result:
    tz = _SET_TZ.match(text)
    found = _SET.match(text) if tz is None else None
    if tz is None and found is None:
        raise ServerError("SET takes one name and one value: SET dpsql.epsilon = 0.5",
                          "42601")
    scope, name, value = (tz.group(1), "timezone", tz.group(2)) if tz else \
        (found.group(1), found.group(2).lower(), found.group(3))
    value = value.strip()
    if value.lower() == "default":              # as PostgreSQL: SET x TO DEFAULT is RESET x
        return _reset(state, f"reset {name}", "SET")
    local = (scope or "").strip().lower() == "local"
    if local and not state.in_transaction:     # PostgreSQL: a warning, and no effect
        _value(state, name, value, default)    # still checked, as PostgreSQL does
        return Result("SET", notice="SET LOCAL can only be used in transaction blocks")
    if local:
        state.local.setdefault(name, state.settings.get(name))
    else:
        state.local.pop(name, None)            # a session SET outlasts the transaction
    state.settings[name] = _value(state, name, value, default)
    return Result("SET")


def _value(state: SessionState, name: str, value: str, default: Privacy):
    """The setting's value as stored, or ServerError if it cannot be set to it."""
    if name in DPSQL_SETTINGS:
        number = _number(name, value)
        trial = dict(state.settings, **{name: number})
        # Checked as it is used now and as it would be without rho (which takes precedence):
        # an epsilon is checked whether or not rho is set (review 45, F2).
        without_rho = {k: v for k, v in trial.items() if k != "dpsql.rho"}
        try:
            for settings in (trial, without_rho):
                SessionState(state.account, state.catalog, settings=settings).privacy(default)
        except errors.Error as err:
            raise ServerError(str(err), "22023") from None
        return number
    if name not in CLIENT_SETTINGS:
        raise ServerError(f'unrecognized configuration parameter "{name}"; dpsql sets '
                          f"{', '.join(DPSQL_SETTINGS)} and the usual client parameters", "42704")
    if len(value) > MAX_SETTING_CHARS:      # each savepoint keeps a copy (review 14: 105 MB)
        raise ServerError(f"the value of {name} is too long ({len(value):,} characters; at "
                          f"most {MAX_SETTING_CHARS:,})", "22023")
    value = unquoted(value)
    if name in FIXED and value.lower() not in FIXED[name]:
        raise ServerError(f"{name} can only be {sorted(FIXED[name])[0]} on dpsql", "22023")
    if name in SETTINGS:
        try:
            return duration(name, value)
        except ValueError as err:
            raise ServerError(str(err), "22023") from None
    if name == "application_name":     # as PostgreSQL: printable ASCII, a '?' a byte else
        value = "".join(c if " " <= c <= "~" else "?" * len(c.encode()) for c in value)
    return value


_NUMERIC = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(name: str, value: str) -> float:
    text = unquoted(value)
    # PostgreSQL's numeric syntax only (Python's float() also reads 1_0 and 'infinity')
    number = float(text) if _NUMERIC.fullmatch(text) else float("nan")
    if not number > 0 or number == float("inf"):
        raise ServerError(f"{name} must be a positive number, got {value[:40]}", "22023")
    return number


def _reset(state: SessionState, text: str, tag: str = "RESET") -> Result:
    name = _RESET.match(text)
    if name is None:
        raise ServerError("RESET takes a parameter name or ALL", "42601")
    key = name.group(1).lower()
    if key == "all":
        state.settings.clear()
    else:
        state.settings.pop(key, None)
    return Result(tag)


def _show(state: SessionState, text: str, default: Privacy) -> Result:
    found = _SHOW.match(text)
    if found is None:
        raise ServerError("SHOW takes a parameter name", "42601")
    name = " ".join(found.group(1).lower().split())
    if name == "transaction isolation level":
        name = "transaction_isolation"
    if name in ("dpsql.budget", "dpsql.spent", "dpsql.remaining"):
        return Result("SHOW", [(name, "VARCHAR")], [(_pool(state, name),)])
    if name in DPSQL_SETTINGS and name not in state.settings:    # the session's privacy
        privacy = state.privacy(default)
        value = getattr(privacy, name.split(".")[1])
        return Result("SHOW", [(name, "VARCHAR")], [("" if value is None else _text(value),)])
    known = _KNOWN
    if name == "all":
        rows = sorted((k, _text(setting(state, k)), "") for k in known)
        return Result("SHOW", [("name", "VARCHAR"), ("setting", "VARCHAR"),
                               ("description", "VARCHAR")], rows)
    if name not in state.settings and name not in known:
        raise ServerError(f'unrecognized configuration parameter "{name}"', "42704")
    return Result("SHOW", [(name, "VARCHAR")], [(_text(setting(state, name)),)])


_KNOWN = {k.lower(): v for k, v in {**PARAMETERS, **SETTINGS}.items()}
"""PostgreSQL's reported parameters by lower-case name (SHOW, pg_settings)."""


def setting(state: SessionState, name: str):
    """A setting's value in this session, as SHOW, pg_settings and current_setting() show
    it: outside a transaction's own level, transaction_isolation is the session's
    default_transaction_isolation (as in PostgreSQL)."""
    if state.settings.get(name) is not None:
        return state.settings[name]
    if name == "transaction_isolation" and state.settings.get("default_transaction_isolation"):
        return state.settings["default_transaction_isolation"]
    return _KNOWN.get(name)


def shown_settings(state: SessionState, default: Privacy) -> dict:
    """Every setting this session changed, by lower-case name, as ``setting`` shows it, and
    the session's privacy (``dpsql.*``, as SHOW shows it)."""
    names = set(state.settings) | {"transaction_isolation"}
    shown = {n: _text(setting(state, n)) for n in names if setting(state, n) is not None}
    privacy = state.privacy(default)
    for name in DPSQL_SETTINGS:
        value = getattr(privacy, name.split(".")[1])
        shown[name] = "" if value is None else _text(value)
    return shown


def _text(value) -> str:
    return number_text(value) if isinstance(value, float) else str(value)


def number_text(value: float) -> str:
    """A setting's value as the analyst gave it: short (``5``, ``1e-06``) where that reads
    back as the same number, else every digit (``5.00000000001``), so that SHOW returns what
    SET stored and a refusal never says that 5 is above 5 (review 33)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def _pool(state: SessionState, name: str) -> str:
    account = state.account
    budget = account.analyst.budget
    with account.lock:
        reader = account.reader()
        spent, left, rho = reader.spent, reader.remaining, reader.spent_rho
    if name == "dpsql.budget":
        composed = (f", accountant={budget.accountant}"
                    if budget.accountant in ("pld", "rdp") else "")
        return (f"epsilon={budget.epsilon:g}, delta={budget.delta:g}{composed}"
                if not budget.zcdp else f"rho={budget.rho:g}, delta={budget.delta:g}")
    if name == "dpsql.spent":     # a rho budget's own unit first (its epsilon at its delta)
        return (f"rho={rho:.6g}, " if budget.zcdp else "") + \
            f"epsilon={spent[0]:.6g}, delta={spent[1]:.6g}"
    if budget.zcdp:
        return f"rho={left[0]:.6g}, delta for thresholds={left[1]:.6g}"
    if budget.accountant in ("pld", "rdp"):
        return f"epsilon={left[0]:.6g}, delta for thresholds={left[1]:.6g}"
    return (f"epsilon={max(budget.epsilon - spent[0], 0.0):.6g}, "
            f"delta={max(budget.delta - spent[1], 0.0):.6g}")


SQLSTATES = [
    (errors.BudgetExceededError, "53400"),
    (errors.LedgerError, "58030"),
    (errors.MetadataError, "42P01"),
    (errors.QueryError, "42601"),
    (errors.NotSupportedError, "0A000"),
    (errors.ProgrammingError, "42601"),
    (errors.DataError, "22000"),
    (errors.InterfaceError, "08P01"),
    (errors.OperationalError, "58000"),
    (errors.InternalError, "XX000"),
]


def sqlstate(exc: BaseException) -> str:
    """The SQLSTATE a client is told for ``exc``."""
    code = getattr(exc, "sqlstate", None)
    if isinstance(code, str):
        return code
    if isinstance(exc, errors.QueryError):
        text = str(exc)
        if text.startswith("unknown table"):
            return "42P01"
        if text.startswith("unknown column"):
            return "42703"
    return next((state for kind, state in SQLSTATES if isinstance(exc, kind)), "XX000")
