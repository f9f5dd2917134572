"""Bearer tokens: issued once in plaintext, stored as a SHA-256 hash, revocable."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import String, bindparam, event, select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.models import ApiToken
from sipedge.store.ownership import Principal
from sipedge.store.token_cache import TokenCache, invalidate_everywhere
from sipedge.store.types import utcnow

TOKEN_PREFIX = "sk_"
_MAX_TOKEN_LENGTH = 200
# Built once, with the hash bound per request: every cache miss runs it, and SQLAlchemy would
# otherwise rebuild it and recompute its cache key each time. Core columns, not an ORM object.
_LOOKUP = select(ApiToken.user_id, ApiToken.organization_id, ApiToken.sub_account_id).where(
    ApiToken.token_hash == bindparam("token_hash", type_=String()),
    ApiToken.revoked_at.is_(None),
    ApiToken.is_deleted.is_(False),
)


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
    """Revoke a live token; False when no live token matches. The caller commits.

    The token leaves this process's token caches now and again once the revocation is committed
    (a request that read the token as live in between cannot keep it cached)."""
    row = await _live_token(session, token)
    if row is None:
        return False
    now = utcnow()
    row.revoked_at = now
    row.updated_at = now
    await session.flush()
    digest = row.token_hash
    invalidate_everywhere(digest)

    def _after_commit(_session: Any) -> None:
        invalidate_everywhere(digest)

    event.listen(session.sync_session, "after_commit", _after_commit, once=True)
    return True


async def authenticate(
    session: AsyncSession, token: str, *, cache: TokenCache | None = None
) -> Principal | None:
    """The principal of a live (not revoked) token, else None; with `cache`, a token verified in
    the last `cache.ttl` seconds is trusted without a lookup (see `store.token_cache`)."""
    if not token_is_plausible(token):
        return None
    digest = hash_token(token)
    if cache is not None:
        cached = cache.get(digest)
        if cached is not None:
            return cached
        generation = cache.generation
    row = (await session.execute(_LOOKUP, {"token_hash": digest})).first()
    if row is None:
        return None
    principal = Principal(row.user_id, row.organization_id, row.sub_account_id)
    if cache is not None:
        cache.put(digest, principal, generation)
    return principal


def token_is_plausible(token: str) -> bool:
    """Worth hashing and looking up at all (not empty, not absurdly long)."""
    return bool(token) and len(token) <= _MAX_TOKEN_LENGTH


async def _live_token(session: AsyncSession, token: str) -> ApiToken | None:
    if not token_is_plausible(token):
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
