"""This rank's collectives, as the neuron process group times them (for neuronsim.measure())."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

_MAX_EVENTS = 100_000


@dataclass(frozen=True)
class CollectiveEvent:
    kind: str  # topology kind, or "send" / "recv"
    nbytes: int
    group_size: int
    issued_ns: float  # this rank's clock when it called the collective
    start_ns: float  # when the slowest rank of the group arrived (the collective starts)
    end_ns: float

    @property
    def wait_ns(self) -> float:
        return self.start_ns - self.issued_ns

    @property
    def comm_ns(self) -> float:
        return self.end_ns - self.start_ns

    def as_dict(self) -> dict:
        return asdict(self)


_lock = threading.Lock()
_events: list[CollectiveEvent] = []
_dropped = 0  # events before the kept window


def collective(kind: str, nbytes: int, size: int, issued: float, start: float, end: float) -> None:
    global _dropped
    with _lock:
        _events.append(CollectiveEvent(kind, nbytes, size, issued, start, end))
        if len(_events) > _MAX_EVENTS:
            del _events[: len(_events) - _MAX_EVENTS]
            _dropped += 1


def position() -> int:
    """A mark in the event stream (events recorded so far)."""
    with _lock:
        return _dropped + len(_events)


def since(mark: int) -> list[CollectiveEvent]:
    with _lock:
        return list(_events[max(0, mark - _dropped) :])
