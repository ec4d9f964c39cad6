"""No module of dpsql may draw floating-point noise or use a seeded generator.

Floating-point noise (numpy's laplace/normal, random.gauss, ``scale * log(u)``
from a float uniform) leaks the true value through its low bits; a seeded
generator is predictable. All noise comes from ``dpsql.mechanisms.samplers`` (exact integer
samplers over os.urandom). The checker walks each module's syntax tree; the
first tests show that it catches each pattern it is meant to catch. Functions
of dpsql must not take the names in FLOAT_NOISE (e.g. call an exponential
mechanism ``exponential_mechanism``, not ``exponential``).
"""
import ast
import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "dpsql"

FLOAT_NOISE = {
    "laplace", "normal", "standard_normal", "gauss", "normalvariate", "exponential",
    "standard_exponential", "expovariate", "lognormal", "lognormvariate", "gumbel", "logistic",
    "cauchy", "standard_cauchy", "standard_t", "standard_gamma", "gammavariate",
    "betavariate", "weibull", "weibullvariate", "vonmises", "triangular", "rayleigh",
    "wald", "chisquare", "randn", "rand", "random_sample", "uniform", "random",
    "multivariate_normal", "default_rng", "RandomState", "Generator", "SystemRandom",
}
SEEDED_MODULES = {"random", "numpy.random"}


def violations(source: str, name: str = "<snippet>") -> list[str]:
    """Every float-noise call, import of a PRNG module, or use of np.random."""
    found = []
    tree = ast.parse(source, name)
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in SEEDED_MODULES:
                    found.append(f"{where}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.module in SEEDED_MODULES or (node.module == "numpy" and any(
                    a.name == "random" for a in node.names)):
                found.append(f"{where}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and node.attr == "random" and isinstance(
                node.value, ast.Name) and node.value.id in ("np", "numpy"):
            found.append(f"{where}: {node.value.id}.random")
        elif isinstance(node, ast.Call):
            func = node.func
            called = (func.attr if isinstance(func, ast.Attribute)
                      else func.id if isinstance(func, ast.Name) else None)
            if called in FLOAT_NOISE:
                found.append(f"{where}: call of {called}()")
    return found


BAD_SNIPPETS = [
    "import numpy as np\nx = np.random.laplace(0, 1, 10)",
    "import numpy\nx = numpy.random.normal(size=3)",
    "from numpy.random import laplace\nx = laplace(0, 1)",
    "from numpy import random\nx = random.standard_normal(3)",
    "import random\nx = random.gauss(0, 1)",
    "import random as r\nx = r.expovariate(1.0)",
    "from random import normalvariate",
    "import numpy as np\nrng = np.random.default_rng(7)\nx = rng.normal(0, 1)",
    "def f(rng):\n    return rng.exponential(2.0, 5)",
    "def f(rng):\n    return 3 * rng.laplace(0, 1)",
    "def f(g):\n    return g.standard_normal(4)",
]


@pytest.mark.parametrize("snippet", BAD_SNIPPETS)
def test_checker_catches_float_noise(snippet):
    assert violations(snippet)


def test_checker_accepts_exact_noise():
    clean = ("import os\nimport numpy as np\nfrom dpsql import noise\n"
             "x = noise.discrete_laplace(2.0, 10)\ny = noise.discrete_gaussian(3.0, 10)\n"
             "b = np.frombuffer(os.urandom(8), np.uint64)\nm = Mechanism.laplace\n")
    assert violations(clean) == []


def test_no_module_of_dpsql_draws_float_noise():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert any(p.name == "noise.py" for p in modules)
    found = [v for p in modules for v in violations(p.read_text(), str(p.relative_to(PACKAGE)))]
    assert found == [], "floating-point or seeded randomness in dpsql:\n" + "\n".join(found)
