"""Sphinx configuration of numbaflow's documentation site (tools/build_docs.py builds it).

The source directory is the repository root, so the README, BENCHMARKS.md, CONTRIBUTING.md,
CHANGELOG.md and the guides in docs/ are rendered from where they stand and their relative
links (to each other, to docs/img/, to source files) resolve as they do on a forge. The API
reference is docs/api/*.md: one page per public module, rendered by autodoc from the
docstrings. Why Sphinx: docs/api-reference.md.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)          # autodoc documents this tree's numbaflow

import numbaflow  # noqa: E402

project = "numbaflow"
release = version = numbaflow.__version__
copyright = "the numbaflow authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "docs/index"
include_patterns = ["README.md", "BENCHMARKS.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/*.md",
                    "docs/api/*.md", "docs/img/*"]

# GitHub's heading anchors (#moving-models-in-and-out), so that links work on a forge and here
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.header"]   # a page may start at "##" (BENCHMARKS.md's sections)

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"numbaflow {release}"
html_show_sourcelink = False
html_copy_source = False          # the Markdown sources are in the repository


def _unlink_problems(app, doctree, docname):
    """A docstring whose markup docutils cannot parse (`*args` read as emphasis) leaves a
    "problematic" node linking to a system message the HTML does not show: keep its text,
    drop the dead link (the warning stays in the build's log)."""
    from docutils import nodes
    for node in doctree.findall(nodes.problematic):
        node.attributes.pop("refid", None)


def setup(app):
    app.connect("doctree-resolved", _unlink_problems)
