"""Operations: health, readiness, metrics, and the configured agents."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import metrics
from server.sessions import DEFAULT_AGENT_ID
from server.web.errors import error_response
from server.web.jsonresp import JSONResponse
from server.web.state import app_state


async def healthz(_request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    state = app_state(request)
    try:
        await state.sessions.ping()
    except Exception:  # noqa: BLE001 - any failure means not ready
        return error_response(503, "not_ready", "The database does not answer.")
    if not state.sessions.taking_sessions:  # what POST /api/sessions would answer 503 for
        return error_response(503, "not_ready", "The server is not taking sessions.")
    return JSONResponse({"status": "ok", "sandbox": state.sessions.sandbox_readiness()})


async def metrics_endpoint(request: Request) -> Response:
    state = app_state(request)
    metrics.VIEWERS.set(state.broker.viewer_count)
    return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def list_agents(request: Request) -> Response:
    state = app_state(request)
    known = await state.sessions.agent_controls()  # once an agent has started: its last controls
    sandbox = state.sessions.sandbox_view()  # the same wall for every agent; its hosts its own
    views = [{**a.view(), "sandbox": sandbox} for a in state.agents.values()]
    for agent_id, view in zip(state.agents, views, strict=True):
        view["controls"] = known.get(agent_id)
    return JSONResponse({"agents": views})


async def list_mcp_servers(request: Request) -> Response:
    """The MCP servers AGENTS_FILE defines: name and transport (never env or headers)."""
    catalog = app_state(request).agents[DEFAULT_AGENT_ID].mcp_catalog
    return JSONResponse({"mcpServers": [s.view() for s in catalog.values()]})


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics_endpoint, methods=["GET"]),
    Route("/api/agents", list_agents, methods=["GET"]),
    Route("/api/mcp-servers", list_mcp_servers, methods=["GET"]),
]
