"""The two kinds of block every run document is made of: a closed one, and one whose keys vary by
writer and are written as given."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class Block(BaseModel):
    model_config = ConfigDict(frozen=True)


class GivenKeysBlock(BaseModel):
    """A block whose keys differ by writer (a pytest session, `merge`, `rejudge`, `import-seed`, a
    provider's own counters): it is written with the keys its writer gave, no more."""

    model_config = ConfigDict(frozen=True, extra="allow")

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.model_extra or ())
        return {key: value for key, value in handler(self).items() if key in given}


class CountRate(Block):
    """A count and its share of a whole (None when the whole is empty)."""

    count: int
    rate: float | None


Interval = tuple[float, float]
