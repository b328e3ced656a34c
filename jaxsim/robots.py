"""Real robots from the ``example-robot-data`` package (``pip install
example-robot-data``; its URDFs and meshes ship inside the wheel, no network needed)
and from ``gymnasium-robotics`` (its MJCF assets).

``go2_standing`` is the Unitree Go2 set up to stand: its 12 joints position-servoed
(solved implicitly with the contacts), a floor plane, and optionally a patch of
random bumps (a height field) away from the origin, so one model holds both grounds
and one batched rollout can test both: ``go2_stand`` runs it, ``standing_figures``
measures how well each robot stands.
"""

from __future__ import annotations

import os
from importlib import metadata, util

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.step import make_state, rollout
from jaxsim.types import Model, ModelError

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
                 implicit_pd: bool = True, max_contacts: int = 32, max_hull_vertices: int | None = 64,
                 dtype=jnp.float32, **options) -> tuple[Model, np.ndarray]:
    """Go2 with a position servo (``kp`` N m/rad, ``kv`` N m s/rad, the URDF's effort
    limits as force ranges) on each of its 12 joints, links that collide with the
    ground but not with each other, and a floor plane; with ``terrain`` also a 2 x 2 m
    height field of random bumps (up to 5 cm on 5 cm cells, fixed seed) raised 5 cm,
    centred at ``x = GO2_TERRAIN_X``. ``options`` go to the loader (``contact=``...).

    The 19 link meshes against the two grounds make 304 contact slots; the step solves
    the ``max_contacts`` deepest active ones (0: all). Standing, with the full hulls,
    32 gave the same trajectory as all slots (the same ``standing_figures`` of
    ``go2_stand`` to the last digit) in two thirds of the time; 16 is too few (the
    robot on the plane slides). The hulls (up to 563 vertices) are capped at
    ``max_hull_vertices`` (None: as the meshes give them): at 64 the 10 s stand takes
    12-15 s with compile instead of 39 s, with the same figures within 0.7 mm of base
    height and 0.6 mm of creep (the docs' Loading page).

    Returns:
      (Model, (12,) standing joint targets in actuator order, rad).
    """
    import mujoco

    from jaxsim.io import mjcf

    spec = mjcf.urdf_spec(robot_file("go2_description/urdf/go2.urdf"), floating_base=True,
                          self_collision=False, max_hull_vertices=max_hull_vertices)
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
    return mjcf.from_mjmodel(m, timestep=timestep, implicit_pd=implicit_pd, dtype=dtype, max_contacts=max_contacts,
                             **options), target


def go2_stand(contact: str = "relaxed", dt: float = 0.01, seconds: float = 10.0, *, kp: float = 60.0,
              kv: float = 3.0):
    """One Go2 on the plane (x = 0) and one on the bump patch, 5-10 cm above their
    ground in the standing pose, held there by the servos (``go2_standing``) for
    ``seconds``: one batched float32 rollout.

    Returns:
      (trajectory State (2, steps, ...), standing joint targets (12,)).
    """
    model, target = go2_standing(dt, kp=kp, kv=kv, contact=contact)
    q = np.tile(np.asarray(model.qpos0), (2, 1))
    q[:, 7:] = target
    q[:, :3] = [[0.0, 0.0, 0.42], [GO2_TERRAIN_X, 0.0, 0.5]]
    states = jax.vmap(lambda q: make_state(model, q=q, ctrl=jnp.asarray(target, model.dtype)))(
        jnp.asarray(q, model.dtype))
    steps = int(round(seconds / dt))
    ctrls = jnp.tile(jnp.asarray(target, model.dtype), (2, steps, 1))
    _, traj = jax.jit(jax.vmap(rollout, in_axes=(None, 0, 0)))(model, states, ctrls)
    return jax.block_until_ready(traj), target


def standing_figures(traj, target, g: int) -> dict:
    """How env ``g`` of a ``go2_stand`` rollout stands over its second half: every
    value finite, the base's final height (m), how far it moved (m), its largest tilt
    (deg), the largest servo error (rad), the deepest contact (m), and the contact
    solver's mean and largest iterations."""
    qg = np.asarray(traj.q[g])
    half = len(qg) // 2
    up = 1 - 2 * (qg[:, 4] ** 2 + qg[:, 5] ** 2)  # the base's z axis' world z
    it = np.asarray(traj.solver.iterations[g])
    depth = np.where(np.asarray(traj.contact.active[g]), np.asarray(traj.contact.depth[g]), 0.0)
    return {"finite": not bool(np.any(np.asarray(traj.nonfinite[g]))), "base_z": float(qg[-1, 2]),
            "moved_last_half_m": float(np.abs(qg[half:, :3] - qg[half, :3]).max()),
            "tilt_deg": float(np.degrees(np.arccos(np.clip(up[half:].min(), -1, 1)))),
            "servo_error_rad": float(np.abs(qg[half:, 7:] - target).max()),
            "depth_max_m": float(depth.max()), "iterations_mean": float(it.mean()),
            "iterations_max": int(it.max())}


# gymnasium-robotics' Fetch tasks: (base x, object pose or None, gripper_extra_height)
FETCH_TASKS = {
    "pick_and_place": (0.405, (1.25, 0.53, 0.4, 1, 0, 0, 0), 0.2),
    "push": (0.405, (1.25, 0.53, 0.4, 1, 0, 0, 0), 0.0),
    "reach": (0.4049, None, 0.2),
    "slide": (0.05, (1.7, 1.1, 0.41, 1, 0, 0, 0), -0.02),
}


def fetch(task: str = "pick_and_place", *, max_hull_vertices: int = 16, narrow_pairs: int = 16,
          max_contacts: int = 16, settle_steps: int = 200, dtype=jnp.float32, **options):
    """gymnasium-robotics' Fetch ``task`` scene after the environment's own reset.

    The reset is gymnasium's (``fetch_env._env_setup``, each task's start from
    ``FETCH_TASKS``), run in MuJoCo: the base and the object at their initial
    positions, the mocap weld's relative pose made the identity, the mocap body moved
    to the gripper's start target (turned ``(1, 0, 1, 0)``), then ``settle_steps``
    MuJoCo steps (gymnasium: 10 x 20) while the weld pulls the arm there. jaxsim's mocap body is static, so the target is
    written into the file as the mocap's pose; MuJoCo then sees the same model.

    Fetch's meshes give hulls of up to 2,024 vertices and 84 hull-hull pairs; capped
    at ``max_hull_vertices`` (MuJoCo's ``maxhullvert``, so both use the same hulls),
    with ``narrow_pairs`` pairs of a kind through the narrow phase per step and the
    ``max_contacts`` deepest contacts solved, a float32 step costs 3-7 ms on a 2-core
    CPU. At rest about 10 hull-hull pairs have touching bounding spheres.

    Returns:
      (Model, the MuJoCo ``MjModel`` of the same spec, (nq,) qpos and (nv,) qvel after
      the reset).
    """
    import mujoco

    from jaxsim.io import mjcf

    if task not in FETCH_TASKS:
        raise ModelError(f"Fetch task must be one of {sorted(FETCH_TASKS)}, got {task!r}")
    found = util.find_spec("gymnasium_robotics")
    if found is None:
        raise ModelError("gymnasium-robotics is not installed: pip install gymnasium-robotics")
    path = os.path.join(found.submodule_search_locations[0], "envs", "assets", "fetch", f"{task}.xml")
    spec = mujoco.MjSpec.from_file(path)
    mjcf.limit_hull_vertices(spec, max_hull_vertices)
    for eq in spec.equalities:  # gymnasium's reset_mocap_welds
        if eq.type == mujoco.mjtEq.mjEQ_WELD:
            eq.data[3:10] = [0, 0, 0, 1, 0, 0, 0]
    m = spec.compile()
    d = mujoco.MjData(m)
    base_x, object_pose, extra_height = FETCH_TASKS[task]
    start = {"robot0:slide0": [base_x], "robot0:slide1": [0.48], "robot0:slide2": [0.0]}
    if object_pose is not None:
        start["object0:joint"] = object_pose
    for name, value in start.items():
        adr = m.jnt_qposadr[m.joint(name).id]
        d.qpos[adr:adr + len(value)] = value
    mujoco.mj_forward(m, d)
    mocap = spec.body("robot0:mocap")
    mocap.pos = d.site("robot0:grip").xpos + np.array([-0.498, 0.005, -0.431 + extra_height])
    mocap.quat = np.array([1.0, 0.0, 1.0, 0.0]) / np.sqrt(2.0)
    m = spec.compile()
    qpos = d.qpos.copy()
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_step(m, d, nstep=settle_steps)
    model = mjcf.from_mjmodel(m, dtype=dtype, narrow_pairs=narrow_pairs, max_contacts=max_contacts, **options)
    return model, m, d.qpos.copy(), d.qvel.copy()
