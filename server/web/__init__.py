"""The HTTP and WebSocket edge: routes, request parsing, views, the error table,
security middlewares, the OpenAPI document and the static UI."""

__all__ = [
    "errors",
    "forwarding",
    "jsonresp",
    "openapi",
    "requests",
    "routes",
    "security",
    "state",
    "views",
]
