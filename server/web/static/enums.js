// @ts-check
// Generated from server/shapes.py by `python -m server.web.ui_enums`: do not edit.

export const SESSION_STATUSES = Object.freeze(["active", "completed", "cancelled", "error"]);
export const RUN_STATUSES = Object.freeze(["queued", "running", "completed", "failed", "cancelled", "paused", "interrupted"]);
export const TOOL_STATUSES = Object.freeze(["pending", "in_progress", "completed", "error", "cancelled"]);
export const ROLES = Object.freeze(["user", "agent", "system"]);
export const MESSAGE_TYPES = Object.freeze(["text", "thought", "plan", "tool", "permission", "status", "run", "usage", "controls", "elicitation", "client_tool", "review", "update"]);
