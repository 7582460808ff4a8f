"""Request bodies of API.md "Review" (decoded by ``server.web.bodies`` like the others,
and described in the OpenAPI document from these same Structs)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from server.shapes import NonBlank

__all__ = ["MAX_COMMENTS", "ReviewBody", "ReviewCommentBody", "RevertBody"]

MAX_COMMENTS = 200

HunkIndex = Annotated[
    int, msgspec.Meta(ge=0, le=1_000_000, extra={"invalid": "hunks are indexes from 0."})
]


class _Body(msgspec.Struct, rename="camel"):
    pass


class RevertBody(_Body):
    path: NonBlank
    hunks: (
        Annotated[
            list[HunkIndex],
            msgspec.Meta(
                min_length=1,
                description="Hunks of the file's patch, numbered from 0; absent: the whole file.",
            ),
        ]
        | None
    ) = None


class ReviewCommentBody(_Body):
    path: NonBlank
    line: Annotated[int, msgspec.Meta(ge=1, le=10_000_000, description="From 1.")]
    side: Annotated[
        Literal["new", "old"],
        msgspec.Meta(extra={"invalid": "side must be new or old."}),
    ]
    body: NonBlank


class ReviewBody(_Body):
    comments: Annotated[
        list[ReviewCommentBody], msgspec.Meta(min_length=1, max_length=MAX_COMMENTS)
    ]
    text: NonBlank | None = None
