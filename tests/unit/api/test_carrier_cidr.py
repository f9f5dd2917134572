import pytest

from sipedge.api.carrier_cidr import normalise_cidr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("203.0.113.7", "203.0.113.7/32"),
        (" 203.0.113.7 ", "203.0.113.7/32"),
        ("203.0.113.0/24", "203.0.113.0/24"),
        ("203.0.0.0/16", "203.0.0.0/16"),
        ("2001:db8::1", "2001:db8::1/128"),
        ("2001:DB8:0::/32", "2001:db8::/32"),
        ("2001:db8:1::/48", "2001:db8:1::/48"),
    ],
)
def test_normalises_to_network_and_prefix(text: str, expected: str) -> None:
    assert normalise_cidr(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("203.0.113.7/24", "host bits"),
        ("10.0.0.0/8", "/16 or longer"),
        ("0.0.0.0/0", "/16 or longer"),
        ("2001:db8::/31", "/32 or longer"),
        ("::/0", "/32 or longer"),
        ("203.0.113.7/33", "at most 32"),
        ("2001:db8::/129", "at most 128"),
        ("203.0.113.7/abc", "number"),
        ("not-an-ip", "IPv4 or IPv6"),
        ("", "IPv4 or IPv6"),
        ("1.2.3", "IPv4 or IPv6"),
        ("01.2.3.4", "IPv4 or IPv6"),
        ("x" * 10_000, "IPv4 or IPv6"),
    ],
)
def test_rejects_with_safe_message(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        normalise_cidr(text)
    message = str(caught.value)
    assert fragment in message
    if len(text) > 3:
        assert text.strip() not in message
