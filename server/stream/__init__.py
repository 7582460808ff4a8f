"""The data path from a live session to its viewers: the group-commit writer, the
per-session broker, and the one module that builds every frame."""

__all__ = ["broker", "frames", "writer"]
