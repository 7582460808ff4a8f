"""Numbers an agent reports (token counts, context sizes, costs), checked where ACP is
translated, before they reach a message, a run or a database column.

An agent may send anything a JSON number can spell, or a string: 10^20 input tokens,
2^64-1, a negative count, 1e999 (infinity). Stored as they came, one such number made the
run's end fail to store (BIGINT holds at most 2^63-1) and statistics add up to totals
no client can read. Here a count is an integer in [0, ``MAX_COUNT``], else null, and an
amount a finite number, else null; the raw ACP frame keeps what the agent sent.
"""

from __future__ import annotations

import logging
import math

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import Cost

__all__ = ["MAX_COUNT", "checked_cost", "count", "amount", "usage_report"]

# The largest integer a JSON client reads exactly (2^53-1, JavaScript's safe integers):
# far beyond any real run, and sums of many such runs still fit a BIGINT column
# (2^63-1 is 1024 of them).
log = logging.getLogger("agent_sessions.sessions")

MAX_COUNT = 2**53 - 1
MAX_CURRENCY = 16  # the runs table's cost_currency column
MAX_AMOUNT = 1e15  # a cost beyond this is none an agent can have meant


def count(value: JsonValue) -> int | None:
    """A token count or size: a non-negative finite number, truncated to an integer and
    clamped to ``MAX_COUNT``; anything else (negative, NaN, infinite, a string, a bool)
    is None. A number beyond ``MAX_COUNT`` is none the agent can have meant."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value < 0 or value > MAX_COUNT:
        return None
    return int(value)


def amount(value: JsonValue) -> float | None:
    """A cost amount: a finite number below ``MAX_AMOUNT`` in size, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > MAX_AMOUNT:
        return None  # (an integer may be beyond a float's range)
    number = float(value)
    return number if math.isfinite(number) and abs(number) <= MAX_AMOUNT else None


def checked_cost(value: JsonValue) -> Cost | None:
    """ACP's ``{amount, currency}`` with its amount checked; None without a usable amount."""
    if not isinstance(value, dict):
        return None
    number = amount(value.get("amount"))
    if number is None:
        return None
    currency = value.get("currency")
    return {
        "amount": number,
        "currency": currency[:MAX_CURRENCY] if isinstance(currency, str) else None,
    }


def usage_report(value: JsonValue, session_id: str | None = None) -> JsonObject | None:
    """A prompt result's ``usage``: each count checked (``count``); objects and lists in
    it dropped. The result is no message (no raw frame keeps it): a report that had to be
    changed is logged as the agent sent it."""
    if not isinstance(value, dict):
        return None
    checked = {k: count(v) for k, v in value.items() if not isinstance(v, dict | list)}
    if checked != value:
        log.warning(
            "the agent's usage report held numbers no count can be: %.500r",
            value,
            extra={"session_id": session_id, "event": "agent_numbers"},
        )
    return checked
