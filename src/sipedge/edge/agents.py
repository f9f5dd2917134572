"""Agent resolution (SPEC §5 Inbound step 6): the number's agent, else the trunk's default."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, TrunkView

__all__ = ["resolve_agent", "same_owner"]


def same_owner(trunk: TrunkView, agent: AgentView) -> bool:
    """Both belong to one account (SPEC §3): the same organisation, or outside organisations the
    same user. The API enforces this on write; the edge re-checks so a stale or inconsistent row
    can never route a carrier's call to another account's agent."""
    if trunk.organization_id is not None:
        return agent.organization_id == trunk.organization_id
    return agent.organization_id is None and agent.user_id == trunk.user_id


def resolve_agent(
    snapshot: RoutingSnapshot, trunk: TrunkView, number: NumberView
) -> AgentView | None:
    """The live agent answering ``number``; None when neither the number nor the trunk names a
    live agent of the trunk's account (the caller answers 480)."""
    agent_id = number.agent_id or trunk.default_inbound_agent_id
    if agent_id is None:
        return None
    agent = snapshot.agents.get(agent_id)
    if agent is None or agent.is_deleted or not same_owner(trunk, agent):
        return None
    return agent
