"""407 (Proxy-Authorization) and SHA-256 digest answers, checked by a tiny carrier gateway built on
sipedge's own SIP core (SIPp's verifyauth only checks MD5 Authorization): it challenges the first
INVITE, verifies the second with ``sip.digest.verify_authorization`` (the ``uri`` must be exactly
the Request-URI), then answers 486 when the credentials are right and 403 when not."""

from __future__ import annotations

import pytest
from harness import HOST
from outbound_env import PASSWORD, USER, running

from sipedge.sip.digest import DigestError, parse_credentials, verify_authorization
from sipedge.sip.message import Request, Response
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import TerminationReason, build_response
from sipedge.stack.transactions import (
    AnyTransaction,
    ClientTransaction,
    ServerTransaction,
    SipTransport,
    TransactionLayer,
)
from sipedge.stack.transport_udp import UdpTransport

REALM = "carrier.example"


class ChallengingGateway:
    def __init__(self, status: int, algorithm: str, *, rechallenge: bool = False) -> None:
        self.status = status
        self.rechallenge = rechallenge  # challenge every INVITE, credentials or not
        self.algorithm = algorithm
        self.invites: list[Request] = []
        self.verified: list[bool] = []
        self.layer: TransactionLayer | None = None
        self.transport: UdpTransport | None = None

    async def start(self) -> int:
        self.layer = TransactionLayer(self, config=TimerConfig(t1=0.05, t2=0.4))
        self.transport = await UdpTransport.create(HOST, 0, self.layer.on_transport_message)
        self.layer.attach(self.transport)
        return self.transport.local_address[1]

    async def close(self) -> None:
        if self.layer is not None:
            self.layer.close()
        if self.transport is not None:
            await self.transport.close()

    def on_request(
        self,
        request: Request,
        tx: ServerTransaction | None,
        source: tuple[str, int],
        transport: SipTransport,
    ) -> None:
        if tx is None or request.method != "INVITE":
            return
        self.invites.append(request)
        header = "Authorization" if self.status == 401 else "Proxy-Authorization"
        answer = request.headers.get(header)
        if answer is None or self.rechallenge:
            challenge = build_response(request, self.status, "Unauthorized", to_tag="gw1")
            name = "WWW-Authenticate" if self.status == 401 else "Proxy-Authenticate"
            challenge.headers.add(
                name,
                f'Digest realm="{REALM}", nonce="n-{len(self.invites)}", qop="auth", '
                f"algorithm={self.algorithm}",
            )
            tx.respond(challenge)
            return
        try:
            credentials = parse_credentials(answer)
        except DigestError:
            credentials = None
        valid = credentials is not None and verify_authorization(
            credentials,
            method="INVITE",
            password=PASSWORD,
            realm=REALM,
            expected_nonce=f"n-{len(self.invites) - 1}",
            request_uri=str(request.uri),
        )
        valid = valid and credentials is not None and credentials.username == USER
        valid = valid and credentials is not None and credentials.algorithm == self.algorithm
        self.verified.append(valid)
        tx.respond(build_response(request, 486 if valid else 403, "Done", to_tag="gw1"))

    def on_response(self, response: Response, tx: ClientTransaction | None) -> None:
        return None

    def on_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        return None


@pytest.mark.parametrize(
    ("status", "algorithm"), [(407, "SHA-256"), (407, "MD5"), (401, "SHA-256")]
)
async def test_challenge_answered_once(tmp_path, caplog, status: int, algorithm: str) -> None:
    caplog.set_level("DEBUG")
    gateway = ChallengingGateway(status, algorithm)
    port = await gateway.start()
    try:
        async with running(str(tmp_path)) as env:
            agent_id = await env.agent_id()
            trunk_id = await env.trunk(
                agent_id, [(HOST, port)], auth_username=USER, auth_password=PASSWORD
            )
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            responses = [
                (await env.client.get(f"/trunk/trunks/{trunk_id}")).text,
                (await env.client.get(f"/call/{run_id}")).text,
                (await env.client.get(f"/trunk/trunks/{trunk_id}/calls")).text,
            ]
            assert env.channels(trunk_id) == 0
    finally:
        await gateway.close()
    assert gateway.verified == [True]
    assert len(gateway.invites) == 2
    first, second = gateway.invites
    assert first.call_id == second.call_id and second.cseq.seq == first.cseq.seq + 1
    assert (state["status"], state["final_sip_code"]) == ("busy", 486)
    for text in [caplog.text, *responses]:
        assert PASSWORD not in text


async def test_no_credentials_or_a_second_challenge_is_a_carrier_failure(tmp_path) -> None:
    gateway = ChallengingGateway(407, "SHA-256")
    port = await gateway.start()
    try:
        async with running(str(tmp_path)) as env:
            agent_id = await env.agent_id()
            trunk_id = await env.trunk(agent_id, [(HOST, port)])  # no credentials
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            assert env.channels(trunk_id) == 0
    finally:
        await gateway.close()
    assert len(gateway.invites) == 1  # challenged once, never answered
    assert (state["status"], state["reason"], state["final_sip_code"]) == (
        "failed", "carrier_failure", 407,
    )  # fmt: skip


@pytest.mark.parametrize("rechallenge", [False, True])
async def test_wrong_password_or_second_challenge_gets_no_second_answer(
    tmp_path, rechallenge: bool
) -> None:
    gateway = ChallengingGateway(407, "MD5", rechallenge=rechallenge)
    port = await gateway.start()
    try:
        async with running(str(tmp_path)) as env:
            agent_id = await env.agent_id()
            trunk_id = await env.trunk(
                agent_id, [(HOST, port)], auth_username=USER, auth_password="wrong-one"
            )
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            assert env.channels(trunk_id) == 0
    finally:
        await gateway.close()
    assert gateway.verified == ([] if rechallenge else [False])
    assert len(gateway.invites) == 2  # one answer; then a 403 or a second 407 is a failure
    assert (state["status"], state["reason"]) == ("failed", "carrier_failure")
