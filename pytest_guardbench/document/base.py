"""The two kinds of block every run document is made of: one whose every field is written, and one
whose optional fields are written only where its writer set them. Both refuse a key they do not
define: a document with an unknown key was written by something else, and is not read as ours."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer, model_validator


class Block(BaseModel):
    """A block of a run document: frozen, its keys its fields, no other. A computed field is written
    with the block and taken back as it is read (it is worked out again, never trusted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _computed_fields_are_not_read(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.model_computed_fields:
            return {key: value for key, value in data.items() if key not in cls.model_computed_fields}
        return data


class GivenKeysBlock(BaseModel):
    """A block whose optional keys differ by writer (a pytest session, `merge`, `rejudge`,
    `import-seed`): it is written with the keys its writer gave, no more. Its required fields are
    the ones every writer sets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        given = self.model_fields_set | set(self.model_extra or ())
        return {key: value for key, value in handler(self).items() if key in given}


class CountRate(Block):
    """A count and its share of a whole (None when the whole is empty)."""

    count: int
    rate: float | None


Interval = tuple[float, float]
