"""The interface between the constraint stage and the contact models (``contact/__init__.py``
describes it): what a model declares (``ContactModel``, ``param``), what its ``solve``
gets (``Problem``, ``SlotData``) and returns (``Solution``), and the registry of models
by name (``register``, ``get``, ``make_params``).

This module imports no contact model: the models import it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.contact.rows import Rows
from jaxsim.contact.space import ContactSpace
from jaxsim.kinematics import Kinematics
from jaxsim.types import Contacts, Model, SolverStats

Array = jax.Array


class SlotData(NamedTuple):
    """Per-slot data of the m slots a model solves (from the pair table)."""

    geom1: Array  # (m,) int32
    geom2: Array
    body1: Array
    body2: Array
    friction: Array  # (m, 2) static, kinetic coefficients
    restitution: Array  # (m,)
    stiffness: Array  # (m,) N/m, penalty spring
    damping: Array  # (m,) N s/m, penalty damper


class Problem(NamedTuple):
    """What a contact model's ``solve`` gets (``contact/__init__.py``)."""

    kin: Kinematics  # at the step's start
    contacts: Contacts  # of the m slots (inactive where not the model's)
    slots: SlotData
    kept: Array  # (m,) bool, the slot is active and held the same feature last step
    prev_impulse: Array  # (m, R) N s, its impulse then (contact frame; 0 where not kept)
    rows: Rows  # the nr generic rows
    space: ContactSpace  # of the R m slot rows, then the nr generic rows
    v: Array  # (nv,) generalized velocity at the step's start

    @property
    def m(self) -> int:
        """The number of slots (static)."""
        return self.contacts.active.shape[0]

    @property
    def nr(self) -> int:
        """The number of generic rows (static)."""
        return self.rows.dist.shape[0]

    @property
    def slot_rows(self) -> int:
        """R, the rows per slot (static)."""
        return self.prev_impulse.shape[-1]


class Solution(NamedTuple):
    impulse: Array  # (R m + nr,) N s (N m s for hinge rows and angular slot rows)
    carry: Any
    stats: SolverStats
    # (R m + nr,) N s or None: impulses that move the positions of the step but not its
    # velocity (added to v+ in q+ = q + dt v+ only); a model that differentiates its
    # impacts in continuous time returns ones whose value is zero
    position_impulse: Array | None = None


@dataclasses.dataclass(frozen=True)
class ContactModel:
    name: str
    params: type
    init: Callable[[Model, int], Any]
    solve: Callable[[Model, Problem, Any], Solution]
    doc: str = ""
    collision: str = "points"  # what slots of polyhedral pairs hold: "points", "polygon", "volume"
    slot_rows: int = 3  # rows per slot: 3 (force) or 6 (force, then torque about the slot point)
    friction_blend: str = "max"  # a pair's friction from its geoms': "max" (MuJoCo) or "mean" (Springhead)
    default_restitution: float = 0.0  # of a geom that sets none

    def __post_init__(self):
        if self.collision not in ("points", "polygon", "volume"):
            raise ValueError(f"contact model {self.name!r}: collision must be 'points', 'polygon' or "
                             f"'volume', got {self.collision!r}")
        if self.friction_blend not in ("max", "mean"):
            raise ValueError(f"contact model {self.name!r}: friction_blend must be 'max' or 'mean', "
                             f"got {self.friction_blend!r}")
        if self.slot_rows not in (3, 6):
            raise ValueError(f"contact model {self.name!r}: slot_rows must be 3 or 6, got {self.slot_rows}")


MODELS: dict[str, ContactModel] = {}


def register(model: ContactModel) -> ContactModel:
    """Make ``model`` selectable as ``Options.contact == model.name``."""
    MODELS[model.name] = model
    return model


def get(name: str) -> ContactModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown contact model {name!r}; registered: {sorted(MODELS)}") from None


def param(default, doc: str = "", minimum: float | None = 0.0, static: bool = False, choices=None):
    """A field of a model's ``params`` dataclass: default value, description (with
    units) and the smallest allowed value (None: any finite value); a static field
    may name its allowed values (``choices``)."""
    meta = {"doc": doc, "minimum": minimum, "default": default}
    if static:
        meta["static"] = True
    if choices is not None:
        meta["choices"] = tuple(choices)
    return dataclasses.field(default=default, metadata=meta)


def param_names(name: str) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(get(name).params))


def make_params(name: str, dtype, **values):
    """The ``params`` of model ``name`` from keyword values (defaults for the rest),
    checked: an unknown keyword or a value below its minimum raises ``ValueError``
    naming it. ``dtype=None`` only checks (and returns None)."""
    cls = get(name).params
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"contact model {name!r} has no parameter(s) {unknown}; "
                         f"its parameters: {sorted(fields)}")
    out = {}
    for key, f in fields.items():
        value = values.get(key, f.default)
        if f.metadata.get("static"):
            choices = f.metadata.get("choices")
            if choices is not None and value not in choices:
                raise ValueError(f"contact model {name!r}: {key} must be one of {list(choices)}, got {value!r}")
            if choices is None and isinstance(f.default, int) and (
                    not isinstance(value, (int, np.integer)) or value < (f.metadata.get("minimum") or 0)):
                raise ValueError(f"contact model {name!r}: {key} must be an integer >= "
                                 f"{f.metadata.get('minimum') or 0}, got {value!r}")
            out[key] = value
            continue
        a = np.asarray(value, np.float64)
        lo = f.metadata.get("minimum")
        if not np.all(np.isfinite(a)) or (lo is not None and np.any(a < lo)):
            bound = "finite" if lo is None else f">= {lo:g} and finite"
            raise ValueError(f"contact model {name!r}: {key} must be {bound}, got {value}")
        out[key] = a if dtype is None else jnp.asarray(a, dtype)
    return None if dtype is None else cls(**out)


def zero_stats(dtype) -> SolverStats:
    return SolverStats(jnp.zeros((), jnp.int32), jnp.zeros((), dtype))
