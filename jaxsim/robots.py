"""Real robots from the ``example-robot-data`` package (``pip install
example-robot-data``; its URDFs and meshes ship inside the wheel, no network needed).

``go2_standing`` is the Unitree Go2 set up to stand: its 12 joints position-servoed
(solved implicitly with the contacts), a floor plane, and optionally a patch of
random bumps (a height field) away from the origin, so one model holds both grounds
and one batched rollout can test both.
"""

from __future__ import annotations

import os
from importlib import metadata

import jax.numpy as jnp
import numpy as np

from jaxsim.builder import ModelError
from jaxsim.types import Model

GO2_POSE = {"hip": 0.0, "thigh": 0.8, "calf": -1.5}  # rad: Unitree's standing pose
GO2_TERRAIN_X = 3.0  # m: centre of the bump patch; a robot at x = 0 stands on the plane


def robot_file(relative: str) -> str:
    """Path of ``relative`` under example-robot-data's ``robots`` folder.

    Raises:
      ModelError: the package is not installed, or has no such file.
    """
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        raise ModelError("example-robot-data is not installed: pip install example-robot-data") from None
    path = str(dist.locate_file(os.path.join("cmeel.prefix/share/example-robot-data/robots", relative)))
    if not os.path.exists(path):
        raise ModelError(f"example-robot-data has no {relative!r} (looked for {path})")
    return path


def go2_standing(timestep: float = 0.01, *, kp: float = 60.0, kv: float = 3.0, terrain: bool = True,
                 implicit: bool = True, max_contacts: int = 32, dtype=jnp.float32,
                 **options) -> tuple[Model, np.ndarray]:
    """Go2 with a position servo (``kp`` N m/rad, ``kv`` N m s/rad, the URDF's effort
    limits as force ranges) on each of its 12 joints, links that collide with the
    ground but not with each other, and a floor plane; with ``terrain`` also a 2 x 2 m
    height field of random bumps (up to 5 cm on 5 cm cells, fixed seed) raised 5 cm,
    centred at ``x = GO2_TERRAIN_X``. ``options`` go to the loader (``contact=``...).

    The 19 link meshes against the two grounds make 304 contact slots; the step solves
    the ``max_contacts`` deepest active ones (0: all). Standing, 32 gives the same
    trajectory as all slots (the same figures in ``experiments/go2_stand.py`` to the
    last digit) in two thirds of the time; 16 is too few (the robot on the plane slides).

    Returns:
      (Model, (12,) standing joint targets in actuator order, rad).
    """
    import mujoco

    from jaxsim.io import mjcf

    spec = mjcf.urdf_spec(robot_file("go2_description/urdf/go2.urdf"), floating_base=True,
                          self_collision=False)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], name="floor")
    if terrain:
        n = 41
        X, Y = np.meshgrid(np.linspace(-1, 1, n), np.linspace(-1, 1, n))
        heights = 0.5 + 0.3 * np.sin(5 * X) * np.cos(4 * Y) + 0.1 * np.random.default_rng(0).uniform(-1, 1, (n, n))
        spec.add_hfield(name="bumps", size=[1.0, 1.0, 0.05, 0.05], nrow=n, ncol=n, userdata=list(heights.ravel()))
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="bumps", name="terrain",
                                pos=[GO2_TERRAIN_X, 0, 0.05])
    for joint in spec.joints[1:]:  # after the floating base
        limit = np.array(joint.actfrcrange)
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE  # the servo's force range instead
        spec.add_actuator(name=joint.name, target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          forcelimited=mujoco.mjtLimited.mjLIMITED_TRUE, forcerange=limit,
                          gaintype=mujoco.mjtGain.mjGAIN_FIXED, gainprm=[kp] + [0] * 9,
                          biastype=mujoco.mjtBias.mjBIAS_AFFINE, biasprm=[0, -kp, -kv] + [0] * 7)
    m = spec.compile()
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    target = np.array([GO2_POSE[name.split("_")[1]] for name in names])
    return mjcf.from_mjmodel(m, timestep=timestep, implicit_pd=implicit, dtype=dtype, max_contacts=max_contacts,
                             **options), target
