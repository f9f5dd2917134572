"""Call status webhooks (issue 6): the durable outbox and the per-account signing secrets.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 02:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _row_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "webhook_outbox",
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=36), nullable=False),
        sa.Column("account_key", sa.String(length=110), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(length=36), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        *_row_columns(),
        sa.CheckConstraint(
            "state IN ('pending', 'delivered', 'failed')", name=op.f("ck_webhook_outbox_state")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_outbox")),
    )
    with op.batch_alter_table("webhook_outbox", schema=None) as batch_op:
        batch_op.create_index("uq_webhook_outbox_run_seq", ["run_id", "seq"], unique=True)
        batch_op.create_index(
            "ix_webhook_outbox_state_due", ["state", "next_attempt_at"], unique=False
        )
    op.create_table(
        "webhook_secrets",
        sa.Column("account_key", sa.String(length=110), nullable=False),
        sa.Column("secret", sa.String(length=100), nullable=False),
        *_row_columns(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_secrets")),
        sa.UniqueConstraint("account_key", name=op.f("uq_webhook_secrets_account_key")),
    )


def downgrade() -> None:
    op.drop_table("webhook_secrets")
    with op.batch_alter_table("webhook_outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_outbox_state_due")
        batch_op.drop_index("uq_webhook_outbox_run_seq")
    op.drop_table("webhook_outbox")
