"""Built-in scenes, made with the builder (no files needed)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsim.builder import ModelBuilder
from jaxsim.types import Model

LINK_SIZE = (0.04, 0.10, 0.04)  # m: 4 x 10 x 4 cm boxes ...
LINK_MASS = 0.3  # kg, ... of 0.3 kg


def pendulum(n: int = 6, *, pivot_height: float | None = None, floor: bool = False,
             timestep: float = 1e-3, integrator: str = "euler", damping: float = 0.0,
             dtype=jnp.float32, **options) -> Model:
    """The n-link planar pendulum of Wakisaka and Sugihara's relaxed point-contact paper.

    Each link is a 4 x 10 x 4 cm box of 0.3 kg hanging along -z from a hinge about the
    world y axis; all hinges are parallel. Without a floor, start it swinging at 60
    degrees with ``pendulum_initial_q``. With one (the paper's contact scene) the root
    hinge sits half a link thickness above the ground, so that the chain lies flat on
    it at rest; ``pendulum_raised_q`` holds it straight at 60 degrees above the ground,
    from where it falls, hits the ground and comes to rest.

    Args:
      n: number of links.
      pivot_height: height of the root hinge, m (default: 0.1 m above the chain's length,
        or half a link thickness with a floor).
      floor: add a ground plane at z = 0 (friction mu_s = 1.0, mu_k = 0.4 as in the paper).
      **options: further ModelBuilder options (the contact model and its parameters, ...).
    """
    if n < 1:
        raise ValueError(f"pendulum needs at least one link, got n={n}")
    length = LINK_SIZE[1]
    if pivot_height is not None:
        height = pivot_height
    else:
        height = LINK_SIZE[0] / 2 if floor else n * length + 0.1
    b = ModelBuilder(timestep=timestep, integrator=integrator, **options)
    sx, sy, sz = LINK_SIZE[0], LINK_SIZE[2], LINK_SIZE[1]  # long side along the chain (z)
    inertia = LINK_MASS / 12.0 * np.array([sy**2 + sz**2, sx**2 + sz**2, sx**2 + sy**2])
    parent = "world"
    for i in range(n):
        name = f"link{i}"
        b.add_body(name, parent, pos=(0, 0, height) if i == 0 else (0, 0, -length),
                   mass=LINK_MASS, com=(0, 0, -length / 2), inertia=inertia)
        b.add_joint(name, "hinge", name=f"hinge{i}", axis=(0, 1, 0), damping=damping)
        b.add_geom(name, "box", (sx / 2, sy / 2, sz / 2), pos=(0, 0, -length / 2),
                   name=f"box{i}", friction=(1.0, 0.4))
        parent = name
    if floor:
        b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(1.0, 0.4))
        for i in range(n):  # the paper's scene: links touch the ground, not each other
            for j in range(i + 2, n):
                b.add_exclude(f"link{i}", f"link{j}")
    return b.build(dtype)


def euler_xyz_to_quat(euler_deg) -> np.ndarray:
    """(w, x, y, z) of extrinsic rotations about x, then y, then z (degrees)."""
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for axis, angle in enumerate(np.deg2rad(np.asarray(euler_deg, float))):
        r = np.zeros(4)
        r[0], r[1 + axis] = np.cos(angle / 2), np.sin(angle / 2)
        w1, v1, w2, v2 = r[0], r[1:], q[0], q[1:]  # r (x) q: the later rotation on the left
        q = np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])
    return q


CUBE_SIZE, CUBE_MASS = 0.1, 0.5  # m, kg: the contact-volume wrench's cube


def cube(*, height: float = 0.05, euler_deg=(0.0, 0.0, 0.0), friction=(0.5, 0.3),
         timestep: float = 1e-3, gravity=(0.0, 0.0, -9.81), dtype=jnp.float32, **options) -> Model:
    """A 0.1 m, 0.5 kg cube (free joint) above a floor plane at z = 0.

    Args:
      height: initial height of its centre, m (0.05: resting on the floor).
      euler_deg: initial orientation, extrinsic x-y-z rotations in degrees.
      friction: (static, kinetic) coefficients of both the cube and the floor.
      gravity: (3,) m/s^2 (tilt it to put the cube on an incline).
      **options: further ModelBuilder options (contact parameters, solver, ...).
    """
    b = ModelBuilder(timestep=timestep, gravity=gravity, **options)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=friction)
    inertia = CUBE_MASS * CUBE_SIZE ** 2 / 6.0
    b.add_body("cube", "world", pos=(0, 0, height), quat=euler_xyz_to_quat(euler_deg), mass=CUBE_MASS,
               inertia=np.full(3, inertia))
    b.add_joint("cube", "free", name="cube")
    b.add_geom("cube", "box", (CUBE_SIZE / 2,) * 3, name="cube", friction=friction)
    return b.build(dtype)


def quadruped(timestep: float = 0.05, *, implicit_pd: bool = True, dtype=jnp.float32, **options) -> Model:
    """The implicit-PD horse-like quadruped on a floor (``jaxsim.quadruped``): 23 bodies,
    14 ball joints and 8 hinges, 50 position servos, standing at ``make_state``'s zero
    ``ctrl``; ``implicit_pd`` solves the servos with the constraints (stable at dt =
    50 ms). ``jaxsim/assets/quadruped.xml`` is the same robot for MuJoCo;
    ``jaxsim.quadruped.gait_ctrl`` gives trot targets."""
    from jaxsim import quadruped as robot

    return robot.build(timestep, implicit_pd, dtype, **options)


def pendulum_initial_q(model: Model, root_angle_deg: float = 60.0):
    """Initial configuration: root hinge at ``root_angle_deg``, the rest straight."""
    return jnp.zeros(model.nq, model.dtype).at[0].set(jnp.asarray(np.deg2rad(root_angle_deg), model.dtype))


def pendulum_raised_q(model: Model, elevation_deg: float = 60.0):
    """The floor scene's start: the chain straight, raised ``elevation_deg`` above the
    ground (a hinge angle of 90 + elevation degrees from hanging)."""
    return pendulum_initial_q(model, 90.0 + elevation_deg)


# ---------------------------------------------------------------------------- random scenes

SHAPES = ("box", "sphere", "capsule", "hull")


def icosahedron() -> tuple[np.ndarray, np.ndarray]:
    """(12, 3) unit-circumradius vertices and (20, 3) outward triangles of a regular
    icosahedron: the base of ``random_drop``'s convex hulls."""
    p = (1.0 + np.sqrt(5.0)) / 2.0
    v = np.array([[-1, p, 0], [1, p, 0], [-1, -p, 0], [1, -p, 0], [0, -1, p], [0, 1, p],
                  [0, -1, -p], [0, 1, -p], [p, 0, -1], [p, 0, 1], [-p, 0, -1], [-p, 0, 1]], float)
    v /= np.linalg.norm(v[0])
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
                  [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
                  [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]])
    return v, f


def mesh_inertia(vert: np.ndarray, face: np.ndarray, mass: float) -> tuple[np.ndarray, np.ndarray]:
    """Centre of mass (3,) and inertia tensor (3, 3) about it of a solid, uniform closed
    triangle mesh of total ``mass`` (tetrahedra from the origin, signed volumes)."""
    a, b, c = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    com = np.sum(vol[:, None] * (a + b + c), 0) / (4.0 * vol.sum())
    # second moments of each tetrahedron (0, a, b, c): vol/20 (sum x x^T + (sum x)(sum x)^T)
    s = a + b + c
    second = (np.einsum("i,ij,ik->jk", vol, s, s) + sum(np.einsum("i,ij,ik->jk", vol, x, x) for x in (a, b, c))) / 20.0
    second = second * mass / vol.sum() - mass * np.outer(com, com)
    return com, np.trace(second) * np.eye(3) - second


def _solid(shape: str, size: np.ndarray, mass: float):
    """(com (3,), inertia (3,) or (3, 3), geom size, mesh) of a uniform solid."""
    if shape == "box":
        h = size / 2
        return np.zeros(3), mass / 3.0 * (h[[1, 0, 0]] ** 2 + h[[2, 2, 1]] ** 2), h, None
    if shape == "sphere":
        r = size[0] / 2
        return np.zeros(3), np.full(3, 0.4 * mass * r * r), np.array([r, 0, 0]), None
    if shape == "capsule":  # size: (diameter, total length)
        r, half = size[0] / 2, max(size[1] - size[0], 0.2 * size[0]) / 2
        v_cyl, v_cap = np.pi * r * r * 2 * half, 4.0 / 3.0 * np.pi * r ** 3
        m_cyl, m_cap = mass * v_cyl / (v_cyl + v_cap), mass * v_cap / (v_cyl + v_cap)
        axial = m_cyl * r * r / 2 + 0.4 * m_cap * r * r
        # hemispheres: own inertia about their centroid (3/8 r from the flat face) moved
        # to the capsule centre
        d = half + 3.0 * r / 8.0
        lateral = m_cyl * (3 * r * r + (2 * half) ** 2) / 12 + m_cap * (0.4 * r * r - (3 * r / 8) ** 2 + d * d)
        return np.zeros(3), np.array([lateral, lateral, axial]), np.array([r, half, 0]), None
    vert, face = icosahedron()
    vert = vert * size / 2  # semi-axes
    com, inertia = mesh_inertia(vert, face, mass)
    vert = vert - com
    return np.zeros(3), inertia, None, (vert, face)


def random_drop(shapes, seed: int, *, timestep: float | None = None, speed: float = 2.0,
                spin: float = 2.0, mass_range=(0.01, 30.0), size_range=(0.01, 0.15),
                max_mass_ratio: float = 1000.0, dtype=jnp.float32, **options):
    """A random scene of free bodies stacked above a floor, for robustness tests.

    One body per entry of ``shapes`` ("box", "sphere", "capsule" or "hull": a convex
    icosahedron stretched along its axes), in a random order, stacked with gaps
    (nothing touches at the start) and slightly offset sideways, with uniform random mass (log-uniform in
    ``mass_range``, at most ``max_mass_ratio`` between the heaviest and the lightest),
    extents in ``size_range`` (m), the inertia of the solid shape, random friction and
    random initial velocities (about ``speed`` m/s and ``spin`` rad/s). Scenes with the
    same ``shapes`` share one topology, so they batch with ``batch_models``.

    Returns:
      (model, q0 (nq,), v0 (nv,)).
    """
    rng = np.random.default_rng(seed)
    if timestep is None:
        timestep = float(rng.choice([0.5e-3, 1e-3, 2e-3, 5e-3]))
    b = ModelBuilder(timestep=timestep, **options)
    mu_floor = rng.uniform(0.3, 1.0)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(mu_floor, 0.8 * mu_floor))
    lo, hi = np.log(mass_range[0]), np.log(mass_range[1])
    masses = np.exp(rng.uniform(lo, hi, len(shapes)))
    while masses.max() > max_mass_ratio * masses.min():
        masses = np.exp(rng.uniform(lo, hi, len(shapes)))
    radius = []
    for i, shape in enumerate(shapes):
        if shape not in SHAPES:
            raise ValueError(f"random_drop: unknown shape {shape!r}; choose from {SHAPES}")
        size = rng.uniform(*size_range, 3)
        if shape == "capsule":
            size[1] = max(size[1], size[0] * 1.2)
        com, inertia, geom_size, mesh = _solid(shape, size, masses[i])
        name = f"body{i}"
        b.add_body(name, "world", mass=masses[i], com=com, inertia=inertia)
        b.add_joint(name, "free", name=name)
        mu = rng.uniform(0.3, 1.0)
        friction = (mu, rng.uniform(0.6, 1.0) * mu)
        if mesh is None:
            b.add_geom(name, shape, geom_size, name=name, friction=friction)
        else:
            b.add_geom(name, "convex", name=name, friction=friction, vertices=mesh[0], faces=mesh[1])
        radius.append(0.5 * float(np.linalg.norm(size)) if shape != "sphere" else size[0] / 2)
    q, v, top = [None] * len(shapes), [None] * len(shapes), 0.0
    for i in rng.permutation(len(shapes)):  # stacking order, bottom first
        z = top + rng.uniform(0.01, 0.05) + radius[i]
        top = z + radius[i]
        quat = rng.normal(size=4)
        xy = rng.uniform(-0.5, 0.5, 2) * radius[i]
        q[i] = np.concatenate([[*xy, z], quat / np.linalg.norm(quat)])
        lin, ang = rng.normal(size=3), rng.normal(size=3)
        v[i] = np.concatenate([speed * rng.uniform(0.5, 1.5) * lin / np.linalg.norm(lin),
                               spin * rng.uniform(0.5, 1.5) * ang / np.linalg.norm(ang)])
    model = b.build(dtype)
    return model, jnp.asarray(np.concatenate(q), dtype), jnp.asarray(np.concatenate(v), dtype)
