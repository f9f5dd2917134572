"""Bearer tokens: issued once in plaintext, stored as a SHA-256 hash, revocable."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.models import ApiToken
from sipedge.store.ownership import Principal
from sipedge.store.types import utcnow

TOKEN_PREFIX = "sk_"
_MAX_TOKEN_LENGTH = 200


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create_token(
    session: AsyncSession,
    *,
    user_id: str,
    organization_id: str | None = None,
    sub_account_id: str | None = None,
) -> str:
    """Store a new token for the principal and return its plaintext (shown once, never stored).

    The caller commits. Raises `ValueError` for an impossible principal (sub-account without org).
    """
    Principal(user_id, organization_id, sub_account_id)  # validates the combination
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            token_hash=hash_token(token),
            user_id=user_id,
            organization_id=organization_id,
            sub_account_id=sub_account_id,
        )
    )
    await session.flush()
    return token


async def revoke_token(session: AsyncSession, token: str) -> bool:
    """Revoke a live token; False when no live token matches. The caller commits."""
    row = await _live_token(session, token)
    if row is None:
        return False
    now = utcnow()
    row.revoked_at = now
    row.updated_at = now
    await session.flush()
    return True


async def authenticate(session: AsyncSession, token: str) -> Principal | None:
    """The principal of a live (not revoked) token, else None."""
    row = await _live_token(session, token)
    if row is None:
        return None
    return Principal(row.user_id, row.organization_id, row.sub_account_id)


async def _live_token(session: AsyncSession, token: str) -> ApiToken | None:
    if not token or len(token) > _MAX_TOKEN_LENGTH:
        return None
    result = await session.execute(
        select(ApiToken).where(
            ApiToken.token_hash == hash_token(token),
            ApiToken.revoked_at.is_(None),
            ApiToken.is_deleted.is_(False),
        )
    )
    return result.scalar_one_or_none()


async def any_tokens(session: AsyncSession) -> bool:
    """True when any live (not revoked) token exists (`serve` prints a first token otherwise)."""
    found = await session.scalar(
        select(ApiToken.id)
        .where(ApiToken.revoked_at.is_(None), ApiToken.is_deleted.is_(False))
        .limit(1)
    )
    return found is not None
