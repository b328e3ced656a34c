"""Seeing a rollout: an interactive 3-D viewer (plotly) and matplotlib plots.

Needs the visualization extra: ``pip install -e ".[viz]"``.
"""

from jaxsim.viz.plots import (center_of_pressure, contact_forces, energy, plot_center_of_pressure,
                              plot_contact_forces, plot_energy, plot_solver_iterations, plot_summary,
                              solver_iterations)
from jaxsim.viz.viewer import animate, save_html, to_html

__all__ = ["animate", "save_html", "to_html", "contact_forces", "center_of_pressure", "energy",
           "solver_iterations", "plot_contact_forces", "plot_center_of_pressure", "plot_energy",
           "plot_solver_iterations", "plot_summary"]
