"""Contact models and the interface they plug into.

The constraint stage (``contact/stage.py``) is the same for every model: it detects
contacts, builds the generic constraint rows (``contact/rows.py``: joint and tendon
limits, friction loss, implicit PD), applies the spring-damper forces of penalty pairs
(``contact/penalty_forces.py``) as smooth forces, picks the slots of constraint pairs,
builds their contact space (``contact/space.py``) and hands everything to the selected
model (``Options.contact``, static). A model is a module that registers one
``ContactModel`` (``contact/interface.py``):

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
    restitution, penalty stiffness and damping, geom and body ids), whether each slot
    is kept from the last step (active, same feature) and its impulse then (zero
    where not kept: a warm start needs no further masking), the generic rows and the
    contact space ``v+ = A df + b`` of the R m slot rows followed by the rows. It
    returns the impulses of all R m + nr rows (N s, slot rows on geom2 in the contact
    frame), the new carry and the solver statistics. The stage turns the impulses into
    ``dv = M^-1 J^T df``, the per-slot ``ContactState`` and the force query.
  * ``collision``: what the slots of polyhedral pairs (plane, box, convex mesh) hold
    (``collision/regions.py``): ``"points"`` (vertices, edge crossings), ``"polygon"``
    (the contact polygon's corners, feature id the face pair making each corner) or
    ``"volume"`` (one slot per pair, ``Contacts.volume`` its intersection polyhedron).
    Sphere and capsule pairs always get point slots. The builder fixes the slot layout
    from it (``Topology.pair_geometry``).
  * ``slot_rows`` R: 3 (relative linear velocity in the contact frame: normal, tangent
    1, tangent 2) or 6 (then the relative angular velocity in the same frame, for a
    wrench: force at the slot point and a torque).

Layout:

  * ``interface.py``: ``ContactModel``, ``Problem``, ``SlotData``, ``Solution``,
    ``param`` and the registry (``register``, ``get``, ``make_params``); it imports no
    model.
  * ``common.py``: what the models share: the start- and end-of-step row velocities,
    the targets of contacts and limit rows (a gap may close within the step, a
    penetration gets the model's position correction), the static/kinetic friction
    choice, De Saxce's shift and second pass, and the masks, bounds, warm start and
    statistics of a solve.
  * the models, each holding its own physics: ``point.py`` (``"relaxed"``,
    ``"rigid"``), ``penalty.py`` (``"penalty"``, on the forces of
    ``penalty_forces.py``), ``cone.py`` (``"cone"``), ``springhead.py``
    (``"springhead"``), ``volume.py`` (``"volume"``).
  * the stage and what it builds: ``stage.py``, ``rows.py``, ``space.py``,
    ``equality.py`` (equalities, solved out before the models see the rows),
    ``materials.py`` (per-pair parameters), ``query.py`` (contact forces of the last
    step).

A new model is a new module that imports ``jaxsim.contact.interface`` (and
``common``) and calls ``register``; a built-in one is also imported below, which
lists the models that ship with jaxsim. ``step.py`` and the stage do not change.
Other shared pieces: the QP of ``solver/qp.py`` (interval, half-line, friction-cone
and friction-box blocks, per-row compliance, implicit gradients) and ``space.py``
(Jacobians, ``A``, ``b``).
"""

from __future__ import annotations

from jaxsim.contact import cone, penalty, point, springhead, volume
from jaxsim.contact.interface import (MODELS, ContactModel, Problem, SlotData, Solution, get, make_params,
                                      param, param_names, register, zero_stats)

BUILTIN: tuple[str, ...] = tuple(sorted(MODELS))  # the models that ship with jaxsim

__all__ = ["BUILTIN", "MODELS", "ContactModel", "Problem", "SlotData", "Solution", "get", "make_params", "param",
           "param_names", "register", "zero_stats", "cone", "penalty", "point", "springhead", "volume"]
