"""The `sipedge` command: load Settings once, then run one role or one admin task."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sipedge.config import Settings, load_settings
from sipedge.store.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger("sipedge")
T = TypeVar("T")

FIRST_USER = "admin"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        settings = load_settings(args.config)
    except (FileNotFoundError, ValueError) as exc:
        print(f"sipedge: configuration error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.logging.level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if settings.logging.level != "DEBUG":
        # Alembic narrates every plugin and step at INFO; only its warnings matter to operators.
        logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        result: int = args.handler(settings, args)
    except (StoreError, ValueError) as exc:
        message = exc.message if isinstance(exc, StoreError) else str(exc)
        print(f"sipedge: {message}", file=sys.stderr)
        return 1
    return result


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sipedge", description=__doc__)
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="TOML config file (default: $SIPEDGE_CONFIG or ./config/sipedge.toml)",
    )
    roles = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = roles.add_parser("serve", help="SIP edge + admin API in one process")
    serve.set_defaults(handler=_serve)
    api = roles.add_parser("api", help="the admin API only")
    api.set_defaults(handler=_api)
    sip = roles.add_parser(
        "sip", help="the SIP edge only (re-reads the database every few seconds)"
    )
    sip.set_defaults(handler=_sip)

    db = roles.add_parser("db", help="database administration")
    db_cmds = db.add_subparsers(dest="db_command", metavar="DB_COMMAND")
    upgrade = db_cmds.add_parser("upgrade", help="apply Alembic migrations")
    upgrade.set_defaults(handler=_db_upgrade)

    token = roles.add_parser("token", help="bearer tokens for the admin API")
    token_cmds = token.add_subparsers(dest="token_command", metavar="TOKEN_COMMAND")
    create = token_cmds.add_parser("create", help="issue a token (printed once)")
    create.add_argument("--user", required=True, help="user id the token acts as")
    create.add_argument("--org", default=None, help="organisation id")
    create.add_argument("--sub-account", default=None, help="sub-account id")
    create.set_defaults(handler=_token_create)
    revoke = token_cmds.add_parser("revoke", help="revoke a token")
    revoke.add_argument("token", help="the token to revoke")
    revoke.set_defaults(handler=_token_revoke)

    trunk = roles.add_parser("trunk", help="trunk administration")
    trunk_cmds = trunk.add_subparsers(dest="trunk_command", metavar="TRUNK_COMMAND")
    convert = trunk_cmds.add_parser(
        "convert-legacy", help="create a trunk from a legacy BYOT trunk and mark it converting"
    )
    convert.add_argument("--legacy-id", required=True, help="id of the legacy trunk")
    convert.add_argument("--name", required=True, help="name of the new trunk")
    convert.add_argument("--user", required=True)
    convert.add_argument("--org", default=None)
    convert.add_argument("--sub-account", default=None)
    convert.set_defaults(handler=_trunk_convert)
    finish = trunk_cmds.add_parser("finish-conversion", help="mark a trunk's migration done")
    finish.add_argument("trunk_id")
    finish.set_defaults(handler=_trunk_finish)

    webhook = roles.add_parser("webhook", help="call status webhooks")
    webhook_cmds = webhook.add_subparsers(dest="webhook_command", metavar="WEBHOOK_COMMAND")
    secret = webhook_cmds.add_parser(
        "secret", help="print the account's webhook signing secret (created on first use)"
    )
    secret.add_argument("--user", required=True, help="user id (the account outside orgs)")
    secret.add_argument("--org", default=None, help="organisation id (the account inside one)")
    secret.set_defaults(handler=_webhook_secret)
    return parser


def _db_upgrade(settings: Settings, _args: argparse.Namespace) -> int:
    from sipedge.store.migrate import upgrade

    upgrade(settings.database.url)
    print("database is at the latest revision")
    return 0


def _in_session(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run one unit of admin work in a session, committed when it returns."""
    from sipedge.store.db import make_engine, make_session_factory

    async def run() -> T:
        engine = make_engine(settings.database.url)
        try:
            async with make_session_factory(engine)() as session:
                result = await work(session)
                await session.commit()
                return result
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _token_create(settings: Settings, args: argparse.Namespace) -> int:
    from sipedge.store import tokens

    token = _in_session(
        settings,
        lambda session: tokens.create_token(
            session, user_id=args.user, organization_id=args.org, sub_account_id=args.sub_account
        ),
    )
    print(token)
    return 0


def _token_revoke(settings: Settings, args: argparse.Namespace) -> int:
    from sipedge.store import tokens

    if _in_session(settings, lambda session: tokens.revoke_token(session, args.token)):
        print("token revoked")
        return 0
    print("sipedge: no such active token", file=sys.stderr)
    return 1


def _trunk_convert(settings: Settings, args: argparse.Namespace) -> int:
    from sipedge.store import repositories

    async def convert(session: AsyncSession) -> str:
        trunk = await repositories.start_conversion(
            session,
            user_id=args.user,
            organization_id=args.org,
            sub_account_id=args.sub_account,
            legacy_trunk_id=args.legacy_id,
            name=args.name,
        )
        return str(trunk.id)

    print(_in_session(settings, convert))
    return 0


def _trunk_finish(settings: Settings, args: argparse.Namespace) -> int:
    from sipedge.store import repositories

    _in_session(
        settings, lambda session: repositories.finish_conversion(session, trunk_id=args.trunk_id)
    )
    print("conversion finished")
    return 0


def _webhook_secret(settings: Settings, args: argparse.Namespace) -> int:
    from sipedge.store.webhook_outbox import account_key, secret_for

    key = account_key(organization_id=args.org, user_id=args.user)
    print(_in_session(settings, lambda session: secret_for(session, key)))
    return 0


def _serve(settings: Settings, _args: argparse.Namespace) -> int:
    from sipedge.runtime.serve import serve

    return serve(settings, role="serve")


def _api(settings: Settings, _args: argparse.Namespace) -> int:
    from sipedge.runtime.serve import serve

    return serve(settings, role="api")


def _sip(settings: Settings, _args: argparse.Namespace) -> int:
    from sipedge.runtime.serve import serve

    return serve(settings, role="sip")


if __name__ == "__main__":
    sys.exit(main())
