"""Trunks keep their streak of consecutive carrier failures next to their health.

Health is applied to the stored state in the transaction that writes it (rows locked on
PostgreSQL), so several nodes' outcomes add up; the streak must live in the row for that.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 10:15:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("trunks", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("health_failures", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("trunks", schema=None) as batch_op:
        batch_op.drop_column("health_failures")
