"""The OpenAPI 3.1 document of the HTTP API (``GET /openapi.json``), written by hand from
API.md.

``CATALOGUE`` describes every operation API.md names (plus the ones the server adds:
/openapi.json, the UI files, session import). ``document(routes)`` publishes the
operations the app actually serves, so the document never promises an endpoint that is
not there; tests/security/test_openapi.py checks that every served route is described
(and nothing else), and runs schemathesis against a live server with every check.

Conventions: path parameters are camelCase (``{sessionId}``); HEAD (answered for every
GET) is implied, not listed; every operation under /api, /ws and /metrics needs the
bearer token when ``API_TOKEN`` is set (``security``), the others declare ``security: []``.
Request bodies describe exactly what the server accepts (a schema-valid body is never
refused with 400 or 422 for its shape); responses list every status the operation can
answer, each error with the one error body of API.md.
"""

from server.web.openapi.document import CATALOGUE, document, openapi_json, route

__all__ = [
    "CATALOGUE",
    "document",
    "openapi_json",
    "parts",
    "paths_basic",
    "paths_runs",
    "paths_sessions",
    "paths_workspaces",
    "route",
    "schemas",
]
