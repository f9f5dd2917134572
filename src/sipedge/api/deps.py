"""Request dependencies as `Annotated` aliases: the app's services, a DB session, the caller."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from sipedge.api.errors import ApiError
from sipedge.api.gateway_resolver import GatewayResolver
from sipedge.api.rate_limit import SlidingWindowLimiter, token_key
from sipedge.config import Settings
from sipedge.store.changes import ChangeNotifier, changes_routing
from sipedge.store.db import Executor
from sipedge.store.ownership import Principal
from sipedge.store.token_cache import TokenCache
from sipedge.store.tokens import authenticate, hash_token, token_is_plausible
from sipedge.store.types import utcnow


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a request may need, built once by `create_app`."""

    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    resolver: GatewayResolver
    notifier: ChangeNotifier
    active_calls: Callable[[str], int]
    rate_limiter: SlidingWindowLimiter = field(default_factory=lambda: SlidingWindowLimiter(0))
    tokens: TokenCache = field(default_factory=lambda: TokenCache(0))  # verified tokens
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = utcnow  # wall clock (UTC) for call scheduling; tests inject
    # Awaited after each committed write: in `serve`, until the SIP edge runs on the new data.
    applied: Callable[[], Awaitable[None]] | None = None

    async def commit(
        self,
        session: Executor,
        *,
        kind: str,
        trunk_id: str | None,
        agent_id: str | None = None,
    ) -> None:
        """Commit the request's writes, then tell subscribers the routing data changed."""
        await session.commit()
        self.notifier.notify(kind, trunk_id, agent_id)
        if self.applied is not None and changes_routing(kind):
            await self.applied()


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def get_services(request: Request) -> Services:
    # `async def`, not `def`: FastAPI runs a plain-function dependency in its thread pool, a
    # thread hop per request for an attribute read.
    return services_of(request)


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_session(services: ServicesDep) -> AsyncIterator[AsyncSession]:
    async with services.sessions() as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session)]

_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <token>`")
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


async def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ApiError(401, "missing bearer token", _UNAUTHORIZED)
    # Per-token rate limit (http.rate_limit_per_minute), before the token costs a DB lookup.
    services = services_of(request)
    if services.rate_limiter.limit:
        wait = services.rate_limiter.hit(token_key(credentials.credentials), services.clock())
        if wait is not None:
            raise ApiError(429, "rate limit exceeded", {"Retry-After": str(wait)})
    token = credentials.credentials
    principal = services.tokens.get(hash_token(token)) if token_is_plausible(token) else None
    if principal is None:
        # A token verified in the last `http.token_cache_seconds` needs no session at all; any
        # other is looked up in a short session of its own (the endpoint's may not exist).
        async with services.sessions() as session:
            principal = await authenticate(session, token, cache=services.tokens)
    if principal is None:
        raise ApiError(401, "invalid or revoked token", _UNAUTHORIZED)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]
