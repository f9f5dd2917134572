"""The repository functions in one place, for callers outside the API (CLI, runtime).

Every function is keyword-only after the session, flushes but never commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store import conversion
from sipedge.store.agent_config import AgentChanges, AgentConfig, CallingGuardrails
from sipedge.store.agents import (
    create_agent,
    create_agent_config,
    delete_agent,
    get_agent,
    get_visible_agent,
    list_agents,
    mark_agents_processed,
    replace_agent,
    update_agent,
)
from sipedge.store.carrier_ips import add_carrier_ip, remove_carrier_ip
from sipedge.store.conversion import finish_conversion
from sipedge.store.gateways import GatewaySpec, add_gateway, remove_gateway
from sipedge.store.models import Trunk
from sipedge.store.numbers import NumberSpec, add_number, assign_agent, remove_number
from sipedge.store.ownership import Principal
from sipedge.store.trunks import create_trunk, delete_trunk, get_trunk, list_trunks, update_trunk

__all__ = [
    "AgentChanges",
    "AgentConfig",
    "CallingGuardrails",
    "GatewaySpec",
    "NumberSpec",
    "Principal",
    "add_carrier_ip",
    "add_gateway",
    "add_number",
    "assign_agent",
    "create_agent",
    "create_agent_config",
    "create_trunk",
    "delete_agent",
    "delete_trunk",
    "finish_conversion",
    "get_agent",
    "get_trunk",
    "get_visible_agent",
    "list_agents",
    "list_trunks",
    "mark_agents_processed",
    "remove_carrier_ip",
    "remove_gateway",
    "remove_number",
    "replace_agent",
    "start_conversion",
    "update_agent",
    "update_trunk",
]


async def start_conversion(
    session: AsyncSession,
    *,
    user_id: str,
    organization_id: str | None = None,
    sub_account_id: str | None = None,
    legacy_trunk_id: str,
    name: str,
    fields: Mapping[str, Any] | None = None,
) -> Trunk:
    """Create the trunk converted from a legacy trunk (conversion state `in_progress`).

    Ownership as a principal `(user_id, organization_id, sub_account_id)` would create it.
    Raises `ConflictError` when a live trunk already converts `legacy_trunk_id`, `ValueError`
    for a sub-account without organisation. The caller commits.
    """
    owner = Principal(user_id, organization_id, sub_account_id)
    view = await conversion.start_conversion(
        session, owner=owner, legacy_trunk_id=legacy_trunk_id, name=name, fields=fields
    )
    return view.trunk
