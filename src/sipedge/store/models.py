"""SQLAlchemy 2.0 models: tokens, agents, trunks and their gateways, carrier IPs, numbers, calls.

Every table has UUID string ids, UTC timestamps and soft deletes (`is_deleted`, `deleted_at`).
The migrations in `migrations/versions/` create exactly this schema (tests compare the two).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sipedge.store.types import UtcDateTime, new_id, utcnow

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

HEALTH_STATES = ("waiting_for_carrier", "ready", "degraded")
CONVERSION_STATES = ("none", "in_progress", "done")
ID = String(36)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class _Row:
    """Columns every table carries."""

    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    is_deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class _Owned:
    """Ownership of SPEC §3: copied from the creating principal."""

    organization_id: Mapped[str | None] = mapped_column(String(100), index=True)
    sub_account_id: Mapped[str | None] = mapped_column(String(100))
    user_id: Mapped[str | None] = mapped_column(String(100), index=True)


class ApiToken(_Row, Base):
    """A bearer token of a principal; only the SHA-256 hash of the secret is stored."""

    __tablename__ = "api_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(String(100))
    organization_id: Mapped[str | None] = mapped_column(String(100))
    sub_account_id: Mapped[str | None] = mapped_column(String(100))
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class Agent(_Row, _Owned, Base):
    """A voice agent's configuration (seed "Agent").

    Columns the edge, the dialer and the webhook sender read are real columns; the task list, the
    prompts and the nested objects are stored as JSON exactly as validated by the API.
    `config_version` grows with every write; `agent_status` is `seeding` until the SIP edge's
    routing snapshot holds that version (see `store.agents.mark_agents_processed`).
    """

    __tablename__ = "agents"
    __table_args__ = (
        CheckConstraint("agent_status IN ('seeding', 'processed')", name="agent_status"),
        CheckConstraint(
            "(call_start_hour IS NULL AND call_end_hour IS NULL) OR "
            "(call_start_hour IS NOT NULL AND call_end_hour IS NOT NULL AND call_start_hour >= 0 "
            "AND call_end_hour <= 23 AND call_end_hour >= call_start_hour)",
            name="calling_guardrails",
        ),
    )

    agent_name: Mapped[str] = mapped_column(String(200))
    telephony_provider: Mapped[str | None] = mapped_column(String(20))
    agent_type: Mapped[str] = mapped_column(String(50), default="other")
    agent_welcome_message: Mapped[str] = mapped_column(Text, default="")
    webhook_url: Mapped[str | None] = mapped_column(String(2048))
    agent_status: Mapped[str] = mapped_column(String(20), default="seeding")
    config_version: Mapped[int] = mapped_column(Integer, default=1)
    call_summary_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    call_start_hour: Mapped[int | None] = mapped_column(Integer)
    call_end_hour: Mapped[int | None] = mapped_column(Integer)
    tasks: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    agent_prompts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    ingest_source_config: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    synthesizer: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))

    def __repr__(self) -> str:  # never show ingest_source_config (it holds a token)
        return f"Agent(id={self.id!r}, agent_name={self.agent_name!r})"


class Trunk(_Row, _Owned, Base):
    __tablename__ = "trunks"
    __table_args__ = (
        CheckConstraint("channels >= 1 AND channels <= 1000", name="channels_range"),
        CheckConstraint("transport IN ('udp', 'tcp')", name="transport"),
        CheckConstraint(
            "health_state IN ('waiting_for_carrier', 'ready', 'degraded')", name="health_state"
        ),
        CheckConstraint(
            "conversion_state IN ('none', 'in_progress', 'done')", name="conversion_state"
        ),
    )

    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(String(500))
    preset: Mapped[str | None] = mapped_column(String(20))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    inbound_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    outbound_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    channels: Mapped[int] = mapped_column(Integer, default=10)
    default_inbound_agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id"))
    auth_username: Mapped[str | None] = mapped_column(Text)
    auth_password: Mapped[str | None] = mapped_column(Text)
    transport: Mapped[str] = mapped_column(String(3), default="udp")
    codecs: Mapped[str] = mapped_column(String(20), default="PCMU,PCMA")
    outbound_leading_plus_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    last_inbound_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_outbound_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    converted_from_byot_trunk_id: Mapped[str | None] = mapped_column(String(100))
    health_state: Mapped[str] = mapped_column(String(20), default="waiting_for_carrier")
    # Consecutive outbound carrier failures (the streak that makes the trunk degraded).
    health_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    conversion_state: Mapped[str] = mapped_column(String(20), default="none")

    @property
    def has_credentials(self) -> bool:
        return self.auth_username is not None and self.auth_password is not None

    def __repr__(self) -> str:  # never show auth_password
        return f"Trunk(id={self.id!r}, name={self.name!r})"


class Gateway(_Row, Base):
    __tablename__ = "gateways"
    __table_args__ = (CheckConstraint("port >= 1 AND port <= 65535", name="port_range"),)

    trunk_id: Mapped[str] = mapped_column(ForeignKey("trunks.id"), index=True)
    host: Mapped[str] = mapped_column(String(253), index=True)
    resolved_ips: Mapped[list[str] | None] = mapped_column(JSON)
    port: Mapped[int] = mapped_column(Integer, default=5060)
    priority: Mapped[int] = mapped_column(Integer, default=0)


class CarrierIp(_Row, Base):
    __tablename__ = "carrier_ips"
    trunk_id: Mapped[str] = mapped_column(ForeignKey("trunks.id"), index=True)
    cidr: Mapped[str] = mapped_column(String(50))


class TrunkNumber(_Row, Base):
    __tablename__ = "trunk_numbers"

    trunk_id: Mapped[str] = mapped_column(ForeignKey("trunks.id"), index=True)
    e164: Mapped[str] = mapped_column(String(20))
    destination_key: Mapped[str] = mapped_column(String(20))
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id"))
    last_inbound_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_outbound_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class CallRecord(_Row, Base):
    """One call across a trunk, with the final SIP code and the rule that decided it."""

    __tablename__ = "call_records"
    __table_args__ = (
        CheckConstraint("direction IN ('inbound', 'outbound')", name="direction"),
        Index("ix_call_records_trunk_started", "trunk_id", "started_at"),
    )

    run_id: Mapped[str | None] = mapped_column(String(100), index=True)
    trunk_id: Mapped[str] = mapped_column(ForeignKey("trunks.id"))
    number_id: Mapped[str | None] = mapped_column(ForeignKey("trunk_numbers.id"))
    agent_id: Mapped[str | None] = mapped_column(String(36))
    direction: Mapped[str] = mapped_column(String(8))
    from_number: Mapped[str | None] = mapped_column(String(64))
    to_number: Mapped[str | None] = mapped_column(String(64))
    carrier_call_id: Mapped[str | None] = mapped_column(String(255))
    agent_call_id: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    final_sip_code: Mapped[int | None] = mapped_column(Integer)
    decided_by: Mapped[str | None] = mapped_column(String(64))
    hangup_side: Mapped[str | None] = mapped_column(String(16))
    duration_seconds: Mapped[float | None] = mapped_column()


# Partial unique indexes: a live number is unique across every trunk of every account (races give
# IntegrityError -> 409 number_taken); a live CIDR is unique per trunk (-> 409 conflict).
Index(
    "uq_trunk_numbers_live_destination_key",
    TrunkNumber.destination_key,
    unique=True,
    sqlite_where=TrunkNumber.is_deleted == false(),
    postgresql_where=TrunkNumber.is_deleted == false(),
)
Index(
    "uq_carrier_ips_live_trunk_cidr",
    CarrierIp.trunk_id,
    CarrierIp.cidr,
    unique=True,
    sqlite_where=CarrierIp.is_deleted == false(),
    postgresql_where=CarrierIp.is_deleted == false(),
)


OUTBOUND_STATUSES = (
    "queued",
    "scheduled",
    "ringing",
    "in-progress",
    "completed",
    "busy",
    "no-answer",
    "failed",
    "canceled",
)
OUTBOUND_FINAL_STATUSES = ("completed", "busy", "no-answer", "failed", "canceled")


class OutboundCall(_Row, _Owned, Base):
    """A call placed through `POST /call` (SPEC §5 Outbound); `id` is its `run_id`.

    The API writes it `queued` (or `scheduled` with `scheduled_at`); the dialer of a SIP process
    claims it (compare-and-set on `claimed_at`, its node id in `claimed_by`) and moves `status` as
    the call progresses, touching `heartbeat_at` while it lives. A hangup asked through the API
    while the call is with a dialer sets `hangup_requested`.
    """

    __tablename__ = "outbound_calls"
    __table_args__ = (
        CheckConstraint(
            "status IN ('queued', 'scheduled', 'ringing', 'in-progress', 'completed', 'busy', "
            "'no-answer', 'failed', 'canceled')",
            name="status",
        ),
        Index("ix_outbound_calls_status_scheduled", "status", "scheduled_at"),
        Index("ix_outbound_calls_claimed_by", "claimed_by"),
    )

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"))
    trunk_id: Mapped[str] = mapped_column(ForeignKey("trunks.id"))
    number_id: Mapped[str] = mapped_column(ForeignKey("trunk_numbers.id"))
    from_number: Mapped[str] = mapped_column(String(20))
    to_number: Mapped[str] = mapped_column(String(20))
    user_data: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    status: Mapped[str] = mapped_column(String(20), default="queued")
    scheduled_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    claimed_by: Mapped[str | None] = mapped_column(String(32))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    hangup_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    answered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    final_sip_code: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(String(64))
    carrier_call_id: Mapped[str | None] = mapped_column(String(255))
    agent_call_id: Mapped[str | None] = mapped_column(String(255))


# The webhook tables live in their own module; importing it here registers them on Base.metadata.
import sipedge.store.webhook_models  # noqa: E402, F401
