"""JSON responses and bodies encoded with orjson."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse as _StarletteJSONResponse

__all__ = ["JSONResponse", "dumps"]


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


class JSONResponse(_StarletteJSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)
