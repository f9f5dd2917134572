"""Webhook URLs: http(s) only, and never at our own network unless private targets are allowed.

Checked when an agent is saved, without DNS: an IP literal must be public; a host name must be a
well-formed dotted name outside the reserved local zones. The delivery side checks the resolved
address again when it sends (a public name can point at a private address).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

MAX_URL = 2048
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_HEX = re.compile(r"^0x[0-9a-f]*$")
_LOCAL_ZONES = ("localhost", "local", "internal", "home.arpa", "localdomain")
_INVALID = "webhook_url must be an http or https URL"
_PRIVATE = "webhook_url must not point at a private, loopback or link-local address"


class WebhookUrlError(ValueError):
    """A webhook URL that cannot be used; the message never repeats the input."""


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _is_public(address.ipv4_mapped)
    return address.is_global and not address.is_multicast


def _check_name(host: str, *, allow_private: bool) -> None:
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise WebhookUrlError(_INVALID)
    if labels[-1].isdigit() or _HEX.match(labels[-1]):
        # 2130706433, 0x7f.1, 127.1: numeric forms an HTTP client may read as an address
        raise WebhookUrlError(_INVALID)
    if allow_private:
        return
    local = len(labels) == 1 or any(
        host == zone or host.endswith("." + zone) for zone in _LOCAL_ZONES
    )
    if local:
        raise WebhookUrlError(_PRIVATE)


def validate_webhook_url(url: str, *, allow_private: bool) -> str:
    """Return `url` unchanged if it may receive webhooks, else raise `WebhookUrlError`."""
    if not url or len(url) > MAX_URL or not url.isascii() or any(c.isspace() for c in url):
        raise WebhookUrlError(_INVALID)
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a malformed or out-of-range port
    except ValueError:
        raise WebhookUrlError(_INVALID) from None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme.lower() not in {"http", "https"} or not host or "%" in host or port == 0:
        raise WebhookUrlError(_INVALID)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        _check_name(host, allow_private=allow_private)
        return url
    if not allow_private and not _is_public(address):
        raise WebhookUrlError(_PRIVATE)
    return url
