"""The full agent configuration (issue 6): the seed's agent fields, status and config version.

Existing agents (made before the agent API, e.g. by tests or the CLI) get an empty configuration:
no tasks, no prompts, an empty welcome message, `agent_type` `other`, status `seeding`.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 01:15:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GUARDRAILS = (
    "(call_start_hour IS NULL AND call_end_hour IS NULL) OR "
    "(call_start_hour IS NOT NULL AND call_end_hour IS NOT NULL AND call_start_hour >= 0 "
    "AND call_end_hour <= 23 AND call_end_hour >= call_start_hour)"
)
# NOT NULL columns get a server default only while existing rows are filled in.
FILLED = {
    "agent_type": "other",
    "agent_welcome_message": "",
    "agent_status": "seeding",
    "config_version": "1",
    "call_summary_enabled": sa.false(),
    "tasks": "[]",
    "agent_prompts": "{}",
}


def upgrade() -> None:
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("agent_type", sa.String(length=50), nullable=False, server_default="other")
        )
        batch_op.add_column(
            sa.Column("agent_welcome_message", sa.Text(), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("webhook_url", sa.String(length=2048), nullable=True))
        batch_op.add_column(
            sa.Column(
                "agent_status", sa.String(length=20), nullable=False, server_default="seeding"
            )
        )
        batch_op.add_column(
            sa.Column("config_version", sa.Integer(), nullable=False, server_default="1")
        )
        batch_op.add_column(
            sa.Column(
                "call_summary_enabled", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
        batch_op.add_column(sa.Column("call_start_hour", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("call_end_hour", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("tasks", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.add_column(
            sa.Column("agent_prompts", sa.JSON(), nullable=False, server_default="{}")
        )
        batch_op.add_column(sa.Column("ingest_source_config", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("synthesizer", sa.JSON(), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_agents_agent_status"), "agent_status IN ('seeding', 'processed')"
        )
        batch_op.create_check_constraint(op.f("ck_agents_calling_guardrails"), GUARDRAILS)
    with op.batch_alter_table("agents", schema=None) as batch_op:
        for column in FILLED:
            batch_op.alter_column(column, server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_agents_calling_guardrails"), type_="check")
        batch_op.drop_constraint(op.f("ck_agents_agent_status"), type_="check")
        for column in (
            "synthesizer",
            "ingest_source_config",
            "agent_prompts",
            "tasks",
            "call_end_hour",
            "call_start_hour",
            "call_summary_enabled",
            "config_version",
            "agent_status",
            "webhook_url",
            "agent_welcome_message",
            "agent_type",
        ):
            batch_op.drop_column(column)
