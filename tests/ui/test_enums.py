"""The UI's enum lists are generated from server/shapes.py, never copied: the committed
static/enums.js is what ``python -m server.web.ui_enums`` writes, and no other UI module
spells out a list of its own."""

from __future__ import annotations

import re

from server import shapes
from server.web.ui_enums import PATH, render


def test_enums_js_is_generated_from_the_shapes() -> None:
    assert PATH.read_text() == render(), "run: python -m server.web.ui_enums"
    assert '"interrupted"' in render() and '"in_progress"' in render()


def test_no_ui_module_copies_an_enum_list() -> None:
    lists = [
        shapes.SESSION_STATUSES,
        shapes.RUN_STATUSES,
        shapes.TOOL_STATUSES,
        shapes.ROLES,
        shapes.MESSAGE_TYPES,
    ]
    for module in PATH.parent.glob("*.js"):
        if module == PATH:
            continue
        arrays = re.findall(r"\[([^\[\]]*)\]", module.read_text())
        for array in arrays:
            items = tuple(re.findall(r'"([^"]*)"', array))
            assert items not in lists, f"{module.name} copies {items}"
