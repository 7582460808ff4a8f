"""The NDJSON archive of a session: export and import.

The archive format (``GET /api/sessions/{id}/export``, ``POST /api/sessions/import``) is
NDJSON, UTF-8, one JSON object per line:

- line 1, a header: ``{"type": "session", "version": 1, "id", "repoId", "agentId",
  "title", "createdAt"}``. It is optional on import.
- then one line per stored message in ``seq`` order, dropped ones included:
  ``{"id", "sessionId", "runId", "seq", "role", "content", "stepNumber", "timestamp",
  "raw", "dropped"}`` (the ``Message`` of API.md plus its raw ACP frame and its
  ``dropped`` flag). Message lines have no top-level ``type``; ``content.type`` is theirs.

Nothing volatile (status, export time) is in the file, so export → import → export gives
the same bytes apart from ids (the session id, the message ids, and ``repoId`` when
imported on another repository).
"""

import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Literal, TypedDict

import msgspec
import orjson

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import shapes
from server.sessions.agents.config import AgentConfig
from server.sessions.errors import Invalid, NotFound
from server.sessions.live.prompt_frame import restore_attachments
from server.sessions.records import get_record
from server.sessions.services import Services
from server.stream.frames import iso, row_view
from store import Database, SessionRecord, utcnow
from store import messages as message_store
from store import replay as replay_store
from store import repos as repo_store
from store.messages import MessageValues
from store.operations import ImportSession

__all__ = ["ARCHIVE_VERSION", "Archive", "export_lines", "import_archive", "parse_archive"]

log = logging.getLogger("agent_sessions.history")

ARCHIVE_VERSION = 1
EXPORT_PAGE = 500
ROLES = shapes.ROLES
TYPES = shapes.MESSAGE_TYPES


# -- export --------------------------------------------------------------------------------


class ExportHeader(TypedDict):
    """Line 1 of an export."""

    type: Literal["session"]
    version: int
    id: str
    repoId: str
    agentId: str
    title: str | None
    createdAt: str | None


class ImportHeader(TypedDict):
    """The fields of an imported header the server uses, checked."""

    id: str | None
    repoId: str | None
    agentId: str | None
    title: str | None
    createdAt: datetime | None


class ArchivedMessage(TypedDict):
    """A message line, checked, as the columns of its row (ids are new on import)."""

    seq: int
    run_id: str | None
    step_number: int | None
    role: str
    type: str
    partial: bool
    dropped: bool
    content: JsonObject
    raw: JsonObject | None
    created_at: datetime


def archive_header(record: SessionRecord) -> ExportHeader:
    return {
        "type": "session",
        "version": ARCHIVE_VERSION,
        "id": record.id,
        "repoId": record.repo_id,
        "agentId": record.agent_id,
        "title": record.title,
        "createdAt": iso(record.created_at),
    }


async def export_lines(database: Database, record: SessionRecord) -> AsyncIterator[bytes]:
    """The archive, line by line; one short read transaction per page."""
    yield orjson.dumps(archive_header(record)) + b"\n"
    cursor = 0
    while True:
        async with database.read() as db:
            rows = await replay_store.view_rows(
                db,
                record.id,
                message_store.MessageFilter(after=cursor, include_dropped=True),
                limit=EXPORT_PAGE,
                raw=True,
            )
        if rows:
            yield b"".join(orjson.dumps(row_view(row, raw=True)) + b"\n" for row in rows)
            cursor = rows[-1].seq
        if len(rows) < EXPORT_PAGE:
            return


# -- import --------------------------------------------------------------------------------


class Archive(msgspec.Struct):
    """A parsed archive: the optional header and the message rows (without ids)."""

    header: ImportHeader | None = None
    rows: list[ArchivedMessage] = msgspec.field(default_factory=list)


def _bad(line: int, message: str) -> Invalid:
    return Invalid(f"line {line}: {message}", line=line)


def _timestamp(value: JsonValue, line: int, name: str) -> datetime:
    if not isinstance(value, str):
        raise _bad(line, f"{name} must be an ISO 8601 timestamp string.")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _bad(line, f"{name} is not an ISO 8601 timestamp.") from None
    if parsed.tzinfo is None:
        raise _bad(line, f"{name} must carry a time zone (e.g. a Z suffix).")
    return parsed.astimezone(UTC)


def _optional_int(value: JsonValue) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _uuid_or_none(value: JsonValue) -> bool:
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _parse_header(obj: JsonObject, line: int) -> ImportHeader:
    if obj.get("version") != ARCHIVE_VERSION:
        raise _bad(
            line,
            f"unsupported archive version {obj.get('version')!r} (expected {ARCHIVE_VERSION}).",
        )
    for name in ("id", "repoId"):
        if not _uuid_or_none(obj.get(name)):
            raise _bad(line, f"{name} must be a UUID.")
    if not isinstance(obj.get("agentId"), str | None):
        raise _bad(line, "agentId must be a string.")
    if not isinstance(obj.get("title"), str | None):
        raise _bad(line, "title must be a string or null.")
    created = obj.get("createdAt")
    return {
        "id": obj.get("id"),
        "repoId": obj.get("repoId"),
        "agentId": obj.get("agentId"),
        "title": obj.get("title"),
        "createdAt": None if created is None else _timestamp(created, line, "createdAt"),
    }


def _parse_message(obj: JsonObject, line: int, expected_seq: int) -> ArchivedMessage:
    seq = obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq != expected_seq:
        raise _bad(
            line, f"seq must be {expected_seq} (seqs start at 1 and grow by 1); got {seq!r}."
        )
    role = obj.get("role")
    if role not in ROLES:
        raise _bad(line, f"role must be one of {', '.join(ROLES)}.")
    content = obj.get("content")
    if not isinstance(content, dict) or content.get("type") not in TYPES:
        raise _bad(line, f"content must be an object whose type is one of {', '.join(TYPES)}.")
    raw = obj.get("raw")
    if not isinstance(raw, dict | None):
        raise _bad(line, "raw must be an object or null.")
    if not _uuid_or_none(obj.get("runId")):
        raise _bad(line, "runId must be a UUID or null.")
    if not _optional_int(obj.get("stepNumber")):
        raise _bad(line, "stepNumber must be an integer or null.")
    dropped = obj.get("dropped", False)
    if not isinstance(dropped, bool):
        raise _bad(line, "dropped must be true or false.")
    return {
        "seq": seq,
        "run_id": obj.get("runId"),
        "step_number": obj.get("stepNumber"),
        "role": role,
        "type": content["type"],
        "partial": bool(content.get("partial", False)),
        "dropped": dropped,
        "content": content,
        "raw": raw,
        "created_at": _timestamp(obj.get("timestamp"), line, "timestamp"),
    }


def parse_archive(body: bytes) -> Archive:
    """Validate an NDJSON archive; any bad line is a 422 naming its line number."""
    archive = Archive()
    for number, raw_line in enumerate(body.split(b"\n"), start=1):
        line = raw_line.strip()
        if not line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise _bad(number, "not valid JSON (UTF-8, one object per line).") from None
        if not isinstance(obj, dict):
            raise _bad(number, "each line must be a JSON object.")
        if obj.get("type") == "session":
            if archive.header is not None or archive.rows:
                raise _bad(number, "the session header may only be the first line.")
            archive.header = _parse_header(obj, number)
            continue
        archive.rows.append(_parse_message(obj, number, len(archive.rows) + 1))
    if not archive.rows:
        raise Invalid("The archive holds no messages.")
    return archive


async def import_archive(
    services: Services,
    agents: dict[str, AgentConfig],
    archive: Archive,
    repo_id: str | None,
    agent_id: str | None,
) -> SessionRecord:
    """Recreate an archived session on a registered repository: status ``completed``
    (not counted against the limit), every message as it was, new ids. It takes no
    prompts; fork it to continue."""
    header = archive.header
    repo_id = repo_id or (header and header["repoId"])
    if repo_id is None:
        raise Invalid(
            "Name the repository: pass ?repoId= (the archive has no header naming one).",
            field="repoId",
        )
    agent_id = agent_id or (header and header["agentId"]) or "default"
    if agent_id not in agents:
        raise Invalid(
            f"The archive's agent {agent_id!r} is not configured here; pass ?agentId= to "
            f"choose one.",
            field="agentId",
        )
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, repo_id)
    if repo is None:
        raise NotFound("repo", repo_id)
    now = utcnow()
    created = (header and header["createdAt"]) or archive.rows[0]["created_at"]
    meta = {"importedFrom": header["id"]} if header and header["id"] else {}
    record = SessionRecord(
        id=str(uuid.uuid4()),
        repo_id=repo_id,
        agent_id=agent_id,
        status="completed",
        title=header and header["title"],
        created_at=created,
        updated_at=now,
        last_activity_at=now,
        last_seq=len(archive.rows),
        parent_run_id=None,
        needs_context=False,
        meta=meta,
    )
    rows: list[MessageValues] = [
        {**row, "id": str(uuid.uuid4()), "session_id": record.id} for row in archive.rows
    ]
    images = restore_attachments(record.id, rows)
    await services.writer.submit(None, (), [ImportSession(record, rows, images)]).wait()
    log.info("session imported", extra={"session_id": record.id, "messages": len(rows)})
    return await get_record(services.db, record.id)
