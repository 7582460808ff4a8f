"""server.web.bodies: request bodies decoded through the Structs of server.shapes, with the
sentences clients have always had (pure: no server needed)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from server import shapes
from server.web.bodies import decode
from server.web.errors import ApiError

UUID = "0b6a3d52-7a55-4a45-9d4b-3ff0f9d0c3a1"


def refusal(body: dict[str, Any], cls: type[msgspec.Struct]) -> tuple[str, Any]:
    with pytest.raises(ApiError) as caught:
        decode(body, cls)
    assert caught.value.status == 422 and caught.value.code == "validation_error"
    return caught.value.message, caught.value.details.get("field")


@pytest.mark.parametrize(
    ("cls", "body", "message", "field"),
    [
        (shapes.CreateSession, {}, "repoId is required.", "repoId"),
        (shapes.CreateSession, {"repoId": None}, "repoId is required.", "repoId"),
        (shapes.CreateSession, {"repoId": 7}, "repoId must be a string.", "repoId"),
        (shapes.CreateSession, {"repoId": " "}, "repoId must not be empty.", "repoId"),
        (shapes.CreateSession, {"repoId": "x"}, "repoId must be a UUID.", "repoId"),
        # the first bad field in the order they were always checked
        (
            shapes.CreateSession,
            {"repoId": UUID, "agentId": "", "isolation": "x"},
            "agentId must not be empty.",
            "agentId",
        ),
        (shapes.CreateSession, {"repoId": UUID, "title": 1}, "title must be a string.", "title"),
        (
            shapes.CreateSession,
            {"repoId": UUID, "parentRunId": "no"},
            "parentRunId must be a UUID.",
            "parentRunId",
        ),
        (
            shapes.CreateSession,
            {"repoId": UUID, "isolation": "copy", "baseRef": ""},
            "isolation must be none or worktree.",
            "isolation",
        ),
        (
            shapes.CreateSession,
            {"repoId": UUID, "isolation": ""},
            "isolation must not be empty.",
            "isolation",
        ),
        (shapes.ResumeBody, {"maxSteps": 0}, "maxSteps must be a positive integer.", "maxSteps"),
        (shapes.ResumeBody, {"maxSteps": True}, "maxSteps must be a positive integer.", "maxSteps"),
        (shapes.ResumeBody, {"maxSteps": None}, "maxSteps must be a positive integer.", "maxSteps"),
        (
            shapes.RewindBody,
            {"toSeq": 1, "restoreFiles": None},
            "restoreFiles must be true or false.",
            "restoreFiles",
        ),
        (shapes.ConfigBody, {}, "value is required.", "value"),
        (shapes.ConfigBody, {"value": None}, "value must be a string (or true/false).", "value"),
        (shapes.ConfigBody, {"value": 3}, "value must be a string (or true/false).", "value"),
        (shapes.MergeBody, {"strategy": "rebase"}, "strategy must be merge or squash.", "strategy"),
        (shapes.MergeBody, {"into": " "}, "into must not be empty.", "into"),
        (shapes.CommitBody, {"message": ""}, "message must not be empty.", "message"),
        (shapes.ModeBody, {"modeId": None}, "modeId is required.", "modeId"),
    ],
)
def test_refusals_keep_their_sentences(
    cls: type[msgspec.Struct], body: dict[str, Any], message: str, field: str
) -> None:
    assert refusal(body, cls) == (message, field)


def test_a_good_body_becomes_its_struct_with_defaults_and_normalised_ids() -> None:
    body = decode({"repoId": UUID.upper(), "title": "", "unknown": 1}, shapes.CreateSession)
    assert body == shapes.CreateSession(repo_id=UUID, title="")
    assert decode({}, shapes.ResumeBody).max_steps is msgspec.UNSET
    assert decode({"value": False}, shapes.ConfigBody).value is False
    merge = decode({"strategy": None, "into": "main"}, shapes.MergeBody)
    assert (merge.strategy, merge.into) == (None, "main")


def test_a_route_check_replaces_the_field_rule_in_its_turn() -> None:
    seen: list[Any] = []

    def upto(value: Any) -> Any:
        seen.append(value)
        if value == -1:
            raise ApiError.validation("uptoSeq is out of range.", field="uptoSeq")
        return value

    assert decode({"uptoSeq": 4}, shapes.ForkBody, {"uptoSeq": upto}).upto_seq == 4
    assert decode({}, shapes.ForkBody, {"uptoSeq": upto}).upto_seq is None
    # the check runs before the fields after it: title's error is not the one reported
    assert refusal_with({"uptoSeq": -1, "title": 5}, upto) == "uptoSeq is out of range."
    assert seen == [4, None, -1]


def refusal_with(body: dict[str, Any], check: Any) -> str:
    with pytest.raises(ApiError) as caught:
        decode(body, shapes.ForkBody, {"uptoSeq": check})
    return caught.value.message


def test_an_integer_field_takes_a_whole_float_and_nothing_else() -> None:
    """JSON Schema's ``integer`` (what the OpenAPI document says) includes 125372.0:
    schemathesis sent it to resume and got a 422. A fraction, a whole float past int64
    and a numeric string stay refused with the field's sentence."""
    assert decode({"maxSteps": 125372.0}, shapes.ResumeBody).max_steps == 125372
    assert decode({"toSeq": 3.0}, shapes.RewindBody).to_seq == 3
    for bad in (1.5, 0.0, 1e300, "3"):
        assert refusal({"maxSteps": bad}, shapes.ResumeBody) == (
            "maxSteps must be a positive integer.",
            "maxSteps",
        )
