"""SIGTERM and SIGHUP while ctxgate runs: what runs is stopped first (each
module registers how, `when_stopped`), then the signal does what it would
have done — the handler before ours, or the process's death.

Shared by the pytest plugin (its check runs and their scratch folders)
and the agent API (its driven sessions): one handler, installed while any
of them runs in the main thread (Python's rule for handlers)."""

import os
import signal
import threading

_SIGNALS = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
_PREVIOUS = {}
_STOPPERS = []
_depth = 0


def when_stopped(stop):
    """Have `stop()` called on SIGTERM or SIGHUP while a run is in
    progress (it must stop whatever of its own is running, and be a no-op
    when nothing is)."""
    _STOPPERS.append(stop)


def _on_signal(signum, frame):
    for stop in list(_STOPPERS):
        stop()
    previous = _PREVIOUS.pop(signum, signal.SIG_DFL)
    signal.signal(signum, previous)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        os.kill(os.getpid(), signum)


class StopOnSignals:
    """While a run is in progress in the main thread, SIGTERM and SIGHUP
    stop it first (nested runs install the handler once)."""

    def __enter__(self):
        global _depth
        self.entered = threading.current_thread() is threading.main_thread()
        if self.entered:
            if _depth == 0:
                for sig in _SIGNALS:
                    _PREVIOUS[sig] = signal.signal(sig, _on_signal)
            _depth += 1
        return self

    def __exit__(self, *exc):
        global _depth
        if self.entered:
            _depth -= 1
            if _depth == 0:
                for sig in _SIGNALS:
                    if sig in _PREVIOUS:
                        signal.signal(sig, _PREVIOUS.pop(sig))
        return False
