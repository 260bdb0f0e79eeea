"""One renewal at a time, however many threads find the same thing stale.

    renewal = Renewal(key=lambda stale: stale.session)
    renewal.run(stale, renew, deadline)   # renew() once per key; the others wait, see it done
    renewal.wait(deadline)                # block while another thread renews (bounded)
    renewal.failed                        # what the last renewal was for, when it failed

Many requests may find a connection's session gone at once; the first renews it, the others
wait for that and go on in the new one, and a late finder of the same stale session does not
renew it again. Deadlines are time.monotonic() values. Nothing here knows what is renewed.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Hashable


class Renewal:
    """The renewals of one thing. ``key(stale)`` names what a stale token is a token of
    (a session id): a key renewed already is not renewed again. The last few keys renewed
    are remembered (``remember``)."""

    def __init__(self, key: Callable[[Any], Hashable], remember: int = 8):
        self._key = key
        self._changed = threading.Condition()
        self._renewer: threading.Thread | None = None
        self._renewed: collections.deque = collections.deque(maxlen=remember)
        #: the stale token of the last renewal, when that renewal failed (the next one
        #: tries again); None once one succeeds
        self.failed: Any = None

    @property
    def settled(self) -> bool:
        """Whether nothing is to be waited for: no renewal under way, the last one not
        failed (a look, under no lock: the usual send's one check)."""
        return self._renewer is None and self.failed is None

    @property
    def here(self) -> bool:
        """Whether the calling thread is the one renewing."""
        return self._renewer is threading.current_thread()

    def wait(self, deadline: float) -> bool:
        """Block while another thread renews, at most until ``deadline``. True when no
        renewal is under way (or this thread is the one renewing); False when the deadline
        passed first."""
        renewer = self._renewer
        if renewer is None or renewer is threading.current_thread():
            return True
        with self._changed:
            return self._changed.wait_for(lambda: self._renewer is None,
                                          max(0.0, deadline - time.monotonic()))

    def run(self, stale: Any, renew: Callable[[], None], deadline: float) -> bool:
        """Have ``stale`` renewed: by ``renew()`` on this thread, unless another thread is
        renewing (then wait for it, at most until ``deadline``) or its key was renewed
        already. True once it is renewed; False when the deadline passed while waiting.
        Raises what ``renew`` raises (``stale`` is then :attr:`failed`)."""
        key = self._key(stale)
        with self._changed:
            if not self._changed.wait_for(lambda: self._renewer is None,
                                          max(0.0, deadline - time.monotonic())):
                return False
            if key in self._renewed:
                return True  # renewed meanwhile
            self._renewer = threading.current_thread()
        renewed = False
        try:
            renew()
            renewed = True
        finally:
            with self._changed:
                if renewed:
                    self._renewed.append(key)
                self.failed = None if renewed else stale
                self._renewer = None
                self._changed.notify_all()
        return True
