"""The PostgreSQL engine: its dialect (``dialect``) and its runner (``engine``)."""
