"""Who owns the live sessions' lives: the ``registry`` of live sessions (and their
locks), which only keeps track, and the ``supervisor``, which uses it: admission, start,
restart and end, the status changes they store (``status``), the idle sweep (``idle``),
startup recovery (``recovery``), sessions whose writes failed (``write_failure``) and the
processes an agent leaves behind (``processes``)."""

__all__ = [
    "admission",
    "idle",
    "processes",
    "recovery",
    "registry",
    "status",
    "supervisor",
    "write_failure",
]
