"""Step 3: from a validated query to a bounded, costed plan.

The package follows the pipeline: ``relations`` turns the query's FROM (tables,
CTEs, subqueries, per-person aggregation) into a relation whose every column
carries a type and bounds; ``bounds`` derives those bounds from the metadata
and the query text; ``lift`` moves expressions inside aggregates and public
group keys into columns of that relation; ``aggregate`` builds the final DP
aggregation over it and computes the cost before anything runs. The plan is
one engine-neutral sqlglot tree; what engines spell differently (sampling k rows per
person, ranking a person's groups) is a node of ``plan.nodes`` that each engine's dialect
compiles (``plan.dialect``).
"""
from .aggregate import NOISY_TABLE, Plan, build_plan, key_output, metadata_types

__all__ = ["NOISY_TABLE", "Plan", "build_plan", "key_output", "metadata_types"]
