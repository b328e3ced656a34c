"""Programmatic model building with validation.

Example::

    b = ModelBuilder(timestep=1e-3)
    b.add_body("link", pos=(0, 0, 1), mass=1.0, inertia=(0.01, 0.01, 0.002))
    b.add_joint("link", "hinge", axis=(0, 1, 0), name="shoulder")
    b.add_geom("link", "box", size=(0.02, 0.02, 0.1))
    b.add_actuator("shoulder_motor", joint="shoulder", kind="motor", gear=10)
    model = b.build()

Elements are named; bodies may be added in any order (parents are resolved by name in
``build``). Every check raises ``ModelError`` naming the offending element. A body with
no joint (or a ``"fixed"`` joint) is welded to its parent: it adds no dof and moves with
its parent, which is the same as merging its inertia into the parent for dynamics while
keeping its own frame for kinematics and geoms.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax.numpy as jnp
import numpy as np

from jaxsim import contact as contact_models
from jaxsim import names as option_names
from jaxsim.collision.pairs import candidate_pairs
from jaxsim.types import ContactMode, DynType, GeomType, JointType, Model, Options, Topology

_JOINTS = {"free": JointType.FREE, "ball": JointType.BALL, "slide": JointType.SLIDE,
           "prismatic": JointType.SLIDE, "hinge": JointType.HINGE, "revolute": JointType.HINGE}
_GEOMS = {"plane": GeomType.PLANE, "sphere": GeomType.SPHERE, "capsule": GeomType.CAPSULE,
          "box": GeomType.BOX, "convex": GeomType.CONVEX, "hfield": GeomType.HFIELD}
_DYNS = {"none": DynType.NONE, "integrator": DynType.INTEGRATOR, "filter": DynType.FILTER,
         "filterexact": DynType.FILTEREXACT}

# RoKi-FD's material defaults (SPEC section 2).
DEFAULT_FRICTION = (0.5, 0.3)

# Model arrays of explicit pair parameters and the ``add_pair`` argument filling each
_PAIR_OVERRIDES = {"pair_friction": "friction", "pair_restitution": "restitution",
                   "pair_penalty_stiffness": "penalty_stiffness", "pair_penalty_damping": "penalty_damping"}
_PAIR_RENAMED = {"stiffness": "penalty_stiffness", "damping": "penalty_damping"}  # add_pair's former names


class ModelError(ValueError):
    """A model description that cannot be built; the message names the element."""


def _vec(x, n: int, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.shape != (n,):
        raise ModelError(f"{what}: expected {n} numbers, got {np.asarray(x).tolist()}")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{what}: non-finite value {a.tolist()}")
    return a


def _unit(x, n: int, what: str) -> np.ndarray:
    a = _vec(x, n, what)
    norm = np.linalg.norm(a)
    if norm < 1e-9:
        raise ModelError(f"{what}: cannot normalize {a.tolist()} (norm {norm:.3g})")
    return a / norm


def quat_to_mat_np(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit (w, x, y, z) quaternion, in NumPy."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat_np(r: np.ndarray) -> np.ndarray:
    """Unit (w, x, y, z) quaternion of a rotation matrix, in NumPy."""
    tr = np.trace(r)
    if tr > 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = np.array([0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = np.empty(4)
        q[0] = (r[k, j] - r[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + k] = (r[k, i] + r[i, k]) / s
    return q / np.linalg.norm(q)


def mesh_edges(faces: np.ndarray, vertices: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Unique undirected edges (k, 2) of a triangle mesh, and the number of distinct
    edge directions.

    With ``vertices`` the edges are reordered so that the first ``naxis`` have
    pairwise non-parallel directions and every later edge is parallel to one of them
    (the separating-axis test needs one edge per direction: a 16-sided prism has 33
    directions, not 48 edges).
    """
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.unique(np.sort(e, axis=1), axis=0)
    if vertices is None or len(edges) == 0:
        return edges, len(edges)
    d = vertices[edges[:, 1]] - vertices[edges[:, 0]]
    d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-300)
    first, rest = [], []
    for i in range(len(edges)):
        parallel = first and np.min(np.linalg.norm(np.cross(d[i], d[first]), axis=1)) < 1e-9
        (rest if parallel else first).append(i)
    return edges[first + rest], len(first)


def _mode(mode: str, where: str) -> ContactMode:
    modes = {m.name.lower(): m for m in ContactMode}
    if mode not in modes:
        raise ModelError(f"{where}: contact mode must be one of {sorted(modes)}, got {mode!r}")
    return modes[mode]


@dataclasses.dataclass
class _Pair:
    geom1: str
    geom2: str
    mode: ContactMode | None
    friction: np.ndarray | None
    restitution: float | None
    penalty_stiffness: float | None
    penalty_damping: float | None


@dataclasses.dataclass
class _Body:
    name: str
    parent: str
    pos: np.ndarray
    quat: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray  # (3,) principal moments about the com
    iquat: np.ndarray  # (4,) principal axes in the body frame


@dataclasses.dataclass
class _Joint:
    name: str
    body: str
    type: JointType
    pos: np.ndarray
    axis: np.ndarray
    range: np.ndarray | None
    damping: float
    armature: float
    stiffness: float
    frictionloss: float
    actfrcrange: np.ndarray | None
    qpos0: np.ndarray
    qpos_spring: np.ndarray


@dataclasses.dataclass
class _Geom:
    name: str
    body: str
    type: GeomType
    size: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    friction: np.ndarray
    restitution: float | None  # None: the contact model's default
    rgba: np.ndarray
    contype: int
    conaffinity: int
    mesh: int
    hfield: int


@dataclasses.dataclass
class _Actuator:
    name: str
    joint: str | None
    tendon: str | None
    gear: np.ndarray  # (1,), or (3,) on a ball joint
    gain: float
    bias: np.ndarray
    ctrlrange: np.ndarray | None
    forcerange: np.ndarray | None
    actrange: np.ndarray | None
    dyntype: DynType
    tau: float
    implicit: bool | None = None


def _servo(bias: np.ndarray) -> bool:
    """Whether an actuator's bias is PD feedback that implicit PD can take."""
    return bool(bias[1] <= 0 and bias[2] <= 0 and (bias[1] < 0 or bias[2] < 0))


@dataclasses.dataclass
class _Tendon:
    name: str
    coefs: dict
    stiffness: float
    damping: float
    lengthspring: np.ndarray | None
    range: np.ndarray | None


@dataclasses.dataclass
class _Equality:
    name: str
    type: str
    obj1: str
    obj2: str | None
    polycoef: np.ndarray
    anchor: np.ndarray  # (2, 3) connect / weld points in body1's and body2's frames
    frame_quat: np.ndarray  # (2, 4) weld: frames on body1 and body2 that are held aligned
    torquescale: float
    timeconst: float


# ModelBuilder's scene-wide options: units ("" for none) and meaning (the defaults are
# its signature's; ``jaxsim.options.markdown_table`` lists them with the contact
# models' parameters)
SCENE_OPTIONS = {
    "timestep": ("s", "time step"),
    "gravity": ("m/s^2", "gravity, world frame"),
    "density": ("kg/m^3", "density of the surrounding medium (fluid forces)"),
    "viscosity": ("Pa s", "viscosity of the surrounding medium"),
    "wind": ("m/s", "velocity of the medium"),
    "integrator": ("", "'euler' (semi-implicit) or 'rk4'"),
    "forward_dynamics": ("", "'crba' (mass matrix and Cholesky) or 'aba' (articulated bodies)"),
    "implicit_damping": ("", "Euler: joint damping taken at the step's end velocity, as MuJoCo"),
    "implicit_gyroscopic": ("", "Euler: gyroscopic torque of free bodies taken at the step's end"),
    "contact": ("", "the contact model of constraint pairs (table below)"),
    "contact_mode": ("", "every pair's default: 'constraint', 'penalty' or 'none'"),
    "constraint": ("", "false: no contacts and no constraint rows (smooth dynamics only)"),
    "contact_margin": ("m", "shapes this close get speculative contacts"),
    "solver_tol": ("", "relative tolerance of the contact QP"),
    "solver_iterations": ("", "cap on the contact QP's iterations"),
    "adjoint": ("", "QP gradients: 'implicit' (implicit function theorem) or 'unrolled'"),
    "max_contacts": ("", "solve only this many deepest contact slots (0: all)"),
    "edge_contacts": ("", "point slots of polyhedra at edge-edge crossings too"),
    "narrow_pairs": ("", "per pair kind, only this many nearest pairs reach the narrow phase (0: all)"),
    "penalty_stiffness": ("N/m", "spring of penalty pairs"),
    "penalty_damping": ("N s/m", "damper of penalty pairs"),
    "slip_speed": ("m/s", "tangential speed above which friction is kinetic (every contact model)"),
    "implicit_pd": ("", "servos solved implicitly with the constraints"),
    "fluid": ("", "fluid forces of the medium on (None: when density or viscosity > 0)"),
}


class ModelBuilder:
    """Collects bodies, joints, geoms, actuators, tendons and couplings; ``build()``
    validates them and returns a ``Model``."""

    def __init__(self, *, timestep: float = 1e-3, gravity: Sequence[float] = (0, 0, -9.81),
                 density: float = 0.0, viscosity: float = 0.0,
                 wind: Sequence[float] = (0, 0, 0), integrator: str = "euler",
                 forward_dynamics: str = "crba", implicit_damping: bool = True,
                 implicit_gyroscopic: bool = True, contact: str = "relaxed",
                 contact_mode: str = "constraint", constraint: bool = True,
                 contact_margin: float = 1e-3, solver_tol: float = 1e-6, solver_iterations: int = 500,
                 adjoint: str = "implicit", max_contacts: int = 0, edge_contacts: bool = True,
                 narrow_pairs: int = 0, penalty_stiffness: float = 1e6, penalty_damping: float = 1000.0,
                 slip_speed: float = 0.01, implicit_pd: bool = False, fluid: bool | None = None,
                 **contact_params):
        """Scene-wide options.

        Args:
          contact: the contact model of constraint pairs (``jaxsim.contact.MODELS``:
            "relaxed", "rigid", "penalty", ...). Its own parameters are keyword
            options of their names (``contact_rate=...``; see the model's
            ``params`` in its module); an unknown name raises ``ModelError``.
          contact_mode: every pair's default mode, "constraint", "penalty" or "none"
            (``set_contact_mode`` and ``add_pair`` refine it).
          constraint: False turns off contacts and every constraint row (joint
            limits too): smooth dynamics only, MuJoCo's ``constraint`` disable flag.
          contact_margin: m, shapes this close get (speculative) contacts.
          edge_contacts: False leaves the point contacts of two polyhedra at their
            vertices (no edge-edge crossings): the vertex-only method that SPEC 3
            compares the contact volume with.
          narrow_pairs: > 0: of each pair kind (hull-hull, box-hull, ...), only this
            many pairs go through the narrow phase each step, those whose bounding
            spheres are nearest (gap ranked with ``lax.top_k``); the others' slots
            stay inactive, and a pair beyond the cap whose spheres touch counts one
            contact of ``overflow``. 0: every pair, every step. For robot files whose
            many hull-hull pairs mostly stay apart (gymnasium-robotics' Fetch: 84,
            of which about 10 have touching bounding spheres).
          penalty_stiffness, penalty_damping: N/m and N s/m of penalty pairs (per pair
            with ``add_pair``).
          slip_speed: m/s, tangential speed above which a contact slips: friction
            takes the kinetic coefficient (every contact model; penalty pairs'
            friction is viscous below it).
          fluid: apply the medium's fluid forces (``density``, ``viscosity``,
            ``wind`` are read only then); None: when ``density`` or ``viscosity`` is
            above 0. True lets a batch of Models vary the medium from zero.
          implicit_pd: the default of ``add_actuator(implicit_pd=...)``: every servo
            (position or velocity feedback) is solved implicitly, as a constraint
            row (seed 001; ``contact/rows.py``); other actuators stay explicit.
        """
        contact_params = option_names.rename(contact_params, "ModelBuilder")  # former names, with a warning
        constraint = contact_params.pop("constraint", constraint)
        slip_speed = contact_params.pop("slip_speed", slip_speed)
        implicit_pd = contact_params.pop("implicit_pd", implicit_pd)
        if not timestep > 0:
            raise ModelError(f"timestep must be positive, got {timestep}")
        if integrator not in ("euler", "rk4"):
            raise ModelError(f"integrator must be 'euler' or 'rk4', got {integrator!r}")
        if forward_dynamics not in ("aba", "crba"):
            raise ModelError(f"forward_dynamics must be 'aba' or 'crba', got {forward_dynamics!r}")
        if density < 0 or viscosity < 0:
            raise ModelError(f"density and viscosity must be >= 0, got {density}, {viscosity}")
        if contact == "none":
            raise ModelError("contact='none' is gone: use contact_mode='none' (no contacts; joint limits "
                             "stay) or constraint=False (no contacts and no constraint rows)")
        if contact not in contact_models.MODELS:
            raise ModelError(f"contact must name a contact model, one of {sorted(contact_models.MODELS)}; "
                             f"got {contact!r}")
        if adjoint not in ("implicit", "unrolled"):
            raise ModelError(f"adjoint must be 'implicit' or 'unrolled', got {adjoint!r}")
        for name, value in (("contact_margin", contact_margin), ("solver_tol", solver_tol),
                            ("penalty_stiffness", penalty_stiffness), ("penalty_damping", penalty_damping),
                            ("slip_speed", slip_speed)):
            if not value >= 0:
                raise ModelError(f"{name} must be >= 0, got {value}")
        if not slip_speed > 0:
            raise ModelError(f"slip_speed must be positive, got {slip_speed}")
        if int(solver_iterations) < 1:
            raise ModelError(f"solver_iterations must be >= 1, got {solver_iterations}")
        if int(max_contacts) < 0:
            raise ModelError(f"max_contacts must be >= 0 (0: all contact slots), got {max_contacts}")
        if int(narrow_pairs) < 0:
            raise ModelError(f"narrow_pairs must be >= 0 (0: every pair), got {narrow_pairs}")
        try:  # checked now, so the error points at the builder call
            contact_models.make_params(contact, None, **contact_params)
        except ValueError as e:
            raise ModelError(str(e)) from None
        self.contact, self.contact_params = contact, dict(contact_params)
        self.stage_params = dict(contact_margin=float(contact_margin), solver_tol=float(solver_tol),
                                 penalty_stiffness=float(penalty_stiffness), penalty_damping=float(penalty_damping),
                                 slip_speed=float(slip_speed))
        self.flags = dict(adjoint=adjoint, solver_iterations=int(solver_iterations),
                          max_contacts=int(max_contacts), edge_contacts=bool(edge_contacts),
                          narrow_pairs=int(narrow_pairs), constraint=bool(constraint),
                          integrator=integrator, forward_dynamics=forward_dynamics,
                          implicit_damping=bool(implicit_damping), implicit_gyroscopic=bool(implicit_gyroscopic))
        self.implicit_pd = bool(implicit_pd)
        self.timestep = float(timestep)
        self.gravity = _vec(gravity, 3, "gravity")
        self.density, self.viscosity = float(density), float(viscosity)
        self.fluid = self.density > 0 or self.viscosity > 0 if fluid is None else bool(fluid)
        self.wind = _vec(wind, 3, "wind")
        self.bodies: list[_Body] = []
        self.joints: list[_Joint] = []
        self.geoms: list[_Geom] = []
        self.meshes: list[tuple[np.ndarray, np.ndarray]] = []
        self.hfields: list[tuple[np.ndarray, np.ndarray]] = []
        self.actuators: list[_Actuator] = []
        self.tendons: list[_Tendon] = []
        self.equalities: list[_Equality] = []
        self.excludes: list[tuple[str, str]] = []
        self.mode_rules: list[tuple[ContactMode, tuple, bool]] = [(_mode(contact_mode, "contact_mode"), (), False)]
        self.pairs: list[_Pair] = []
        self._names: dict[str, set] = {k: set() for k in ("body", "joint", "geom", "actuator",
                                                          "tendon", "equality")}

    # ---------------------------------------------------------------- elements

    def _name(self, kind: str, name: str | None, count: int) -> str:
        name = name if name else f"{kind}{count}"
        if name in self._names[kind] or (kind == "body" and name == "world"):
            raise ModelError(f"duplicate {kind} name {name!r}")
        self._names[kind].add(name)
        return name

    def add_body(self, name: str, parent: str = "world", *, pos=(0, 0, 0), quat=(1, 0, 0, 0),
                 mass: float = 1.0, com=(0, 0, 0), inertia=None, inertia_quat=None) -> str:
        """Add a rigid body.

        Args:
          name: unique body name.
          parent: parent body name ("world" for the root).
          pos: (3,) body origin in the parent frame at q = qpos0, m.
          quat: (4,) orientation in the parent frame, (w, x, y, z); normalized here.
          mass: kg, > 0 (0 allowed for a massless body whose subtree has mass).
            A body without joints of its own may be a point mass (inertia all
            zero, as MuJoCo allows for bodies that do not move on their own).
          com: (3,) centre of mass in the body frame, m.
          inertia: (3,) principal moments or (3, 3) tensor about the com, kg m^2;
            default: a solid sphere of radius 0.05 m.
          inertia_quat: (4,) orientation of the principal axes when ``inertia`` has 3
            entries.
        """
        name = self._name("body", name, len(self.bodies) + 1)
        where = f"body {name!r}"
        mass = float(mass)
        if not np.isfinite(mass) or mass < 0:
            raise ModelError(f"{where}: mass must be positive, got {mass}")
        if inertia is None:
            inertia = np.full(3, 0.4 * mass * 0.05**2)
        inertia = np.asarray(inertia, dtype=np.float64)
        if inertia.shape == (3,):  # principal moments, axes given (or the body axes)
            moments = inertia
            iquat = np.array([1.0, 0, 0, 0]) if inertia_quat is None else \
                _unit(inertia_quat, 4, f"{where} inertia_quat")
        elif inertia.shape == (3, 3):
            if not np.all(np.isfinite(inertia)) or not np.allclose(
                    inertia, inertia.T, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
                raise ModelError(f"{where}: inertia must be a finite symmetric matrix, got {inertia.tolist()}")
            moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
            if np.linalg.det(axes) < 0:
                axes[:, 0] = -axes[:, 0]
            iquat = mat_to_quat_np(axes)
        else:
            raise ModelError(f"{where}: inertia must have 3 or 3x3 entries, got shape {inertia.shape}")
        if not np.all(np.isfinite(moments)):
            raise ModelError(f"{where}: non-finite inertia {moments.tolist()}")
        scale = max(np.abs(moments).max(), 1e-300)
        point_mass = mass > 0 and not np.any(moments)  # checked at build: no joints of its own
        if mass > 0 and not point_mass and moments.min() <= 1e-12 * scale:
            raise ModelError(f"{where}: inertia is not positive definite (principal moments {moments.tolist()})")
        if mass == 0 and scale > 1e-300:
            raise ModelError(f"{where}: a massless body must have zero inertia")
        srt = np.sort(moments)
        if srt[0] + srt[1] < srt[2] * (1 - 1e-6):
            raise ModelError(f"{where}: principal moments {moments.tolist()} violate the triangle inequality")
        self.bodies.append(_Body(name, parent, _vec(pos, 3, f"{where} pos"),
                                 _unit(quat, 4, f"{where} quat"), mass,
                                 _vec(com, 3, f"{where} com"), moments.copy(), iquat))
        return name

    def add_joint(self, body: str, type: str = "hinge", *, name: str | None = None,
                  axis=(0, 0, 1), pos=(0, 0, 0), range=None, damping: float = 0.0,
                  armature: float = 0.0, stiffness: float = 0.0, frictionloss: float = 0.0,
                  ref: float = 0.0, springref: float | None = None,
                  actuator_force_range=None) -> str | None:
        """Add a joint between ``body`` and its parent; several joints on one body act in
        the order added (as in MJCF).

        Args:
          body: child body name.
          type: "free", "ball", "hinge"/"revolute", "slide"/"prismatic" or "fixed".
          axis: (3,) hinge / slide axis in the body frame (normalized here).
          pos: (3,) anchor in the body frame, m.
          range: (lo, hi) joint limits in rad or m (a ball joint: its rotation angle
            stays below hi); None: unlimited.
          damping, armature, stiffness, frictionloss: per-dof values (>= 0).
          ref: hinge/slide coordinate at which the body sits at ``pos``/``quat``.
          springref: rest coordinate of the joint spring (default ``ref``).
          actuator_force_range: (lo, hi) clamp on the total actuator force on this
            hinge/slide joint (URDF ``effort``); None: unclamped.
        Returns:
          the joint name, or None for a fixed joint (the body is welded).
        """
        if type == "fixed":
            return None
        if type not in _JOINTS:
            raise ModelError(f"joint on body {body!r}: unknown type {type!r}; "
                             f"supported: {sorted(_JOINTS) + ['fixed']}")
        jtype = _JOINTS[type]
        name = self._name("joint", name, len(self.joints))
        where = f"joint {name!r}"
        for label, val in (("damping", damping), ("armature", armature),
                           ("stiffness", stiffness), ("frictionloss", frictionloss)):
            if not np.isfinite(val) or val < 0:
                raise ModelError(f"{where}: {label} must be >= 0, got {val}")
        if range is not None:
            range = _vec(range, 2, f"{where} range")
            if not range[0] < range[1]:
                raise ModelError(f"{where}: range must have low < high, got {range.tolist()}")
        if actuator_force_range is not None:
            if jtype not in (JointType.HINGE, JointType.SLIDE):
                raise ModelError(f"{where}: actuator_force_range applies to hinge and slide joints only")
            actuator_force_range = _vec(actuator_force_range, 2, f"{where} actuator_force_range")
            if not actuator_force_range[0] <= actuator_force_range[1]:
                raise ModelError(f"{where}: actuator_force_range must have low <= high, "
                                 f"got {actuator_force_range.tolist()}")
        axis = _unit(axis, 3, f"{where} axis") if jtype in (JointType.HINGE, JointType.SLIDE) \
            else np.array([0.0, 0.0, 1.0])
        if jtype == JointType.FREE:
            qpos0 = np.zeros(7)  # filled from the body pose in build()
        elif jtype == JointType.BALL:
            qpos0 = np.array([1.0, 0, 0, 0])
        else:
            qpos0 = np.array([float(ref)])
        spring = qpos0.copy() if springref is None else np.array([float(springref)])
        self.joints.append(_Joint(name, body, jtype, _vec(pos, 3, f"{where} pos"), axis, range,
                                  float(damping), float(armature), float(stiffness),
                                  float(frictionloss), actuator_force_range, qpos0, spring))
        return name

    def add_geom(self, body: str, type: str, size=(0.0, 0.0, 0.0), *, name: str | None = None,
                 pos=(0, 0, 0), quat=(1, 0, 0, 0), friction=DEFAULT_FRICTION,
                 restitution: float | None = None, rgba=(0.6, 0.6, 0.7, 1.0), contype: int = 1,
                 conaffinity: int = 1, vertices=None, faces=None, heights=None) -> str:
        """Add a collision shape to ``body`` ("world" for static geometry).

        Args:
          type: "plane", "sphere" (size: radius), "capsule" (radius, half-length along
            z), "box" (half-extents) or "convex" (``vertices`` (n, 3) and triangle
            ``faces`` (f, 3) of a convex polyhedron, outward counter-clockwise) or
            "hfield" (static terrain: ``heights`` (nrow, ncol) in [0, 1], size =
            (half x, half y, top z, base depth) as in MuJoCo).
          friction: (static, kinetic) coefficients.
          restitution: coefficient in [0, 1]; None: the contact model's default
            (``ContactModel.default_restitution``: 0.4 for ``springhead``, else 0).
        """
        if type not in _GEOMS:
            raise ModelError(f"geom on body {body!r}: unknown type {type!r}; supported: {sorted(_GEOMS)}")
        gtype = _GEOMS[type]
        name = self._name("geom", name, len(self.geoms))
        where = f"geom {name!r}"
        raw_size = np.asarray(size, dtype=np.float64).reshape(-1)
        size = np.resize(np.asarray(size, dtype=np.float64).reshape(-1), 3) if np.size(size) else np.zeros(3)
        need = {GeomType.SPHERE: 1, GeomType.CAPSULE: 2, GeomType.BOX: 3}.get(gtype, 0)
        if need and (raw_size.size < need or not np.all(raw_size[:need] > 0)):
            raise ModelError(f"{where}: {type} needs {need} positive size values, got {raw_size.tolist()}")
        friction = _vec(friction, 2, f"{where} friction")
        if np.any(friction < 0):
            raise ModelError(f"{where}: friction must be >= 0, got {friction.tolist()}")
        if restitution is not None and not 0 <= restitution <= 1:
            raise ModelError(f"{where}: restitution must be in [0, 1], got {restitution}")
        mesh = hfield = -1
        if gtype == GeomType.CONVEX:
            mesh = self._add_mesh(where, vertices, faces)
        if gtype == GeomType.HFIELD:
            hsize = raw_size
            h = np.asarray(heights if heights is not None else [], dtype=np.float64)
            if hsize.shape != (4,) or not np.all(hsize > 0):
                raise ModelError(f"{where}: hfield size must be 4 positive numbers, got {raw_size.tolist()}")
            if h.ndim != 2 or min(h.shape) < 2 or not np.all(np.isfinite(h)):
                raise ModelError(f"{where}: hfield heights must be a finite (nrow >= 2, ncol >= 2) array")
            self.hfields.append((hsize, h))
            hfield = len(self.hfields) - 1
        self.geoms.append(_Geom(name, body, gtype, size, _vec(pos, 3, f"{where} pos"),
                                _unit(quat, 4, f"{where} quat"), friction, restitution,
                                _vec(rgba, 4, f"{where} rgba"), int(contype), int(conaffinity), mesh,
                                hfield))
        return name

    def _add_mesh(self, where: str, vertices, faces) -> int:
        if vertices is None or faces is None:
            raise ModelError(f"{where}: a convex geom needs vertices and faces")
        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or not np.all(np.isfinite(v)):
            raise ModelError(f"{where}: vertices must be (n >= 4, 3) finite, got shape {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4 or f.min() < 0 or f.max() >= len(v):
            raise ModelError(f"{where}: faces must be (f >= 4, 3) indices into the vertices")
        centre = v.mean(0)
        normals = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        if np.any(np.linalg.norm(normals, axis=1) <= 1e-14):
            raise ModelError(f"{where}: degenerate (zero-area) face")
        outward = np.einsum("ij,ij->i", normals, v[f[:, 0]] - centre)
        if np.any(outward <= 0):
            raise ModelError(f"{where}: faces must be oriented outward (counter-clockwise seen from outside)")
        self.meshes.append((v, f))
        return len(self.meshes) - 1

    def add_actuator(self, name: str | None = None, *, joint: str | None = None,
                     tendon: str | None = None, kind: str = "motor", gear=1.0,
                     kp: float = 0.0, kv: float = 0.0, gain: float | None = None,
                     bias=None, ctrlrange=None, forcerange=None, actrange=None,
                     dyntype: str = "none", tau: float = 1.0, implicit_pd: bool | None = None,
                     **former) -> str:
        """Add an actuator on a hinge/slide/ball joint or a tendon.

        ``force = gain * u + bias[0] + bias[1] * length + bias[2] * velocity`` with
        ``u`` the control (or the activation when ``dyntype`` is not "none") and length
        and velocity those of the transmission scaled by ``gear``; the generalized force
        is ``gear * force`` on the joint. On a ball joint ``gear`` is a 3-vector in
        the joint frame (a number g means (g, 0, 0), as in MuJoCo): length ``gear .
        rotvec`` of the joint's rotation, velocity ``gear . omega``, so three
        position servos with gears along x, y, z hold a target orientation. ``kind`` fills gain and bias:
        "motor" (gain 1), "position" (PD servo: gain kp, bias (0, -kp, -kv)),
        "velocity" (gain kv, bias (0, 0, -kv)) or "general" (give gain and bias).
        ``implicit_pd``: evaluate the feedback at the step's end, solved with the
        constraints (seed 001: stable at large dt; needs ``bias[1] <= 0``,
        ``bias[2] <= 0``, not both 0); None: the builder's ``implicit_pd``. (Former
        name: ``implicit``.)
        """
        name = self._name("actuator", name, len(self.actuators))
        where = f"actuator {name!r}"
        former = option_names.rename(former, f"add_actuator {where}")
        if set(former) - {"implicit_pd"}:
            raise ModelError(f"{where}: unknown argument(s) {sorted(set(former) - {'implicit_pd'})}")
        implicit_pd = former.get("implicit_pd", implicit_pd)
        if (joint is None) == (tendon is None):
            raise ModelError(f"{where}: give exactly one of joint= or tendon=")
        if kind == "motor":
            g, b = 1.0, np.zeros(3)
        elif kind == "position":
            g, b = float(kp), np.array([0.0, -float(kp), -float(kv)])
        elif kind == "velocity":
            g, b = float(kv), np.array([0.0, 0.0, -float(kv)])
        elif kind == "general":
            g, b = float(1.0 if gain is None else gain), _vec(np.zeros(3) if bias is None else bias, 3, f"{where} bias")
        else:
            raise ModelError(f"{where}: unknown kind {kind!r}; supported: motor, position, velocity, general")
        if dyntype not in _DYNS:
            raise ModelError(f"{where}: unknown dyntype {dyntype!r}; supported: {sorted(_DYNS)}")
        gear = np.atleast_1d(np.asarray(gear, float))
        if gear.shape not in ((1,), (3,)) or not np.all(np.isfinite(gear)) or not np.any(gear != 0):
            raise ModelError(f"{where}: gear must be a finite non-zero number (or a 3-vector on a ball joint), "
                             f"got {gear.tolist()}")
        if tendon is not None and gear.shape != (1,):
            raise ModelError(f"{where}: a tendon's gear is a number, got {gear.tolist()}")
        if _DYNS[dyntype] in (DynType.FILTER, DynType.FILTEREXACT) and not tau > 0:
            raise ModelError(f"{where}: filter time constant tau must be positive, got {tau}")
        ranges = []
        for label, r in (("ctrlrange", ctrlrange), ("forcerange", forcerange), ("actrange", actrange)):
            if r is not None:
                r = _vec(r, 2, f"{where} {label}")
                if not r[0] <= r[1]:
                    raise ModelError(f"{where}: {label} must have low <= high, got {r.tolist()}")
            ranges.append(r)
        if implicit_pd and not _servo(b):
            raise ModelError(f"{where}: implicit_pd=True needs position or velocity feedback (bias[1] <= 0, "
                             f"bias[2] <= 0, not both 0), got bias {b.tolist()}")
        self.actuators.append(_Actuator(name, joint, tendon, gear, g, b, *ranges,
                                        _DYNS[dyntype], float(tau), implicit_pd))
        return name

    def add_tendon(self, name: str, coefs: dict, *, stiffness: float = 0.0,
                   damping: float = 0.0, springlength=None, range=None) -> str:
        """Add a fixed tendon: ``length = sum(coef * q_joint)`` over hinge/slide joints.

        ``springlength``: (low, high) dead band of the tendon spring (default: no spring
        force unless ``stiffness`` > 0, then the band is [0, 0]).
        """
        name = self._name("tendon", name, len(self.tendons))
        if not coefs:
            raise ModelError(f"tendon {name!r}: needs at least one joint coefficient")
        for label, val in (("stiffness", stiffness), ("damping", damping)):
            if not val >= 0:
                raise ModelError(f"tendon {name!r}: {label} must be >= 0, got {val}")
        sl = None if springlength is None else _vec(springlength, 2, f"tendon {name!r} springlength")
        rg = None if range is None else _vec(range, 2, f"tendon {name!r} range")
        self.tendons.append(_Tendon(name, dict(coefs), float(stiffness), float(damping), sl, rg))
        return name

    def add_equality(self, name: str | None, type: str, obj1: str, obj2: str | None = None,
                     polycoef=(0, 1, 0, 0, 0), *, anchor=(0, 0, 0), anchor2=None, quat1=(1, 0, 0, 0),
                     quat2=None, torquescale: float = 1.0, timeconst: float = 0.0) -> str:
        """Add an equality constraint, enforced as rows of the constraint solve
        (``contact/equality.py``), as MuJoCo's ``<equality>``:

          * ``"joint"`` / ``"tendon"``: ``x1 - x1_0 = poly(x2 - x2_0)`` between two
            hinge/slide joints or fixed tendons (``x_0`` at ``qpos0``; without ``obj2``:
            ``x1 - x1_0 = polycoef[0]``).
          * ``"connect"``: the point ``anchor`` of body ``obj1`` (its frame, m) and the
            point ``anchor2`` of ``obj2`` (default: where ``anchor`` is at ``qpos0``)
            coincide (a ball joint closing a loop). ``obj2`` None: the world.
          * ``"weld"``: as connect, and the frame ``quat1`` on ``obj1`` stays aligned
            with the frame ``quat2`` on ``obj2`` (defaults: their relative pose at
            ``qpos0`` is kept). The rotation error is scaled by ``torquescale``.

        Args:
          timeconst: s, the time in which a position error is corrected (the row's
            velocity target is ``-error / max(timeconst, dt)``: 0 corrects within a
            step; MuJoCo's ``solref[0]`` when loaded from MJCF).
        """
        if type not in ("joint", "tendon", "connect", "weld"):
            raise ModelError(f"equality {name!r}: type must be 'joint', 'tendon', 'connect' or 'weld', got {type!r}")
        name = self._name("equality", name, len(self.equalities))
        where = f"equality {name!r}"
        if not (np.isfinite(timeconst) and timeconst >= 0):
            raise ModelError(f"{where}: timeconst must be >= 0, got {timeconst}")
        if not (np.isfinite(torquescale) and torquescale > 0):
            raise ModelError(f"{where}: torquescale must be > 0, got {torquescale}")
        a1 = _vec(anchor, 3, f"{where} anchor")
        a2 = np.full(3, np.nan) if anchor2 is None else _vec(anchor2, 3, f"{where} anchor2")
        q2 = np.full(4, np.nan) if quat2 is None else _unit(quat2, 4, f"{where} quat2")  # nan: from qpos0
        quats = np.stack([_unit(quat1, 4, f"{where} quat1"), q2])
        self.equalities.append(_Equality(name, type, obj1, obj2, _vec(polycoef, 5, f"{where} polycoef"),
                                         np.stack([a1, a2]), quats, float(torquescale), float(timeconst)))
        return name

    def add_exclude(self, body1: str, body2: str) -> None:
        """Never collide the geoms of ``body1`` with those of ``body2``."""
        self.excludes.append((body1, body2))

    def set_contact_mode(self, mode: str, *bodies: str, group: Sequence[str] | None = None) -> None:
        """Set the contact mode ("constraint", "penalty" or "none") of geom pairs.

        ``set_contact_mode(mode)``: every pair; ``(mode, "a")``: every pair with a geom
        on body "a"; ``(mode, "a", "b")``: the pairs between bodies "a" and "b";
        ``(mode, group=[...])``: the pairs whose two bodies are both in the group.
        Later calls override earlier ones; ``add_pair(mode=...)`` overrides them all.
        A "none" pair is not even detected; a "penalty" pair gets a spring-damper
        force (``contact/penalty.py``) instead of the contact model's solve.
        """
        m = _mode(mode, "set_contact_mode")
        if group is not None and bodies:
            raise ModelError("set_contact_mode: give bodies or group=, not both")
        if len(bodies) > 2:
            raise ModelError(f"set_contact_mode: at most two bodies (a body pair), got {list(bodies)}; "
                             "use group= for more")
        names = tuple(group) if group is not None else tuple(bodies)
        self.mode_rules.append((m, names, group is not None))

    def add_pair(self, geom1: str, geom2: str, *, mode: str | None = None, friction=None,
                 restitution: float | None = None, penalty_stiffness: float | None = None,
                 penalty_damping: float | None = None, **former) -> None:
        """An explicit geom pair (MJCF ``<contact><pair>``): it collides even where
        contype/conaffinity or an exclude would filter it, and the parameters given
        here replace those derived from the geoms in the step (None: derived).
        ``friction``: (static, kinetic); ``penalty_stiffness``, ``penalty_damping``:
        N/m, N s/m of a penalty pair (former names ``stiffness``, ``damping``)."""
        where = f"pair ({geom1!r}, {geom2!r})"
        former = option_names.rename(former, f"add_pair {where}", renamed=_PAIR_RENAMED)
        unknown = sorted(set(former) - {"penalty_stiffness", "penalty_damping"})
        if unknown:
            raise ModelError(f"{where}: unknown argument(s) {unknown}")
        penalty_stiffness = former.get("penalty_stiffness", penalty_stiffness)
        penalty_damping = former.get("penalty_damping", penalty_damping)
        f = None if friction is None else _vec(np.resize(np.asarray(friction, float).reshape(-1), 2), 2,
                                                f"{where} friction")
        if f is not None and np.any(f < 0):
            raise ModelError(f"{where}: friction must be >= 0, got {f.tolist()}")
        for label, val in (("restitution", restitution), ("penalty_stiffness", penalty_stiffness),
                           ("penalty_damping", penalty_damping)):
            if val is not None and not (np.isfinite(val) and val >= 0):
                raise ModelError(f"{where}: {label} must be >= 0, got {val}")
        if restitution is not None and restitution > 1:
            raise ModelError(f"{where}: restitution must be in [0, 1], got {restitution}")
        self.pairs.append(_Pair(geom1, geom2, None if mode is None else _mode(mode, where), f,
                                restitution, penalty_stiffness, penalty_damping))

    # ------------------------------------------------------------------- build

    def _body_order(self) -> list[_Body]:
        """Bodies sorted parents-first; checks unknown parents and cycles."""
        by_name = {b.name: b for b in self.bodies}
        for b in self.bodies:
            if b.parent != "world" and b.parent not in by_name:
                raise ModelError(f"body {b.name!r}: unknown parent {b.parent!r}")
        order, placed = [], {"world"}
        remaining = list(self.bodies)
        while remaining:
            ready = [b for b in remaining if b.parent in placed]
            if not ready:
                names = sorted(b.name for b in remaining)
                raise ModelError(f"bodies {names} form a cycle (no path to 'world')")
            for b in ready:
                order.append(b)
                placed.add(b.name)
            remaining = [b for b in remaining if b.name not in placed]
        # keep the user's order where it already is parents-first (stable, MuJoCo-like)
        pos = {b.name: i for i, b in enumerate(self.bodies)}
        if all(b.parent == "world" or pos[b.parent] < pos[b.name] for b in self.bodies):
            return list(self.bodies)
        return order

    def _joint_table(self, names: list[str], bid: dict, parent: list[int], bodies: list[_Body]) -> dict:
        """Joints grouped by body (parents-first), their addresses; checks free joints."""
        for j in self.joints:
            if j.body not in bid or j.body == "world":
                raise ModelError(f"joint {j.name!r}: unknown body {j.body!r}")
        joints = [j for n in names for j in self.joints if j.body == n]
        for n in names:
            js = [j for j in joints if j.body == n]
            if any(j.type == JointType.FREE for j in js):
                if len(js) > 1:
                    raise ModelError(f"body {n!r}: a free joint must be the body's only joint")
                if parent[bid[n]] != 0:
                    raise ModelError(f"joint {js[0].name!r}: a free joint is supported only on a body "
                                     f"whose parent is the world (body {n!r} has parent "
                                     f"{names[parent[bid[n]]]!r})")
        jntadr, jntnum = [], []
        for n in names:
            idx = [i for i, j in enumerate(joints) if j.body == n]
            jntadr.append(idx[0] if idx else -1)
            jntnum.append(len(idx))
        qposadr, dofadr, nq, nv = [], [], 0, 0
        for j in joints:
            qposadr.append(nq)
            dofadr.append(nv)
            nq, nv = nq + j.type.nq, nv + j.type.nv
        for j in joints:  # free joints start where their body is
            if j.type == JointType.FREE:
                b = bodies[bid[j.body] - 1]
                j.qpos0 = np.concatenate([b.pos, b.quat])
                j.qpos_spring = j.qpos0.copy()
        return dict(joints=joints, jntadr=jntadr, jntnum=jntnum, qposadr=qposadr, dofadr=dofadr, nq=nq, nv=nv)

    def _check_masses(self, names, parent, bodies, jntnum) -> None:
        """Massless moving bodies must have mass somewhere below them."""
        nbody = len(names)
        subtree_mass = np.zeros(nbody)
        for i in range(nbody - 1, 0, -1):
            subtree_mass[i] += bodies[i - 1].mass
            subtree_mass[parent[i]] += subtree_mass[i]
        moving = np.zeros(nbody, bool)
        for i in range(1, nbody):
            moving[i] = moving[parent[i]] or jntnum[i] > 0
        for i in range(1, nbody):
            if moving[i] and jntnum[i] > 0 and subtree_mass[i] <= 0:
                raise ModelError(f"body {names[i]!r}: a moving body needs positive mass in its subtree")
            if jntnum[i] > 0 and bodies[i - 1].mass > 0 and not np.any(bodies[i - 1].inertia):
                raise ModelError(f"body {names[i]!r}: a point mass (zero inertia) cannot have joints of its own")

    def _transmissions(self, jt: dict) -> dict:
        """Tendon coefficients, actuator moments and activation addresses, equality ids."""
        joints, nv = jt["joints"], jt["nv"]
        jid = {j.name: i for i, j in enumerate(joints)}
        scalar = {j.name for j in joints if j.type in (JointType.HINGE, JointType.SLIDE)}
        tendon_coef = np.zeros((len(self.tendons), nv))
        for t_i, t in enumerate(self.tendons):
            for jn, c in t.coefs.items():
                if jn not in scalar:
                    raise ModelError(f"tendon {t.name!r}: joint {jn!r} is not a hinge or slide joint of the model")
                tendon_coef[t_i, jt["dofadr"][jid[jn]]] += float(c)
        tid = {t.name: i for i, t in enumerate(self.tendons)}
        moment = np.zeros((len(self.actuators), nv))
        actadr, na = [], 0
        for a_i, a in enumerate(self.actuators):
            if a.joint is not None:
                kind = joints[jid[a.joint]].type if a.joint in jid else None
                if a.joint in scalar:
                    if a.gear.shape != (1,):
                        raise ModelError(f"actuator {a.name!r}: gear on hinge/slide joint {a.joint!r} is a "
                                         f"number, got {a.gear.tolist()}")
                    moment[a_i, jt["dofadr"][jid[a.joint]]] = a.gear[0]
                elif kind == JointType.BALL:
                    gear = np.pad(a.gear, (0, 3 - len(a.gear)))  # g -> (g, 0, 0)
                    moment[a_i, jt["dofadr"][jid[a.joint]] + np.arange(3)] = gear
                else:
                    raise ModelError(f"actuator {a.name!r}: joint {a.joint!r} is not a hinge, slide or ball "
                                     "joint of the model (only those can be actuated)")
            else:
                if a.tendon not in tid:
                    raise ModelError(f"actuator {a.name!r}: unknown tendon {a.tendon!r}")
                moment[a_i] = a.gear[0] * tendon_coef[tid[a.tendon]]
            actadr.append(na if a.dyntype != DynType.NONE else -1)
            na += a.dyntype != DynType.NONE
        return dict(tendon_coef=tendon_coef, moment=moment, actadr=actadr, na=na)

    def _equality_table(self, jt: dict, bid: dict, parent: list, bodies: list) -> dict:
        """Equality object ids, and the anchors and frames of connect / weld."""
        joints = jt["joints"]
        jid = {j.name: i for i, j in enumerate(joints)}
        scalar = {j.name for j in joints if j.type in (JointType.HINGE, JointType.SLIDE)}
        tid = {t.name: i for i, t in enumerate(self.tendons)}
        # body poses at qpos0 (a joint at qpos0 leaves its body at pos / quat)
        pos_w, rot_w = [np.zeros(3)], [np.eye(3)]
        for i, b in enumerate(bodies, start=1):
            pos_w.append(pos_w[parent[i]] + rot_w[parent[i]] @ b.pos)
            rot_w.append(rot_w[parent[i]] @ quat_to_mat_np(b.quat))
        obj1, obj2, anchor, frame_quat = [], [], [], []
        for e in self.equalities:
            on_bodies = e.type in ("connect", "weld")
            table = bid if on_bodies else jid if e.type == "joint" else tid
            for label, o in (("obj1", e.obj1), ("obj2", e.obj2)):
                if o is None and label == "obj2":
                    continue
                if on_bodies and o not in bid:
                    raise ModelError(f"equality {e.name!r}: {label} {o!r} is not a body of the model")
                if not on_bodies and (o not in table or (e.type == "joint" and o not in scalar)):
                    raise ModelError(f"equality {e.name!r}: {label} {o!r} is not a hinge/slide "
                                     f"joint or a tendon of the model")
            b1, b2 = table[e.obj1], (0 if on_bodies else -1) if e.obj2 is None else table[e.obj2]
            if on_bodies and b1 == b2:
                raise ModelError(f"equality {e.name!r}: obj1 and obj2 are the same body {e.obj1!r}")
            a, fq = e.anchor.copy(), e.frame_quat.copy()
            if on_bodies:
                if np.isnan(a[1]).any():  # where anchor 1 sits at qpos0, in body 2's frame
                    a[1] = rot_w[b2].T @ (pos_w[b1] + rot_w[b1] @ a[0] - pos_w[b2])
                if np.isnan(fq[1]).any():  # R1 q1 = R2 q2 at qpos0
                    fq[1] = mat_to_quat_np(rot_w[b2].T @ rot_w[b1] @ quat_to_mat_np(fq[0]))
            else:
                a[:], fq[:] = 0.0, (1.0, 0.0, 0.0, 0.0)
            obj1.append(b1)
            obj2.append(b2)
            anchor.append(a)
            frame_quat.append(fq)
        return dict(obj1=obj1, obj2=obj2, anchor=anchor, frame_quat=frame_quat)

    def _shapes(self, bid: dict) -> dict:
        """Padded mesh and height-field arrays; checks geom bodies."""
        for g in self.geoms:
            if g.body not in bid:
                raise ModelError(f"geom {g.name!r}: unknown body {g.body!r}")
        maxv = max([1] + [len(v) for v, _ in self.meshes])
        maxf = max([1] + [len(f) for _, f in self.meshes])
        mesh_vert = np.zeros((len(self.meshes), maxv, 3))
        mesh_face = np.zeros((len(self.meshes), maxf, 3), dtype=np.int32)
        edges, naxis = zip(*[mesh_edges(f, v) for v, f in self.meshes]) if self.meshes else ((), ())
        mesh_edge = np.zeros((len(self.meshes), max([1] + [len(e) for e in edges]), 2), dtype=np.int32)
        for m_i, (v, f) in enumerate(self.meshes):
            mesh_vert[m_i, :len(v)] = v
            mesh_vert[m_i, len(v):] = v[0]  # pad with a real vertex: harmless in max/min
            mesh_face[m_i, :len(f)] = f
            mesh_edge[m_i, :len(edges[m_i])] = edges[m_i]
        hfield_data = np.zeros((len(self.hfields), max([1] + [h.size for _, h in self.hfields])))
        for h_i, (_, h) in enumerate(self.hfields):
            hfield_data[h_i, :h.size] = h.reshape(-1)
        return dict(mesh_vert=mesh_vert, mesh_face=mesh_face, mesh_edge=mesh_edge, edges=edges, naxis=naxis,
                    hfield_data=hfield_data)

    def _pair_table(self, topo: Topology, bid: dict) -> tuple[Topology, dict]:
        """The pair table (candidates, then explicit pairs), its modes and the explicit
        pairs' parameters (``contact/materials.py`` derives the others in the step)."""
        gid = {g.name: i for i, g in enumerate(self.geoms)}
        for _, rule_bodies, _ in self.mode_rules:
            for b in rule_bodies:
                if b not in bid:
                    raise ModelError(f"set_contact_mode: unknown body {b!r}")
        explicit = {}
        for p in self.pairs:
            for g in (p.geom1, p.geom2):
                if g not in gid:
                    raise ModelError(f"pair ({p.geom1!r}, {p.geom2!r}): unknown geom {g!r}")
            a, b = gid[p.geom1], gid[p.geom2]
            if topo.geom_body[a] == topo.geom_body[b]:
                raise ModelError(f"pair ({p.geom1!r}, {p.geom2!r}): both geoms are on one body")
            a, b = (a, b) if topo.geom_type[a] <= topo.geom_type[b] else (b, a)
            explicit[(a, b)] = p
        table = [pr for pr in candidate_pairs(topo) if pr not in explicit] + list(explicit)
        body_name = topo.body_name
        modes, explicit_values = [], {name: ([], []) for name in _PAIR_OVERRIDES}
        for i, (a, b) in enumerate(table):
            p = explicit.get((a, b))
            pair_bodies = {body_name[topo.geom_body[a]], body_name[topo.geom_body[b]]}
            mode = ContactMode.CONSTRAINT
            for m, names, is_group in self.mode_rules:
                if (not names or (is_group and pair_bodies <= set(names))
                        or (not is_group and set(names) <= pair_bodies and
                            (len(names) == 2 or names[0] in pair_bodies))):
                    mode = m
            modes.append(p.mode if p is not None and p.mode is not None else mode)
            for name, attr in _PAIR_OVERRIDES.items():  # the rest is derived in the step
                value = None if p is None else getattr(p, attr)
                if value is not None:
                    explicit_values[name][0].append(i)
                    explicit_values[name][1].append(value)
        topo = topo.replace(pair_geom1=tuple(int(a) for a, _ in table), pair_geom2=tuple(int(b) for _, b in table),
                            pair_mode=tuple(int(m) for m in modes),
                            pair_window=tuple(self._hfield_window(a, b) for a, b in table),
                            pair_geometry=contact_models.get(self.contact).collision,
                            **{f"{name}_id": tuple(ids) for name, (ids, _) in explicit_values.items()})
        shapes = dict(pair_friction=(-1, 2))
        return topo, {name: np.reshape(np.asarray(values, np.float64), shapes.get(name, (-1,)))
                      for name, (_, values) in explicit_values.items()}

    def _hfield_window(self, a: int, b: int) -> int:
        """Cells per side of the height-field window a geom pair sees
        (``collision/hfield.py``): the other geom's bounding diameter plus a cell on
        each side; 0 for other pairs."""
        ga, gb = self.geoms[a], self.geoms[b]
        if gb.type != GeomType.HFIELD:
            return 0
        hsize, heights = self.hfields[gb.hfield]
        nrow, ncol = heights.shape
        cell = min(2 * hsize[0] / (ncol - 1), 2 * hsize[1] / (nrow - 1))
        if ga.type == GeomType.CONVEX:
            radius = float(np.max(np.linalg.norm(self.meshes[ga.mesh][0], axis=-1)))
        else:
            radius = {GeomType.SPHERE: ga.size[0], GeomType.CAPSULE: ga.size[0] + ga.size[1]}.get(
                ga.type, float(np.linalg.norm(ga.size)))
        return int(min(np.ceil(2 * radius / cell) + 2, max(nrow, ncol) - 1))

    def _options(self, arr, dtype) -> Options:
        return Options(timestep=arr(self.timestep), gravity=arr(self.gravity),
                       density=arr(self.density), viscosity=arr(self.viscosity), wind=arr(self.wind),
                       **{name: arr(value) for name, value in self.stage_params.items()},
                       contact=self.contact, fluid=self.fluid, **self.flags)

    def _implicit(self, a: _Actuator, joints: list) -> bool:
        """Whether actuator ``a`` is solved implicitly (``add_actuator``)."""
        implicit = self.implicit_pd if a.implicit is None else a.implicit
        if not implicit or not _servo(a.bias):
            return False
        if not self.flags["constraint"]:
            if a.implicit:
                raise ModelError(f"actuator {a.name!r}: implicit PD is solved in the constraint stage, "
                                 "which constraint=False turns off")
            return False
        if a.joint is not None and any(j.name == a.joint and j.actfrcrange is not None for j in joints):
            raise ModelError(f"actuator {a.name!r}: joint {a.joint!r} clamps its total actuator force "
                             "(actuatorfrcrange), which implicit PD does not honour; use forcerange")
        return True

    def _restitution(self, geom: _Geom) -> float:
        """A geom's restitution, the contact model's default where it set none."""
        return contact_models.get(self.contact).default_restitution if geom.restitution is None else geom.restitution

    def build(self, dtype=jnp.float32) -> Model:
        """Validate and return the Model (float arrays in ``dtype``)."""
        bodies = self._body_order()
        names = ["world"] + [b.name for b in bodies]
        bid = {n: i for i, n in enumerate(names)}
        parent = [-1] + [bid[b.parent] for b in bodies]
        nbody = len(names)
        jt = self._joint_table(names, bid, parent, bodies)
        joints, nq, nv = jt["joints"], jt["nq"], jt["nv"]
        self._check_masses(names, parent, bodies, jt["jntnum"])
        tr = self._transmissions(jt)
        eq = self._equality_table(jt, bid, parent, bodies)
        exclude = []
        for b1, b2 in self.excludes:
            for b in (b1, b2):
                if b not in bid:
                    raise ModelError(f"contact exclude ({b1!r}, {b2!r}): unknown body {b!r}")
            exclude.append(tuple(sorted((bid[b1], bid[b2]))))
        sh = self._shapes(bid)
        nu = len(self.actuators)

        topo = Topology(
            nq=nq, nv=nv, nbody=nbody, njnt=len(joints), ngeom=len(self.geoms),
            nmesh=len(self.meshes), nhfield=len(self.hfields), nu=nu, na=tr["na"], ntendon=len(self.tendons),
            neq=len(self.equalities),
            body_parent=tuple(parent), body_jntadr=tuple(jt["jntadr"]),
            body_jntnum=tuple(jt["jntnum"]), body_name=tuple(names),
            jnt_type=tuple(int(j.type) for j in joints), jnt_body=tuple(bid[j.body] for j in joints),
            jnt_qposadr=tuple(jt["qposadr"]), jnt_dofadr=tuple(jt["dofadr"]),
            jnt_limited=tuple(j.range is not None for j in joints),
            jnt_actfrclimited=tuple(j.actfrcrange is not None for j in joints),
            jnt_name=tuple(j.name for j in joints),
            geom_type=tuple(int(g.type) for g in self.geoms),
            geom_body=tuple(bid[g.body] for g in self.geoms),
            geom_mesh=tuple(g.mesh for g in self.geoms),
            geom_hfield=tuple(g.hfield for g in self.geoms),
            geom_contype=tuple(g.contype for g in self.geoms),
            geom_conaffinity=tuple(g.conaffinity for g in self.geoms),
            geom_name=tuple(g.name for g in self.geoms),
            mesh_nvert=tuple(len(v) for v, _ in self.meshes),
            mesh_nface=tuple(len(f) for _, f in self.meshes),
            mesh_nedge=tuple(len(e) for e in sh["edges"]),
            mesh_naxis=tuple(sh["naxis"]),
            hfield_nrow=tuple(h.shape[0] for _, h in self.hfields),
            hfield_ncol=tuple(h.shape[1] for _, h in self.hfields),
            actuator_dyntype=tuple(int(a.dyntype) for a in self.actuators),
            actuator_actadr=tuple(tr["actadr"]),
            actuator_ctrllimited=tuple(a.ctrlrange is not None for a in self.actuators),
            actuator_forcelimited=tuple(a.forcerange is not None for a in self.actuators),
            actuator_actlimited=tuple(a.actrange is not None for a in self.actuators),
            actuator_name=tuple(a.name for a in self.actuators),
            actuator_implicit=tuple(self._implicit(a, joints) for a in self.actuators),
            actuator_ball=tuple(any(j.name == a.joint and j.type == JointType.BALL for j in joints)
                                for a in self.actuators),
            dof_frictional=tuple(bool(j.frictionloss > 0) for j in joints for _ in range(j.type.nv)),
            tendon_limited=tuple(t.range is not None for t in self.tendons),
            tendon_name=tuple(t.name for t in self.tendons),
            eq_type=tuple(e.type for e in self.equalities), eq_obj1=tuple(eq["obj1"]),
            eq_obj2=tuple(eq["obj2"]), eq_name=tuple(e.name for e in self.equalities),
            exclude=tuple(sorted(set(exclude))),
        )
        topo, pairs = self._pair_table(topo, bid)

        def arr(x, shape=None):
            a = np.asarray(x, dtype=np.float64)
            if shape is not None:
                a = a.reshape(shape)
            return jnp.asarray(a, dtype=dtype)

        def per_dof(attr):
            return np.concatenate([[getattr(j, attr)] * j.type.nv for j in joints]) if joints else np.zeros(0)

        def ranges(items, attr, n):
            return arr([np.zeros(2) if getattr(x, attr) is None else getattr(x, attr) for x in items], (n, 2))

        nj, ng, nt, neq = len(joints), len(self.geoms), len(self.tendons), len(self.equalities)
        return Model(
            topo=topo, opt=self._options(arr, dtype),
            body_pos=arr([np.zeros(3)] + [b.pos for b in bodies], (nbody, 3)),
            body_quat=arr([np.array([1.0, 0, 0, 0])] + [b.quat for b in bodies], (nbody, 4)),
            body_mass=arr([0.0] + [b.mass for b in bodies], (nbody,)),
            body_com=arr([np.zeros(3)] + [b.com for b in bodies], (nbody, 3)),
            body_inertia=arr([np.zeros(3)] + [b.inertia for b in bodies], (nbody, 3)),
            body_iquat=arr([np.array([1.0, 0, 0, 0])] + [b.iquat for b in bodies], (nbody, 4)),
            jnt_pos=arr([j.pos for j in joints], (nj, 3)),
            jnt_axis=arr([j.axis for j in joints], (nj, 3)),
            jnt_stiffness=arr([j.stiffness for j in joints], (nj,)),
            jnt_range=ranges(joints, "range", nj),
            jnt_actfrcrange=ranges(joints, "actfrcrange", nj),
            qpos0=arr(np.concatenate([j.qpos0 for j in joints]) if joints else [], (nq,)),
            qpos_spring=arr(np.concatenate([j.qpos_spring for j in joints]) if joints else [], (nq,)),
            dof_damping=arr(per_dof("damping"), (nv,)),
            dof_armature=arr(per_dof("armature"), (nv,)),
            dof_frictionloss=arr(per_dof("frictionloss"), (nv,)),
            geom_size=arr([g.size for g in self.geoms], (ng, 3)),
            geom_pos=arr([g.pos for g in self.geoms], (ng, 3)),
            geom_quat=arr([g.quat for g in self.geoms], (ng, 4)),
            geom_friction=arr([g.friction for g in self.geoms], (ng, 2)),
            geom_restitution=arr([self._restitution(g) for g in self.geoms], (ng,)),
            geom_rgba=arr([g.rgba for g in self.geoms], (ng, 4)),
            mesh_vert=arr(sh["mesh_vert"]),
            mesh_face=jnp.asarray(sh["mesh_face"]),
            mesh_edge=jnp.asarray(sh["mesh_edge"]),
            hfield_size=arr([hs for hs, _ in self.hfields], (len(self.hfields), 4)),
            hfield_data=arr(sh["hfield_data"]),
            actuator_moment=arr(tr["moment"], (nu, nv)),
            actuator_gain=arr([a.gain for a in self.actuators], (nu,)),
            actuator_bias=arr([a.bias for a in self.actuators], (nu, 3)),
            actuator_ctrlrange=ranges(self.actuators, "ctrlrange", nu),
            actuator_forcerange=ranges(self.actuators, "forcerange", nu),
            actuator_actrange=ranges(self.actuators, "actrange", nu),
            actuator_tau=arr([a.tau for a in self.actuators], (nu,)),
            tendon_coef=arr(tr["tendon_coef"], (nt, nv)),
            tendon_stiffness=arr([t.stiffness for t in self.tendons], (nt,)),
            tendon_damping=arr([t.damping for t in self.tendons], (nt,)),
            tendon_lengthspring=ranges(self.tendons, "lengthspring", nt),
            tendon_range=ranges(self.tendons, "range", nt),
            eq_polycoef=arr([e.polycoef for e in self.equalities], (neq, 5)),
            eq_anchor=arr(eq["anchor"], (neq, 2, 3)),
            eq_frame_quat=arr(eq["frame_quat"], (neq, 2, 4)),
            eq_torquescale=arr([e.torquescale for e in self.equalities], (neq,)),
            eq_timeconst=arr([e.timeconst for e in self.equalities], (neq,)),
            **{k: arr(v) for k, v in pairs.items()},
            contact_params=contact_models.make_params(self.contact, dtype, **self.contact_params),
        )
