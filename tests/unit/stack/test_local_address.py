from sipedge.stack.local_address import advertised_host, is_ip_literal, local_ip_for


def test_configured_address_wins() -> None:
    assert advertised_host("203.0.113.9", "0.0.0.0", "127.0.0.1") == "203.0.113.9"


def test_specific_bind_is_used_as_is() -> None:
    assert advertised_host("", "127.0.0.5", "127.0.0.1") == "127.0.0.5"


def test_wildcard_bind_uses_the_route_source() -> None:
    assert advertised_host("", "0.0.0.0", "127.0.0.1") == "127.0.0.1"
    assert local_ip_for("127.0.0.1") == "127.0.0.1"


def test_names_are_never_resolved_here() -> None:
    assert not is_ip_literal("agents.example")
    assert local_ip_for("agents.example") == "127.0.0.1"
    assert is_ip_literal("::1") and is_ip_literal("10.0.0.1")
