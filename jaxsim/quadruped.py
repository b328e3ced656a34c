"""The implicit-PD quadruped: a horse-like robot of 23 rigid bodies, 14 ball
joints and 8 hinges, every joint driven by a PD servo, standing on a floor.

Bodies (x forward, z up; the standing pose is the built one, legs straight down):
trunk front (the free root) and rear, two neck segments and a head, two tail
segments, and four legs of four segments (upper leg on a ball joint, lower leg and
cannon on hinges about y, hoof, a ball, on a ball joint). A ball joint carries three position
servos with gears along its x, y and z axes (MuJoCo's ball transmission: length
``gear . rotvec``), a hinge one: 14 x 3 + 8 = 50 actuators, all targets 0 at the
standing pose, so ``make_state``'s zero ``ctrl`` holds it. Gains: a stiffness per
part (4000 N m/rad at the trunk's middle joint down to 20 at the tail's tip), capped
per servo at ``I omega^2`` with ``I`` the servo's apparent inertia at the standing
pose (its inverse is ``g M^-1 g`` for the servo's moment ``g``), ``omega`` = 400
rad/s on the legs (200 on the neck, head and tail, whose coupled segments went
unstable at 400), and
critical damping ``2 sqrt(kp I)``: explicit PD is then stable at dt = 1 ms and
unstable at implicit PD's 50 ms.

One table (``BODIES``) makes both the jaxsim Model (``build``, through the builder:
no MuJoCo needed) and the MJCF text (``mjcf``) that MuJoCo loads, with the same
inertias, geoms, gains and contact filtering (robot geoms touch the floor only), so
the two can be compared; ``jaxsim/assets/quadruped.xml`` is that text.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxsim.builder import ModelBuilder
from jaxsim.math import quat_to_mat_np
from jaxsim.types import Model

ASSET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "quadruped.xml")
FRICTION = 1.0
ROBOT_CONTYPE, ROBOT_CONAFFINITY = 1, 2  # touches the floor (contype 2, conaffinity 1), not itself


class Part(NamedTuple):
    name: str
    parent: str
    pos: tuple  # joint (and body frame) position in the parent's frame, m
    joint: str  # "free", "ball" or "hinge" (about y)
    shape: str  # "box" (half sizes), "capsule" (p0, p1, radius), "sphere" (centre, radius)
    size: tuple
    mass: float  # kg
    kp: tuple  # N m / rad, per servo of the joint (x, y, z on a ball joint)
    kv: tuple  # N m s / rad


def _leg(side: str, end: str, x: float, y: float) -> list[Part]:
    trunk = "trunk_front" if end == "front" else "trunk_rear"
    p = f"{end}_{side}"
    return [
        Part(f"{p}_upper", trunk, (x, y, -0.12), "ball", "capsule", ((0, 0, 0), (0, 0, -0.25), 0.05), 3.0,
             (2000, 2000, 920), (44, 27, 4.6)),
        Part(f"{p}_lower", f"{p}_upper", (0, 0, -0.25), "hinge", "capsule", ((0, 0, 0), (0, 0, -0.22), 0.04), 2.0,
             (1500,), (9.5,)),
        Part(f"{p}_cannon", f"{p}_lower", (0, 0, -0.22), "hinge", "capsule", ((0, 0, 0), (0, 0, -0.18), 0.03), 1.0,
             (800,), (4.0,)),
        Part(f"{p}_hoof", f"{p}_cannon", (0, 0, -0.18), "ball", "sphere", ((0, 0, -0.04), 0.04), 0.5,
             (140, 78, 49), (0.71, 0.39, 0.24)),
    ]


HEIGHT = 0.12 + 0.25 + 0.22 + 0.18 + 0.08  # m, trunk centre above the floor when standing

BODIES: list[Part] = [
    Part("trunk_front", "world", (0.25, 0.0, HEIGHT), "free", "box", (0.25, 0.15, 0.12), 25.0, (), ()),
    Part("trunk_rear", "trunk_front", (-0.25, 0.0, 0.0), "ball", "box", ((-0.25, 0, 0), (0.25, 0.15, 0.12)), 25.0,
         (4000, 4000, 4000), (70, 87, 83)),
    Part("neck1", "trunk_front", (0.25, 0.0, 0.08), "ball", "capsule", ((0, 0, 0), (0.12, 0, 0.15), 0.06), 4.0,
         (620, 800, 440), (6.2, 16, 4.4)),
    Part("neck2", "neck1", (0.12, 0.0, 0.15), "ball", "capsule", ((0, 0, 0), (0.10, 0, 0.15), 0.05), 3.0,
         (230, 500, 140), (2.3, 6.5, 1.4)),
    Part("head", "neck2", (0.10, 0.0, 0.15), "ball", "capsule", ((0, 0, 0), (0.20, 0, -0.05), 0.06), 4.0,
         (180, 300, 170), (1.8, 5.8, 1.7)),
    Part("tail1", "trunk_rear", (-0.5, 0.0, 0.08), "ball", "capsule", ((0, 0, 0), (-0.15, 0, -0.10), 0.03), 0.5,
         (13, 50, 28), (0.13, 1.5, 0.28)),
    Part("tail2", "tail1", (-0.15, 0.0, -0.10), "ball", "capsule", ((0, 0, 0), (-0.12, 0, -0.15), 0.025), 0.4,
         (6.1, 20, 6.1), (0.061, 0.36, 0.061)),
    *_leg("left", "front", 0.15, 0.14), *_leg("right", "front", 0.15, -0.14),
    *_leg("left", "rear", -0.40, 0.14), *_leg("right", "rear", -0.40, -0.14),
]


def tree_order() -> list[Part]:
    """The parts depth first, children in table order: MuJoCo's body order, so body,
    joint, dof and actuator indices agree between ``build`` and ``mjcf``."""
    kids: dict[str, list[Part]] = {}
    for part in BODIES:
        kids.setdefault(part.parent, []).append(part)
    out: list[Part] = []

    def visit(name: str):
        for child in kids.get(name, []):
            out.append(child)
            visit(child.name)

    visit("world")
    return out


def _box_geom(size):
    """A trunk box: half sizes, optionally with a centre offset ``(centre, half)``."""
    if len(size) == 2:
        return np.asarray(size[0], float), np.asarray(size[1], float)
    return np.zeros(3), np.asarray(size, float)


def _capsule_frame(p0, p1):
    """Centre, half length and the quaternion turning z onto ``p1 - p0``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = p1 - p0
    length = np.linalg.norm(d)
    z = d / length
    axis = np.cross([0.0, 0.0, 1.0], z)
    s, c = np.linalg.norm(axis), z[2]
    if s < 1e-12:
        quat = np.array([1.0, 0.0, 0.0, 0.0]) if c > 0 else np.array([0.0, 1.0, 0.0, 0.0])
    else:
        angle = np.arctan2(s, c)
        quat = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / s])
    return 0.5 * (p0 + p1), 0.5 * length, quat


def mass_properties(part: Part) -> tuple[np.ndarray, np.ndarray]:
    """Centre of mass (3,) and inertia tensor about it (3, 3) in the body frame: the
    geom as a solid box, a cylinder of the capsule's length plus its caps' reach, or
    a ball."""
    m = part.mass
    if part.shape == "box":
        centre, h = _box_geom(part.size)
        a, b, c = 2 * h
        return centre, m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    if part.shape == "sphere":
        return np.asarray(part.size[0], float), 0.4 * m * part.size[1] ** 2 * np.eye(3)
    centre, half, quat = _capsule_frame(*part.size[:2])
    r, length = part.size[2], 2 * half + 4 * part.size[2] / 3
    local = np.diag([m * (3 * r * r + length * length) / 12] * 2 + [0.5 * m * r * r])
    rot = quat_to_mat_np(quat)
    return centre, rot @ local @ rot.T


def _geom(part: Part) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """(type, builder size, pos, quat) of a part's geom in its body frame."""
    if part.shape == "box":
        centre, h = _box_geom(part.size)
        return "box", h, centre, np.array([1.0, 0, 0, 0])
    if part.shape == "sphere":
        return "sphere", np.array([part.size[1], 0, 0]), np.asarray(part.size[0], float), np.array([1.0, 0, 0, 0])
    centre, half, quat = _capsule_frame(*part.size[:2])
    return "capsule", np.array([part.size[2], half, 0]), centre, quat


def _servos(part: Part) -> list[tuple[str, tuple, float, float]]:
    """(actuator name, gear, kp, kv) of the servos of a part's joint."""
    if part.joint == "ball":
        return [(f"{part.name}_{a}", g, kp, kv) for a, g, kp, kv in zip("xyz", np.eye(3), part.kp, part.kv)]
    if part.joint == "hinge":
        return [(part.name, (1.0,), part.kp[0], part.kv[0])]
    return []


def actuator_names() -> list[str]:
    return [s[0] for part in tree_order() for s in _servos(part)]


def build(timestep: float = 0.05, implicit_pd: bool = True, dtype=jnp.float32, **options) -> Model:
    """The quadruped as a jaxsim Model (module docstring).

    Args:
      timestep: s (implicit PD's large step: 50 ms).
      implicit_pd: PD servos solved with the constraints (implicit PD) or explicit.
      **options: further ModelBuilder options (contact model, ...).
    """
    b = ModelBuilder(timestep=timestep, implicit_pd=implicit_pd, **options)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(FRICTION, FRICTION), contype=2,
               conaffinity=1)
    for part in tree_order():
        com, inertia = mass_properties(part)
        b.add_body(part.name, part.parent, pos=part.pos, mass=part.mass, com=com, inertia=inertia)
        if part.joint == "free":
            b.add_joint(part.name, "free", name="root")
        else:
            b.add_joint(part.name, part.joint, name=part.name, axis=(0, 1, 0))
        kind, size, pos, quat = _geom(part)
        b.add_geom(part.name, kind, size, name=part.name, pos=pos, quat=quat, friction=(FRICTION, FRICTION),
                   contype=ROBOT_CONTYPE, conaffinity=ROBOT_CONAFFINITY)
        for name, gear, kp, kv in _servos(part):
            b.add_actuator(name, joint=part.name, kind="position", kp=kp, kv=kv,
                           gear=gear if part.joint == "ball" else gear[0])
    return b.build(dtype)


def _f(x) -> str:
    return " ".join(f"{float(v) + 0.0:.10g}" for v in np.atleast_1d(x))  # + 0.0: no "-0"


def mjcf(timestep: float = 0.05, integrator: str = "implicitfast") -> str:
    """The same robot as MJCF text for MuJoCo (module docstring)."""
    kids: dict[str, list[Part]] = {}
    for part in BODIES:
        kids.setdefault(part.parent, []).append(part)
    lines = ['<mujoco model="quadruped">',
             f'  <option timestep="{timestep:g}" integrator="{integrator}"/>',
             "  <worldbody>",
             f'    <geom name="floor" type="plane" size="0 0 0.05" friction="{FRICTION:g} 0.005 0.0001" '
             'contype="2" conaffinity="1"/>']

    def body(part: Part, indent: str):
        com, inertia = mass_properties(part)
        full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
        lines.append(f'{indent}<body name="{part.name}" pos="{_f(part.pos)}">')
        lines.append(f'{indent}  <inertial pos="{_f(com)}" mass="{part.mass:g}" fullinertia="{_f(full)}"/>')
        if part.joint == "free":
            lines.append(f'{indent}  <freejoint name="root"/>')
        else:
            axis = ' axis="0 1 0"' if part.joint == "hinge" else ""
            lines.append(f'{indent}  <joint name="{part.name}" type="{part.joint}"{axis}/>')
        kind, size, pos, quat = _geom(part)
        size = size[:{"box": 3, "sphere": 1, "capsule": 2}[kind]]
        lines.append(f'{indent}  <geom name="{part.name}" type="{kind}" size="{_f(size)}" pos="{_f(pos)}" '
                     f'quat="{_f(quat)}" friction="{FRICTION:g} 0.005 0.0001" contype="{ROBOT_CONTYPE}" '
                     f'conaffinity="{ROBOT_CONAFFINITY}"/>')
        for child in kids.get(part.name, []):
            body(child, indent + "  ")
        lines.append(f"{indent}</body>")

    for part in kids["world"]:
        body(part, "    ")
    lines += ["  </worldbody>", "  <actuator>"]
    for part in tree_order():
        for name, gear, kp, kv in _servos(part):
            lines.append(f'    <position name="{name}" joint="{part.name}" gear="{_f(gear)}" kp="{kp:g}" '
                         f'kv="{kv:g}"/>')
    lines += ["  </actuator>", "</mujoco>", ""]
    return "\n".join(lines)


def gait_ctrl(model: Model, t, amplitude: float = 0.1, frequency: float = 0.5):
    """(nu,) targets of a walk at time ``t`` (s): each upper leg swings about y by
    ``amplitude`` rad at ``frequency`` Hz, the legs a quarter period apart (left
    hind, left fore, right hind, right fore: three hooves down at most times), its
    lower leg flexing by up to ``2 amplitude`` while it swings forward; every other
    target stays 0."""
    names = actuator_names()
    ctrl = jnp.zeros((len(names),), model.dtype)
    for k, leg in enumerate(("rear_left", "front_left", "rear_right", "front_right")):
        phase = 2 * np.pi * (frequency * t - k / 4)
        ctrl = ctrl.at[names.index(f"{leg}_upper_y")].set(-amplitude * jnp.cos(phase))
        ctrl = ctrl.at[names.index(f"{leg}_lower")].set(2 * amplitude * jnp.maximum(jnp.sin(phase), 0.0) ** 2)
    return ctrl
