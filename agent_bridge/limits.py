"""Limits per agent (``AGENT_MEMORY_MAX``, ``AGENT_PIDS_MAX``, ``AGENT_CPU_MAX``) on cgroups
beside the agent's own (``agent_bridge.cgroups``): the controllers live wherever this host
mounts them (cgroup v2 where they are enabled for our subtree, else the v1 ``memory``,
``pids`` and ``cpu`` hierarchies), so each agent gets one cgroup per controller, made and
joined by the exec wrapper before it runs the command (nothing the agent starts escapes
them), and its terminals join the same ones. Layout, per hierarchy:
``<this server's own cgroup>/agent-sessions/<owner>/<agent pid>``.

After the agent exits, ``out_of_memory`` reads whether the kernel's OOM killer struck
in its memory cgroup (``memory.events`` / ``memory.oom_control``: ``oom_kill``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import msgspec

from agent_bridge.cgroups import TOP, _mounts, _own_paths
from agent_bridge.orphans import process_start_time

__all__ = ["AgentLimits", "LimitCgroups", "out_of_memory"]

log = logging.getLogger("agent_sessions.process")

CPU_PERIOD = 100_000  # microseconds


class AgentLimits(msgspec.Struct, frozen=True):
    memory: int | None = None  # bytes
    pids: int | None = None
    cpu: float | None = None  # cores

    def any(self) -> bool:
        return self.memory is not None or self.pids is not None or self.cpu is not None


def _files(kind: str, limits: AgentLimits) -> dict[str, dict[str, str]]:
    """Controller -> {file: value} for a cgroup of ``kind`` (v1 or v2)."""
    files: dict[str, dict[str, str]] = {}
    if limits.memory is not None:
        name = "memory.max" if kind == "v2" else "memory.limit_in_bytes"
        files["memory"] = {name: str(limits.memory)}
        if kind == "v2":
            files["memory"]["memory.swap.max"] = "0"
    if limits.pids is not None:
        files["pids"] = {"pids.max": str(limits.pids)}
    if limits.cpu is not None:
        quota = str(max(1000, int(limits.cpu * CPU_PERIOD)))
        files["cpu"] = (
            {"cpu.max": f"{quota} {CPU_PERIOD}"}
            if kind == "v2"
            else {"cpu.cfs_period_us": str(CPU_PERIOD), "cpu.cfs_quota_us": quota}
        )
    return files


def _v2_enable(own: Path, chain: list[Path], controllers: list[str]) -> list[str]:
    """Enable ``controllers`` down from ``own`` through ``chain``; those that took."""
    enabled = []
    for controller in controllers:
        ok = True
        for directory in [own, *chain[:-1]]:
            try:
                (directory / "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError:
                ok = False
                break
        if ok:
            enabled.append(controller)
    return enabled


class LimitCgroups:
    """Where each controller's per-agent cgroups are made, for one server process."""

    def __init__(self, name: str, limits: AgentLimits) -> None:
        self.name = name  # the owner directory's name (AgentCgroups)
        self.limits = limits
        self.bases: dict[str, tuple[Path, dict[str, str]]] = {}  # controller -> (dir, files)

    def prepare(self) -> list[str]:
        """Make the directories; the controllers that will be limited."""
        if not self.limits.any():
            return []
        own = _own_paths()
        wanted_v1 = _files("v1", self.limits)
        wanted_v2 = _files("v2", self.limits)
        for kind, point, root, options in _mounts():
            if kind == "v2" and "v2" in own:
                path = Path(point, os.path.relpath(own["v2"], root)).resolve()
                available = (
                    (path / "cgroup.controllers").read_text().split()
                    if (path / "cgroup.controllers").exists()
                    else []
                )
                base = path / TOP / self.name
                with contextlib.suppress(OSError):
                    base.mkdir(parents=True, exist_ok=True)
                wanted = [c for c in wanted_v2 if c in available and c not in self.bases]
                for controller in _v2_enable(path, [path / TOP, base, base / "x"], wanted):
                    self.bases[controller] = (base, wanted_v2[controller])
            elif kind == "v1":
                for controller in options & set(wanted_v1):
                    if controller in self.bases or controller not in own:
                        continue
                    relative = os.path.relpath(own[controller], root)
                    if relative.startswith(".."):
                        continue
                    base = Path(point, relative).resolve() / TOP / self.name
                    try:
                        base.mkdir(parents=True, exist_ok=True)
                    except OSError:
                        continue
                    self.bases[controller] = (base, wanted_v1[controller])
        self.sweep_stale()
        missing = sorted(set(wanted_v1) - set(self.bases))
        if missing:
            log.warning(
                "no cgroup to limit %s per agent",
                ", ".join(missing),
                extra={"event": "agent_limits", "missing": missing},
            )
        return sorted(self.bases)

    def sweep_stale(self) -> None:
        """Remove what dead servers left in these hierarchies (their agents are gone: the
        guards and ``AgentCgroups.sweep_stale`` killed them), leaving live ones alone."""
        for top in {base.parent for base, _ in self.bases.values()}:
            for entry in sorted(top.iterdir()) if top.is_dir() else []:
                _, pid, start = [*entry.name.split("-"), "", ""][:3]
                if entry.name == self.name or not entry.is_dir():
                    continue
                if pid.isdigit() and process_start_time(int(pid)) == start:
                    continue  # its server lives
                for child in [*sorted(entry.iterdir()), entry]:
                    with contextlib.suppress(OSError):
                        child.rmdir()

    def spec(self) -> str:
        """The wrapper's argument for an agent: a line per directory, ``directory<TAB>
        file=value<TAB>...`` (no JSON: its import would cost every spawn)."""
        merged: dict[str, dict[str, str]] = {}
        for base, files in self.bases.values():
            merged.setdefault(str(base), {}).update(files)
        return "\n".join(
            "\t".join([d, *(f"{k}={v}" for k, v in f.items())]) for d, f in merged.items()
        )

    def terminal_spec(self, pid: int) -> str:
        """The wrapper's argument for a terminal of agent ``pid``: its agent's cgroups."""
        return "\n".join(str(d) for d in self.agent_dirs(pid))

    def agent_dirs(self, pid: int) -> list[Path]:
        return sorted({base / str(pid) for base, _ in self.bases.values()})

    def memory_dir(self, pid: int) -> Path | None:
        found = self.bases.get("memory")
        return None if found is None else found[0] / str(pid)

    def release(self) -> None:
        for base in {b for b, _ in self.bases.values()}:
            for child in sorted(base.iterdir()) if base.is_dir() else []:
                with contextlib.suppress(OSError):
                    child.rmdir()
            for directory in (base, base.parent):
                with contextlib.suppress(OSError):
                    directory.rmdir()


def out_of_memory(directory: Path | None) -> bool:
    """Whether the OOM killer killed a process of the memory cgroup ``directory``."""
    if directory is None:
        return False
    for name in ("memory.events", "memory.oom_control"):
        with contextlib.suppress(OSError):
            for line in (directory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                    return True
    return False
