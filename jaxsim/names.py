"""Former option names, still accepted with a ``DeprecationWarning`` naming the new one.

Every option has one name across ``ModelBuilder``, the loaders, the scenes, the
command line and MJCF custom elements. The names below were in use before; passing
one still works and warns, and it will stop working in the next release.
"""

from __future__ import annotations

import warnings

# former name -> current name
RENAMED = {
    "constraints": "constraint",  # Options.constraint, MuJoCo's constraint flag
    "implicit": "implicit_pd",  # servos solved with the constraints
    "friction_model": "solver",  # cone: which friction formulation solves the step
    "iterations": "sweeps",  # cone: cap on 'exact' sweeps
    "pgs_sweeps": "sweeps",  # springhead: Gauss-Seidel sweeps
    "tolerance": "sweep_tol",  # cone: residual at which 'exact' stops
    "friction_threshold": "slip_speed",  # springhead's V_f
    "penalty_slip_speed": "slip_speed",  # penalty pairs' slip speed
    "contact_stiffness": "contact_rate",  # 1/s, not a stiffness in N/m
    "limit_stiffness": "limit_rate",  # penalty model: 1/s
}


def current_name(name: str) -> str:
    """The current name of option ``name`` (itself if it is not a former name)."""
    return RENAMED.get(name, name)


def rename(options: dict, where: str, stacklevel: int = 3, renamed: dict | None = None) -> dict:
    """``options`` with former names replaced by current ones, one
    ``DeprecationWarning`` per former name (``where`` says who received it;
    ``renamed``: another table than ``RENAMED``, for one function's arguments).

    Raises:
      ValueError: a former name and its current name are both given.
    """
    out = {}
    for name, value in options.items():
        new = (RENAMED if renamed is None else renamed).get(name)
        if new is None:
            out[name] = value
            continue
        if new in options:
            raise ValueError(f"{where}: {name!r} is the former name of {new!r}; give only {new!r}")
        warnings.warn(f"{where}: option {name!r} is deprecated, use {new!r}", DeprecationWarning,
                      stacklevel=stacklevel)
        out[new] = value
    return out
