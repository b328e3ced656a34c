"""Every user-settable float leaf of the Model is read by the step.

The test enumerates the leaves of three scenes (a cube under the relaxed point model,
gymnasium's humanoid, a box bouncing under Springhead's model), perturbs each one in
turn and requires the rollout to change: a field the step never reads (a decoy) fails
it, including one added later. A leaf that a scene cannot exercise (a free body's
pose is its ``q``; an unlimited joint's range) is listed in ``UNUSED`` with the
reason (the features no scene here has, penalty pairs and friction loss, are checked
against MuJoCo or analytic answers in their own tests). Structural fields
(``Model``'s docstring) are exempt. Float64; one compile per scene (the perturbed
Models share one treedef).

The perturbation: quaternions turn by 0.1 rad, an all-zero leaf gains 0.1, any other
leaf is scaled by 1.1, or by 0.9 where 1.1 changes nothing (a rate capped at 1/dt).
"""

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import ModelBuilder, scenes
from jaxsim.io import load_mjcf
from jaxsim.types import STRUCTURAL_FIELDS

from conftest import RUNS_LONG, gymnasium_dir

TOL = 1e-9  # m or m/s: float64 rollouts of unchanged models agree bit for bit

NO_MEDIUM = "no medium (opt.fluid is off)"
FREE_ONLY = "its only joint is free: a free body's pose and axes are its q"
# (scene, leaf) -> why that scene cannot exercise the leaf
UNUSED = {
    "opt.density": NO_MEDIUM, "opt.viscosity": NO_MEDIUM, "opt.wind": NO_MEDIUM,
    "opt.penalty_stiffness": "no penalty pair", "opt.penalty_damping": "no penalty pair",
    "jnt_actfrcrange": "no joint clamps its actuator force",
    "dof_frictionloss": "no dof has a friction-loss row (frictionloss > 0 at build)",
    "geom_rgba": "colour only",
    "opt.gradient_smoothing": "read by gradients only (tests/test_gradient_smoothing.py)",
}
UNUSED_IN = {
    "cube": {**{k: why for k, why in UNUSED.items() if why != NO_MEDIUM}, "body_pos": FREE_ONLY, "body_quat": FREE_ONLY, "jnt_pos": FREE_ONLY,
             "jnt_axis": FREE_ONLY, "qpos0": FREE_ONLY, "qpos_spring": "the joint has no stiffness",
             "jnt_range": "unlimited joint",
             "geom_restitution": "the relaxed point model has no restitution"},
    "springhead": {**UNUSED, "body_pos": FREE_ONLY, "body_quat": FREE_ONLY, "jnt_pos": FREE_ONLY,
                   "jnt_axis": FREE_ONLY, "qpos0": FREE_ONLY, "qpos_spring": "the joint has no stiffness",
                   "jnt_range": "unlimited joint", "body_iquat": "isotropic inertia",
                   "opt.solver_tol": "Gauss-Seidel runs a fixed number of sweeps",
                   "opt.contact_margin": "no contact is in the speculative band long enough to matter"},
    "humanoid": {**UNUSED, "qpos0": "every hinge's reference is 0 (scaling keeps it)",
                 "qpos_spring": "every spring's rest is 0 (scaling keeps it)",
                 "actuator_tau": "no activation dynamics", "actuator_forcerange": "no force limit",
                 "actuator_actrange": "no activation", "tendon_coef": "its tendons are slack and unlimited",
                 "tendon_lengthspring": "its tendons have no stiffness", "tendon_range": "unlimited tendons",
                 "contact_params.contact_rate": "capped at 1/dt either way",
                 "geom_restitution": "the relaxed point model has no restitution",
                 "opt.contact_margin": "no contact is in the speculative band long enough to matter"},
}


def _cube():
    model = scenes.cube(height=0.06, euler_deg=(10, 5, 0), density=1.2, viscosity=1.8e-5, dtype=jnp.float64)  # in air
    return model, jaxsim.make_state(model, v=jnp.array([1.0, 0.2, 0, 0.5, 1.0, 2.0])), 300


def _springhead():
    # one box lands at 2 m/s, just above the impact threshold (a 10 % higher one makes
    # it a resting contact); another starts 3 mm deep (the depth correction acts),
    # sliding just above the kinetic friction's threshold speed (a 10 % higher one
    # makes the friction static); few Gauss-Seidel sweeps (the warm start shows)
    b = ModelBuilder(timestep=1e-3, contact="springhead", impact_threshold=2.0, sweeps=4)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", restitution=0.5)
    for name, x, z in (("falling", 0.0, 0.08), ("sunk", 1.0, 0.047)):
        b.add_body(name, pos=(x, 0, z), quat=scenes.euler_xyz_to_quat((8, 4, 0) if x == 0 else (0, 0, 0)),
                   mass=1.0, inertia=(0.01, 0.01, 0.01))
        b.add_joint(name, "free")
        b.add_geom(name, "box", (0.05, 0.05, 0.05), restitution=0.6)
    model = b.build(jnp.float64)
    v = jnp.array([0.8, 0.1, -2.0, 0.0, 1.0, 0.0, 0.0105, 0, 0, 0, 0, 0])
    return model, jaxsim.make_state(model, v=v), 150


def _humanoid():
    model = load_mjcf(os.path.join(gymnasium_dir(), "humanoid.xml"), dtype=jnp.float64)
    q = model.qpos0.at[2].add(-0.15)  # the feet on the floor from the start
    return model, jaxsim.make_state(model, q=q), 25


SCENES = {"cube": _cube, "springhead": _springhead, "humanoid": _humanoid}


def _turn(quat, angle=0.1):
    axis = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
    r = jnp.asarray(np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis], quat.dtype)
    return jax.vmap(jaxsim.math.quat_mul, (None, 0))(r, quat.reshape(-1, 4)).reshape(quat.shape)


def _perturbations(x, name):
    if name.endswith("quat"):
        return [_turn(x)]
    # the QP's Newton steps land most solves far below the tolerance: 10 % of it changes nothing
    if name == "opt.solver_tol":
        return [x * 1e3]
    if not np.any(np.asarray(x)):
        return [x + 0.1]
    return [x * 1.1, x * 0.9]


def float_leaves(model):
    """(name, index) of every non-empty float leaf that is not structural."""
    leaves = jax.tree_util.tree_flatten_with_path(model)[0]
    out = []
    for i, (path, x) in enumerate(leaves):
        name = jax.tree_util.keystr(path, simple=True, separator=".")
        if name in STRUCTURAL_FIELDS or not jnp.issubdtype(x.dtype, jnp.floating) or x.size == 0:
            continue
        out.append((name, i))
    return out


def changes(scene: str) -> dict:
    """Leaf name -> largest change of the rollout's q and v when it is perturbed."""
    model, state, steps = SCENES[scene]()
    ctrls = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (steps, model.nu), jnp.float64)

    @functools.partial(jax.jit, compiler_options=RUNS_LONG)  # run once per leaf and perturbation
    def trajectory(m):
        _, traj = jaxsim.rollout(m, state, ctrls)
        return jnp.concatenate([traj.q.reshape(-1), traj.v.reshape(-1)])

    base = trajectory(model)
    leaves, treedef = jax.tree_util.tree_flatten(model)
    out = {}
    for name, i in float_leaves(model):
        out[name] = 0.0
        for x in _perturbations(leaves[i], name):
            perturbed = jax.tree_util.tree_unflatten(treedef, leaves[:i] + [x] + leaves[i + 1:])
            diff = float(jnp.max(jnp.abs(trajectory(perturbed) - base)))
            out[name] = diff if not np.isfinite(diff) else max(out[name], diff)
            if out[name] > TOL or not np.isfinite(diff):
                out[name] = np.inf if not np.isfinite(diff) else out[name]
                break
    return out


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_every_leaf_changes_the_rollout(scene):
    found = changes(scene)
    decoys = sorted(k for k, d in found.items() if d <= TOL and k not in UNUSED_IN[scene])
    assert not decoys, f"{scene}: perturbing these leaves changes nothing: {decoys}"
    stale = sorted(k for k, d in found.items() if d > TOL and k in UNUSED_IN[scene])
    assert not stale, f"{scene}: listed as unused but they change the rollout: {stale}"
    # the per-geom friction is the one the step reads (no pair table copy)
    assert found["geom_friction"] > 1e-4

