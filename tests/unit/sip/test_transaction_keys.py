"""Transaction matching (RFC 3261 §17.1.3, §17.2.3), incl. the RFC 2543 fallback and CANCEL."""

from __future__ import annotations

from transaction_fixtures import request, response

from sipedge.sip.keys import (
    ClientKey,
    LegacyServerKey,
    ServerKey,
    cancel_target_key,
    client_key,
    server_key,
)
from sipedge.sip.parser import parse_message


def test_retransmission_matches_and_ack_for_non2xx_maps_to_the_invite() -> None:
    invite = request("INVITE", branch="z9hG4bK-a")
    key = server_key(invite)
    assert key == ServerKey("z9hG4bK-a", "192.0.2.10", 5060, "INVITE")
    assert server_key(request("INVITE", branch="z9hG4bK-a")) == key
    assert server_key(request("ACK", branch="z9hG4bK-a", to_tag="uas")) == key


def test_branch_sent_by_and_method_each_separate_transactions() -> None:
    key = server_key(request("INVITE", branch="z9hG4bK-a"))
    assert server_key(request("INVITE", branch="z9hG4bK-b")) != key
    assert server_key(request("BYE", branch="z9hG4bK-a")) != key
    other_host = parse_message(
        bytes(request("INVITE", branch="z9hG4bK-a")).replace(
            b"192.0.2.10:5060;branch", b"192.0.2.11:5060;branch"
        )
    )
    assert server_key(other_host) != key  # type: ignore[arg-type]
    other_port = parse_message(
        bytes(request("INVITE", branch="z9hG4bK-a")).replace(
            b"192.0.2.10:5060;branch", b"192.0.2.10:5099;branch"
        )
    )
    assert server_key(other_port) != key  # type: ignore[arg-type]


def test_sent_by_host_is_case_insensitive() -> None:
    a = parse_message(
        bytes(request("OPTIONS", branch="z9hG4bK-c")).replace(
            b"192.0.2.10:5060;branch", b"Host.Example.COM:5060;branch"
        )
    )
    b = parse_message(
        bytes(request("OPTIONS", branch="z9hG4bK-c")).replace(
            b"192.0.2.10:5060;branch", b"host.example.com:5060;branch"
        )
    )
    assert server_key(a) == server_key(b)  # type: ignore[arg-type]


def test_cancel_is_its_own_transaction_but_finds_its_invite() -> None:
    invite = request("INVITE", branch="z9hG4bK-x")
    cancel = request("CANCEL", branch="z9hG4bK-x")
    assert server_key(cancel) != server_key(invite)
    assert server_key(cancel) == ServerKey("z9hG4bK-x", "192.0.2.10", 5060, "CANCEL")
    assert cancel_target_key(cancel) == server_key(invite)
    assert cancel_target_key(request("CANCEL", branch="z9hG4bK-y")) != server_key(invite)


def test_rfc2543_fallback_without_magic_cookie() -> None:
    invite = request("INVITE", branch="old-style-1")
    key = server_key(invite)
    assert isinstance(key, LegacyServerKey)
    assert key.method == "INVITE" and key.to_tag is None and key.cseq == 1
    assert server_key(request("INVITE", branch="old-style-1")) == key
    # The ACK carries our To tag (which the INVITE did not): it still matches (§17.2.3).
    assert server_key(request("ACK", branch="old-style-1", to_tag="uas")) == key
    # Any of Request-URI, From tag (via Call-ID here), CSeq number, top Via differing -> another tx.
    assert server_key(request("INVITE", branch="old-style-1", cseq=2)) != key
    assert server_key(request("INVITE", branch="old-style-1", call_id="other")) != key
    assert server_key(request("INVITE", branch="old-style-2")) != key
    assert server_key(request("INVITE", branch="old-style-1", uri="sip:carol@198.51.100.1")) != key
    assert cancel_target_key(request("CANCEL", branch="old-style-1")) == key


def test_rfc2543_non_invite_keys_include_the_to_tag() -> None:
    bye = request("BYE", branch="old-bye", to_tag="t1")
    assert server_key(bye) != server_key(request("BYE", branch="old-bye", to_tag="t2"))
    assert server_key(bye) == server_key(request("BYE", branch="old-bye", to_tag="t1"))


def test_rfc2543_without_any_branch() -> None:
    raw = bytes(request("OPTIONS")).replace(b";branch=z9hG4bK-tx-1", b"")
    msg = parse_message(raw)
    key = server_key(msg)  # type: ignore[arg-type]
    assert isinstance(key, LegacyServerKey) and key.via[3] is None
    assert client_key(msg) is None  # we never send without a branch; such a response is stray


def test_client_key_matches_request_and_its_responses_by_branch_and_cseq_method() -> None:
    invite = request("INVITE", branch="z9hG4bK-c1")
    assert client_key(invite) == ClientKey("z9hG4bK-c1", "INVITE")
    assert client_key(response(invite, 180)) == client_key(invite)
    assert client_key(response(invite, 486)) == client_key(invite)
    # The CANCEL shares the INVITE's branch; its 200 must reach the CANCEL transaction (§17.1.3).
    cancel = request("CANCEL", branch="z9hG4bK-c1")
    assert client_key(response(cancel, 200)) == ClientKey("z9hG4bK-c1", "CANCEL")
    assert client_key(response(cancel, 200)) != client_key(invite)
    assert client_key(response(request("INVITE", branch="z9hG4bK-c2"), 200)) != client_key(invite)
