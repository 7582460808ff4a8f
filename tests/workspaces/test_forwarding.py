"""On several nodes, the workspace operations go to the node that runs the session's
agent (it has the worktree's files and knows whether a turn runs)."""

from __future__ import annotations

from typing import Any

import pytest

from server.cluster import command_target

SID = "0badc0de-0000-4000-8000-000000000000"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("GET", "changes"),
        ("POST", "commit"),
        ("POST", "merge"),
        ("DELETE", "worktree"),
        ("PUT", "mode"),  # controls: the owner's agent is the one to switch
        ("PUT", "config/model"),
    ],
)
async def test_workspace_operations_are_forwarded_to_the_owner(method: str, suffix: str) -> None:
    cluster: Any = None  # session paths never ask the cluster
    assert await command_target(cluster, method, f"/api/sessions/{SID}/{suffix}") == SID
    assert await command_target(cluster, method, f"/api/sessions/{SID}/{suffix}/x") is None
