"""meta.json: how a run folder was made. A pytest session writes `RunMeta` (the stack, the models,
digests of the prompts, package versions, platform, git commit, argv) at the first record, so a
killed run can be checked before it is resumed; `merge`, `rejudge` and `import-seed` each write
where their run came from. `RunMeta.identity` is what a resume must match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_guardbench.document.base import Block, GivenKeysBlock
from pytest_guardbench.document.summary import StackInfo
from pytest_guardbench.errors import DataError

# meta.json keys that must match for two runs to be one run (a resume, a merge of shards).
IDENTITY_KEYS = ("stack", "models", "system_prompt_sha256", "refusal_text_sha256", "packs", "shard")


class RunMeta(GivenKeysBlock):
    """A pytest session's meta.json. `models`: each role's model spec as the run resolved it (its
    base URL, never a key); `settings`: the run's settings as `Settings.public_view` writes them.
    `packs` and `shard` are absent from folders written before they were recorded; a resume compares
    what a folder recorded."""

    run_id: str | None
    stack: StackInfo
    models: dict[str, dict[str, Any]]
    system_prompt_sha256: str
    refusal_text_sha256: str
    packs: list[str] | None = None
    shard: str | None = None
    tutor_description: str
    settings: dict[str, Any]
    packages: dict[str, str | None]
    python: str
    platform: str
    git_commit: str | None
    argv: list[str]

    def identity(self) -> dict[str, object]:
        """What makes two runs comparable case by case, as meta.json holds it (the keys it recorded)."""
        document = self.model_dump(mode="json")
        return {key: document[key] for key in IDENTITY_KEYS if key in document}


class MergedMeta(Block):
    """`guardbench merge`'s meta.json: the shard folders it merged."""

    merged_from: list[str]
    policy: str


class RejudgedMeta(GivenKeysBlock):
    """`guardbench rejudge`'s meta.json: the run it re-judged and the judge that did."""

    rejudged_from: str
    judge: str
    judge_id: str | None
    cases_rejudged: int
    policy: str
    judge_samples: int | None = None  # written only when the judge was asked more than once


class ImportedMeta(Block):
    """`guardbench import-seed`'s meta.json: the seed run's results file it imported."""

    imported_from: str
    judge: str
    policy: str


FolderMeta = RunMeta | MergedMeta | RejudgedMeta | ImportedMeta
_FOLDER_META: TypeAdapter[FolderMeta] = TypeAdapter(FolderMeta)


def folder_meta(document: object, path: Path) -> FolderMeta:
    """A meta.json document as the writer that made it wrote it; `DataError` naming the file when no
    writer of ours made it."""
    try:
        return _FOLDER_META.validate_python(document)
    except ValidationError:
        kinds = "a run's, a merge's, a rejudge's or an import's"
        raise DataError(f"not a run folder's meta.json (it reads as none of {kinds})", path=path) from None


def meta_json(meta: FolderMeta) -> dict[str, object]:
    """The document written to meta.json."""
    written: dict[str, object] = meta.model_dump(mode="json")
    return written
