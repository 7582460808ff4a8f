"""Staging what the translator made of an agent's updates: outputs become drafts for the
writer, and a tool call's outputs the ops that keep its row (its turn's tool book)."""

from __future__ import annotations

from server.sessions.live.translate import Output
from server.sessions.live.turn import Turn
from server.stream.writer import Draft, new_id
from store.operations import WriteOp

__all__ = ["stage"]


def stage(outputs: list[Output], turn: Turn | None) -> tuple[list[Draft], list[WriteOp]]:
    """Outputs → drafts for the writer, plus tool-call bookkeeping ops."""
    drafts: list[Draft] = []
    ops: list[WriteOp] = []
    run_id = turn.run_id if turn else None
    for out in outputs:
        draft = Draft(out.role, out.stored, out.raw, run_id, turn.step_number if turn else None)
        content = out.content
        if content["type"] == "tool" and turn is not None:
            draft.id = new_id()
            op = turn.tools.record(content, draft.id)
            draft.step_number = turn.step_number
            if op is not None:
                ops.append(op)
        drafts.append(draft)
    return drafts, ops
