"""Request and response schemas, kept apart from the ORM rows."""
