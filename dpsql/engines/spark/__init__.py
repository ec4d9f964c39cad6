"""The Spark engine: dialect (the plan in Spark SQL) and engine (dpsql's session on a cluster)."""
