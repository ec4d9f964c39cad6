"""The data owner's deployment file: what ``dpsql serve`` serves, to whom, and how.

Owns: reading and checking ``deployment.yaml`` into a ``Deployment``. Everything an
analyst could want to change (metadata, data, ledger, budgets, caps, TLS) lives
here, in the owner's file; nothing sent over a connection changes any of it.
Relative paths are relative to the file. Unknown keys are errors (an allow-list:
a misspelt ``tls`` must not silently turn TLS off). docs/deployment.md documents
the format.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import yaml

from ..errors import ProgrammingError
from ..privacy.params import Budget, Privacy
from .scram import Verifier, parse_verifier

TOP_KEYS = {"metadata", "tables", "database", "spark", "ledger", "audit_log", "listen", "tls", "privacy",
            "limits", "analysts"}
LIMITS = {"statement_timeout_s": 60.0, "max_sessions": 64, "max_message_bytes": 1 << 20,
          "workers": 4, "max_sessions_per_analyst": 16, "idle_timeout_s": 3600.0,
          "statements_per_analyst": 1, "max_statement_bytes": 100_000,
          "auth_timeout_s": 10.0, "max_unauthenticated": 64,
          "max_unauthenticated_per_address": 8, "max_prepared": 256,
          "max_prepared_bytes": 8 << 20, "max_portals": 64, "statement_memory_mb": 1024,
          "max_portal_bytes": 16 << 20}
"""docs/deployment.md ("Limits"): what each bounds, and why these defaults."""
PERIOD = re.compile(r"^(\d+)\s*([dhw])$")
PERIOD_SECONDS = {"h": 3600, "d": 86400, "w": 7 * 86400}


class ConfigError(ProgrammingError):
    """The deployment file is wrong: says where and what to write instead."""


@dataclass(frozen=True)
class Analyst:
    """One analyst: SCRAM verifier, budget pool, optional per-query cap and renewal."""

    name: str
    verifier: Verifier = field(repr=False)
    budget: Budget
    per_query: dict | None = None      # the most one query may ask: epsilon, delta, rho
    renewal_s: int | None = None


@dataclass(frozen=True)
class SparkSource:
    """The ``spark:`` section: where the server's one SparkSession runs, with what settings."""

    master: str
    conf: dict                          # Spark property -> its value as text


@dataclass(frozen=True)
class Deployment:
    path: str
    metadata: str
    tables: dict | None
    database: str | None
    ledger_dir: str
    audit_log: str
    host: str | None
    port: int
    unix_socket: str | None
    certificate: str | None
    key: str | None
    privacy: Privacy
    limits: dict
    analysts: dict
    spark: SparkSource | None = None    # the Spark session that holds the data, if any

    @property
    def tls(self) -> bool:
        return self.certificate is not None


def load(path: str) -> Deployment:
    """The checked deployment at ``path`` (a ``ConfigError`` naming the key otherwise)."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the deployment file ({err.strerror})") from None
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"{path}:{line}: not valid YAML") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a deployment file is a mapping (metadata:, tables:, ...)")
    unknown = sorted(set(map(str, raw)) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; the keys are "
                          f"{', '.join(sorted(TOP_KEYS))}")
    base = os.path.dirname(os.path.abspath(path))
    return _deployment(path, base, raw)


def _deployment(path: str, base: str, raw: dict) -> Deployment:
    where = lambda key: f"{path}: {key}"  # noqa: E731
    metadata = _file(base, _required(raw, "metadata", path), where("metadata"))
    tables, database, spark = _data(raw, base, path)
    ledger_dir = _abs(base, _required(raw, "ledger", path))
    if os.path.exists(ledger_dir) and not os.path.isdir(ledger_dir):
        raise ConfigError(f"{where('ledger')}: must be a directory (one ledger file per "
                          "analyst goes there)")
    audit = _abs(base, _required(raw, "audit_log", path))
    host, port, socket_dir = _listen(raw.get("listen"), base, where("listen"))
    cert, key = _tls(raw.get("tls", "required"), base, socket_dir, where("tls"))
    privacy = _privacy(raw.get("privacy") or {"epsilon": 1.0}, where("privacy"))
    limits = _limits(raw.get("limits") or {}, where("limits"))
    analysts = _analysts(raw.get("analysts"), where("analysts"))
    return Deployment(path, metadata, tables, database, ledger_dir, audit, host, port,
                      socket_dir, cert, key, privacy, limits, analysts, spark)


def _required(raw: dict, key: str, path: str):
    if raw.get(key) in (None, ""):
        raise ConfigError(f"{path}: {key}: is required")
    return raw[key]


def _abs(base: str, value) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"expected a path, got {type(value).__name__}")
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))


def _file(base: str, value, where: str) -> str:
    path = _abs(base, value)
    if not os.path.isfile(path):
        raise ConfigError(f"{where}: file not found: {path}")
    return path


def _data(raw: dict, base: str, path: str) -> tuple:
    """(tables, database, spark): exactly one data source."""
    tables, database, spark = raw.get("tables"), raw.get("database"), raw.get("spark")
    if spark is not None:
        if database is not None:
            raise ConfigError(f"{path}: spark: and database: are two data sources; give one "
                              "(with spark:, tables: maps schema.table to Parquet data and "
                              "other tables are read from the Spark catalog)")
        return spark_tables(tables, base, path), None, spark_source(spark, f"{path}: spark")
    if (tables is None) == (database is None):
        raise ConfigError(f"{path}: give exactly one of tables: (schema.table: file.csv or "
                          ".parquet), database: (a DuckDB file or a postgresql:// URL) or "
                          "spark: (a Spark master and settings, with tables: Parquet data)")
    if isinstance(database, str) and database.startswith(("postgresql://", "postgres://")):
        if ":" in database.split("://", 1)[1].split("@", 1)[0] and "@" in database:
            raise ConfigError(f"{path}: database: keep the password out of the file: libpq "
                              "reads it from PGPASSWORD or ~/.pgpass")
        return None, database, None
    if database is not None:
        return None, _file(base, database, f"{path}: database"), None
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f"{path}: tables: maps schema.table to a .csv or .parquet file")
    return {str(name): _file(base, file, f"{path}: tables: {name}")
            for name, file in tables.items()}, None, None


SPARK_MASTER = re.compile(r"^(local(\[(\d+|\*)(,\s*\d+)?\])?|yarn|[a-z][a-z0-9+.-]*://\S+)$")


def spark_source(raw, where: str) -> SparkSource:
    """The ``spark:`` section: ``master`` (default local[*]) and ``conf`` (Spark properties)."""
    if not isinstance(raw, dict) or set(map(str, raw)) - {"master", "conf"}:
        raise ConfigError(f"{where}: takes master (local[2], spark://host:7077, yarn, "
                          "k8s://...) and conf (a mapping of Spark properties, spark.x: value)")
    master = raw.get("master", "local[*]")
    if not isinstance(master, str) or not SPARK_MASTER.match(master.strip()):
        raise ConfigError(f"{where}: master: not a Spark master URL; write local[2] (this "
                          "machine, 2 threads), spark://host:7077, yarn or k8s://https://host")
    conf = raw.get("conf") or {}
    if not isinstance(conf, dict):
        raise ConfigError(f"{where}: conf: is a mapping of Spark properties "
                          "(spark.executor.memory: 4g)")
    from ..engines.spark.engine import SETTINGS    # dpsql's own, set on its session
    out = {}
    for key, value in conf.items():
        key = str(key)
        if not key.startswith("spark."):
            raise ConfigError(f"{where}: conf: {key}: a Spark property starts with spark.")
        if key in SETTINGS:
            raise ConfigError(f"{where}: conf: {key}: dpsql sets this property itself (its "
                              "answers depend on it); remove it")
        if isinstance(value, (dict, list)) or value is None:
            raise ConfigError(f"{where}: conf: {key}: give one value (text, a number, true "
                              "or false)")
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return SparkSource(master.strip(), out)


def spark_tables(raw, base: str, path: str) -> dict | None:
    """With ``spark:``, ``tables:`` (optional) maps schema.table to Parquet data: a file or
    directory (relative to the deployment file), or a URL of the cluster's file system."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: tables: maps schema.table to Parquet data (a file, a "
                          "directory or an hdfs://, s3a://, ... URL); leave it out to read "
                          "every table from the Spark catalog")
    out = {}
    for name, value in raw.items():
        where = f"{path}: tables: {name}"
        if isinstance(value, str) and "://" in value:
            out[str(name)] = value
            continue
        found = _abs(base, value)
        if not os.path.exists(found):
            raise ConfigError(f"{where}: not found: {found}")
        if found.lower().endswith(".csv"):
            raise ConfigError(f"{where}: Spark reads Parquet data here; convert the CSV "
                              "file to Parquet, or serve it without spark:")
        out[str(name)] = found
    return out


def _listen(raw, base: str, where: str) -> tuple:
    raw = raw or {}
    if not isinstance(raw, dict) or set(raw) - {"host", "port", "unix_socket"}:
        raise ConfigError(f"{where}: takes host, port and unix_socket (a directory)")
    port = raw.get("port", 5433)
    if not isinstance(port, int) or not 0 <= port < 65536:
        raise ConfigError(f"{where}: port must be an integer from 0 to 65535")
    socket_dir = _abs(base, raw["unix_socket"]) if raw.get("unix_socket") else None
    if socket_dir is not None and not os.path.isdir(socket_dir):
        raise ConfigError(f"{where}: unix_socket: directory not found: {socket_dir}")
    host = raw.get("host")
    if host is None and socket_dir is None:
        host = "127.0.0.1"
    if host is not None and not isinstance(host, str):
        raise ConfigError(f"{where}: host must be a host name or address")
    return host, port, socket_dir


def _tls(raw, base: str, socket_dir, where: str) -> tuple:
    if raw is False or raw == "off":
        if socket_dir is None:
            raise ConfigError(f"{where}: TLS can be turned off only for a unix socket "
                              "(listen: unix_socket:); on TCP give certificate and key")
        return None, None
    if not isinstance(raw, dict) or set(raw) != {"certificate", "key"}:
        raise ConfigError(f"{where}: give certificate: and key: (PEM files), or tls: off for a "
                          "unix socket")
    return _file(base, raw["certificate"], where + ": certificate"), _file(
        base, raw["key"], where + ": key")


def _privacy(raw, where: str) -> Privacy:
    if not isinstance(raw, dict) or set(raw) - {"epsilon", "delta", "rho"}:
        raise ConfigError(f"{where}: takes epsilon, delta (or rho)")
    try:
        return Privacy(**raw)
    except ProgrammingError as err:
        raise ConfigError(f"{where}: {err}") from None


def _limits(raw, where: str) -> dict:
    if not isinstance(raw, dict) or set(raw) - set(LIMITS):
        raise ConfigError(f"{where}: takes {', '.join(LIMITS)}")
    out = dict(LIMITS)
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value > 0):
            raise ConfigError(f"{where}: {key} must be a positive number")
        out[key] = type(LIMITS[key])(value)
    return out


def _analysts(raw, where: str) -> dict:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: list at least one analyst (name: {{password: "
                          "SCRAM-SHA-256$..., budget: {epsilon: ...}})")
    return {str(name): _analyst(str(name), spec, f"{where}: {name}") for name, spec in raw.items()}


def _analyst(name: str, spec, where: str) -> Analyst:
    keys = {"password", "budget", "per_query", "renewal"}
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,62}", name):
        raise ConfigError(f"{where}: an analyst name is letters, digits, _ . - (it names "
                          "their ledger file)")
    if not isinstance(spec, dict) or set(spec) - keys or "password" not in spec \
            or "budget" not in spec:
        raise ConfigError(f"{where}: takes password (a SCRAM-SHA-256 verifier: dpsql serve "
                          "--hash-password), budget, and optionally per_query and renewal")
    try:
        verifier = parse_verifier(str(spec["password"]))
    except ProgrammingError as err:
        raise ConfigError(f"{where}: password: {err}; store a verifier, never a password "
                          "(dpsql serve --hash-password)") from None
    try:
        budget = Budget(**spec["budget"]) if isinstance(spec["budget"], dict) else None
    except (ProgrammingError, TypeError) as err:
        raise ConfigError(f"{where}: budget: {err}") from None
    if budget is None:
        raise ConfigError(f"{where}: budget is a mapping ({{epsilon: 3.0, delta: 1e-6}})")
    cap = _cap(spec.get("per_query"), f"{where}: per_query")
    return Analyst(name, verifier, budget, cap, _period(spec.get("renewal"), where))


def _cap(raw, where: str) -> dict | None:
    """The per-query cap: the most any one query may ask (the keys given only)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw or set(raw) - {"epsilon", "delta", "rho"}:
        raise ConfigError(f"{where}: takes epsilon, delta and/or rho ({{epsilon: 1.0}})")
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value > 0):
            raise ConfigError(f"{where}: {key} must be a positive number")
    return {k: float(v) for k, v in raw.items()}


def _period(raw, where: str) -> int | None:
    if raw is None:
        return None
    found = PERIOD.match(str(raw).strip())
    if not found or int(found.group(1)) == 0:
        raise ConfigError(f"{where}: renewal is a period like 30d, 12h or 1w")
    return int(found.group(1)) * PERIOD_SECONDS[found.group(2)]
