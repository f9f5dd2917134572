"""Outbound calls placed through `POST /call` (issue 5).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 02:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUSES = (
    "status IN ('queued', 'scheduled', 'ringing', 'in-progress', 'completed', 'busy', "
    "'no-answer', 'failed', 'canceled')"
)


def upgrade() -> None:
    op.create_table(
        "outbound_calls",
        sa.Column("agent_id", sa.String(length=36), nullable=False),
        sa.Column("trunk_id", sa.String(length=36), nullable=False),
        sa.Column("number_id", sa.String(length=36), nullable=False),
        sa.Column("from_number", sa.String(length=20), nullable=False),
        sa.Column("to_number", sa.String(length=20), nullable=False),
        sa.Column("user_data", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("hangup_requested", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("final_sip_code", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("carrier_call_id", sa.String(length=255), nullable=True),
        sa.Column("agent_call_id", sa.String(length=255), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("organization_id", sa.String(length=100), nullable=True),
        sa.Column("sub_account_id", sa.String(length=100), nullable=True),
        sa.Column("user_id", sa.String(length=100), nullable=True),
        sa.CheckConstraint(STATUSES, name=op.f("ck_outbound_calls_status")),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_outbound_calls_agent_id_agents")
        ),
        sa.ForeignKeyConstraint(
            ["number_id"],
            ["trunk_numbers.id"],
            name=op.f("fk_outbound_calls_number_id_trunk_numbers"),
        ),
        sa.ForeignKeyConstraint(
            ["trunk_id"], ["trunks.id"], name=op.f("fk_outbound_calls_trunk_id_trunks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbound_calls")),
    )
    with op.batch_alter_table("outbound_calls", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_outbound_calls_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_outbound_calls_user_id"), ["user_id"], unique=False)
        batch_op.create_index(
            "ix_outbound_calls_status_scheduled", ["status", "scheduled_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("outbound_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_outbound_calls_status_scheduled")
        batch_op.drop_index(batch_op.f("ix_outbound_calls_user_id"))
        batch_op.drop_index(batch_op.f("ix_outbound_calls_organization_id"))
    op.drop_table("outbound_calls")
