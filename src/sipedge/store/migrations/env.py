"""Alembic environment: run by `sipedge.store.migrate`, which hands over a live connection.

No alembic.ini is needed: the Config is built in code (see migrate.py), so an installed package
can migrate itself.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from sipedge.store.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "sipedge migrations run through sipedge.store.migrate (or `sipedge db upgrade`)"
        )
    _configure(connection)


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run()
