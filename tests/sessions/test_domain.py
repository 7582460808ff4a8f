"""The session domain through its one door, without HTTP: the ``Sessions`` facade, its
registry, supervisor and live sessions, driving the demo agent (a real subprocess
speaking ACP) over a temporary SQLite file. What a route would do is one facade call
here; what it would render is read back from the store."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from server.cluster import Cluster
from server.sessions import (
    Conflict,
    Invalid,
    NewSession,
    NotFound,
    Sessions,
    load_agents,
)
from server.settings import Settings
from server.stream.broker import Broker
from server.stream.writer import Writer
from store import Repo, Run, open_database, upgrade, utcnow
from store import messages as message_store
from store import repos as repo_store
from store import runs as run_store
from store import sessions as session_store
from tests.helpers import demo_command, wait_for_async

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "green"]}},
    "required": ["colour"],
}


@dataclass
class Domain:
    sessions: Sessions
    repo_id: str

    async def new(self, **fields: object) -> str:
        record = await self.sessions.create(NewSession(repo_id=self.repo_id, **fields))  # type: ignore[arg-type]
        return record.id

    async def run_status(self, run_id: str) -> str:
        async with self.sessions.services.db.read() as db:
            run = await run_store.get_run(db, run_id)
        assert run is not None
        return run.status

    async def wait_run_ended(self, run_id: str) -> str:
        async def ended() -> str | None:
            status = await self.run_status(run_id)
            return None if status == "running" else status

        return await wait_for_async(ended, f"run {run_id} ended")

    async def types(self, session_id: str) -> list[str]:
        async with self.sessions.services.db.read() as db:
            rows = await message_store.list_messages(
                db, session_id, message_store.MessageFilter(), limit=None
            )
        return [row.content["type"] for row in rows]

    async def asked(self, session_id: str, kind: str) -> str:
        """The request id of the question of ``kind`` the live session waits on."""

        async def pending() -> str | None:
            live = self.sessions.registry.get(session_id)
            found = [p for p in (live.pending.values() if live else ()) if p.kind.name == kind]
            return found[0].request_id if found else None

        return await wait_for_async(pending, f"a {kind} request")


@asynccontextmanager
async def running(settings: Settings, *, start: bool = True) -> AsyncIterator[Domain]:
    """The domain as the app's lifespan builds it, on the demo repository (``start``
    False: running, its start-up recovery left to the caller)."""
    database = open_database(settings.database_url)
    await upgrade(database)
    repo_path = (settings.workspace_root / "demo").resolve()
    repo = Repo(
        id=str(uuid.uuid4()),
        name="demo",
        path=str(repo_path),
        is_git_repo=True,
        created_at=utcnow(),
    )
    async with database.write() as db, db.begin():
        await repo_store.add_repo(db, repo)
    broker = Broker()
    cluster = Cluster(settings, database, broker)
    writer = Writer(database, broker)
    sessions = Sessions.build(settings, database, writer, broker, load_agents(settings), cluster)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await tg.start(sessions.run)
            if start:
                await sessions.start()
            try:
                yield Domain(sessions, repo.id)
            finally:
                with anyio.fail_after(60):  # a guard against a hang, not a measurement
                    await sessions.shutdown()
                    await writer.drain()
                tg.cancel_scope.cancel()
    finally:
        await database.close()


@pytest.fixture
def demo_settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(AGENT_COMMAND=demo_command(), PERMISSION_TIMEOUT="30")


async def test_create_starts_the_agent_and_stores_the_session(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new(title="first")
        record = await domain.sessions.get(sid)
        assert (record.status, record.title) == ("active", "first")
        assert sid in domain.sessions.registry
        assert await domain.types(sid) == ["status"]  # "created"


async def test_a_refused_create_choice_discards_the_session(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        with pytest.raises(Invalid):
            await domain.new(mode_id="no-such-mode")
        assert len(domain.sessions.registry) == 0  # its agent was stopped
        async with domain.sessions.services.db.read() as db:
            assert await session_store.count_active_sessions(db) == 0  # and it was deleted
        with pytest.raises(NotFound):
            await domain.sessions.create(NewSession(repo_id=str(uuid.uuid4())))


async def test_a_prompt_runs_a_turn_to_its_end(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        run_id = await domain.sessions.prompt(sid, "hello")
        assert await domain.wait_run_ended(run_id) == "completed"
        assert domain.sessions.registry[sid].turn is None
        types = await domain.types(sid)
        assert types[:3] == ["status", "text", "run"] and types[-1] == "run"
        with pytest.raises(Conflict):  # one turn at a time
            await domain.sessions.prompt(sid, "slow 200")
            await domain.sessions.prompt(sid, "again")


async def test_cancel_ends_the_run_cancelled(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        run_id = await domain.sessions.prompt(sid, "slow 500")
        await domain.sessions.cancel(sid)
        assert await domain.wait_run_ended(run_id) == "cancelled"


async def test_the_first_permission_answer_wins(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        run_id = await domain.sessions.prompt(sid, "write answer.txt forty-two")
        request_id = await domain.asked(sid, "permission")
        with pytest.raises(Invalid):  # not an offered option: still pending
            await domain.sessions.answer_permission(sid, request_id, "maybe")
        await domain.sessions.answer_permission(sid, request_id, "allow")
        with pytest.raises(Conflict) as second:
            await domain.sessions.answer_permission(sid, request_id, "reject")
        assert second.value.code == "permission_already_decided"
        assert await domain.wait_run_ended(run_id) == "completed"
        path = domain.sessions.services.settings.workspace_root / "demo" / "answer.txt"
        assert path.read_text() == "forty-two"
        with pytest.raises(NotFound):
            await domain.sessions.answer_permission(sid, str(uuid.uuid4()), "allow")


async def test_the_first_elicitation_answer_wins(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        run_id = await domain.sessions.prompt(sid, "elicit form " + json.dumps(SCHEMA))
        request_id = await domain.asked(sid, "elicitation")
        with pytest.raises(Invalid):  # does not match the schema: still pending
            await domain.sessions.answer_elicitation(sid, request_id, "accept", {"colour": 1})
        outcome = await domain.sessions.answer_elicitation(
            sid, request_id, "accept", {"colour": "red"}
        )
        assert outcome == {"action": "accept", "content": {"colour": "red"}}
        with pytest.raises(Conflict):
            await domain.sessions.answer_elicitation(sid, request_id, "decline", None)
        assert await domain.wait_run_ended(run_id) == "completed"


async def test_controls_are_set_through_the_agent_and_read_back(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        before = await domain.sessions.controls(sid)
        assert before["modes"] is not None
        modes = [m["id"] for m in before["modes"]["available"]]
        other = next(m for m in modes if m != before["modes"]["currentModeId"])
        view = await domain.sessions.set_mode(sid, other)
        assert view["modes"] is not None and view["modes"]["currentModeId"] == other
        assert await domain.sessions.controls(sid) == view
        with pytest.raises(Invalid):
            await domain.sessions.set_mode(sid, "no-such-mode")


async def test_history_transcript_fork_and_rewind(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        run_id = await domain.sessions.prompt(sid, "hello")
        await domain.wait_run_ended(run_id)
        transcript = await domain.sessions.transcript(sid, None)
        assert transcript[0] == {"role": "user", "content": "hello"}
        fork = await domain.sessions.fork(sid, None, "a fork")
        assert (fork.forked_from_session_id, fork.needs_context) == (sid, True)
        assert (await domain.types(fork.id))[-1] == "status"  # the copies, then "created"
        record, dropped = await domain.sessions.rewind(sid, 1)
        assert dropped > 0 and record.needs_context
        assert await domain.sessions.transcript(sid, None) == []


async def test_the_idle_sweep_completes_only_idle_sessions(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        idle, busy = await domain.new(), await domain.new()
        long_ago = utcnow() - timedelta(days=1)
        async with domain.sessions.services.db.write() as db, db.begin():
            await session_store.update_session(db, idle, last_activity_at=long_ago)
        assert await domain.sessions.supervisor.sweep_idle() == [idle]
        assert (await domain.sessions.get(idle)).status == "completed"
        assert idle not in domain.sessions.registry  # its agent was stopped
        assert (await domain.sessions.get(busy)).status == "active"


async def test_recovery_interrupts_the_runs_a_dead_server_left(demo_settings: Settings) -> None:
    async with running(demo_settings) as domain:
        sid = await domain.new()
        await domain.sessions.complete(sid)
        run = Run(
            id=str(uuid.uuid4()),
            session_id=sid,
            repo_id=domain.repo_id,
            agent_id="default",
            status="running",
            step_count=0,
            max_steps=10,
            created_at=utcnow(),
        )
        async with domain.sessions.services.db.write() as db, db.begin():
            db.add(run)
        await domain.sessions.supervisor.recover_sessions(None)
        assert await domain.run_status(run.id) == "interrupted"
        assert (await domain.types(sid))[-2:] == ["run", "status"]


async def test_a_worktree_that_cannot_be_made_ends_the_session(
    demo_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.sessions.workspaces import worktrees

    def refuse(*_args: object) -> None:
        raise OSError("no space left")

    async with running(demo_settings) as domain:
        repo = Path(domain.sessions.services.settings.workspace_root / "demo")
        (repo / "README.md").write_text("one\n")
        await anyio.run_process(["git", "-C", str(repo), "add", "."])
        await anyio.run_process(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "1",
            ]
        )
        monkeypatch.setattr(worktrees, "create_worktree", refuse)
        with pytest.raises(OSError):
            await domain.new(isolation="worktree")
        async with domain.sessions.services.db.read() as db:
            assert await session_store.count_active_sessions(db) == 0
        assert len(domain.sessions.registry) == 0


async def test_start_waits_for_the_sandbox_decided_beside_the_recovery(
    demo_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox is decided (bubblewrap's probe, on a worker thread) while the recovery's
    reads run; ``start``, and so readiness, returns only once it is, and the agents'
    cgroups and the orphan sweep start after it. Before, the recovery waited for the probe:
    with the probe held, it never ran."""
    import threading

    from server.sandbox import SandboxHost
    from server.sessions.supervision.supervisor import Supervisor

    release = threading.Event()
    recovered, started = anyio.Event(), anyio.Event()
    order: list[str] = []
    decide, recover, start_processes = (
        SandboxHost.start,
        Supervisor.recover,
        Supervisor.start_processes,
    )

    def held_probe(host: SandboxHost) -> None:
        release.wait(60)
        decide(host)
        order.append("sandbox decided")

    async def recovering(supervisor: Supervisor) -> None:
        await recover(supervisor)
        order.append("recovered")
        recovered.set()

    async def starting_processes(supervisor: Supervisor) -> None:
        order.append("processes")
        await start_processes(supervisor)

    monkeypatch.setattr(SandboxHost, "start", held_probe)
    monkeypatch.setattr(Supervisor, "recover", recovering)
    monkeypatch.setattr(Supervisor, "start_processes", starting_processes)

    async with running(demo_settings, start=False) as domain:

        async def start() -> None:
            await domain.sessions.start()
            order.append("started")
            started.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                with anyio.fail_after(30):  # the recovery, with the probe held
                    await recovered.wait()
                await anyio.wait_all_tasks_blocked()
                assert order == ["recovered"]  # not started: the sandbox is not decided yet
                release.set()
                with anyio.fail_after(30):  # start() once the sandbox is decided
                    await started.wait()
        finally:
            release.set()
    assert order == ["recovered", "sandbox decided", "processes", "started"]
