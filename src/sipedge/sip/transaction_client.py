"""Client transactions, RFC 3261 §17.1 (INVITE §17.1.1, non-INVITE §17.1.2), with RFC 6026.

INVITE client, RFC 6026 §7.2 / §8.4: a 2xx moves Calling/Proceeding to **Accepted** (not
Terminated as in RFC 3261) and arms Timer M (64*T1); 2xx retransmissions received in Accepted are
passed to the TU, which re-sends its ACK (the 2xx ACK belongs to the TU, not the transaction).
A non-2xx final response is acknowledged inside the transaction with the INVITE's branch
(RFC 3261 §17.1.1.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from sipedge.sip.message import Headers, Request, Response, request_skeleton
from sipedge.sip.timers import (
    TIMER_A,
    TIMER_B,
    TIMER_D,
    TIMER_E,
    TIMER_F,
    TIMER_K,
    TIMER_M,
)
from sipedge.sip.transaction import (
    Action,
    CancelSent,
    Deliver,
    Event,
    Received,
    Send,
    Start,
    TerminationReason,
    TimerFired,
    TransactionBase,
    TransportFailed,
    TxState,
)

__all__ = ["InviteClientTransaction", "NonInviteClientTransaction", "build_ack_for_non2xx"]


def build_ack_for_non2xx(invite: Request, response: Response) -> Request:
    """The ACK for a 300-699 response, RFC 3261 §17.1.1.3.

    Same Request-URI, Call-ID, From and CSeq number as the INVITE; To from the response (with its
    tag); one Via, the INVITE's top Via (same branch, so it matches the server transaction); the
    INVITE's Route headers; no body.
    """
    headers = Headers()
    headers.add("Via", invite.headers.get_all("Via")[0])
    for route in invite.headers.get_all("Route"):
        headers.add("Route", route)
    headers.add("Max-Forwards", "70")
    for name in ("From", "Call-ID"):
        value = invite.headers.get(name)
        if value is not None:
            headers.add(name, value)
    to = response.headers.get("To")
    if to is not None:
        headers.add("To", to)
    headers.add("CSeq", f"{invite.cseq.seq} ACK")
    return Request("ACK", invite.uri, headers)


@dataclass(slots=True)
class InviteClientTransaction(TransactionBase):
    """RFC 3261 Figure 5 plus RFC 6026 Figure 3 (Accepted)."""

    _interval: float = 0.0  # current Timer A interval
    _ack: Request | None = None  # the ACK we sent for a non-2xx, re-sent on retransmissions

    def retirement(self) -> tuple[bool, bytes | None] | None:
        if self.state is TxState.ACCEPTED:
            return True, None  # RFC 6026 §8.4: 2xx retransmissions go to the TU until Timer M
        if self.state is TxState.COMPLETED and self._ack is not None:
            return False, bytes(self._ack)  # §17.1.1.2: the ACK again, until Timer D
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        state = self.state
        if isinstance(event, TransportFailed):
            return self._transport_failed()
        if state is TxState.INIT:
            return self._start(now) if isinstance(event, Start) else []
        if isinstance(event, TimerFired):
            return self._on_timer(event, now) if self._fired(event) else []
        if isinstance(event, Received) and isinstance(event.msg, Response):
            return self._on_response(event.msg, now)
        if isinstance(event, CancelSent) and state is TxState.PROCEEDING:
            # §9.1: no final response 64*T1 after the CANCEL -> destroy the transaction (Timer B
            # re-armed; Proceeding otherwise has no timer and would wait forever).
            return [self._start_timer(TIMER_B, now, self.config.timeout)]
        return []

    def _start(self, now: float) -> list[Action]:
        # §17.1.1.2: enter Calling, send the INVITE; Timer A (T1) only over unreliable transports,
        # Timer B (64*T1) always.
        self.state = TxState.CALLING
        out: list[Action] = [Send(self.request, self.dest)]
        if not self.reliable:
            self._interval = self.config.t1
            out.append(self._start_timer(TIMER_A, now, self._interval))
        out.append(self._start_timer(TIMER_B, now, self.config.timeout))
        return out

    def _on_timer(self, event: TimerFired, now: float) -> list[Action]:
        state, name = self.state, event.name
        if name == TIMER_A and state is TxState.CALLING:
            # §17.1.1.2: retransmit and double the interval; unlike Timer E there is no T2 cap.
            self._interval *= 2
            return [
                Send(self.request, self.dest),
                self._start_timer(TIMER_A, now, self._interval),
            ]
        if name == TIMER_B and state in (TxState.CALLING, TxState.PROCEEDING):
            # §17.1.1.2: no response within 64*T1 (in Proceeding: of the CANCEL, §9.1): tell
            # the TU of the timeout.
            return self._terminate(TerminationReason.TIMEOUT)
        if name == TIMER_D and state is TxState.COMPLETED:
            # §17.1.1.2: response retransmissions are absorbed no longer.
            return self._terminate()
        if name == TIMER_M and state is TxState.ACCEPTED:
            # RFC 6026 §8.4: 2xx retransmissions are no longer expected.
            return self._terminate()
        return []

    def _on_response(self, response: Response, now: float) -> list[Action]:
        state, status = self.state, response.status
        if state in (TxState.CALLING, TxState.PROCEEDING):
            if status < 200:
                # §17.1.1.2: a provisional stops retransmissions (and Timer B: only Calling
                # times out); every provisional goes to the TU.
                self.state = TxState.PROCEEDING
                return [*self._cancel_timers(TIMER_A, TIMER_B), Deliver(response)]
            if status < 300:
                # RFC 6026 §8.4: 2xx -> Accepted, Timer M; the TU sends the ACK. Nothing is
                # retransmitted any more: keep only what the TU may still ask of the request.
                self.state = TxState.ACCEPTED
                self.request = request_skeleton(self.request)
                out = self._cancel_timers(TIMER_A, TIMER_B)
                out.append(self._start_timer(TIMER_M, now, self.config.timeout))
                out.append(Deliver(response))
                return out
            # §17.1.1.2: 300-699 -> Completed: ACK it (§17.1.1.3), pass it up, Timer D
            # (zero over a reliable transport: straight to Terminated).
            self.state = TxState.COMPLETED
            self._ack = build_ack_for_non2xx(self.request, response)
            out = self._cancel_timers(TIMER_A, TIMER_B)
            out.append(Send(self._ack, self.dest))
            out.append(Deliver(response))
            delay = self.config.timer_d(self.reliable)
            if delay > 0:
                out.append(self._start_timer(TIMER_D, now, delay))
            else:
                out.extend(self._terminate())
            return out
        if state is TxState.COMPLETED and status >= 300 and self._ack is not None:
            # §17.1.1.2: a retransmitted final response is answered with the ACK again and is
            # not passed to the TU.
            return [Send(self._ack, self.dest)]
        if state is TxState.ACCEPTED and 200 <= status < 300:
            # RFC 6026 §8.4: 2xx retransmissions (or 2xx from other forks) go to the TU.
            return [Deliver(response)]
        return []


@dataclass(slots=True)
class NonInviteClientTransaction(TransactionBase):
    """RFC 3261 Figure 6."""

    _interval: float = 0.0  # current Timer E interval

    def retirement(self) -> tuple[bool, bytes | None] | None:
        if self.state is TxState.COMPLETED:
            return False, None  # §17.1.2.2: absorb response retransmissions until Timer K
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        state = self.state
        if isinstance(event, TransportFailed):
            return self._transport_failed()
        if state is TxState.INIT:
            return self._start(now) if isinstance(event, Start) else []
        if isinstance(event, TimerFired):
            return self._on_timer(event, now) if self._fired(event) else []
        if isinstance(event, Received) and isinstance(event.msg, Response):
            return self._on_response(event.msg, now)
        return []

    def _start(self, now: float) -> list[Action]:
        # §17.1.2.2: enter Trying, send the request; Timer E (T1) only over unreliable
        # transports, Timer F (64*T1) always.
        self.state = TxState.TRYING
        out: list[Action] = [Send(self.request, self.dest)]
        if not self.reliable:
            self._interval = self.config.t1
            out.append(self._start_timer(TIMER_E, now, self._interval))
        out.append(self._start_timer(TIMER_F, now, self.config.timeout))
        return out

    def _on_timer(self, event: TimerFired, now: float) -> list[Action]:
        state, name = self.state, event.name
        if name == TIMER_E and state in (TxState.TRYING, TxState.PROCEEDING):
            # §17.1.2.2: Trying doubles the interval up to T2; Proceeding retransmits every T2.
            if state is TxState.TRYING:
                self._interval = self.config.next_capped(self._interval)
            else:
                self._interval = self.config.t2
            return [
                Send(self.request, self.dest),
                self._start_timer(TIMER_E, now, self._interval),
            ]
        if name == TIMER_F and state in (TxState.TRYING, TxState.PROCEEDING):
            # §17.1.2.2: no final response within 64*T1: tell the TU of the timeout.
            return self._terminate(TerminationReason.TIMEOUT)
        if name == TIMER_K and state is TxState.COMPLETED:
            # §17.1.2.2: response retransmissions are absorbed no longer.
            return self._terminate()
        return []

    def _on_response(self, response: Response, now: float) -> list[Action]:
        state = self.state
        if state not in (TxState.TRYING, TxState.PROCEEDING):
            # §17.1.2.2: in Completed, retransmitted responses are absorbed.
            return []
        if response.status < 200:
            # §17.1.2.2: a provisional moves Trying to Proceeding and goes to the TU; Timer E
            # keeps running (retransmissions continue at T2 from its next firing).
            self.state = TxState.PROCEEDING
            return [Deliver(response)]
        # §17.1.2.2: a final response -> Completed, to the TU, Timer K (zero when reliable).
        self.state = TxState.COMPLETED
        out = self._cancel_timers(TIMER_E, TIMER_F)
        out.append(Deliver(response))
        delay = self.config.timer_k(self.reliable)
        if delay > 0:
            out.append(self._start_timer(TIMER_K, now, delay))
        else:
            out.extend(self._terminate())
        return out
