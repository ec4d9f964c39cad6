"""The embedded DuckDB engine: its dialect (``dialect``) and its runner (``engine``)."""
