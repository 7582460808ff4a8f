"""The one door of the session domain. The web layer parses a request, calls one method
of ``Sessions`` and renders what it returns; every domain step (and the clean-up when a
step fails) happens behind it. It holds the services, the registry of live sessions and
the supervisor, and hands each function only the ones it uses."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from types import EllipsisType
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus
from sqlalchemy.ext.asyncio import AsyncSession

from agent_bridge import AgentCgroups
from agent_bridge.jsontypes import JsonObject, JsonValue
from server.cluster import Cluster
from server.contents import ControlsView
from server.sandbox import SandboxHost
from server.sessions import answers
from server.sessions.agents.config import DEFAULT_AGENT_ID, AgentConfig
from server.sessions.agents.mcp_create import create_mcp_names, mcp_refusal
from server.sessions.catalog import Listing, Repos, Runs, Stats
from server.sessions.client_tools import ClientTools
from server.sessions.errors import Conflict, NotFound, SandboxUnavailable, SessionNotActive
from server.sessions.history import archive, keeping, listing
from server.sessions.history import log as history
from server.sessions.history.listing import Listed, SessionPage, SessionQuery
from server.sessions.live.controls_state import ControlsState, empty_controls
from server.sessions.live.prompt_content import PromptContent, build_prompt, get_attachment
from server.sessions.live.session import LiveSession
from server.sessions.live.transcript import ChatEntry
from server.sessions.live.turns import text_block
from server.sessions.records import get_record
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.supervision.admission import refuse_when_full
from server.sessions.supervision.processes import KeyedLocks, process_owner
from server.sessions.supervision.registry import Registry
from server.sessions.supervision.status import log_active_count
from server.sessions.supervision.supervisor import Supervisor
from server.sessions.workspaces import review
from server.sessions.workspaces import service as workspace_service
from server.sessions.workspaces.door import Workspaces
from server.sessions.workspaces.review import LineComment
from server.settings import Settings
from server.stream.broker import Broker
from server.stream.writer import Writer
from store import Database, Run, SessionRecord
from store import glance as glance_store
from store.models import Attachment
from store.operations import DeleteSession, SetClientTools

__all__ = ["NewSession", "Sessions"]

log = logging.getLogger("agent_sessions.sessions")


class NewSession(msgspec.Struct, frozen=True):
    """A create request, parsed and checked for form by the edge."""

    repo_id: str
    agent_id: str | None = None
    title: str | None = None
    parent_run_id: str | None = None
    isolation: str | None = None
    base_ref: str | None = None
    mcp_servers: tuple[str, ...] = ()
    mode_id: str | None = None
    config: dict[str, JsonValue] | None = None
    visibility: str = "team"  # API.md "Users and access": private is owner and admins only
    client_tools: tuple[JsonObject, ...] = ()  # checked by ``sessions.client_tools.check``


class Sessions:
    """The session domain as the web sees it."""

    def __init__(
        self,
        services: Services,
        registry: Registry,
        supervisor: Supervisor,
        agents: dict[str, AgentConfig],
    ) -> None:
        self.services = services
        self.registry = registry
        self.supervisor = supervisor
        self.agents = agents
        self._rewinds = KeyedLocks()
        self._sandbox_decided: anyio.Event | None = None  # made by run()
        # What is stored, as the web lists and shows it (one read transaction a call).
        self.listing = Listing(services.db)
        self.runs = Runs(services.db)
        self.stats = Stats(services.db)
        # A session's workspace: changes, commit, merge, the review's files, file search.
        self.workspaces = Workspaces(services, registry.turn_running)
        self.repos = Repos(services.db, self.workspaces.remove_repo_worktrees)
        # The tools a page or script carries out for a session's agent.
        self.client_tools = ClientTools(services, registry)

    @property
    def shutting_down(self) -> bool:
        return self.supervisor.shutting_down

    @property
    def taking_sessions(self) -> bool:
        """Whether sessions can be started (what /readyz reports)."""
        return self.supervisor.taking_sessions

    def mcp_names(self, value: object) -> tuple[str, ...]:
        """``mcpServers`` of a create request: a list of defined names (else 422)."""
        catalog = self.agents[DEFAULT_AGENT_ID].mcp_catalog  # the same for every agent
        return create_mcp_names(catalog, value)

    # -- one session ---------------------------------------------------------------------

    async def get(self, session_id: str, db: AsyncSession | None = None) -> SessionRecord:
        """The session's record (NotFound), in ``db`` or a read of its own."""
        return await get_record(self.services.db, session_id, db)

    async def create(self, new: NewSession) -> SessionRecord:
        """Admit a session, make its workspace, start its agent, apply the requested
        controls. A step that fails undoes what the steps before it made: a worktree that
        cannot be made ends the session in ``error``; an agent that cannot take its MCP
        servers or a requested control discards the session (it was never created)."""
        supervisor, services = self.supervisor, self.services
        self._check_sandbox()  # before any row or slot: nothing to undo
        plan = await workspace_service.plan_session(
            services, new.repo_id, new.isolation, new.base_ref, partial(refuse_when_full, services)
        )
        record = await supervisor.create_session(
            new.repo_id, new.agent_id, new.title, new.parent_run_id, visibility=new.visibility
        )
        try:
            await workspace_service.make_worktree(services, record, plan)
        except BaseException:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await supervisor.end_session(record.id, "error", "worktree_failed")
            raise
        if new.client_tools:  # stored before the agent starts: its session/new offers them
            tools = SetClientTools(record.id, list(new.client_tools))
            await services.writer.submit(None, (), [tools]).wait()
            record = await self.get(record.id)
        live = await supervisor.start_new(record, mcp=new.mcp_servers)
        refusal = mcp_refusal(live.mcp_refused)
        if refusal is not None:
            await self._discard(live, "MCP servers")
            raise refusal
        if new.mode_id is not None or new.config:
            try:
                await live.controls.apply_create_choices(new.mode_id, dict(new.config or {}))
            except BaseException:
                await self._discard(live, "controls")
                raise
        return await self.get(record.id)

    def _check_sandbox(self) -> None:
        """AGENT_SANDBOX=on and no working sandbox here: 503 ``sandbox_unavailable``."""
        sandbox = self.services.sandbox
        if sandbox is not None and (refused := sandbox.refusal()) is not None:
            raise SandboxUnavailable(refused)

    def sandbox_view(self) -> JsonObject:
        """``{enabled, network}`` in force: every Session's ``sandbox`` and every agent's
        in GET /api/agents (one wall for all; each agent's hosts are its own)."""
        sandbox = self.services.sandbox
        return {"enabled": False, "network": "open"} if sandbox is None else sandbox.view()

    def sandbox_readiness(self) -> JsonObject:
        """``{enabled, reason}`` for GET /readyz: why agents run without a sandbox."""
        sandbox = self.services.sandbox
        if sandbox is None:
            return {"enabled": False, "reason": "not configured"}
        return sandbox.readiness()

    async def _discard(self, live: LiveSession, why: str) -> None:
        """A create refused after its agent started: stop the agent, delete the session."""
        with anyio.CancelScope(shield=True):
            await live.stop("cancelled")
            await self.services.writer.submit(None, (), [DeleteSession(live.id)]).wait()
            await log_active_count(self.services, f"session refused: {why}", live.id)

    async def complete(self, session_id: str) -> SessionRecord:
        return await self.supervisor.end_session(session_id, "completed", "user_request")

    async def delete(self, session_id: str) -> SessionRecord:
        return await self.supervisor.end_session(session_id, "cancelled", "user_request")

    # -- turns -------------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        max_steps: int | None = None,
        step_base: int = 0,
        resumed_from: str | None = None,
        parent_run_id: str | None | EllipsisType = ...,  # ...: the session's own
        content: PromptContent | None = None,
    ) -> str:
        """Start a turn (the agent started first if need be); the new run's id."""
        live = await self.supervisor.active_live(session_id)
        settings = self.services.settings
        return await live.turns.start(
            text,
            max_steps=settings.agent_max_steps if max_steps is None else max_steps,
            step_base=step_base,
            resumed_from=resumed_from,
            parent_run_id=live.parent_run_id if parent_run_id is ... else parent_run_id,
            content=content,
        )

    async def prompt_blocks(self, session_id: str, blocks: list[JsonValue]) -> str:
        """A prompt of content blocks (images, files): checked against the session's
        workspace and its agent's prompt capabilities, then started as a turn."""
        live = await self.supervisor.active_live(session_id)
        built = await self._built(live, blocks)
        return await self.prompt(session_id, built.text, content=built)

    async def _built(self, live: LiveSession, blocks: list[JsonValue]) -> PromptContent:
        settings = self.services.settings
        return await anyio.to_thread.run_sync(
            partial(
                build_prompt,
                blocks,
                session_id=live.id,
                root=live.repo_path,
                capabilities=live.translator.controls.prompt_capabilities,
                max_image_bytes=settings.max_image_bytes,
                max_embed_bytes=settings.max_embed_bytes,
            )
        )

    async def queue_prompt(
        self, session_id: str, text: str | None, blocks: list[JsonValue] | None
    ) -> tuple[str, int | None]:
        """A prompt that waits for the running turn (API.md, Finding and keeping
        sessions): its run id and 1-based place in the queue, or None when it started at
        once. ``blocks``: a prompt of content blocks (then ``text`` is in them)."""
        live = await self.supervisor.active_live(session_id)
        built = await self._built(live, blocks) if blocks is not None else None
        text = built.text if built is not None else text
        assert text is not None
        limit = self.services.settings.max_queued_prompts
        return await live.queue.submit(text, built, limit=limit)

    async def drop_queued(self, session_id: str, run_id: str) -> None:
        """A waiting prompt taken out, its run ``cancelled`` (404 once it started)."""
        await self.get(session_id)
        live = self.registry.get(session_id)
        if live is None:
            raise NotFound("run", run_id, f"No queued run {run_id} in this session.")
        await live.queue.drop(run_id)

    def resuming(self, run_id: str) -> AbstractAsyncContextManager[None]:
        """Held while a run's resume is checked and started (one at a time per run)."""
        return self.registry.resuming(run_id)

    async def resume(self, run: Run, text: str, max_steps: int) -> Run:
        """Resume a paused or interrupted run with a new turn (one resume at a time per
        run, and never past the cumulative step cap); the new run as accepted."""
        if run.status not in ("paused", "interrupted"):
            raise Conflict(
                "run_not_paused",
                f"The run is {run.status}; only paused or interrupted runs resume.",
            )
        async with self.resuming(run.id):
            later, steps = await self.runs.resume_state(run)
            if later is not None:
                raise Conflict(
                    "run_not_paused",
                    f"The run was already resumed by run {later.id}; resume that one.",
                    {"resumedBy": later.id},
                )
            cap = self.services.settings.max_total_steps_per_run
            if steps >= cap:
                raise Conflict(
                    "step_limit_reached",
                    f"The run has used {steps} of its {cap} cumulative steps.",
                    {"limit": cap, "stepCount": steps},
                )
            new_id = await self.prompt(
                run.session_id,
                text,
                max_steps=min(max_steps, cap - steps),
                step_base=steps,
                resumed_from=run.id,
                parent_run_id=run.parent_run_id,
            )
        new_run = await self.runs.get(new_id)
        # The run as accepted, at the step it starts from: its first tool calls may already
        # be stored (the writer commits within a millisecond or two of them).
        new_run.step_count = steps
        return new_run

    async def cancel(self, session_id: str) -> None:
        record = await self.get(session_id)
        live = self.registry.get(session_id)
        if record.status != "active":
            raise SessionNotActive(f"The session is {record.status}.")
        if live is not None:
            await live.cancel_turn()
        await self.supervisor.touch(session_id)

    # -- questions the agent asks ------------------------------------------------------

    async def answer_permission(self, session_id: str, request_id: str, option_id: str) -> None:
        await answers.answer_permission(
            self.services.db, self.registry, session_id, request_id, option_id
        )

    async def answer_elicitation(
        self, session_id: str, request_id: str, action: str, content: Any
    ) -> JsonObject:
        """The outcome given to the agent."""
        return await answers.answer_elicitation(
            self.services.db, self.registry, session_id, request_id, action, content
        )

    # -- controls ----------------------------------------------------------------------

    async def controls(self, session_id: str) -> ControlsView:
        record = await self.get(session_id)
        live = self.registry.running(session_id)
        if live is not None:
            return live.translator.controls.view()
        return ControlsState(record.controls).view() if record.controls else empty_controls()

    async def set_mode(self, session_id: str, mode_id: str) -> ControlsView:
        live = await self.supervisor.active_live(session_id)
        return await live.controls.set_mode(mode_id)

    async def set_config(self, session_id: str, config_id: str, value: JsonValue) -> ControlsView:
        live = await self.supervisor.active_live(session_id)
        return await live.controls.set_config(config_id, value)

    # -- history -----------------------------------------------------------------------

    async def transcript(self, session_id: str, upto: int | None) -> list[ChatEntry]:
        return await history.session_transcript(self.services.db, session_id, upto)

    async def fork(self, session_id: str, upto: int | None, title: str | None) -> SessionRecord:
        return await history.fork_session(self.supervisor, session_id, upto, title)

    async def rewind(
        self, session_id: str, to_seq: int, *, restore_files: bool = False
    ) -> tuple[SessionRecord, int]:
        """The session rewound and how many messages were dropped."""
        return await history.rewind_session(
            self.supervisor, self._rewinds, session_id, to_seq, restore_files=restore_files
        )

    # -- finding and keeping (API.md) -------------------------------------------------

    async def list_sessions(self, query: SessionQuery) -> SessionPage:
        """A page of the list, or of a search's matches."""
        return await listing.list_sessions(self.services, query)

    async def listed(self, session_id: str) -> Listed:
        """One session as listed: with its runs, usage and repository."""
        return await listing.listed_session(self.services, session_id)

    async def patch(
        self,
        session_id: str,
        *,
        title: str | None = None,
        visibility: str | None = None,
        archived: bool | None = None,
    ) -> Listed:
        """Renamed, shared, archived or brought back; the session as listed after."""
        await keeping.patch_session(
            self.services, session_id, title=title, visibility=visibility, archived=archived
        )
        return await self.listed(session_id)

    async def purge(self, session_id: str, *, keep_branch: bool) -> None:
        """An ended session gone for good: its git state, then every row."""
        await keeping.purge_session(self.services, session_id, keep_branch=keep_branch)

    async def agent_controls(self) -> dict[str, JsonObject]:
        """Each agent's last known controls (none for one that never started)."""
        async with self.services.db.read() as db:
            found: dict[str, JsonObject] = await glance_store.last_controls(db, list(self.agents))
        return found

    def export(self, record: SessionRecord) -> AsyncIterator[bytes]:
        return archive.export_lines(self.services.db, record)

    async def import_archive(
        self, body: bytes, repo_id: str | None, agent_id: str | None
    ) -> SessionRecord:
        parsed = archive.parse_archive(body)
        return await archive.import_archive(self.services, self.agents, parsed, repo_id, agent_id)

    # -- review (the rest of the workspaces: ``self.workspaces``) -----------------------

    async def review(self, session_id: str, comments: list[LineComment], text: str | None) -> str:
        """Line comments sent to the agent as one prompt; the new run's id."""
        prompt, stored = await review.review_prompt(
            self.services, self.registry.turn_running, session_id, comments, text
        )
        content = PromptContent(prompt, [text_block(prompt)], stored)
        return await self.prompt(session_id, prompt, content=content)

    async def attachment(self, session_id: str, sha256: str) -> Attachment | None:
        """A kept attachment of the session (look the session up first: 404)."""
        async with self.services.db.read() as db:
            return await get_attachment(db, session_id, sha256)

    # -- lifetime ----------------------------------------------------------------------

    async def ping(self) -> None:
        """The database answers (readiness)."""
        await self.services.db.ping()

    @classmethod
    def build(
        cls,
        settings: Settings,
        database: Database,
        writer: Writer,
        broker: Broker,
        agents: dict[str, AgentConfig],
        cluster: Cluster,
        clock: Callable[[], float] = time.monotonic,
    ) -> Sessions:
        """The domain's objects, each given what it uses: the services (with this server
        process's agent cgroups and the agents' sandbox), the registry, and the
        supervisor that owns the lives of the live sessions in it."""
        owner, orphans = process_owner(database.url, cluster.node_id)
        cgroups = AgentCgroups(owner, settings.agent_cgroups)
        sandboxes = {agent.id: agent.sandbox for agent in agents.values()}
        sandbox = SandboxHost(settings, sandboxes, limit_name=cgroups.name)
        services = Services(settings, database, writer, cluster, clock, cgroups, sandbox)
        registry = Registry()
        supervisor = Supervisor(services, registry, broker, agents, owner, orphans)
        return cls(services, registry, supervisor, agents)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The supervisor's tasks (idle sweep, write failures, orphans, live sessions), and
        the sandbox decided (a bubblewrap start on a worker thread, then its egress proxy
        serving) beside the start-up's recovery; ``start`` returns only once it is, so no
        agent starts before it (they start on requests, after readiness)."""
        decided = self._sandbox_decided = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._decide_sandbox, tg, decided)
            await tg.start(self.supervisor.run)
            task_status.started()

    async def _decide_sandbox(self, tg: TaskGroup, decided: anyio.Event) -> None:
        if self.services.sandbox is not None:
            await tg.start(self.services.sandbox.run)
        decided.set()

    async def take_over(self, session_ids: set[str]) -> None:
        """Sessions whose owner node died: their runs are interrupted here."""
        await self.supervisor.recover_sessions(session_ids)

    async def start(self) -> None:
        """At start-up (``run`` running): recover what a crash left; then, the sandbox
        decided, make the agents' cgroups and end the orphans a dead process left."""
        assert self._sandbox_decided is not None, "start() runs once run() started"
        await self.supervisor.recover()
        half_made = await workspace_service.recover(self.services.settings)
        await self.supervisor.end_half_made(half_made)
        await self._sandbox_decided.wait()
        await self.supervisor.start_processes()

    async def shutdown(self) -> None:
        await self.supervisor.shutdown()
