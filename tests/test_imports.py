"""The import direction of ARCHITECTURE.md, read from the source (no module is run):
server -> agent_bridge, server -> store; agent_bridge and store import neither server
nor each other; the JSON-RPC core imports no I/O library; every package names its API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent_bridge", "store", "server")
FORBIDDEN = {"agent_bridge": {"server", "store"}, "store": {"server", "agent_bridge"}}


def modules(package: str) -> list[Path]:
    found = sorted((ROOT / package).rglob("*.py"))
    assert found, package
    return found


def imported(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (relative imports resolved), anywhere in
    the file: top level, functions, TYPE_CHECKING blocks."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(
            node.func, "attr", getattr(node.func, "id", None)
        ) in ("import_module", "__import__"):
            if (
                node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def top(name: str) -> str:
    return name.split(".", 1)[0]


def test_the_walker_sees_every_kind_of_import() -> None:
    # `from . import flood, modes` and `from .turn import Turn` inside agent_bridge/demo_agent/
    relative = imported(ROOT / "agent_bridge" / "demo_agent" / "script.py")
    assert {"agent_bridge.demo_agent.flood", "agent_bridge.demo_agent.turn"} <= relative
    # imports inside functions count too (server/app.py imports a route module lazily)
    assert {"server.web.routes.repos", "store", "anyio"} <= imported(ROOT / "server" / "app.py")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_leaf_packages_import_neither_server_nor_each_other(package: str) -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules(package)
        for name in imported(path)
        if top(name) in FORBIDDEN[package]
    }
    assert offenders == set()


def test_jsonrpc_core_does_no_io() -> None:
    names = {top(n) for n in imported(ROOT / "agent_bridge" / "jsonrpc.py")}
    assert not names & {
        "anyio",
        "asyncio",
        "trio",
        "socket",
        "subprocess",
        "threading",
        "selectors",
    }
    assert names <= {
        "__future__",
        "collections",
        "dataclasses",
        "types",
        "typing",
        "orjson",
        "json",
        "enum",
        "msgspec",  # its events' classes (pure: no I/O)
        "agent_bridge",  # its slow-path parser only, itself pure (below)
    }
    lenient = {top(n) for n in imported(ROOT / "agent_bridge" / "lenient.py")}
    assert lenient <= {"__future__", "json", "math", "re", "typing"}


@pytest.mark.parametrize("package", PACKAGES)
def test_package_inits_name_their_api(package: str) -> None:
    for init in (ROOT / package).rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        exported = [
            node
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "__all__" for t in node.targets)
        ]
        assert exported, f"{init.relative_to(ROOT)} has no __all__"
        names = ast.literal_eval(exported[0].value)
        assert names and len(set(names)) == len(names), init
        # top level, or under `if TYPE_CHECKING:` for names a PEP 562 __getattr__ loads
        top_level = [
            *tree.body,
            *(inner for node in tree.body if isinstance(node, ast.If) for inner in node.body),
        ]
        defined = (
            {
                alias.asname or alias.name
                for node in top_level
                if isinstance(node, ast.ImportFrom | ast.Import)
                for alias in node.names
            }
            | {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
            | {
                sub.stem
                for sub in init.parent.iterdir()
                if sub.suffix == ".py" or (sub / "__init__.py").exists()
            }
        )  # submodules may be named without being imported
        assert set(names) <= defined, (
            f"{init.relative_to(ROOT)}: __all__ names {set(names) - defined}"
        )


@pytest.mark.parametrize("package", ["agent_bridge", "store"])
def test_leaf_packages_import_cleanly_on_their_own(package: str) -> None:
    """Importing a leaf does not drag ``server`` in (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        f"import sys, {package}, importlib, pkgutil\n"
        f"for m in pkgutil.walk_packages({package}.__path__, '{package}.'):\n"
        "    if 'migrations' not in m.name and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'server', 'store', "
        "'agent_bridge'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == repr([package])


# -- inside server/: one sub-package per concern, arrows pointing down only ------------

# Which server sub-packages each may import (besides itself, the cross-cutting leaves
# server.settings / server.logs / server.metrics / server.shapes / server.contents, and
# agent_bridge / store).
LAYERS = {
    "server.stream": set(),
    "server.cluster": {"server.stream"},
    "server.mcp_host": set(),
    "server.sandbox": set(),
    "server.sessions": {"server.stream", "server.cluster", "server.sandbox", "server.mcp_host"},
    "server.web": {"server.sessions", "server.stream", "server.cluster", "server.mcp_host"},
    "server.cli.client": set(),
}
SHARED = {
    "server.settings",
    "server.setting_values",
    "server.logs",
    "server.metrics",
    "server.shapes",
    "server.contents",
}


def layer_of(name: str) -> str | None:
    for layer in sorted(LAYERS, key=len, reverse=True):
        if name == layer or name.startswith(layer + "."):
            return layer
    return None


def server_imports(path: Path) -> set[str]:
    return {n for n in imported(path) if top(n) == "server" and n != "server"}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_server_layers_point_down(layer: str) -> None:
    directory = ROOT / Path(*layer.split("."))
    offenders = set()
    for path in sorted(directory.rglob("*.py")):
        for name in server_imports(path):
            target = layer_of(name)
            allowed = target in ({layer} | LAYERS[layer]) or any(
                name == s or name.startswith(s + ".") for s in SHARED
            )
            if layer == "server.cli.client":  # the terminal client speaks only HTTP/WS
                allowed = target == layer
            if not allowed:
                offenders.add(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == set()


def test_the_session_domain_imports_no_web_framework() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "server" / "sessions").rglob("*.py"))
        for name in imported(path)
        if top(name) in ("starlette", "uvicorn", "websockets", "httpx")
    }
    assert offenders == set()


def test_no_process_is_started_with_preexec_fn() -> None:
    """preexec_fn is unsafe once threads exist (aiosqlite, to_thread): agents and
    terminals start through agent_bridge.spawn's exec wrapper instead."""
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("agent_bridge", "server", "store")
        for path in modules(package)
        if "preexec_fn=" in path.read_text()
    ]
    assert offenders == []


# -- SQL lives in store/ ---------------------------------------------------------------

# What builds a statement; server/ may still name the session type, URLs and errors.
STATEMENT_BUILDERS = {
    "select",
    "insert",
    "update",
    "delete",
    "text",
    "func",
    "bindparam",
    "literal_column",
    "column",
    "table",
    "and_",
    "or_",
}


def sql_builders(path: Path) -> set[str]:
    """The statement builders ``path`` imports from SQLAlchemy (a whole-module import of
    sqlalchemy, of its SQL expression package or of a dialect counts as one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(
                alias.name
                for alias in node.names
                if alias.name == "sqlalchemy"
                or alias.name.startswith(("sqlalchemy.sql", "sqlalchemy.dialects"))
            )
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = node.module
            if module.startswith(("sqlalchemy.sql", "sqlalchemy.dialects")) or (
                module == "sqlalchemy"
                and any(alias.name in STATEMENT_BUILDERS for alias in node.names)
            ):
                found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_walker_sees_statement_builders() -> None:
    assert {"sqlalchemy.select", "sqlalchemy.dialects.postgresql.insert"} <= sql_builders(
        ROOT / "store" / "cluster.py"
    )


def test_server_builds_no_sql() -> None:
    """Statements are built in store/ (ARCHITECTURE.md: repository functions); server/
    calls them. None is excepted."""
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules("server")
        for name in sql_builders(path)
    }
    assert offenders == set()


# -- what a plain start loads ----------------------------------------------------------

_START = """
import sys, anyio
from server.settings import load_settings
from server.app import create_app

async def main():
    app = create_app(load_settings(env_file=None))
    async with app.router.lifespan_context(app):
        pass

anyio.run(main)
lazy = {'alembic', 'asyncpg', 'httpx', 'jsonschema', 'prometheus_client',
        'sqlalchemy.dialects.postgresql'}
from store.models import Base
roll_up = {'stats_runs', 'stats_tools'} & set(Base.metadata.tables)
print(sorted(lazy & set(sys.modules)), sorted(roll_up))
"""


def test_a_plain_sqlite_start_imports_no_alembic_asyncpg_or_httpx(tmp_path: Path) -> None:
    """Alembic loads only when the schema is behind (the first start migrates the fresh
    file), the PostgreSQL driver and SQLAlchemy's PostgreSQL dialect only with a
    PostgreSQL URL, httpx only when clustering, jsonschema only when an elicitation
    comes, prometheus_client at the first metric observed or scraped; the statistics
    roll-up's tables are made only for Alembic."""
    import os
    import sqlite3
    import subprocess
    import sys

    (tmp_path / "workspace").mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}",
        "AGENT_WORKSPACE_ROOT": str(tmp_path / "workspace"),
        "AGENTS_FILE": "",
        "AUTO_REGISTER_REPOS": "false",
    }

    def start() -> str:
        return subprocess.run(
            [sys.executable, "-c", _START],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()

    # a fresh file: migrated (Alembic's own PostgreSQL support loads that dialect)
    assert start() == "['alembic', 'sqlalchemy.dialects.postgresql'] ['stats_runs', 'stats_tools']"
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        (version,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
        assert "messages" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    from store.migrate import head_revision

    assert version == head_revision()
    assert start() == "[] []"  # at head: one query, no Alembic


def test_serve_and_seed_demo_load_no_client_modules(tmp_path: Path) -> None:
    """The command line's client commands (sessions, chat, export, usage) load only when
    one of them runs: ``serve`` is not slowed by them; ``--help`` still lists them."""
    import os
    import subprocess
    import sys

    script = (
        "import sys\nfrom server.cli import main\nmain(sys.argv[1:])\n"
        "print('client loaded:', 'server.cli.client' in sys.modules)"
    )
    env = {**os.environ, "AGENT_WORKSPACE_ROOT": str(tmp_path), "AGENTS_FILE": ""}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    seeded = run("seed-demo")
    assert seeded.returncode == 0, seeded.stderr
    assert seeded.stdout.strip() == "client loaded: False"
    assert (tmp_path / "demo" / ".git").is_dir()
    helped = run("--help")
    assert helped.returncode == 0
    assert "usage" in helped.stdout and "export" in helped.stdout


# -- no import cycle, TYPE_CHECKING imports included -----------------------------------


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Our modules (server, agent_bridge, store) → the modules of ours each imports
    explicitly, anywhere in the file (``TYPE_CHECKING`` blocks and functions too). ``from
    pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``."""
    paths = {module_name(p): p for package in PACKAGES for p in modules(package)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    found = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
                    targets.update(next(([m] for m in found if m in paths), []))
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, module] if module else base)
                for alias in node.names:
                    if f"{module}.{alias.name}" in paths:
                        targets.add(f"{module}.{alias.name}")
                    elif module in paths:
                        targets.add(module)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan), with one cycle
    through it spelled out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_one_cycle(graph, set(group), group[0]) for group in groups]


def _one_cycle(graph: dict[str, set[str]], group: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``group`` (breadth first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & group):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(start)


def test_the_cycle_finder_finds_and_spells_out_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_import_graph_sees_type_checking_imports() -> None:
    graph = import_graph()
    assert "store.hot_writes" in graph["server.stream.writer"]
    assert "server.sessions.facade" in graph["server.sessions"]


def test_no_import_cycle_among_our_modules() -> None:
    """Each cycle as ``a -> b -> ... -> a``: the coupling is real even when only a
    ``TYPE_CHECKING`` import closes it."""
    found = [" -> ".join(cycle) for cycle in cycles(import_graph())]
    assert found == [], "import cycles:\n" + "\n".join(found)


# -- the session domain: one door, owned objects ----------------------------------------


def test_the_web_layer_sees_only_the_session_facade() -> None:
    """web/ imports ``server.sessions`` (the facade, the domain errors and shapes it
    names), nothing deeper, and never the store: the records it renders are the
    domain's shapes, its reads go through the facade."""
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "server" / "web").rglob("*.py"))
        for name in imported(path)
        if top(name) == "store"
        or (
            name.startswith("server.sessions.")
            and name.rsplit(".", 1)[0] != "server.sessions"  # ``from server.sessions import X``
        )
    }
    assert offenders == set()


def test_registry_and_live_session_never_reach_up() -> None:
    """The registry never calls the supervisor; a live session and its members never see
    the registry, the supervisor or the facade."""
    graph = import_graph()
    up = {"server.sessions.supervision.supervisor", "server.sessions.facade", "server.sessions"}
    assert not graph["server.sessions.supervision.registry"] & up
    live = {
        name
        for name in graph
        if name.startswith("server.sessions.")
        and name
        not in {
            "server.sessions.supervision.registry",
            "server.sessions.supervision.supervisor",
            "server.sessions.facade",
            "server.sessions.history.log",
            "server.sessions.answers",
            "server.sessions.client_tools",
            "server.sessions.workspaces.operations",
        }
    }
    offenders = {
        f"{name}: {target}"
        for name in live
        for target in graph[name]
        if target in up | {"server.sessions.supervision.registry"}
    }
    assert offenders == set()
