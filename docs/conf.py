"""Sphinx configuration of raider_sync's manual: Markdown pages (myst-parser), the API
reference from docstrings (autodoc), the built-in alabaster theme.

    make docs        # sphinx-build -W --keep-going -b html docs docs/_build/html
"""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import raider_sync  # noqa: E402

project = "raider_sync"
author = "raider_sync maintainers"
copyright = "2026, raider_sync maintainers"
version = release = raider_sync.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "*.ipynb"]

myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

html_theme = "alabaster"
html_title = f"raider_sync {release}"
html_theme_options = {
    "description": "A synchronous MCP client for Python",
    "fixed_sidebar": True,
}
pygments_style = "friendly"
