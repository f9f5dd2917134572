"""Tables of the call status webhooks: the durable outbox and the per-account signing secrets.

Registered on `models.Base` (models.py imports this module at its end, so the migrations test and
Alembic see them). Migration `0004_webhook_outbox` creates exactly these tables.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sipedge.store.models import ID, Base, _Row
from sipedge.store.types import UtcDateTime

__all__ = ["OUTBOX_STATES", "WebhookOutbox", "WebhookSecret"]

OUTBOX_STATES = ("pending", "delivered", "failed")


class WebhookOutbox(_Row, Base):
    """One call status event for one agent webhook; `id` is the event id sent to the receiver.

    `seq` orders the events of a run (1, 2, ...): a row is sent only once every lower `seq` of its
    run is `delivered` or `failed`. `body` is the exact JSON sent (and signed) on every attempt;
    `url` is the agent's `webhook_url` when the event was written. A sender claims a row by setting
    `lease_owner` (a token of that claim) and `lease_until`; an expired lease is claimable again.
    """

    __tablename__ = "webhook_outbox"
    __table_args__ = (
        CheckConstraint("state IN ('pending', 'delivered', 'failed')", name="state"),
        Index("uq_webhook_outbox_run_seq", "run_id", "seq", unique=True),
        Index("ix_webhook_outbox_state_due", "state", "next_attempt_at"),
    )

    run_id: Mapped[str] = mapped_column(String(100))
    seq: Mapped[int] = mapped_column(Integer)
    agent_id: Mapped[str] = mapped_column(ID)
    account_key: Mapped[str] = mapped_column(String(110))
    status: Mapped[str] = mapped_column(String(20))
    url: Mapped[str] = mapped_column(String(2048))
    body: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime())
    lease_owner: Mapped[str | None] = mapped_column(String(36))
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(500))


class WebhookSecret(_Row, Base):
    """The HMAC-SHA256 key of one account (`org:<organization_id>` or `user:<user_id>`)."""

    __tablename__ = "webhook_secrets"

    account_key: Mapped[str] = mapped_column(String(110), unique=True)
    secret: Mapped[str] = mapped_column(String(100))

    def __repr__(self) -> str:  # never show the secret
        return f"WebhookSecret(account_key={self.account_key!r})"
