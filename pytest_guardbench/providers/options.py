"""What the plugin passes to every provider factory (`ProviderOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the call processes' modules are imported only by a run that makes calls in them
    from pytest_guardbench.providers.call_processes import CallProcesses


@dataclass(frozen=True)
class ProviderOptions:
    """What the plugin passes to every provider factory."""

    model_cache: Path
    batch_size: int = 8
    torch_threads: int | None = None
    batch_state_dir: Path | None = None  # where Batch API runs keep their batch ids
    offline: bool = False  # hub models only from the local Hugging Face cache, never downloaded
    # The run's call processes, shared by the API models that have no `processes` of their own;
    # None: each such model makes its calls as its spec says.
    call_processes: CallProcesses | None = None
