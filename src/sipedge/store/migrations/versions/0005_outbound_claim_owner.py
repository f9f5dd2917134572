"""Outbound calls name the dialer that holds them and when it last said it is alive.

A dialer that dies (crash, lost node) leaves its calls claimed and unfinished; another dialer
finds them by their stale heartbeat and ends them ("failed", reason "edge lost").

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 09:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbound_calls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimed_by", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_outbound_calls_claimed_by", ["claimed_by"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("outbound_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_outbound_calls_claimed_by")
        batch_op.drop_column("heartbeat_at")
        batch_op.drop_column("claimed_by")
