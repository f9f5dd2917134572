import pytest

from sipedge.api.phone_numbers import normalise_e164


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+14155550123", ("+14155550123", "14155550123")),
        ("14155550123", ("+14155550123", "14155550123")),
        ("+1 (415) 555-0123", ("+14155550123", "14155550123")),
        ("+44 20 7946 0018", ("+442079460018", "442079460018")),
        ("+919876543210", ("+919876543210", "919876543210")),
    ],
)
def test_valid_numbers_normalise(text: str, expected: tuple[str, str]) -> None:
    assert normalise_e164(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "+", "+1234", "hello", "+1415555012a", "++14155550123", "+١٤١٥٥٥٥٠١٢٣", "1" * 40],
)
def test_invalid_numbers_rejected_without_echo(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        normalise_e164(text)
    if len(text) > 2:
        assert text not in str(caught.value)
