"""Every 422 of /api/stats and /api/stats/tools."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

PATHS = ("/api/stats", "/api/stats/tools")

BAD = [
    ({"from": "2026-03-05", "to": "2026-03-01"}, "from", "must be before"),
    ({"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "from", "must be before"),
    ({"from": "yesterday"}, "from", "ISO 8601"),
    ({"to": "2026-13-01"}, "to", "ISO 8601"),
    ({"from": "0001-01-01"}, "from", "between 1970"),
    ({"from": "2000-01-01", "to": "2026-01-01"}, "from", "at most"),
    ({"tz": "Mars/Olympus_Mons"}, "tz", "IANA"),
    ({"tz": "../../etc/passwd"}, "tz", "IANA"),
    ({"repoId": "not-a-uuid"}, "repoId", "UUID"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("params", "field", "words"), BAD)
def test_refused(
    client: TestClient, path: str, params: dict[str, str], field: str, words: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["field"] == field
    assert words in error["message"]


@pytest.mark.parametrize("group_by", ["week", "day,agent", "tool"])
def test_unknown_grouping(client: TestClient, group_by: str) -> None:
    response = client.get("/api/stats", params={"groupBy": group_by})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "validation_error"
    assert response.json()["error"]["details"]["field"] == "groupBy"


def test_tools_limit(client: TestClient) -> None:
    response = client.get("/api/stats/tools", params={"limit": "0"})
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "limit"
