"""Principals and the visibility rule of SPEC §3, as SQL clauses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, bindparam, false, or_

MAX_OWNER_ID = 100  # the width of the ownership columns


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a user, optionally inside an organisation and one of its sub-accounts."""

    user_id: str
    organization_id: str | None = None
    sub_account_id: str | None = None

    def __post_init__(self) -> None:
        if not self.user_id:
            raise ValueError("a principal needs a user_id")
        for part in (self.user_id, self.organization_id, self.sub_account_id):
            if part is not None and not 0 < len(part) <= MAX_OWNER_ID:
                raise ValueError(f"owner ids are 1-{MAX_OWNER_ID} characters")
        if self.sub_account_id is not None and self.organization_id is None:
            raise ValueError("a sub-account belongs to an organisation")

    def owner_columns(self) -> dict[str, str | None]:
        """Ownership copied onto a new trunk or agent; an organisation's resource has no user_id."""
        if self.organization_id is not None:
            return {
                "organization_id": self.organization_id,
                "sub_account_id": self.sub_account_id,
                "user_id": None,
            }
        return {"organization_id": None, "sub_account_id": None, "user_id": self.user_id}


def visible_to(model: Any, principal: Principal) -> ColumnElement[bool]:
    """Rows of `model` (with the ownership columns) that `principal` may see, live ones only.

    Organisation principal: rows of its organisation that are organisation-level or in its own
    sub-account. Outside organisations: rows without organisation whose `user_id` is its own.
    """
    live = model.is_deleted == false()
    if principal.organization_id is not None:
        if principal.sub_account_id is None:
            same_sub: ColumnElement[bool] = model.sub_account_id.is_(None)
        else:
            same_sub = or_(
                model.sub_account_id.is_(None), model.sub_account_id == principal.sub_account_id
            )
        return and_(live, model.organization_id == principal.organization_id, same_sub)
    return and_(live, model.organization_id.is_(None), model.user_id == principal.user_id)


# --- the same rule as a prebuilt clause with bound parameters ----------------------------------
# Hot queries are built once per principal *shape* and executed with `owner_params(principal)`:
# SQLAlchemy then neither rebuilds the statement nor recomputes its cache key per request.

Shape = Literal["user", "org", "sub"]


def shape_of(principal: Principal) -> Shape:
    if principal.organization_id is None:
        return "user"
    return "org" if principal.sub_account_id is None else "sub"


def owner_params(principal: Principal) -> dict[str, str | None]:
    """The bound values of `visible_to_bound(model, shape_of(principal))`."""
    if principal.organization_id is None:
        return {"owner_user": principal.user_id}
    if principal.sub_account_id is None:
        return {"owner_org": principal.organization_id}
    return {"owner_org": principal.organization_id, "owner_sub": principal.sub_account_id}


def visible_to_bound(model: Any, shape: Shape) -> ColumnElement[bool]:
    """`visible_to` for any principal of `shape`, with its ids as bound parameters."""
    live = model.is_deleted == false()
    if shape == "user":
        return and_(
            live,
            model.organization_id.is_(None),
            model.user_id == bindparam("owner_user", type_=model.user_id.type),
        )
    same_org = model.organization_id == bindparam("owner_org", type_=model.organization_id.type)
    if shape == "org":
        return and_(live, same_org, model.sub_account_id.is_(None))
    same_sub = or_(
        model.sub_account_id.is_(None),
        model.sub_account_id == bindparam("owner_sub", type_=model.sub_account_id.type),
    )
    return and_(live, same_org, same_sub)
