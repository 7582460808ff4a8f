"""Session workspaces on git: worktrees for isolated sessions, checkpoints before each
turn, changes, commit and merge, the review's files. Every git call goes through
``git.run_git``. What the web asks of them goes through ``door.Workspaces``
(``sessions.workspaces``)."""

__all__ = [
    "changes",
    "checkpoints",
    "door",
    "git",
    "merge",
    "operations",
    "service",
    "worktrees",
]
