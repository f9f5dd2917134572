"""A pjsua2 peer run as its own process (one pjsua2 Endpoint per process, see TESTING.md).

    python pjsua2_peer.py call   <udp|tcp> <local_port> <target_uri> <hold_seconds> <timeout>
    python pjsua2_peer.py cancel <udp|tcp> <local_port> <target_uri> <timeout>
    python pjsua2_peer.py answer <udp|tcp> <local_port> <timeout>

``call`` dials ``target_uri``, waits for the call to be confirmed, holds, hangs up and waits for
the BYE to be answered. ``cancel`` dials, hangs up while ringing (a CANCEL) and expects 487.
``answer`` prints READY, answers the first incoming call with 200 and waits
for the caller's BYE. Both print one RESULT line (JSON) and exit 0 only when the call was
confirmed and then disconnected normally.
"""

from __future__ import annotations

import json
import sys
import time

import pjsua2 as pj

STATE_NAMES = {
    pj.PJSIP_INV_STATE_NULL: "null",
    pj.PJSIP_INV_STATE_CALLING: "calling",
    pj.PJSIP_INV_STATE_INCOMING: "incoming",
    pj.PJSIP_INV_STATE_EARLY: "early",
    pj.PJSIP_INV_STATE_CONNECTING: "connecting",
    pj.PJSIP_INV_STATE_CONFIRMED: "confirmed",
    pj.PJSIP_INV_STATE_DISCONNECTED: "disconnected",
}


class Call(pj.Call):  # type: ignore[misc]
    def __init__(self, acc: pj.Account, call_id: int = pj.PJSUA_INVALID_ID) -> None:
        super().__init__(acc, call_id)
        self.states: list[str] = []
        self.last_status = 0

    def onCallState(self, prm: pj.OnCallStateParam) -> None:
        info = self.getInfo()
        self.states.append(STATE_NAMES.get(info.state, str(info.state)))
        self.last_status = info.lastStatusCode

    def onCallMediaState(self, prm: pj.OnCallMediaStateParam) -> None:
        pass  # null audio device: nothing to connect


class Account(pj.Account):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.incoming: list[Call] = []

    def onIncomingCall(self, prm: pj.OnIncomingCallParam) -> None:
        call = Call(self, prm.callId)
        self.incoming.append(call)
        op = pj.CallOpParam()
        op.statusCode = 200
        call.answer(op)


def main(argv: list[str]) -> int:
    mode, transport, port = argv[0], argv[1], int(argv[2])
    ep = pj.Endpoint()
    ep.libCreate()
    cfg = pj.EpConfig()
    cfg.uaConfig.threadCnt = 0
    cfg.uaConfig.mainThreadOnly = True
    cfg.logConfig.level = 1
    cfg.logConfig.consoleLevel = 1
    ep.libInit(cfg)
    tcfg = pj.TransportConfig()
    tcfg.port = port
    tcfg.boundAddress = "127.0.0.1"
    tcfg.publicAddress = "127.0.0.1"
    kind = pj.PJSIP_TRANSPORT_TCP if transport == "tcp" else pj.PJSIP_TRANSPORT_UDP
    ep.transportCreate(kind, tcfg)
    ep.libStart()
    ep.audDevManager().setNullDev()
    acfg = pj.AccountConfig()
    acfg.idUri = f"sip:pjsua2@127.0.0.1:{port};transport={transport}"
    acfg.mediaConfig.transportConfig.boundAddress = "127.0.0.1"
    acfg.mediaConfig.transportConfig.publicAddress = "127.0.0.1"
    acc = Account()
    acc.create(acfg)
    result: dict[str, object] = {"mode": mode}
    ok = False
    try:
        if mode == "call":
            target, hold, timeout = argv[3], float(argv[4]), float(argv[5])
            ok = run_call(ep, acc, target, hold, timeout, result)
        elif mode == "cancel":
            ok = run_cancel(ep, acc, argv[3], float(argv[4]), result)
        else:
            ok = run_answer(ep, acc, float(argv[3]), result)
    finally:
        print("RESULT " + json.dumps(result), flush=True)
        # Call objects must go before libDestroy: their destructor asserts on a live library.
        acc.incoming.clear()
        acc.shutdown()
        ep.libDestroy()
    return 0 if ok else 1


def pump(ep: pj.Endpoint, until: float, done: object) -> bool:
    while time.monotonic() < until:
        ep.libHandleEvents(20)
        if callable(done) and done():
            return True
    return False


def run_call(
    ep: pj.Endpoint,
    acc: Account,
    target: str,
    hold: float,
    timeout: float,
    result: dict[str, object],
) -> bool:
    deadline = time.monotonic() + timeout
    call = Call(acc)
    call.makeCall(target, pj.CallOpParam(True))
    confirmed = pump(
        ep, deadline, lambda: "confirmed" in call.states or "disconnected" in call.states
    )
    if confirmed and "confirmed" in call.states:
        pump(ep, time.monotonic() + hold, None)
        call.hangup(pj.CallOpParam())
    ended = pump(ep, deadline, lambda: "disconnected" in call.states)
    result.update(states=call.states, last_status=call.last_status)
    return "confirmed" in call.states and ended


def run_cancel(
    ep: pj.Endpoint, acc: Account, target: str, timeout: float, result: dict[str, object]
) -> bool:
    deadline = time.monotonic() + timeout
    call = Call(acc)
    call.makeCall(target, pj.CallOpParam(True))
    ringing = pump(ep, deadline, lambda: "early" in call.states or "disconnected" in call.states)
    if ringing and "early" in call.states:
        call.hangup(pj.CallOpParam())  # before a final response: pjsua sends CANCEL
    ended = pump(ep, deadline, lambda: "disconnected" in call.states)
    result.update(states=call.states, last_status=call.last_status)
    return ended and "confirmed" not in call.states and call.last_status == 487


def run_answer(ep: pj.Endpoint, acc: Account, timeout: float, result: dict[str, object]) -> bool:
    print("READY", flush=True)
    deadline = time.monotonic() + timeout

    def ended() -> bool:
        return bool(acc.incoming) and "disconnected" in acc.incoming[0].states

    done = pump(ep, deadline, ended)
    states = acc.incoming[0].states if acc.incoming else []
    result.update(states=states, last_status=acc.incoming[0].last_status if acc.incoming else 0)
    return done and "confirmed" in states


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
