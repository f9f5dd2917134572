"""Initial schema: tokens, agents, trunks, gateways, carrier IPs, trunk numbers, call records.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 00:48:03.431257
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("agent_name", sa.String(length=200), nullable=False),
        sa.Column("telephony_provider", sa.String(length=20), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("organization_id", sa.String(length=100), nullable=True),
        sa.Column("sub_account_id", sa.String(length=100), nullable=True),
        sa.Column("user_id", sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
    )
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_agents_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_agents_user_id"), ["user_id"], unique=False)

    op.create_table(
        "api_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=100), nullable=False),
        sa.Column("organization_id", sa.String(length=100), nullable=True),
        sa.Column("sub_account_id", sa.String(length=100), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "trunks",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("preset", sa.String(length=20), nullable=True),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("inbound_enabled", sa.Boolean(), nullable=False),
        sa.Column("outbound_enabled", sa.Boolean(), nullable=False),
        sa.Column("channels", sa.Integer(), nullable=False),
        sa.Column("default_inbound_agent_id", sa.String(length=36), nullable=True),
        sa.Column("auth_username", sa.Text(), nullable=True),
        sa.Column("auth_password", sa.Text(), nullable=True),
        sa.Column("transport", sa.String(length=3), nullable=False),
        sa.Column("codecs", sa.String(length=20), nullable=False),
        sa.Column("outbound_leading_plus_enabled", sa.Boolean(), nullable=False),
        sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_outbound_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("converted_from_byot_trunk_id", sa.String(length=100), nullable=True),
        sa.Column("health_state", sa.String(length=20), nullable=False),
        sa.Column("conversion_state", sa.String(length=20), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("organization_id", sa.String(length=100), nullable=True),
        sa.Column("sub_account_id", sa.String(length=100), nullable=True),
        sa.Column("user_id", sa.String(length=100), nullable=True),
        sa.CheckConstraint(
            "conversion_state IN ('none', 'in_progress', 'done')",
            name=op.f("ck_trunks_conversion_state"),
        ),
        sa.CheckConstraint(
            "health_state IN ('waiting_for_carrier', 'ready', 'degraded')",
            name=op.f("ck_trunks_health_state"),
        ),
        sa.CheckConstraint("transport IN ('udp', 'tcp')", name=op.f("ck_trunks_transport")),
        sa.CheckConstraint(
            "channels >= 1 AND channels <= 1000", name=op.f("ck_trunks_channels_range")
        ),
        sa.ForeignKeyConstraint(
            ["default_inbound_agent_id"],
            ["agents.id"],
            name=op.f("fk_trunks_default_inbound_agent_id_agents"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trunks")),
    )
    with op.batch_alter_table("trunks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_trunks_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_trunks_user_id"), ["user_id"], unique=False)

    op.create_table(
        "carrier_ips",
        sa.Column("trunk_id", sa.String(length=36), nullable=False),
        sa.Column("cidr", sa.String(length=50), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["trunk_id"], ["trunks.id"], name=op.f("fk_carrier_ips_trunk_id_trunks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_carrier_ips")),
    )
    with op.batch_alter_table("carrier_ips", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_carrier_ips_trunk_id"), ["trunk_id"], unique=False)
        batch_op.create_index(
            "uq_carrier_ips_live_trunk_cidr",
            ["trunk_id", "cidr"],
            unique=True,
            sqlite_where=sa.text("is_deleted = 0"),
            postgresql_where=sa.text("is_deleted = false"),
        )

    op.create_table(
        "gateways",
        sa.Column("trunk_id", sa.String(length=36), nullable=False),
        sa.Column("host", sa.String(length=253), nullable=False),
        sa.Column("resolved_ips", sa.JSON(), nullable=True),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("port >= 1 AND port <= 65535", name=op.f("ck_gateways_port_range")),
        sa.ForeignKeyConstraint(
            ["trunk_id"], ["trunks.id"], name=op.f("fk_gateways_trunk_id_trunks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gateways")),
    )
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gateways_host"), ["host"], unique=False)
        batch_op.create_index(batch_op.f("ix_gateways_trunk_id"), ["trunk_id"], unique=False)

    op.create_table(
        "trunk_numbers",
        sa.Column("trunk_id", sa.String(length=36), nullable=False),
        sa.Column("e164", sa.String(length=20), nullable=False),
        sa.Column("destination_key", sa.String(length=20), nullable=False),
        sa.Column("agent_id", sa.String(length=36), nullable=True),
        sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_outbound_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_trunk_numbers_agent_id_agents")
        ),
        sa.ForeignKeyConstraint(
            ["trunk_id"], ["trunks.id"], name=op.f("fk_trunk_numbers_trunk_id_trunks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trunk_numbers")),
    )
    with op.batch_alter_table("trunk_numbers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_trunk_numbers_trunk_id"), ["trunk_id"], unique=False)
        batch_op.create_index(
            "uq_trunk_numbers_live_destination_key",
            ["destination_key"],
            unique=True,
            sqlite_where=sa.text("is_deleted = 0"),
            postgresql_where=sa.text("is_deleted = false"),
        )

    op.create_table(
        "call_records",
        sa.Column("run_id", sa.String(length=100), nullable=True),
        sa.Column("trunk_id", sa.String(length=36), nullable=False),
        sa.Column("number_id", sa.String(length=36), nullable=True),
        sa.Column("agent_id", sa.String(length=36), nullable=True),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("from_number", sa.String(length=64), nullable=True),
        sa.Column("to_number", sa.String(length=64), nullable=True),
        sa.Column("carrier_call_id", sa.String(length=255), nullable=True),
        sa.Column("agent_call_id", sa.String(length=255), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("final_sip_code", sa.Integer(), nullable=True),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.Column("hangup_side", sa.String(length=16), nullable=True),
        sa.Column("duration_seconds", sa.Double(), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "direction IN ('inbound', 'outbound')", name=op.f("ck_call_records_direction")
        ),
        sa.ForeignKeyConstraint(
            ["number_id"],
            ["trunk_numbers.id"],
            name=op.f("fk_call_records_number_id_trunk_numbers"),
        ),
        sa.ForeignKeyConstraint(
            ["trunk_id"], ["trunks.id"], name=op.f("fk_call_records_trunk_id_trunks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_records")),
    )
    with op.batch_alter_table("call_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_call_records_run_id"), ["run_id"], unique=False)
        batch_op.create_index(
            "ix_call_records_trunk_started", ["trunk_id", "started_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("call_records", schema=None) as batch_op:
        batch_op.drop_index("ix_call_records_trunk_started")
        batch_op.drop_index(batch_op.f("ix_call_records_run_id"))

    op.drop_table("call_records")
    with op.batch_alter_table("trunk_numbers", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_trunk_numbers_live_destination_key",
            sqlite_where=sa.text("is_deleted = 0"),
            postgresql_where=sa.text("is_deleted = false"),
        )
        batch_op.drop_index(batch_op.f("ix_trunk_numbers_trunk_id"))

    op.drop_table("trunk_numbers")
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gateways_trunk_id"))
        batch_op.drop_index(batch_op.f("ix_gateways_host"))

    op.drop_table("gateways")
    with op.batch_alter_table("carrier_ips", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_carrier_ips_live_trunk_cidr",
            sqlite_where=sa.text("is_deleted = 0"),
            postgresql_where=sa.text("is_deleted = false"),
        )
        batch_op.drop_index(batch_op.f("ix_carrier_ips_trunk_id"))

    op.drop_table("carrier_ips")
    with op.batch_alter_table("trunks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trunks_user_id"))
        batch_op.drop_index(batch_op.f("ix_trunks_organization_id"))

    op.drop_table("trunks")
    op.drop_table("api_tokens")
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agents_user_id"))
        batch_op.drop_index(batch_op.f("ix_agents_organization_id"))

    op.drop_table("agents")
