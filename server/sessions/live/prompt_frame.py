"""The raw ACP prompt frame a user message keeps (API.md: "the raw ACP prompt frame keeps
the whole prompt for export"), and the images an import gets back from it.

The stored user message says what the prompt held (its text, each image's sha256 and
size, each file's path) but not the bytes: an image lives in the session's attachments,
a file's text in the workspace as it was then. The frame is the prompt as the agent got
it (the image's data, the embedded file's text or its link), without the transcript a
rebuilt agent is handed before it (that is the server's, not the user's). An import
stores each image of these frames as an attachment of the new session again, so its
messages' image URLs answer as they did in the archived one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence

from agent_bridge.acp_types import ContentBlock
from agent_bridge.jsontypes import JsonObject
from store import utcnow
from store.messages import MessageValues
from store.models import Attachment

__all__ = ["prompt_frame", "restore_attachments"]

METHOD = "session/prompt"


def prompt_frame(blocks: Sequence[ContentBlock]) -> JsonObject:
    """The JSON-RPC request of ``session/prompt`` carrying ``blocks``."""
    return {"jsonrpc": "2.0", "method": METHOD, "params": {"prompt": [dict(b) for b in blocks]}}


def _images(raw: JsonObject | None) -> list[JsonObject]:
    if not isinstance(raw, dict) or raw.get("method") != METHOD:
        return []
    params = raw.get("params")
    blocks = params.get("prompt") if isinstance(params, dict) else None
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "image"]


def restore_attachments(session_id: str, rows: Sequence[MessageValues]) -> list[Attachment]:
    """For imported ``rows`` (message columns; content and raw as objects): the images
    of their prompt frames, as attachments of ``session_id``, whose sha256 the message
    names; each such image's ``url`` is pointed at the new session."""
    kept: dict[str, Attachment] = {}
    for row in rows:
        if row["role"] != "user":
            continue
        data: dict[str, tuple[bytes, str]] = {}
        for block in _images(row["raw"]):
            try:
                raw = base64.b64decode(str(block.get("data")), validate=True)
            except (binascii.Error, ValueError):
                continue  # not an image the server took: the frame is kept, no attachment
            data[hashlib.sha256(raw).hexdigest()] = (raw, str(block.get("mimeType")))
        attachments = row["content"].get("attachments")
        for item in attachments if isinstance(attachments, list) else []:
            if not isinstance(item, dict) or item.get("type") != "image":
                continue
            digest = item.get("sha256")
            if digest not in data:
                continue
            item["url"] = f"/api/sessions/{session_id}/attachments/{digest}"
            body, mime = data[digest]
            kept.setdefault(
                digest,
                Attachment(
                    session_id=session_id,
                    sha256=digest,
                    mime_type=str(item.get("mimeType") or mime),
                    size=len(body),
                    data=body,
                    created_at=utcnow(),
                ),
            )
    return list(kept.values())
