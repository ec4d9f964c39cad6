"""dpsql serve: the privacy boundary reached over the PostgreSQL wire protocol."""
