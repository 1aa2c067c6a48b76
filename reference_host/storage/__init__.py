"""The host's SQLite database (database): installed plugins, their enabled flag and revision."""
