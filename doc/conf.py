"""Sphinx configuration of the manual (`make docs`; rosdoc2 finds this file at doc/conf.py).

The pages are Markdown (myst-parser). Nothing is fetched at build time: no intersphinx, no remote
images. rosdoc2 runs this file through exec() from another folder, so nothing here depends on the
current directory or on __file__.
"""
project = "binpick_sim"
author = "binpick_sim developers"
copyright = "2026, binpick_sim developers (Apache-2.0)"
release = "0.1.0"
version = "0.1"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
# Headings get anchors (`page.md#a-heading`) so links between pages may name a section; a link to a
# missing page or anchor is a warning, and `make docs` fails on warnings.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings = []
nitpicky = True

html_theme = "alabaster"
html_title = "binpick_sim"
html_static_path = []

# rosdoc2's own switches: this package documents its pages, not an API, and has no network at build time.
rosdoc2_settings = {
    "enable_intersphinx": False,
    "automatically_extend_intersphinx_mapping": False,
}
