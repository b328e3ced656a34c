"""Seeing a rollout: an interactive 3-D viewer (plotly) and matplotlib plots.

Needs the visualization extra: ``pip install -e ".[viz]"``.
"""

from jaxsim.viz.viewer import animate, save_html, to_html

__all__ = ["animate", "save_html", "to_html"]
