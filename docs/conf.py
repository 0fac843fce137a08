"""Sphinx configuration: MyST pages, the Furo theme, and reference pages rendered from the code."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

project = "pytest-guardbench"
author = "pytest-guardbench contributors"
copyright = "2026, pytest-guardbench contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinxarg.ext",
    "guardbench_reference",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Every cross-reference must resolve; pytest's Config is documented by pytest, not here. The hooks'
# parameter types are imported for type checking only (importing the plugin imports no more of the
# package), so autodoc sees their bare names; each hook's docstring names the full path.
nitpicky = True
nitpick_ignore = [
    ("py:class", "_pytest.config.Config"),
    ("py:class", "pytest.Config"),
    *(
        ("py:class", name)
        for name in ("ProviderRegistry", "GuardRegistry", "JudgeRegistry", "MutatorRegistry", "RunSummary")
    ),
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "furo"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
html_title = "pytest-guardbench"
