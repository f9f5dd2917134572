"""Every Prometheus collector of sipedge, in one registry.

Label values come only from closed vocabularies (enums below), never from request data, so a
scanner cannot blow up the metric cardinality.
"""

from __future__ import annotations

from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)


class ApiOutcome(StrEnum):
    OK = "ok"
    CLIENT_ERROR = "client_error"
    SERVER_ERROR = "server_error"


api_requests_total = Counter(
    "sipedge_api_requests_total",
    "Admin API requests by outcome class.",
    ["outcome"],
    registry=REGISTRY,
)

snapshot_changes_total = Counter(
    "sipedge_snapshot_changes_total",
    "Committed API writes that changed the routing data.",
    registry=REGISTRY,
)

snapshot_version = Gauge(
    "sipedge_snapshot_version",
    "Version of the routing snapshot the SIP edge is using.",
    registry=REGISTRY,
)

sip_messages_total = Counter(
    "sipedge_sip_messages_total",
    "SIP messages received, by kind.",
    ["kind"],
    registry=REGISTRY,
)

sip_parse_errors_total = Counter(
    "sipedge_sip_parse_errors_total",
    "SIP messages that failed to parse, by what was done with them.",
    ["action"],
    registry=REGISTRY,
)

api_request_seconds = Histogram(
    "sipedge_api_request_seconds",
    "Admin API request latency.",
    registry=REGISTRY,
)


# --- storage side of the SIP runtime (snapshot loader, call records, activity) -----------------


class RecordLoss(StrEnum):
    QUEUE_FULL = "queue_full"  # the in-memory queue was full: the oldest record was dropped
    WRITE_FAILED = "write_failed"  # a batch still failed after its retries


snapshot_reload_failures_total = Counter(
    "sipedge_snapshot_reload_failures_total",
    "Routing snapshot loads that failed (the previous snapshot stayed in force).",
    registry=REGISTRY,
)

snapshot_reloads_total = Counter(
    "sipedge_snapshot_reloads_total",
    "Routing snapshots loaded and swapped in.",
    registry=REGISTRY,
)

call_records_written_total = Counter(
    "sipedge_call_records_written_total",
    "Call records written to the database.",
    registry=REGISTRY,
)

call_records_lost_total = Counter(
    "sipedge_call_records_lost_total",
    "Call records that were never written, by why.",
    ["reason"],
    registry=REGISTRY,
)

activity_write_failures_total = Counter(
    "sipedge_activity_write_failures_total",
    "Background writes of trunk/number activity (last_*_at, health) that failed (retried later).",
    registry=REGISTRY,
)


# --- the inbound call path (runtime/) --------------------------------------------------------


class InboundOutcome(StrEnum):
    """How the edge disposed of an inbound INVITE: accepted, or refused/dropped by a rule.

    Refusal values are exactly ``edge.decisions.MetricReason``'s (kept in step by a unit test);
    ``invalid`` covers 400/483 before the pipeline, ``loop`` a merged request (482).
    """

    ACCEPTED = "accepted"
    UNKNOWN_SOURCE = "unknown_source"
    TRANSPORT = "transport"
    NO_NUMBER = "no_number"
    NO_AGENT = "no_agent"
    CHANNELS = "channels"
    CODECS = "codecs"
    MALFORMED_SDP = "malformed_sdp"
    INVALID = "invalid"
    LOOP = "loop"


class InboundAction(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    DROPPED = "dropped"


class CallEnd(StrEnum):
    """Why a call that reached the B2BUA ended (the call record's ``decided_by``)."""

    ANSWERED = "answered"  # answered, then a BYE from either side
    CANCELED = "canceled"
    AGENT_DECLINED = "agent_declined"  # agent 486/600/603, relayed as-is
    AGENT_FAILURE = "agent_failure"  # agent error response -> 503
    AGENT_TIMEOUT = "agent_timeout"  # no final answer (Timer B, ring timeout) -> 503
    AGENT_UNREACHABLE = "agent_unreachable"  # transport error towards the agent -> 503
    NO_COMMON_CODEC = "codecs"  # the agent's answer had none of the trunk's codecs -> 488
    NO_ACK = "no_ack"  # the carrier never acknowledged our 2xx
    CARRIER_UNREACHABLE = "carrier_unreachable"
    MAX_DURATION = "max_duration"
    TRUNK_DELETED = "trunk_deleted"
    SHUTDOWN = "shutdown"


inbound_invites_total = Counter(
    "sipedge_inbound_invites_total",
    "Inbound INVITEs by action and the rule that decided them.",
    ["action", "outcome"],
    registry=REGISTRY,
)

inbound_drops_total = Counter(
    "sipedge_inbound_drops_total",
    "Requests dropped without an answer, by rule (unknown sources under the drop policy).",
    ["reason"],
    registry=REGISTRY,
)

active_calls = Gauge(
    "sipedge_active_calls",
    "Calls holding a channel on this node.",
    registry=REGISTRY,
)

call_endings_total = Counter(
    "sipedge_call_endings_total",
    "Calls that reached the B2BUA, by how they ended.",
    ["reason"],
    registry=REGISTRY,
)

invite_first_response_seconds = Histogram(
    "sipedge_invite_first_response_seconds",
    "Inbound INVITE to the first non-100 response sent to the carrier.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)

# Label children bound once, at import: the call path never calls ``labels()``.
INBOUND_CHILDREN: dict[tuple[InboundAction, InboundOutcome], Counter] = {
    (action, outcome): inbound_invites_total.labels(action=action.value, outcome=outcome.value)
    for action in InboundAction
    for outcome in InboundOutcome
    if (action is InboundAction.ACCEPTED) == (outcome is InboundOutcome.ACCEPTED)
}
DROP_CHILDREN: dict[InboundOutcome, Counter] = {
    outcome: inbound_drops_total.labels(reason=outcome.value)
    for outcome in InboundOutcome
    if outcome is not InboundOutcome.ACCEPTED
}
ENDING_CHILDREN: dict[CallEnd, Counter] = {
    end: call_endings_total.labels(reason=end.value) for end in CallEnd
}


# --- robustness: hard limits and flood protection (stack/, runtime/) -------------------------


class SipLimit(StrEnum):
    """A hard limit that was hit. The first five equal ``sip.limits.LimitKind`` (a unit test
    keeps them in step); then the TCP transport's connection caps and idle timeout, and the caps on
    live transactions and dialogs."""

    MESSAGE_SIZE = "message_size"
    HEADER_COUNT = "header_count"
    HEADER_LENGTH = "header_length"
    VIA_DEPTH = "via_depth"
    BODY_SIZE = "body_size"
    TCP_CONNECTIONS = "tcp_connections"
    TCP_CONNECTIONS_PER_PEER = "tcp_connections_per_peer"
    TCP_IDLE = "tcp_idle"
    TRANSACTIONS = "transactions"  # a new request refused (503) at sip.max_transactions
    DIALOGS = "dialogs"  # a new call refused (503) at sip.max_dialogs


class FloodDrop(StrEnum):
    """Why flood protection refused a packet; the first three equal ``edge.flood.Verdict``'s
    non-ALLOW values, ``invite_cap`` is a 503 from the global INVITE admission cap."""

    RATE = "rate"
    BAN = "ban"
    BANNED = "banned"
    INVITE_CAP = "invite_cap"


sip_limit_hits_total = Counter(
    "sipedge_sip_limit_hits_total",
    "SIP messages or TCP connections refused by a hard limit, by limit.",
    ["limit"],
    registry=REGISTRY,
)

flood_drops_total = Counter(
    "sipedge_flood_drops_total",
    "Requests refused by flood protection, by reason (ban = the packet that started a ban).",
    ["reason"],
    registry=REGISTRY,
)

flood_bans_total = Counter(
    "sipedge_flood_bans_total",
    "Source IPs banned by flood protection.",
    registry=REGISTRY,
)

LIMIT_CHILDREN: dict[str, Counter] = {
    limit.value: sip_limit_hits_total.labels(limit=limit.value) for limit in SipLimit
}
FLOOD_CHILDREN: dict[str, Counter] = {
    reason.value: flood_drops_total.labels(reason=reason.value) for reason in FloodDrop
}


class OutboundAttemptResult(StrEnum):
    """How one outbound INVITE to one gateway ended (the gateway is never a label)."""

    ANSWERED = "answered"
    BUSY = "busy"
    NO_ANSWER = "no_answer"
    DECLINED = "declined"
    FAILED = "failed"
    SERVER_ERROR = "server_error"
    FORBIDDEN = "forbidden"
    TIMEOUT = "timeout"
    TRANSPORT_ERROR = "transport_error"
    AUTH_FAILED = "auth_failed"
    CHANNELS = "channels"


outbound_attempts_total = Counter(
    "sipedge_outbound_attempts_total",
    "Outbound INVITEs to carrier gateways, by how each attempt ended.",
    ["result"],
    registry=REGISTRY,
)
OUTBOUND_ATTEMPT_CHILDREN = {
    r: outbound_attempts_total.labels(r.value) for r in OutboundAttemptResult
}


def outbound_attempt(result: OutboundAttemptResult) -> None:
    OUTBOUND_ATTEMPT_CHILDREN[result].inc()


channel_store_errors_total = Counter(
    "sipedge_channel_store_errors_total",
    "Cluster-wide channel store (Redis) operations that failed; calls were admitted on the "
    "node's own count.",
    ["op"],
    registry=REGISTRY,
)

outbound_claims_swept_total = Counter(
    "sipedge_outbound_claims_swept_total",
    "Unfinished outbound calls ended because the dialer holding them stopped its heartbeat.",
    registry=REGISTRY,
)


class WebhookOutcome(StrEnum):
    DELIVERED = "delivered"  # the receiver answered 2xx
    RETRY = "retry"  # an error, timeout or non-2xx answer: tried again later
    GAVE_UP = "gave_up"  # out of time, or a URL that may not be called: marked failed


webhook_deliveries_total = Counter(
    "sipedge_webhook_deliveries_total",
    "Call status webhook delivery attempts, by outcome.",
    ["outcome"],
    registry=REGISTRY,
)

webhook_events_lost_total = Counter(
    "sipedge_webhook_events_lost_total",
    "Call status events never written to the webhook outbox, by why.",
    ["reason"],
    registry=REGISTRY,
)

WEBHOOK_CHILDREN: dict[WebhookOutcome, Counter] = {
    outcome: webhook_deliveries_total.labels(outcome=outcome.value) for outcome in WebhookOutcome
}
