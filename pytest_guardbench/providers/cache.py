"""Content-addressed response cache on disk (SQLite, WAL) and the provider wrapper that uses it.

The key covers everything that decides a model's answer: the provider's identity (transport, base URL,
model, fixed request params, chat template), the full messages, the sampling params, the per-case
seed (which carries the sample index k) and, for classifier calls, the template kwargs and label
words. Only successful answers are stored, so an error is retried on the next run. Several xdist
processes may share one file: SQLite serialises the writers and `INSERT OR IGNORE` keeps the first
answer for a key.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Literal

from pytest_guardbench._util.redact import current_redactor
from pytest_guardbench.errors import InternalError
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.providers.base import (
    as_model_api,
    CacheMiss,
    Classification,
    ClassifyRequest,
    Completion,
    GenerationParams,
    Message,
    ProviderError,
)

CacheMode = Literal["off", "read", "write", "replay"]
# Bump when the stored value's shape or the meaning of a key changes.
CACHE_FORMAT = 1


class CacheUnusable(ProviderError):
    """The response cache file cannot be opened or is not one: the option that names it is the fix (exit 4)."""

    exit_status: ClassVar[int | None] = ExitStatus.USAGE_ERROR


class ResponseCache:
    """One SQLite file; one connection per process, used under a lock by the pipeline's threads."""

    def __init__(self, path: Path, option: str = "--guardbench-cache-path") -> None:
        self.path = path
        self.option = option  # the option that names the file, in every message about it
        self._lock = threading.Lock()
        self._db = self._opened()
        # Switching to WAL takes an exclusive lock that SQLite's busy handler does not wait for, so
        # xdist workers opening the file at the same moment retry here.
        for attempt in range(100):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS responses "
                    "(key TEXT PRIMARY KEY, value TEXT NOT NULL, identity TEXT NOT NULL)"
                )
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 99:
                    raise self._unusable(exc) from None
                time.sleep(0.05 + 0.05 * random.random())
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc) from None
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._cached_only = threading.local()

    def _opened(self) -> sqlite3.Connection:
        """The connection; ProviderError naming the file and the option when it cannot be opened (a
        folder where the file goes, a file where its folder goes, a folder that cannot be written):
        SQLite itself says only "unable to open database file"."""
        path, option = self.path, self.option
        if path.is_dir():
            raise CacheUnusable(f"{option} {path}: is a folder, not a response cache file; name a file in it")
        above = next((p for p in path.parents if p.exists()), None)
        if above is not None and not above.is_dir():
            raise CacheUnusable(f"{option} {path}: {above} is a file, not a folder; name a file in a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(str(path), timeout=60, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
            raise CacheUnusable(
                f"{option} {path}: cannot open the response cache: {why}{where}; point {option} at a file "
                "in a folder you can write"
            ) from None

    def _unusable(self, exc: sqlite3.Error) -> ProviderError:
        self._db.close()
        return CacheUnusable(
            f"{self.option} {self.path}: not a usable response cache ({exc}); "
            f"delete it to start a new one, or point {self.option} at another file"
        )

    @contextmanager
    def cached_only(self) -> Iterator[None]:
        """In this thread, calls through a CachedProvider on this cache raise CacheMiss instead of
        asking the model when their answer is not stored (nothing is counted for such a call)."""
        self._cached_only.active = True
        try:
            yield
        finally:
            self._cached_only.active = False

    @property
    def answering_from_cache_only(self) -> bool:
        return bool(getattr(self._cached_only, "active", False))

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, value in self._db.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk):
                    found[key] = json.loads(value)
        return found

    def put_many(self, rows: Sequence[tuple[str, dict[str, Any], str]]) -> None:
        if not rows:
            return
        clean = current_redactor()
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR IGNORE INTO responses (key, value, identity) VALUES (?, ?, ?)",
                        # A reply may echo a key back; the cache file is an artifact like any other.
                        [(key, clean(json.dumps(value, sort_keys=True)), identity) for key, value, identity in rows],
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                # A read-only file or folder, a full disk: the case fails naming the file, not "database is locked".
                raise ProviderError(
                    f"--guardbench-cache-path {self.path}: cannot write the response cache ({exc}); "
                    "make it writable, or run with --guardbench-cache=read"
                ) from None

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def cache_key(identity: str, call: Mapping[str, object]) -> str:
    payload = json.dumps({"format": CACHE_FORMAT, "identity": identity, **call}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CacheStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0

    def add(self, hits: int = 0, misses: int = 0, writes: int = 0) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses
            self.writes += writes

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes}


class CachedProvider:
    """Wraps a chat provider (and its `classify`, when it has one) with the response cache.

    Attributes other than the two calls pass through, so the engine still sees the inner
    provider's `concurrency`, `name` and `model`."""

    def __init__(self, inner: Any, cache: ResponseCache, mode: CacheMode, stats: CacheStats, role: str) -> None:
        if mode == "off":
            raise InternalError("CachedProvider with mode 'off': use the provider itself")
        self._inner = inner
        self._cache = cache
        self._mode = mode
        self._stats = stats
        self._role = role
        self._identity = _identity_of(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"CachedProvider({self._inner!r}, mode={self._mode!r})"

    def generate(
        self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]
    ) -> list[Completion]:
        calls = [
            {
                "call": "generate",
                "messages": list(c),
                "max_new_tokens": params.max_new_tokens,
                "temperature": params.temperature if s is not None else 0.0,
                "seed": s,
                **({"json_schema": params.json_schema} if params.json_schema is not None else {}),
            }
            for c, s in zip(conversations, seeds, strict=True)
        ]

        def compute(missing: list[int]) -> list[dict[str, Any]]:
            done = self._inner.generate([conversations[i] for i in missing], params, [seeds[i] for i in missing])
            return [c.model_dump() for c in done]

        return [Completion(**value) for value in self._through(calls, compute)]

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        # Spelled out field by field, and pinned by a test: another spelling would miss every answer
        # cached so far. `verdict_after` joins the key only when set, so entries from before it still hit.
        where = {"verdict_after": request.verdict_after} if request.verdict_after else {}
        calls = [
            {
                "call": "classify",
                "messages": c if isinstance(c, str) else list(c),
                "template_kwargs": request.template_kwargs,
                "label_words": list(request.label_words),
                "max_new_tokens": request.max_new_tokens,
                **where,
            }
            for c in request.conversations
        ]

        def compute(missing: list[int]) -> list[dict[str, Any]]:
            done = self._inner.classify(request.for_conversations([request.conversations[i] for i in missing]))
            return [asdict(c) for c in done]

        return [Classification(**value) for value in self._through(calls, compute)]

    def moderate(self, texts: Sequence[str]) -> list[object]:
        calls = [{"call": "moderate", "input": text} for text in texts]

        def compute(missing: list[int]) -> list[dict[str, Any]]:
            return [{"result": r} for r in self._inner.moderate([texts[i] for i in missing])]

        return [value["result"] for value in self._through(calls, compute)]

    def label_probabilities(
        self,
        conversations: Sequence[list[Message]],
        template_kwargs: Mapping[str, object],
        label_words: tuple[str, str],
        prefix: str = "",
    ) -> list[float]:
        where = {"prefix": prefix} if prefix else {}
        calls = [
            {
                "call": "label_probabilities",
                "messages": list(c),
                "template_kwargs": template_kwargs,
                "label_words": list(label_words),
                **where,
            }
            for c in conversations
        ]

        def compute(missing: list[int]) -> list[dict[str, Any]]:
            done = self._inner.label_probabilities(
                [conversations[i] for i in missing], template_kwargs, label_words, prefix
            )
            return [{"p": p} for p in done]

        return [value["p"] for value in self._through(calls, compute)]

    def _through(
        self, calls: list[dict[str, Any]], compute: Callable[[list[int]], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        keys = [cache_key(self._identity, call) for call in calls]
        found = self._cache.get_many(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing and self._cache.answering_from_cache_only:
            raise CacheMiss(f"{self._role}: {len(missing)} of {len(keys)} call(s) not cached")
        self._stats.add(hits=len(keys) - len(missing), misses=len(missing))
        if missing and self._mode == "replay":
            raise ProviderError(
                f"{self._role}: no cached response in replay mode for {len(missing)} call(s) "
                f"(first key {keys[missing[0]][:12]}); "
                "record them with --guardbench-cache=write"
            )
        values = {keys[i]: found[keys[i]] for i in range(len(keys)) if keys[i] in found}
        if missing:
            computed = compute(missing)
            if len(computed) != len(missing):
                raise ProviderError(f"{self._role}: provider returned {len(computed)} answers for {len(missing)} calls")
            rows = []
            for i, value in zip(missing, computed, strict=True):
                values[keys[i]] = value
                rows.append((keys[i], value, self._identity))
            if self._mode == "write":
                self._cache.put_many(rows)
                self._stats.add(writes=len(rows))
        return [values[key] for key in keys]


def _identity_of(provider: Any) -> str:
    return as_model_api(provider).cache_identity
