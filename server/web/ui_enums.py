"""The UI's enum lists, generated from ``server.shapes`` rather than copied:
``python -m server.web.ui_enums`` writes ``server/web/static/enums.js`` (a test checks the
committed file is what this makes)."""

from __future__ import annotations

import json
from pathlib import Path

from server import shapes

__all__ = ["PATH", "render"]

PATH = Path(__file__).resolve().parent / "static" / "enums.js"

_ENUMS = {
    "SESSION_STATUSES": shapes.SESSION_STATUSES,
    "RUN_STATUSES": shapes.RUN_STATUSES,
    "TOOL_STATUSES": shapes.TOOL_STATUSES,
    "ROLES": shapes.ROLES,
    "MESSAGE_TYPES": shapes.MESSAGE_TYPES,
}


def render() -> str:
    lines = [
        "// @ts-check",
        "// Generated from server/shapes.py by `python -m server.web.ui_enums`: do not edit.",
        "",
    ]
    lines += [
        f"export const {name} = Object.freeze({json.dumps(list(values))});"
        for name, values in _ENUMS.items()
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(render())
