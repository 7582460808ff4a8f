"""The benchmark suite behind ``scripts/bench``.

It measures the real server (``python -m server.cli serve``: uvicorn, a SQLite file, the
demo agent in flood mode) against limits measured in the same run on the same box:
stdlib ``sqlite3`` batched inserts of the same rows, a bare ``websockets`` relay that
broadcasts the same frames, a bare uvicorn start-up and the demo agent's own start-up.

Modules, one concept each:

- ``procs``: starting and stopping processes, reading ``/proc`` (RSS, CPU, children).
- ``viewers``: the WebSocket client process (many viewers, one asyncio process).
- ``bare``: the bare relay server and its line producer (the broadcast limit).
- ``sqlite_limit``: the raw SQLite insert limit.
- ``suite``: the phases (start-up, ingest, latency, fan-out, scale).
- ``report``: the table, the Markdown and the JSON.
"""
