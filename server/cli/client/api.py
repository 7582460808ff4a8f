"""The HTTP side of the client commands: a small API client with errors in plain words."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

from server.cli.client.wire import JsonObject

__all__ = ["Api", "CliError", "describe_refusal", "find_repo"]


class CliError(Exception):
    """A failure to tell the user in one plain sentence."""


# -- HTTP --------------------------------------------------------------------------------


def describe_refusal(status: int, body: Any, headers: Any) -> str:
    """An error response in plain words."""
    found = body.get("error") if isinstance(body, dict) else None
    error: JsonObject = found if isinstance(found, dict) else {}
    message = str(error.get("message") or f"HTTP {status}").rstrip(".")
    details = error.get("details")
    if status == 429:
        limit = details.get("limit", "?") if isinstance(details, dict) else "?"
        retry = headers.get("retry-after", "60")
        if error.get("code") == "user_session_limit_reached":
            return (
                f"the server refused: you have your limit of {limit} active sessions; "
                f"try again in {retry} s"
            )
        return (
            f"the server refused: too many active sessions (limit {limit}); try again in {retry} s"
        )
    if status == 401:
        return (
            "the server refused: it needs a valid token; pass --token or set AGENT_SESSIONS_TOKEN"
        )
    if status == 403:
        return f"the server refused: {message} (your role does not allow it)"
    if status == 502:
        return f"the agent could not start: {message}"
    if status == 404:
        return f"not found: {message}"
    return f"the server refused: {message}"


class Api:
    """A small synchronous client for the JSON API."""

    def __init__(self, url: str, token: str | None) -> None:
        try:
            import httpx
        except ImportError:  # pragma: no cover - httpx ships with the project
            raise CliError("the client commands need httpx: pip install httpx") from None
        self.url = url.rstrip("/")
        self.token = token
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._httpx = httpx
        self.client = httpx.Client(base_url=self.url, headers=self.headers, timeout=120)

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def unreachable(self) -> CliError:
        return CliError(
            f"cannot reach the server at {self.url}: is `agent-sessions serve` running there?"
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except self._httpx.TransportError:
            raise self.unreachable() from None
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise CliError(describe_refusal(response.status_code, body, response.headers))
        return response.json() if response.content else None

    def stream_to(self, path: str, out: IO[bytes]) -> None:
        try:
            with self.client.stream("GET", path) as response:
                if response.status_code >= 400:
                    response.read()
                    try:
                        body = response.json()
                    except ValueError:
                        body = None
                    raise CliError(describe_refusal(response.status_code, body, response.headers))
                for chunk in response.iter_bytes():
                    out.write(chunk)
                out.flush()
        except self._httpx.TransportError:
            raise self.unreachable() from None

    @property
    def ws_url(self) -> str:
        if self.url.startswith("https://"):
            return "wss://" + self.url[len("https://") :]
        return "ws://" + self.url.removeprefix("http://")


def find_repo(api: Api, spec: str, *, register: bool) -> JsonObject:
    """A registered repository by id, name or path; registered first if ``register``."""
    repos = api.call("GET", "/api/repos")["repos"]
    try:  # a name the file system refuses (too long, say) is the server's to judge
        local = Path(spec).expanduser()
        resolved = str(local.resolve()) if local.exists() else None
    except (OSError, RuntimeError):
        resolved = None
    for repo in repos:
        if spec in (repo["id"], repo["name"], repo["path"]) or (
            resolved and repo["path"] == resolved
        ):
            return dict(repo)
    if not register:
        raise CliError(f"no registered repository matches {spec!r}")
    repo = api.call("POST", "/api/repos", json={"path": resolved or spec})
    print(f"registered repository {repo['path']}", file=sys.stderr)
    return dict(repo)


# -- sessions and export ----------------------------------------------------------------
