"""The run folder's documents, typed: `summary.json` (`summary.RunSummary` and every block it holds),
`meta.json` (`meta`), the execution counters and the corrected block, and the one reader of a run
folder (`read`) that every command and the plugin use. The schema pages of the docs are rendered
from these models.

Below every package that writes or renders a run folder (`results`, `runfolder`) and below the ones
that compute its numbers (`scoring`, `audit`): they fill these models; nothing here computes a rate."""
