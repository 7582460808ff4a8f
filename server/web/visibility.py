"""What a reader's lists hold: every session for an admin, team sessions and their own
private ones for anyone else; ``?owner=me|<userId>`` narrows a list to one owner."""

from __future__ import annotations

from server.sessions import current_actor
from server.web.errors import ApiError
from server.web.requests import check_uuid

__all__ = ["owner_filter", "visible_to"]


def visible_to() -> str | None:
    """The user id a list is filtered for (None: an admin, who sees everything)."""
    actor = current_actor()
    if actor is None or actor.is_admin:
        return None
    return actor.user_id or ""


def owner_filter(owner: str | None) -> dict[str, str | None]:
    """``SessionFilter`` fields for the actor and the ``owner`` query value."""
    fields: dict[str, str | None] = {"visible_to": visible_to()}
    if owner is None:
        return fields
    if owner == "me":
        actor = current_actor()
        if actor is None or actor.user_id is None:
            # The server's own admin (API_TOKEN, or no users) owns nothing.
            fields["owner_id"] = "00000000-0000-0000-0000-000000000000"
            return fields
        fields["owner_id"] = actor.user_id
        return fields
    try:
        fields["owner_id"] = check_uuid(owner, "owner")
    except ApiError:
        raise ApiError.validation("owner must be me or a user id.", field="owner") from None
    return fields
