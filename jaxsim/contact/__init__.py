"""Contact models and the interface they plug into.

The constraint stage (``contact/stage.py``) is the same for every model: it detects
contacts, builds the generic constraint rows (``contact/rows.py``: joint and tendon
limits), applies the spring-damper forces of penalty pairs (``contact/penalty.py``)
as smooth forces, picks the slots of constraint pairs, builds their contact space and
hands everything to the selected model (``Options.contact``, static). A model is a
module that registers one ``ContactModel``:

  * ``params``: a pytree dataclass of the model's own parameters (array leaves,
    static fields with ``static=True`` metadata), each field declared with
    ``param(default, doc)``. The builder and loaders forward keyword options of
    those names (``ModelBuilder(contact="relaxed", contact_rate=500)``); the
    Model carries the instance as ``Model.contact_params``.
  * ``init(model, n) -> carry``: what the model keeps between steps for ``n`` slots,
    a pytree of arrays with a leading slot axis and fixed shapes (``State.
    contact_carry``). The stage matches it to this step's slots by feature id, and
    re-indexes it when only the deepest slots are solved (``opt.max_contacts``).
  * ``solve(model, problem, carry) -> Solution``: one step. ``problem`` (``Problem``)
    holds the kinematics at the step's start, the m slots' contacts (inactive where
    the slot is not this model's), their per-pair parameters (``SlotData``: friction,
    restitution, penalty stiffness and damping, geom and body ids), last step's
    impulses matched to them, the generic rows and the contact space ``v+ = A df + b``
    of the R m slot rows followed by the rows. It returns the impulses of all R m + nr
    rows (N s, slot rows on geom2 in the contact frame), the new carry and the solver
    statistics. The stage turns the impulses into ``dv = M^-1 J^T df``, the per-slot
    ``ContactState`` and the force query.
  * ``collision``: what the slots of polyhedral pairs (plane, box, convex mesh) hold
    (``collision/regions.py``): ``"points"`` (vertices, edge crossings), ``"polygon"``
    (the contact polygon's corners, feature id the face pair making each corner) or
    ``"volume"`` (one slot per pair, ``Contacts.volume`` its intersection polyhedron).
    Sphere and capsule pairs always get point slots. The builder fixes the slot layout
    from it (``Topology.pair_geometry``).
  * ``slot_rows`` R: 3 (relative linear velocity in the contact frame: normal, tangent
    1, tangent 2) or 6 (then the relative angular velocity in the same frame, for a
    wrench: force at the slot point and a torque).

A new model is a new module that calls ``register`` (and, if built in, is imported at
the bottom of this file); ``step.py`` does not change. Shared pieces: the QP of
``solver/qp.py`` (interval, half-line, friction-cone and friction-box blocks, per-row
compliance, implicit gradients), ``space.py`` (Jacobians, ``A``, ``b``) and the
position corrections of ``point.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.types import SolverStats

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
    """What a contact model's ``solve`` gets (module docstring)."""

    kin: Any  # Kinematics at the step's start
    contacts: Any  # Contacts of the m slots (inactive where not the model's)
    slots: SlotData
    kept: Array  # (m,) bool, the slot held the same feature last step
    prev_impulse: Array  # (m, R) N s, its impulse then (contact frame; 0 if not kept)
    rows: Any  # rows.Rows, nr generic rows
    space: Any  # space.ContactSpace of the R m slot rows then the nr generic rows
    v: Array  # (nv,) generalized velocity at the step's start


class Solution(NamedTuple):
    impulse: Array  # (R m + nr,) N s (N m s for hinge rows and angular slot rows)
    carry: Any
    stats: SolverStats


@dataclasses.dataclass(frozen=True)
class ContactModel:
    name: str
    params: type
    init: Callable[[Any, int], Any]
    solve: Callable[[Any, Problem, Any], Solution]
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


# built-in models register themselves on import
from jaxsim.contact import cone, penalty, point, springhead, volume  # noqa: E402,F401

BUILTIN: tuple[str, ...] = tuple(sorted(MODELS))  # the models that ship with jaxsim
