"""A prompt's content blocks (API.md, Prompt content) → the ACP prompt, the stored user
message and the attachments to keep.

``text`` blocks pass as they are; an ``image`` is checked (declared type, the bytes really
being that type, ``MAX_IMAGE_BYTES``, the agent's ``promptCapabilities.image``) and kept
by its sha256; a ``file`` must lie in the session's workspace (403 otherwise, logged by the
workspace) and goes embedded as a ``resource`` when the agent takes embedded context and
the file is text within ``MAX_EMBED_BYTES``, else as a ``resource_link``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from pathlib import Path
from typing import Any

import msgspec

from agent_bridge import Workspace, WorkspaceError
from agent_bridge.acp_types import ContentBlock
from agent_bridge.jsontypes import JsonObject, JsonValue
from agent_bridge.workspace import FileNotFound, PathOutsideWorkspace
from server.contents import FileAttachment, ImageAttachment, PromptCapabilities, TextContent
from server.sessions.errors import Forbidden, Invalid, TooLarge
from store import attachments as attachment_store
from store import utcnow
from store.models import Attachment

__all__ = ["IMAGE_TYPES", "PromptContent", "build_prompt", "get_attachment", "sniff_image"]

log = logging.getLogger("agent_sessions.prompt")

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def sniff_image(data: bytes) -> str | None:
    """The image type the bytes are, by their magic numbers."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class PromptContent(msgspec.Struct):
    """What one prompt becomes."""

    text: str
    """Its text blocks joined: what the transcript and a preamble see."""
    blocks: list[ContentBlock]
    """The ACP prompt."""
    stored: TextContent
    """The stored user message's content."""
    attachments: list[Attachment] = msgspec.field(default_factory=list)
    """Kept once per session with the prompt (``store.operations.KeepAttachments``)."""


def _image(
    block: JsonObject, index: int, session_id: str, capabilities: PromptCapabilities, limit: int
) -> tuple[ContentBlock, ImageAttachment, Attachment]:
    if not capabilities.get("image"):
        raise Invalid("This agent does not take images.", code="unsupported_content", block=index)
    mime, data = block.get("mimeType"), block.get("data")
    if not isinstance(mime, str) or mime not in IMAGE_TYPES:
        raise Invalid(f"content[{index}].mimeType must be one of {', '.join(IMAGE_TYPES)}.")
    if not isinstance(data, str):
        raise Invalid(f"content[{index}].data must be base64 text.")
    if len(data) > (limit + 2) // 3 * 4 + 4:
        raise TooLarge("image", limit)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise Invalid(f"content[{index}].data is not valid base64.") from None
    if len(raw) > limit:
        raise TooLarge("image", limit)
    if sniff_image(raw) != mime:
        raise Invalid(f"content[{index}] is not a {mime} image.", block=index)
    digest = hashlib.sha256(raw).hexdigest()
    url = f"/api/sessions/{session_id}/attachments/{digest}"
    stored: ImageAttachment = {
        "type": "image",
        "mimeType": mime,
        "size": len(raw),
        "sha256": digest,
        "url": url,
    }
    attachment = Attachment(
        session_id=session_id,
        sha256=digest,
        mime_type=mime,
        size=len(raw),
        data=raw,
        created_at=utcnow(),
    )
    return {"type": "image", "mimeType": mime, "data": data}, stored, attachment


def _line_arg(block: JsonObject, name: str, index: int, minimum: int) -> int | None:
    value = block.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise Invalid(f"content[{index}].{name} must be an integer >= {minimum}.")
    return value


def _file(
    block: JsonObject, index: int, root: Path, embed: bool, limit: int, session_id: str
) -> tuple[ContentBlock, FileAttachment]:
    path = block.get("path")
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise Invalid(f"content[{index}].path must be a path in the workspace.")
    line = _line_arg(block, "line", index, 1)
    count = _line_arg(block, "limit", index, 0)
    workspace = Workspace(root, max_file_bytes=limit, context={"session_id": session_id})
    try:
        real = workspace.resolve(path)
    except PathOutsideWorkspace:
        raise Forbidden(
            "path_outside_workspace", "The file is outside the session's workspace."
        ) from None
    except WorkspaceError as exc:  # a name or path longer than the file system allows
        raise Invalid(
            f"content[{index}].path is not a usable path ({exc.reason}).", reason=exc.reason
        ) from None
    if not real.is_file():
        raise Invalid(f"content[{index}].path {path!r} is not a file of the workspace.")
    uri = real.as_uri()
    text: str | None = None
    if embed:
        try:
            text = workspace.read_text(str(real), line=line, limit=count)
        except FileNotFound:
            raise Invalid(f"content[{index}].path {path!r} is not a file.") from None
        except (WorkspaceError, ValueError):
            text = None  # too large or not a regular file: a link
        if text is not None and ("\x00" in text or "\ufffd" in text):
            text = None  # binary: a link
    relative = str(real.relative_to(root))
    stored: FileAttachment = {
        "type": "file",
        "path": relative,
        "line": line,
        "limit": count,
        "embedded": text is not None,
    }
    if text is not None:
        resource = {"uri": uri, "text": text, "mimeType": "text/plain"}
        return {"type": "resource", "resource": resource}, stored
    return {"type": "resource_link", "uri": uri, "name": real.name}, stored


def build_prompt(
    content: list[JsonValue],
    *,
    session_id: str,
    root: Path,
    capabilities: PromptCapabilities,
    max_image_bytes: int,
    max_embed_bytes: int,
) -> PromptContent:
    """Check every block (the first bad one refuses the whole prompt)."""
    blocks: list[ContentBlock] = []
    texts: list[str] = []
    stored_attachments: list[ImageAttachment | FileAttachment] = []
    attachments: list[Attachment] = []
    embed = bool(capabilities.get("embeddedContext"))
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or kind not in ("text", "image", "file"):
            raise Invalid(f"content[{index}] must be a text, image or file block.")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise Invalid(f"content[{index}].text must be a string.")
            texts.append(text)
            blocks.append({"type": "text", "text": text})
        elif kind == "image":
            acp, stored, attachment = _image(
                block, index, session_id, capabilities, max_image_bytes
            )
            blocks.append(acp)
            stored_attachments.append(stored)
            attachments.append(attachment)
        else:
            acp, stored_file = _file(block, index, root, embed, max_embed_bytes, session_id)
            blocks.append(acp)
            stored_attachments.append(stored_file)
    text = "\n".join(texts)
    if not text.strip() and not stored_attachments:
        raise Invalid("The prompt is empty.")
    user: TextContent = {"type": "text", "text": text, "attachments": stored_attachments}
    return PromptContent(text, blocks, user, attachments)


async def get_attachment(db: Any, session_id: str, sha256: str) -> Attachment | None:
    return await attachment_store.get_attachment(db, session_id, sha256)
