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
