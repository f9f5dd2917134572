"""Typed outcomes of repository functions; api/errors.py renders them in the seed's shapes."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every expected repository failure; `message` is safe to show to the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFoundError(StoreError):
    """No live row with this id belongs to the caller (HTTP 404)."""


class NotYoursError(StoreError):
    """A referenced row (e.g. an agent) is not one of the caller's (HTTP 400)."""


class ConflictError(StoreError):
    """The change clashes with existing data (HTTP 409 with `code`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RejectedError(StoreError):
    """The change does not fit the stored data, e.g. a prompt for a task that does not exist
    (HTTP 400)."""
