"""Server transactions, RFC 3261 §17.2 (INVITE §17.2.1, non-INVITE §17.2.2), with RFC 6026.

INVITE server, RFC 6026 §7.1 / §8.5-§8.7: a 2xx from the TU moves Proceeding to **Accepted** (not
Terminated as in RFC 3261) and arms Timer L (64*T1). In Accepted, INVITE retransmissions are
absorbed (the TU retransmits its 2xx itself, RFC 3261 §13.3.1.4, through ``SendResponse`` which is
passed straight to the transport), ACKs are passed to the TU, and Timer L ends the transaction.
This keeps a retransmitted INVITE from looking like a new request while the 2xx is in flight.

The INVITE server sends 100 Trying at once rather than after 200 ms (§17.2.1 allows either): it
stops the client's Timer A retransmissions as early as possible.
"""

from __future__ import annotations

from dataclasses import dataclass

from sipedge.sip.message import Request, Response, frozen, request_skeleton
from sipedge.sip.timers import TIMER_G, TIMER_H, TIMER_I, TIMER_J, TIMER_L
from sipedge.sip.transaction import (
    Action,
    Deliver,
    Event,
    Received,
    Send,
    SendResponse,
    TerminationReason,
    TimerFired,
    TransactionBase,
    TransportFailed,
    TxState,
    build_response,
)

__all__ = ["InviteServerTransaction", "NonInviteServerTransaction"]


@dataclass(slots=True)
class InviteServerTransaction(TransactionBase):
    """RFC 3261 Figure 7 plus RFC 6026 Figure 5 (Accepted)."""

    last_response: Response | None = None  # re-sent when the INVITE is retransmitted
    _interval: float = 0.0  # current Timer G interval

    def handle(self, event: Event, now: float) -> list[Action]:
        state = self.state
        if isinstance(event, TransportFailed):
            return self._transport_failed()
        if state is TxState.INIT:
            if isinstance(event, Received) and isinstance(event.msg, Request):
                return self._start()
            return []
        if isinstance(event, TimerFired):
            return self._on_timer(event, now) if self._fired(event) else []
        if isinstance(event, SendResponse):
            return self._on_tu_response(event.response, now)
        if isinstance(event, Received) and isinstance(event.msg, Request):
            return self._on_request(event.msg, now)
        return []

    def retirement(self) -> tuple[bool, bytes | None] | None:
        if self.state is TxState.ACCEPTED:
            return True, None  # RFC 6026 §8.6/§8.7: absorb INVITEs, pass ACKs up
        if self.state is TxState.CONFIRMED:
            return False, None  # §17.2.1: absorb ACK retransmissions until Timer I
        return None

    def _start(self) -> list[Action]:
        # §17.2.1: enter Proceeding, pass the INVITE to the TU, answer 100 Trying (at once, see
        # the module docstring).
        self.state = TxState.PROCEEDING
        trying = build_response(self.request, 100, "Trying")
        self.last_response = trying
        return [Send(trying, self.dest), Deliver(self.request)]

    def _on_request(self, request: Request, now: float) -> list[Action]:
        state = self.state
        if request.method == "ACK":
            if state is TxState.COMPLETED:
                # §17.2.1: the ACK for our non-2xx: stop retransmitting, enter Confirmed and absorb
                # ACK retransmissions for Timer I (zero when reliable).
                self.state = TxState.CONFIRMED
                out = self._cancel_timers(TIMER_G, TIMER_H)
                delay = self.config.timer_i(self.reliable)
                if delay > 0:
                    out.append(self._start_timer(TIMER_I, now, delay))
                else:
                    out.extend(self._terminate())
                return out
            if state is TxState.ACCEPTED:
                # RFC 6026 §8.7: an ACK (for the 2xx) that matches goes to the TU.
                return [Deliver(request)]
            # Confirmed: ACK retransmissions are absorbed (§17.2.1).
            return []
        if request.method != "INVITE":
            return []
        if state in (TxState.PROCEEDING, TxState.COMPLETED) and self.last_response is not None:
            # §17.2.1: a retransmitted INVITE is answered with the most recent provisional
            # (Proceeding) or the final response (Completed); the TU never sees it.
            return [Send(self.last_response, self.dest)]
        # RFC 6026 §8.6: in Accepted, retransmissions are absorbed (the TU retransmits the 2xx).
        return []

    def _on_tu_response(self, response: Response, now: float) -> list[Action]:
        state, status = self.state, response.status
        if state is TxState.PROCEEDING:
            if status < 200:
                # §17.2.1: provisionals are sent and remembered for retransmitted INVITEs.
                self.last_response = response
                return [Send(response, self.dest)]
            if status < 300:
                # RFC 6026 §8.5: 2xx -> Accepted with Timer L; the TU retransmits the 2xx, so
                # the transaction keeps neither it nor the offer (a held call's memory).
                self.state = TxState.ACCEPTED
                self.last_response = None
                self.request = request_skeleton(self.request)
                return [
                    Send(response, self.dest),
                    self._start_timer(TIMER_L, now, self.config.timeout),
                ]
            # §17.2.1: 300-699 -> Completed; Timer G (T1, unreliable only) retransmits it and
            # Timer H (64*T1) bounds the wait for the ACK.
            self.state = TxState.COMPLETED
            self.last_response = frozen(response)
            self.request = request_skeleton(self.request)
            out: list[Action] = [Send(response, self.dest)]
            if not self.reliable:
                self._interval = self.config.t1
                out.append(self._start_timer(TIMER_G, now, self._interval))
            out.append(self._start_timer(TIMER_H, now, self.config.timeout))
            return out
        if state is TxState.ACCEPTED and 200 <= status < 300:
            # RFC 6026 §8.7: the TU's 2xx retransmissions pass straight to the transport.
            return [Send(response, self.dest)]
        # A second final response in Completed/Confirmed is a TU error; it is not sent.
        return []

    def _on_timer(self, event: TimerFired, now: float) -> list[Action]:
        state, name = self.state, event.name
        if name == TIMER_G and state is TxState.COMPLETED and self.last_response is not None:
            # §17.2.1: retransmit the final response, interval doubled up to T2.
            self._interval = self.config.next_capped(self._interval)
            return [
                Send(self.last_response, self.dest),
                self._start_timer(TIMER_G, now, self._interval),
            ]
        if name == TIMER_H and state is TxState.COMPLETED:
            # §17.2.1: no ACK within 64*T1: the TU learns of the failure (§17.2.4 semantics).
            return self._terminate(TerminationReason.TIMEOUT)
        if name == TIMER_I and state is TxState.CONFIRMED:
            # §17.2.1: ACK retransmissions absorbed long enough.
            return self._terminate()
        if name == TIMER_L and state is TxState.ACCEPTED:
            # RFC 6026 §8.7: the 2xx/ACK exchange is the TU's; the transaction ends.
            return self._terminate()
        return []


@dataclass(slots=True)
class NonInviteServerTransaction(TransactionBase):
    """RFC 3261 Figure 8."""

    last_response: Response | None = None

    def retirement(self) -> tuple[bool, bytes | None] | None:
        if self.state is TxState.COMPLETED and self.last_response is not None:
            return False, bytes(self.last_response)  # §17.2.2: re-sent until Timer J
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        state = self.state
        if isinstance(event, TransportFailed):
            return self._transport_failed()
        if state is TxState.INIT:
            if isinstance(event, Received) and isinstance(event.msg, Request):
                # §17.2.2: enter Trying and pass the request to the TU.
                self.state = TxState.TRYING
                return [Deliver(self.request)]
            return []
        if isinstance(event, TimerFired):
            if event.name == TIMER_J and state is TxState.COMPLETED and self._fired(event):
                # §17.2.2: request retransmissions absorbed long enough.
                return self._terminate()
            return []
        if isinstance(event, SendResponse):
            return self._on_tu_response(event.response, now)
        # §17.2.2: a retransmission is dropped in Trying and answered with the last response in
        # Proceeding/Completed; the TU never sees it.
        if (
            isinstance(event, Received)
            and isinstance(event.msg, Request)
            and state in (TxState.PROCEEDING, TxState.COMPLETED)
            and event.msg.method == self.request.method
            and self.last_response is not None
        ):
            return [Send(self.last_response, self.dest)]
        return []

    def _on_tu_response(self, response: Response, now: float) -> list[Action]:
        if self.state not in (TxState.TRYING, TxState.PROCEEDING):
            # §17.2.2: in Completed, further TU responses are discarded.
            return []
        self.last_response = response
        out: list[Action] = [Send(response, self.dest)]
        if response.status < 200:
            # §17.2.2: a provisional moves Trying to Proceeding.
            self.state = TxState.PROCEEDING
            return out
        # §17.2.2: a final response -> Completed with Timer J (zero when reliable).
        self.state = TxState.COMPLETED
        delay = self.config.timer_j(self.reliable)
        if delay > 0:
            out.append(self._start_timer(TIMER_J, now, delay))
        else:
            out.extend(self._terminate())
        return out
