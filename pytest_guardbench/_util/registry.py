"""A named table of lazily built units (tutors, guards): short name → description and a factory
that runs only when the unit is used, so heavy imports happen inside it. Conftest files and plugins
add their own through the `pytest_guardbench_register_*` hooks."""

from __future__ import annotations

from pytest_guardbench.errors import UsageError

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Registered(Generic[T]):
    name: str
    description: str
    factory: Callable[[Any], T]  # called with the run's ProviderOptions
    runs_a_model: bool = False  # a local model behind it: the engine gives it batches, one at a time


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Registered[T]] = {}

    def register(self, name: str, factory: Callable[[Any], T], description: str, *, runs_a_model: bool = False) -> None:
        if name in self._entries or name == "none":
            raise UsageError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = Registered(name, description, factory, runs_a_model)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {name: self._entries[name].description for name in self.names()}

    def runs_a_model(self, name: str) -> bool:
        return name in self._entries and self._entries[name].runs_a_model

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def build(self, name: str, options: Any) -> T:
        try:
            entry = self._entries[name]
        except KeyError:
            raise UsageError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None
        return entry.factory(options)
