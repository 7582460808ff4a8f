"""Session workspaces on git: worktrees for isolated sessions, checkpoints before each
turn, changes, commit and merge. Every git call goes through ``git.run_git``."""

__all__ = [
    "changes",
    "checkpoints",
    "git",
    "merge",
    "operations",
    "service",
    "worktrees",
]
