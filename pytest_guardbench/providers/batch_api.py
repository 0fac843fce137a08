"""The OpenAI Batch API as a provider: the same calls as `OpenAICompatProvider`, sent as one JSONL
file per stage group and polled until the batch ends."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Unpack

from pytest_guardbench._util.counters import Counts
from pytest_guardbench._util.files import write_files
from pytest_guardbench.providers.base import GenerationParams, Message, ProviderError, ProviderSettings
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider
from pytest_guardbench.providers.transport import Reply, Retryable, reply_from

TERMINAL_BATCH_STATES = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchAPIProvider(OpenAICompatProvider):
    """The same calls sent through the provider's Batch API: all calls of one stage go up as one
    JSONL file, the batch is polled until it ends, and its output lines become the answers.

    The batch id is written to `state_dir` under a hash of the file's content before polling, so a
    run stopped while the batch is in flight finds it again (same pending calls, same file) and
    polls it instead of paying twice. Lines the batch failed are sent again as normal calls."""

    def __init__(
        self,
        *,
        state_dir: Path,
        poll_s: float = 10.0,
        completion_window: str = "24h",
        **settings: Unpack[ProviderSettings],
    ) -> None:
        super().__init__(**settings)
        self._state_dir = state_dir
        self._poll_s = poll_s
        self._window = completion_window
        self.batches_submitted = 0
        self.batches_resumed = 0
        self.batch_lines = 0
        self.sent_again = 0
        self.batches_forgotten = 0

    def stats(self) -> Counts:
        return {
            **super().stats(),
            "batches_submitted": self.batches_submitted,
            "batches_resumed": self.batches_resumed,
            "batch_lines": self.batch_lines,
            "sent_again": self.sent_again,
            "batches_forgotten": self.batches_forgotten,
        }

    async def _run_all(
        self,
        conversations: list[list[Message]],
        params: GenerationParams,
        seeds: list[int | None],
        extra: Mapping[str, object] | None,
    ) -> list[Reply]:
        self._ensure_clients()
        bodies = [
            self._request(conversation, params, seed, extra)
            for conversation, seed in zip(conversations, seeds, strict=True)
        ]
        content = "".join(
            json.dumps(
                {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}, sort_keys=True
            )
            + "\n"
            for i, body in enumerate(bodies)
        ).encode("utf-8")
        state = self._state_dir / f"{hashlib.sha256(content).hexdigest()[:32]}.json"
        client = self.endpoints[0].client
        batch = await self._submit_or_resume(client, content, state)
        started = time.perf_counter()
        while batch.status not in TERMINAL_BATCH_STATES:
            await asyncio.sleep(self._poll_s)
            batch = await client.batches.retrieve(batch.id)
        if batch.status != "completed":
            state.unlink(missing_ok=True)
            raise ProviderError(f"{self.name}: batch {batch.id} ended {batch.status}; its calls were not answered")
        answers: dict[str, Any] = {}
        if batch.output_file_id:
            output = await client.files.content(batch.output_file_id)
            for line in output.text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    answers[row["custom_id"]] = row
        latency = time.perf_counter() - started
        replies = list(
            await asyncio.gather(
                *(
                    self._from_batch(answers.get(f"r{i}"), latency, c, params, s, extra)
                    for i, (c, s) in enumerate(zip(conversations, seeds, strict=True))
                )
            )
        )
        state.unlink(missing_ok=True)
        return replies

    async def _submit_or_resume(self, client: Any, content: bytes, state: Path) -> Any:
        import openai

        if state.is_file():
            batch_id = json.loads(state.read_text(encoding="utf-8"))["batch_id"]
            try:
                batch = await client.batches.retrieve(batch_id)
            except openai.NotFoundError:
                # The server no longer knows the batch (expired, or another server): submitting anew is the only way on.
                state.unlink(missing_ok=True)
                self.batches_forgotten += 1
            else:
                self.batches_resumed += 1
                return batch
        try:
            uploaded = await client.files.create(file=("guardbench-batch.jsonl", content), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window=self._window
            )
        except openai.NotFoundError as exc:
            raise ProviderError(
                f"{self.name}: the server at {self.base_url} has no Batch API (HTTP 404 from {exc.request.url.path}); "
                "leave this role out of --guardbench-batch-api, or set batch_api = false in its alias"
            ) from None
        self._state_dir.mkdir(parents=True, exist_ok=True)
        write_files([(state, json.dumps({"batch_id": batch.id, "input_file_id": uploaded.id, "model": self.model}))])
        self.batches_submitted += 1
        self.batch_lines += content.count(b"\n")
        return batch

    async def _from_batch(
        self,
        row: dict[str, Any] | None,
        latency: float,
        conversation: list[Message],
        params: GenerationParams,
        seed: int | None,
        extra: Mapping[str, object] | None,
    ) -> Reply:
        response = (row or {}).get("response") or {}
        if response.get("status_code") == 200:
            try:
                return reply_from(response.get("body"), self.name, self.model, latency)
            except Retryable:
                pass
        self.sent_again += 1
        return await self._with_retries(lambda endpoint: self._complete(endpoint, conversation, params, seed, extra))
