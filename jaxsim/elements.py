"""The elements of a model as ``ModelBuilder`` records them, before the build.

``ModelBuilder`` checks each element as it is added and keeps it here, in float64
NumPy and by name; ``jaxsim.compiler`` resolves the names, orders and addresses the
elements and assembles the ``Model``. The records are plain dataclasses, shared by the
two so that neither imports the other's internals.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxsim.types import ContactMode, DynType, GeomType, JointType, ModelError


def vector(x, n: int, what: str) -> np.ndarray:
    """``x`` as ``n`` finite float64 numbers; ``ModelError`` naming ``what`` otherwise."""
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.shape != (n,):
        raise ModelError(f"{what}: expected {n} numbers, got {np.asarray(x).tolist()}")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{what}: non-finite value {a.tolist()}")
    return a


def unit_vector(x, n: int, what: str) -> np.ndarray:
    """``x`` as ``n`` finite numbers, normalized; ``ModelError`` for a zero vector."""
    a = vector(x, n, what)
    norm = np.linalg.norm(a)
    if norm < 1e-9:
        raise ModelError(f"{what}: cannot normalize {a.tolist()} (norm {norm:.3g})")
    return a / norm


def is_servo(bias: np.ndarray) -> bool:
    """Whether an actuator's bias is PD feedback that implicit PD can take."""
    return bool(bias[1] <= 0 and bias[2] <= 0 and (bias[1] < 0 or bias[2] < 0))


@dataclasses.dataclass
class Body:
    name: str
    parent: str
    pos: np.ndarray
    quat: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray  # (3,) principal moments about the com
    iquat: np.ndarray  # (4,) principal axes in the body frame


@dataclasses.dataclass
class Joint:
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
    qpos0: np.ndarray  # a free joint's is filled from its body's pose at the build
    qpos_spring: np.ndarray


@dataclasses.dataclass
class Geom:
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
    condim: int = 3  # 1: frictionless contacts (MuJoCo's contact dimensionality)


@dataclasses.dataclass
class Actuator:
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
    implicit: bool | None = None  # None: the builder's implicit_pd


@dataclasses.dataclass
class Tendon:
    name: str
    coefs: dict
    stiffness: float
    damping: float
    lengthspring: np.ndarray | None
    range: np.ndarray | None


@dataclasses.dataclass
class Equality:
    name: str
    type: str
    obj1: str
    obj2: str | None
    polycoef: np.ndarray
    anchor: np.ndarray  # (2, 3) connect / weld points in body1's and body2's frames (nan: from qpos0)
    frame_quat: np.ndarray  # (2, 4) weld: frames on body1 and body2 that are held aligned (nan: from qpos0)
    torquescale: float
    timeconst: float


@dataclasses.dataclass
class Pair:
    """An explicit geom pair; its parameters replace the derived ones (None: derived)."""

    geom1: str
    geom2: str
    mode: ContactMode | None
    friction: np.ndarray | None
    restitution: float | None
    penalty_stiffness: float | None
    penalty_damping: float | None


@dataclasses.dataclass
class Elements:
    """Everything a ``ModelBuilder`` recorded, in the order added."""

    bodies: list[Body] = dataclasses.field(default_factory=list)
    joints: list[Joint] = dataclasses.field(default_factory=list)
    geoms: list[Geom] = dataclasses.field(default_factory=list)
    meshes: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)  # (vertices, faces)
    hfields: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)  # (size, heights)
    actuators: list[Actuator] = dataclasses.field(default_factory=list)
    tendons: list[Tendon] = dataclasses.field(default_factory=list)
    equalities: list[Equality] = dataclasses.field(default_factory=list)
    excludes: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # body pairs
    # (mode, body names, is_group) in the order set; later rules override earlier ones
    mode_rules: list[tuple[ContactMode, tuple, bool]] = dataclasses.field(default_factory=list)
    pairs: list[Pair] = dataclasses.field(default_factory=list)
