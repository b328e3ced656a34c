"""Model and State pytrees.

``Model`` holds everything that stays fixed during a rollout; ``State`` what a step
changes. Both are frozen dataclasses registered as pytrees. Array fields are leaves and
may carry a leading batch axis (``jax.vmap`` over models for domain randomisation);
the kinematic tree and every size that fixes an array shape live in the static
``Topology``, so a batch of models must share one topology.

Bodies, joints and dofs follow MuJoCo's indexing: body 0 is the world, a body's joints
are contiguous (``body_jntadr``, ``body_jntnum``) and a joint's coordinates start at
``jnt_qposadr`` (positions) and ``jnt_dofadr`` (velocities). A body without joints is
welded to its parent (a fixed joint): it adds no dof and its inertia moves with the
parent.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


class ModelError(ValueError):
    """A model description that cannot be built; the message names the element."""


def pytree_dataclass(cls):
    """Frozen dataclass registered as a pytree; fields with ``static=True`` metadata
    become treedef aux data (they must be hashable)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    meta = [f.name for f in fields if f.metadata.get("static", False)]
    data = [f.name for f in fields if not f.metadata.get("static", False)]
    jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    cls.replace = replace
    return cls


def static(default: Any = dataclasses.MISSING):
    """A static (non-leaf) dataclass field."""
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata={"static": True})
    return dataclasses.field(default=default, metadata={"static": True})


class JointType(enum.IntEnum):
    """Joint types; numbering matches MuJoCo's ``mjtJoint``."""

    FREE = 0  # 7 coordinates (pos, quat), 6 dofs (world linear, body angular)
    BALL = 1  # 4 coordinates (quat), 3 dofs (body angular)
    SLIDE = 2  # prismatic
    HINGE = 3  # revolute

    @property
    def nq(self) -> int:
        return {0: 7, 1: 4, 2: 1, 3: 1}[int(self)]

    @property
    def nv(self) -> int:
        return {0: 6, 1: 3, 2: 1, 3: 1}[int(self)]


class GeomType(enum.IntEnum):
    """Collision shapes. ``CONVEX`` is a convex polyhedron (vertices and faces)."""

    PLANE = 0  # half-space z <= 0 in the geom frame
    SPHERE = 1  # size[0] = radius
    CAPSULE = 2  # size[0] = radius, size[1] = half-length along local z
    BOX = 3  # size = half-extents
    CONVEX = 4  # geom_mesh names the polyhedron
    HFIELD = 5  # height field: geom_hfield names the grid (static terrain)


class ContactMode(enum.IntEnum):
    """What a geom pair's contacts are (``ModelBuilder.set_contact_mode``, ``add_pair``)."""

    NONE = 0  # not even detected
    CONSTRAINT = 1  # rows of the selected contact model's solve
    PENALTY = 2  # a spring-damper force in the smooth dynamics (contact/penalty_forces.py)


class DynType(enum.IntEnum):
    """Actuator activation dynamics (MuJoCo's ``mjtDyn`` subset)."""

    NONE = 0  # force from ctrl directly
    INTEGRATOR = 1  # act_dot = ctrl
    FILTER = 2  # act_dot = (ctrl - act) / tau, explicit Euler
    FILTEREXACT = 3  # same ODE, integrated exactly over a step


@pytree_dataclass
class Topology:
    """Static structure of a model: sizes, tree, types and names (all hashable)."""

    nq: int = static()
    nv: int = static()
    nbody: int = static()
    njnt: int = static()
    ngeom: int = static()
    nmesh: int = static()
    nhfield: int = static()
    nu: int = static()
    na: int = static()
    ntendon: int = static()
    neq: int = static()
    body_parent: tuple = static()  # (nbody,) parent body, -1 for the world
    body_jntadr: tuple = static()
    body_jntnum: tuple = static()
    body_name: tuple = static()
    jnt_type: tuple = static()  # JointType values
    jnt_body: tuple = static()
    jnt_qposadr: tuple = static()
    jnt_dofadr: tuple = static()
    jnt_limited: tuple = static()
    jnt_actfrclimited: tuple = static()  # clamp actuator force on the joint
    jnt_name: tuple = static()
    geom_type: tuple = static()  # GeomType values
    geom_body: tuple = static()
    geom_mesh: tuple = static()  # mesh id for CONVEX geoms, else -1
    geom_hfield: tuple = static()  # height field id for HFIELD geoms, else -1
    geom_contype: tuple = static()
    geom_conaffinity: tuple = static()
    geom_condim: tuple = static()  # 1: frictionless (the larger of a pair's two counts)
    geom_name: tuple = static()
    mesh_nvert: tuple = static()
    mesh_nface: tuple = static()
    mesh_nedge: tuple = static()
    mesh_naxis: tuple = static()  # edges with distinct directions (they come first)
    hfield_nrow: tuple = static()
    hfield_ncol: tuple = static()
    actuator_dyntype: tuple = static()  # DynType values
    actuator_actadr: tuple = static()  # index into State.act, -1 if stateless
    actuator_ctrllimited: tuple = static()
    actuator_forcelimited: tuple = static()
    actuator_actlimited: tuple = static()
    actuator_name: tuple = static()
    actuator_implicit: tuple = static()  # bool, PD solved as a constraint row (contact/rows.py)
    actuator_ball: tuple = static()  # bool, on a ball joint (its position error wraps, as MuJoCo's)
    dof_frictional: tuple = static()  # bool, frictionloss > 0 (a friction-loss row, contact/rows.py)
    tendon_limited: tuple = static()
    tendon_name: tuple = static()
    eq_type: tuple = static()  # "joint", "tendon", "connect" or "weld"
    eq_obj1: tuple = static()  # joint / tendon / body ids
    eq_obj2: tuple = static()  # joint / tendon: -1 for "keep at its reference value"; body: 0 the world
    eq_name: tuple = static()
    exclude: tuple = static(())  # (body1, body2) pairs whose geoms never collide
    # the pair table (``collision/pairs.py``'s ``pair_table``): every geom pair that may
    # collide, in a fixed order; its parameters are the Model's pair_* arrays
    pair_geom1: tuple = static(())
    pair_geom2: tuple = static(())
    pair_mode: tuple = static(())  # ContactMode per pair
    pair_window: tuple = static(())  # height-field pairs: cells per side of the window the geom sees, else 0
    pair_geometry: str = static("points")  # what slots of polyhedral pairs hold: "points", "polygon", "volume"
    # pairs with explicit parameters (ModelBuilder.add_pair, MJCF <pair>): the pair-table
    # index of each row of Model.pair_friction, pair_restitution, pair_penalty_stiffness
    # and pair_penalty_damping
    pair_friction_id: tuple = static(())
    pair_restitution_id: tuple = static(())
    pair_penalty_stiffness_id: tuple = static(())
    pair_penalty_damping_id: tuple = static(())


@pytree_dataclass
class Options:
    """Simulation options. Array fields may be batched like the rest of the Model."""

    timestep: Array  # () s
    gravity: Array  # (3,) m/s^2, world frame
    density: Array  # () kg/m^3 of the surrounding medium (fluid forces)
    viscosity: Array  # () Pa s of the surrounding medium
    wind: Array  # (3,) m/s, velocity of the medium
    # the constraint stage (each contact model's own parameters: Model.contact_params)
    contact_margin: Array  # () m, speculative contacts: shapes this close count as touching
    solver_tol: Array  # () relative tolerance of the contact QP
    penalty_stiffness: Array  # () N/m, penalty pairs' spring (contact/penalty_forces.py)
    penalty_damping: Array  # () N s/m, penalty pairs' damper
    slip_speed: Array  # () m/s, slip speed above which friction is kinetic (penalty pairs: viscous below it)
    gradient_smoothing: Array  # () m/s, contact switches blended in the implicit gradients only (0: exact)
    integrator: str = static("euler")  # "euler" (semi-implicit) or "rk4"
    forward_dynamics: str = static("crba")  # "crba" (M + Cholesky) or "aba" (O(n))
    implicit_damping: bool = static(True)  # Euler: joint damping taken at v+ as MuJoCo
    # Euler: the gyroscopic torque of free joints on bodies without children at v+ (MuJoCo: explicit)
    implicit_gyroscopic: bool = static(True)
    fluid: bool = static(False)  # apply fluid forces (ModelBuilder's fluid: by default when density or viscosity > 0)
    contact: str = static("relaxed")  # the contact model (jaxsim.contact.MODELS): "relaxed", "rigid", "penalty", ...
    constraint: bool = static(True)  # False: no contacts and no constraint rows at all (MuJoCo's constraint flag)
    solver_iterations: int = static(500)  # QP iteration cap
    adjoint: str = static("implicit")  # QP gradients: "implicit" or "unrolled"
    max_contacts: int = static(0)  # > 0: solve for at most this many (deepest) active slots
    edge_contacts: bool = static(True)  # point slots of polyhedra: edge-edge crossings too (False: vertices only)
    narrow_pairs: int = static(0)  # > 0: per pair kind, only this many nearest pairs reach the narrow phase


@pytree_dataclass
class Model:
    """Everything that does not change during a rollout.

    Shapes use the sizes of ``topo``; all arrays share one float dtype.

    **Per-environment fields.** Every float array leaf not listed as structural below is
    read by the step, so changing it changes the physics it names, per environment in a
    batch of Models (``jaxsim.randomize``, ``batch_models``, ``jax.vmap``) and with a
    gradient (``jax.grad`` with respect to the Model). Nothing is copied from one field
    into another at build time: a pair's friction and restitution, the broad phase's
    bounding radii and the mass matrix are derived in the step. Some entries only
    matter where the structure gives them a role:

      * ``opt.density``, ``opt.viscosity``, ``opt.wind``: where ``opt.fluid`` is on (a
        model built with ``fluid=True``, or with a density or viscosity above 0);
      * ``opt.penalty_*`` and ``pair_penalty_*``: penalty pairs
        (``ContactMode.PENALTY``); ``geom_restitution``: contact models with
        restitution (``springhead``); ``opt.solver_tol``: QP solves;
        ``opt.gradient_smoothing``: gradients only (the motion is unchanged);
      * ``body_pos``, ``body_quat``, ``jnt_pos``, ``jnt_axis`` of a free joint's body:
        unused, the body's pose is its ``q``; ``qpos0``: the reference of hinge and
        slide joints (and ``make_state``'s default ``q``);
      * ``jnt_range``: limited joints (``Topology.jnt_limited``); likewise
        ``jnt_actfrcrange``, ``actuator_ctrlrange``, ``actuator_forcerange``,
        ``actuator_actrange`` and ``tendon_range`` where their ``*_limited`` flag is
        set; ``dof_frictionloss``: dofs built with a positive friction loss (their
        friction-loss rows are part of the slot layout); ``actuator_tau``: actuators
        with filter dynamics;
      * ``geom_size``: primitives (sphere, capsule, box); a convex geom's shape is its
        mesh; a geom facing a height field may shrink but not grow past the size it
        was built with (its window of cells is fixed at build);
      * quaternions are read as given: keep them unit length;
      * ``geom_rgba``: colour only (the viewer).

    **Structural fields** (``STRUCTURAL_FIELDS``) fix shapes or the slot layout and
    must not differ across a batch: ``topo`` (the kinematic tree, joint and geom
    types, the pair table, which joints are limited, slot counts), ``mesh_vert``,
    ``mesh_face``, ``mesh_edge``, ``hfield_size`` and ``hfield_data``. The static
    options of ``opt`` (``contact``, ``integrator``, ``solver_iterations``, ...) are
    part of the treedef, so they cannot differ across a batch either.
    """

    topo: Topology = static()
    opt: Options
    # bodies, in the parent body's frame at q = qpos0
    body_pos: Array  # (nbody, 3) m
    body_quat: Array  # (nbody, 4)
    body_mass: Array  # (nbody,) kg
    body_com: Array  # (nbody, 3) m, centre of mass in the body frame
    body_inertia: Array  # (nbody, 3) kg m^2, principal moments about the com
    body_iquat: Array  # (nbody, 4) principal axes in the body frame
    # joints, in their body's frame
    jnt_pos: Array  # (njnt, 3) m, anchor
    jnt_axis: Array  # (njnt, 3) unit axis (hinge, slide)
    jnt_stiffness: Array  # (njnt,) N m/rad or N/m, spring towards qpos_spring
    jnt_range: Array  # (njnt, 2) rad or m, used where jnt_limited
    jnt_actfrcrange: Array  # (njnt, 2) N m or N, total actuator force range (URDF effort)
    qpos0: Array  # (nq,) reference configuration (hinge/slide zero)
    qpos_spring: Array  # (nq,) joint spring rest configuration
    dof_damping: Array  # (nv,) N m s/rad or N s/m
    dof_armature: Array  # (nv,) kg m^2 or kg, added to the mass matrix diagonal
    dof_frictionloss: Array  # (nv,) N m or N (enforced by the constraint solver)
    # geoms, in their body's frame
    geom_size: Array  # (ngeom, 3) m, meaning per GeomType
    geom_pos: Array  # (ngeom, 3) m
    geom_quat: Array  # (ngeom, 4)
    geom_friction: Array  # (ngeom, 2) static and kinetic friction coefficients
    geom_restitution: Array  # (ngeom,)
    geom_rgba: Array  # (ngeom, 4)
    mesh_vert: Array  # (nmesh, maxvert, 3) m, convex polyhedra in the geom frame, padded
    mesh_face: Array  # (nmesh, maxface, 3) int triangle vertex ids, padded with 0
    mesh_edge: Array  # (nmesh, maxedge, 2) int vertex ids of the polyhedron's edges, padded with 0
    hfield_size: Array  # (nhfield, 4) m: half x, half y, top z, base depth (MuJoCo's size)
    hfield_data: Array  # (nhfield, max nrow*ncol) heights in [0, 1], row-major, padded
    # actuators: force = gain * (act or ctrl) + bias . (1, length, velocity)
    actuator_moment: Array  # (nu, nv) transmission: qfrc = moment^T force
    actuator_gain: Array  # (nu,)
    actuator_bias: Array  # (nu, 3)
    actuator_ctrlrange: Array  # (nu, 2)
    actuator_forcerange: Array  # (nu, 2)
    actuator_actrange: Array  # (nu, 2)
    actuator_tau: Array  # (nu,) s, filter time constant
    # fixed tendons: length = tendon_coef . (scalar joint positions)
    tendon_coef: Array  # (ntendon, nv)
    tendon_stiffness: Array  # (ntendon,)
    tendon_damping: Array  # (ntendon,)
    tendon_lengthspring: Array  # (ntendon, 2) spring dead band [low, high], m
    tendon_range: Array  # (ntendon, 2)
    # joint / tendon couplings: x1 - x1_ref = poly(x2 - x2_ref)
    eq_polycoef: Array  # (neq, 5) joint / tendon: x1 - x1_0 = poly(x2 - x2_0)
    eq_anchor: Array  # (neq, 2, 3) m, connect / weld points in obj1's and obj2's body frames
    eq_frame_quat: Array  # (neq, 2, 4) weld frames on obj1 and obj2 held aligned
    eq_torquescale: Array  # (neq,) weld: scale of the rotation error
    eq_timeconst: Array  # (neq,) s, position errors are corrected at -error / max(timeconst, dt)
    # explicit pair parameters: row i overrides pair Topology.pair_<name>_id[i] of the
    # pair table (the others blend their geoms' values: contact/materials.py)
    pair_friction: Array  # (nfriction, 2) static and kinetic coefficients
    pair_restitution: Array  # (nrestitution,)
    pair_penalty_stiffness: Array  # (nstiffness,) N/m, penalty spring
    pair_penalty_damping: Array  # (ndamping,) N s/m, penalty damper
    # the selected contact model's parameters (its module's Params pytree)
    contact_params: Any = None

    # sizes, re-exported for convenience
    @property
    def nq(self) -> int:
        return self.topo.nq

    @property
    def nv(self) -> int:
        return self.topo.nv

    @property
    def nbody(self) -> int:
        return self.topo.nbody

    @property
    def nu(self) -> int:
        return self.topo.nu

    @property
    def dtype(self):
        return self.body_mass.dtype

    def astype(self, dtype) -> "Model":
        """A copy with every floating-point leaf cast to ``dtype``."""
        return cast_floats(self, dtype)

    def body_id(self, name: str) -> int:
        return _index(self.topo.body_name, name, "body")

    def joint_id(self, name: str) -> int:
        return _index(self.topo.jnt_name, name, "joint")

    def geom_id(self, name: str) -> int:
        return _index(self.topo.geom_name, name, "geom")

    def actuator_id(self, name: str) -> int:
        return _index(self.topo.actuator_name, name, "actuator")


# Model leaves that fix shapes or the slot layout (Model's docstring)
STRUCTURAL_FIELDS = ("mesh_vert", "mesh_face", "mesh_edge", "hfield_size", "hfield_data")


@pytree_dataclass
class Contacts:
    """Fixed-capacity contact buffer: ``ncon`` slots sized at model build.

    Slot ``k`` always belongs to the same geom pair (``geom1[k] < geom2[k]`` in geom-type
    order, MuJoCo's convention); inactive slots hold finite values and exert nothing.

    Attributes:
      active: (ncon,) bool.
      pos_w: (ncon, 3) m, contact point midway between the two surfaces.
      normal_w: (ncon, 3) unit normal pointing from geom1 into geom2.
      depth: (ncon,) m, penetration (> 0 when overlapping).
      frame_w: (ncon, 3, 3) rows: normal, tangent 1, tangent 2 (right-handed).
      geom1, geom2: (ncon,) int32 geom ids.
      feature: (ncon,) int32 id of the touching feature within the pair (vertex,
        edge pair, ...); stable from step to step while that feature stays in contact.
      overflow: () int32, contacts dropped this step because a pair had more candidates
        than slots (the deepest are kept).
      volume: with ``Topology.pair_geometry == "volume"``, the intersection polyhedron of
        each slot (``collision.polyhedra.Polyhedron`` batched over slots, padded; empty for
        slots of non-polyhedral pairs); None otherwise.
    """

    active: Array
    pos_w: Array
    normal_w: Array
    depth: Array
    frame_w: Array
    geom1: Array
    geom2: Array
    feature: Array
    overflow: Array
    volume: Any = None


@pytree_dataclass
class ContactState:
    """Per contact slot, what the constraint stage applied in the last step, whatever
    the contact model (``jaxsim.contact_forces`` reads it).

    Attributes:
      active: (ncon,) bool, the slot was in contact in the last step.
      feature: (ncon,) int32, its feature id then.
      pos_w: (ncon, 3) m, where the force acted: the contact point at the start of the
        last step, world frame (0 where inactive).
      normal_w: (ncon, 3) unit normal from geom1 into geom2 (0 where inactive).
      depth: (ncon,) m, penetration depth at the start of the last step (negative: a
        speculative contact, the shapes that far apart; 0 where inactive).
      impulse: (ncon, R) N s, impulse on geom2 over the step in the contact frame
        (normal, tangent 1, tangent 2; with R = 6 (``ContactModel.slot_rows``) then the
        angular impulse, N m s, about the same axes): warm starts and the slot's history.
      force_w: (ncon, 3) N, mean force on geom2 over the step (impulse / dt), world.
      torque1_w, torque2_w: (ncon, 3) N m, the torques of that force (``-force_w`` on
        geom1's body, plus the slot's own couple when R = 6) about the centres of mass of geom1's and geom2's bodies, world.
      cop_w: (ncon, 3) m, the centre of pressure: where the slot's force acts (the
        contact point, or for a 6-row wrench slot the point of its plane through which
        force plus couple act as one force; world, 0 where inactive).
    """

    active: Array
    feature: Array
    pos_w: Array
    normal_w: Array
    depth: Array
    impulse: Array
    force_w: Array
    torque1_w: Array
    torque2_w: Array
    cop_w: Array


@pytree_dataclass
class SolverStats:
    """Contact QP statistics of the last step: ``iterations`` () int32 and
    ``residual`` () (relative; see ``solver/qp.py``)."""

    iterations: Array
    residual: Array


@pytree_dataclass
class State:
    """What a step changes.

    Attributes:
      q: (nq,) generalized positions (free joint: pos, quat; ball joint: quat).
      v: (nv,) generalized velocities.
      act: (na,) actuator activations.
      time: () s.
      ctrl: (nu,) the last control applied.
      qacc: (nv,) generalized accelerations of the last step.
      nonfinite: () bool, set once any q, v or act became NaN/inf; stays set.
      contact: ContactState of the last step.
      contact_carry: what the contact model carries between steps (its ``init``).
      solver: SolverStats of the last step.
      overflow: () int32, contacts dropped by full contact buffers, summed over steps.
    """

    q: Array
    v: Array
    act: Array
    time: Array
    ctrl: Array
    qacc: Array
    nonfinite: Array
    contact: ContactState
    contact_carry: Any
    solver: SolverStats
    overflow: Array


def _index(names: tuple, name: str, what: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        raise KeyError(f"no {what} named {name!r}; known: {[n for n in names if n]}") from None


def cast_floats(tree, dtype):
    """Cast every floating-point leaf of a pytree to ``dtype``."""

    def cast(x):
        x = jnp.asarray(x)
        return x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x

    return jax.tree_util.tree_map(cast, tree)


def batch_models(models: list[Model]) -> Model:
    """Stack models of one topology along a new leading axis (for ``jax.vmap``)."""
    topo = models[0].topo
    for i, m in enumerate(models[1:], 1):
        if m.topo != topo:
            raise ValueError(f"batch_models: model {i} has a different topology than model 0")
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *models)

