"""Storage: SQLAlchemy models, repositories and Alembic migrations (used by api/ and runtime/)."""
