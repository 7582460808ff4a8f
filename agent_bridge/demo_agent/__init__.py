"""The demo agent: a deterministic ACP agent with no model behind it.

Run it as ``python -m agent_bridge.demo_agent``. It speaks ACP v1 (JSON-RPC 2.0, one
JSON object per line) on stdin/stdout and logs to stderr. It is the server's default
agent and the peer of the bridge's subprocess tests. Standard library only.

Protocol
    ``initialize`` (protocolVersion 1, promptCapabilities.embeddedContext, agentInfo
    demo-agent 1.0.0), ``authenticate``, ``session/new``, ``session/load`` (only with
    DEMO_AGENT_LOAD=1), ``session/prompt``, ``session/cancel``. Anything else is -32601;
    unknown notifications are ignored. It reads and writes files only through the
    client's ``fs/read_text_file`` / ``fs/write_text_file`` and asks
    ``session/request_permission`` (``save``: an elicitation form) before writing
    (``probe`` does not ask: it tests the client's confinement). Terminals only through
    ``terminal/*`` when advertised. Exit code 0 when stdin closes.

The default turn (any prompt text T that is not a command below)
    2 agent_thought_chunk, a plan (pending), tool call ``call_1`` "Read README.md"
    (README.md in the session cwd, else its first regular file by name; read through
    ``fs/read_text_file``, skipped if the client cannot read files) pending ->
    in_progress -> completed (first 200 chars, rawOutput {bytes, lines}) or failed
    (rawOutput {error}), the plan again (completed), >= 3 agent_message_chunk that
    include ``You said: T``, a usage_update (size 200000, cumulative cost in USD),
    then stopReason ``end_turn``. Every reply echoes ``You said: T``. Tool call ids
    restart at ``call_1`` in every turn. Requests the agent sends use its own ids
    (1, 2, ...; a separate space from the client's) and may be answered in any order;
    ``session/cancel`` abandons the turn's pending requests and answers the prompt
    with stopReason ``cancelled``. A second prompt on a busy session is -32000.

Prompt commands (the whole prompt text; arguments must parse, else it is T)
    ``write <relpath> <content...>``  default turn + tool call ``call_2`` (kind edit,
        diff block) + permission (allow / allow-always / reject); allowed: written
        through fs/write_text_file to <cwd>/<relpath>; rejected: failed, "rejected by
        user"; permission cancelled: stopReason cancelled.
    ``save <relpath> <content...>``  the risky write: when the client advertised
        elicitation forms, first an ``elicitation/create`` form (``path``, default
        relpath; ``overwrite``, default false); accepted: tool call ``call_2`` writes
        the chosen file without a permission request (an existing file only with
        overwrite); declined: not written; cancelled: stopReason cancelled. Without
        the capability it is ``write``.
    ``elicit form <schema json>`` / ``elicit url <url>`` / ``elicit <mode>``  one
        ``elicitation/create`` of that mode (only a mode the client advertised, else it
        says so); the reply has ``Elicitation answer: <the answer as JSON>``.
    ``ask-permission-bare``  a permission request for ``call_bare`` with no tool_call
        before it, then a tool_call_update for it (completed; failed if rejected).
    ``tools N [permission]``  tool calls call_1..call_N ("Tool k", kind read / search
        / execute in turn, rawInput {k}); every k % 3 == 0 fails. ``permission`` asks
        before the first one.
    ``slow [N]``  N (default 20) text chunks 100 ms apart; for cancel tests.
    ``flood N [text|tool] [rate=R]``  N updates (agent_message_chunk of ~100 bytes, or
        tool_call_update of ~5 KiB for ``call_flood``) as fast as possible or R per
        second; exactly these N carry ``_meta.demo = {t: time.time() written, i}``
        (i = 0..N-1), followed by a reply chunk and a usage_update. Unpaced, stdout is
        flushed every 64 lines or when the writer's queue runs empty.
    ``history``  replies ``History: a | b | c`` with this session's earlier prompts.
    ``crash``  2 text chunks, "demo agent: crashing on purpose" on stderr, exit 3.
    ``hang``  one text chunk and "demo agent: hanging on purpose" on stderr, then
        never answers anything again (cancel and stdin EOF ignored; stdin still read).
    ``ignore-sigterm [command]``  ignore SIGTERM from now on, then run the rest of the
        text (e.g. ``ignore-sigterm hang``) or the default turn.
    ``grandchildren``  spawns 2 ``sleep 1000`` in the agent's process group (stdin and
        stdout /dev/null, stderr inherited), replies ``grandchildren: <pid> <pid>``.
    ``garbage``  the default turn with ``Loading model...``, ``{not json``, ``[1,2]``
        and ``42`` lines on stdout between its updates.
    ``huge-line N``  one agent_message_chunk whose text is N bytes, then ends normally.
    ``endless-line``  writes the start of a session/update line, then 1 MiB chunks
        with no newline, forever, until killed (cancel and stdin EOF ignored).
    ``stderr-flood [MB]``  writes MB MiB (default 20) to stderr, then ends normally.
    ``probe <op> <path>`` / ``probe-all <json>``  boundary probes (op read, write or
        terminal; probe-all takes a JSON list of [op, path] pairs, paths sent exactly as
        given): fs/read_text_file, fs/write_text_file (a fixed line), or terminal/create
        of ``pwd`` with that cwd (then wait_for_exit, output, release). Tool call
        ``call_probe`` (kind other) with rawOutput {results: [{op, path, ok, code,
        message?, content?}]} (content: the first 200 chars of what an allowed request
        returned); the reply has one line per probe, ``probe <op> '<path>': ok`` or
        ``... error <code>``.
    ``env-names``  replies ``env: NAME NAME ...``: the sorted names, never the values,
        of the agent's environment variables.
    ``terminal [limit=N] <cmd...>``  (shell-style words) runs the command in a client
        terminal (terminal/create with the session cwd and outputByteLimit N if given):
        tool call ``call_terminal`` (kind execute) in_progress with content
        [{type: terminal, terminalId}], then wait_for_exit, output, release, and
        completed (exit code 0) or failed with rawOutput = the terminal/output result
        {output, truncated, exitStatus}.
    ``terminal-start <cmd...>``  terminal/create, then terminal/output until the output
        has a newline or the command ended (at most 5 s); replies ``terminal <id>
        started: <output>`` and never releases it (for the host's cleanup tests).

Environment
    DEMO_AGENT_REQUIRE_AUTH=<methodId>  advertise that auth method ("Demo key");
        session/new and session/load fail with -32000 until ``authenticate`` with it
        (another method id: -32602).
    DEMO_AGENT_LOAD=1  advertise loadSession; histories (prompts and reply texts) are
        kept in $DEMO_AGENT_STATE_DIR/<sessionId>.json (an absolute path, required) and
        replayed by session/load as user_message_chunk / agent_message_chunk before
        it answers {}; an unknown id is -32002.
    DEMO_AGENT_MODE=<mode>[,<mode>...]
        ``slow-start:S``  wait S seconds before answering initialize.
        ``fail-start``  "demo agent: cannot start (fail-start)" on stderr, exit 2.
        ``error-new-session``  session/new fails with -32603 "demo failure".
        ``ignore-sigterm``  ignore SIGTERM from the start.
        ``crash`` / ``hang``  every prompt behaves as that command.
        ``garbage``  ``Loading model...`` on stdout at start, and every turn gets
            garbage lines between its updates.
    A bad value (or DEMO_AGENT_LOAD=1 without DEMO_AGENT_STATE_DIR) is one line on
    stderr and exit code 2.

Exit codes
    0 stdin closed (or stdout gone), 2 bad environment or fail-start, 3 crash,
    130 SIGINT; SIGTERM keeps its default action unless ignored.
"""

from __future__ import annotations

import sys

from .cli import main

__all__ = ["command", "main"]


def command() -> list[str]:
    """The argv that starts the demo agent with this interpreter."""
    return [sys.executable, "-m", "agent_bridge.demo_agent"]
