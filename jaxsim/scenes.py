"""Built-in scenes, made with the builder (no files needed)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsim.builder import ModelBuilder
from jaxsim.types import Model

LINK_SIZE = (0.04, 0.10, 0.04)  # m, SPEC section 2: 4 x 10 x 4 cm boxes ...
LINK_MASS = 0.3  # kg, ... of 0.3 kg


def pendulum(n: int = 6, *, pivot_height: float | None = None, floor: bool = False,
             timestep: float = 1e-3, integrator: str = "euler", damping: float = 0.0,
             dtype=jnp.float32) -> Model:
    """The n-link planar pendulum of SPEC section 2 (seed 003, section 3).

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
    """
    if n < 1:
        raise ValueError(f"pendulum needs at least one link, got n={n}")
    length = LINK_SIZE[1]
    if pivot_height is not None:
        height = pivot_height
    else:
        height = LINK_SIZE[0] / 2 if floor else n * length + 0.1
    b = ModelBuilder(timestep=timestep, integrator=integrator)
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


CUBE_SIZE, CUBE_MASS = 0.1, 0.5  # m, kg: SPEC section 3's cube


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


def pendulum_initial_q(model: Model, root_angle_deg: float = 60.0):
    """Initial configuration: root hinge at ``root_angle_deg``, the rest straight."""
    return jnp.zeros(model.nq, model.dtype).at[0].set(jnp.asarray(np.deg2rad(root_angle_deg), model.dtype))


def pendulum_raised_q(model: Model, elevation_deg: float = 60.0):
    """The floor scene's start: the chain straight, raised ``elevation_deg`` above the
    ground (a hinge angle of 90 + elevation degrees from hanging)."""
    return pendulum_initial_q(model, 90.0 + elevation_deg)
