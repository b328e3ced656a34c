"""MuJoCo's com-based body quantities for gymnasium's observations and rewards
(``cinert``, ``cvel``, ``cfrc_ext``, ``mass_center``), computed from a jaxsim state,
and the path of gymnasium's model files.

Every body's quantity is taken about the centre of mass of its kinematic tree
(``subtree_com`` of the tree's root body), in world axes.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import math
from jaxsim.kinematics import Kinematics, body_velocities, plan
from jaxsim.types import Model


def model_path(name: str = "humanoid.xml") -> str:
    """gymnasium's MuJoCo model ``name`` (inside the ``gymnasium`` package)."""
    try:
        import gymnasium
    except ImportError as e:  # the envs' models come with the rl extra
        raise ImportError(f"{name}: the model file ships with gymnasium (pip install 'jaxsim[rl]')") from e
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)


def tree_com(model: Model, kin: Kinematics) -> jax.Array:
    """(nbody, 3) m, the centre of mass of each body's kinematic tree (MuJoCo's
    ``subtree_com[body_rootid]``); the world body's is the origin."""
    root = plan(model.topo).body_root  # static: a one-hot matrix, no gather in the trace
    same_tree = jnp.asarray(root[:, None] == root[None, :], kin.body_com_w.dtype)
    mass = model.body_mass
    tree_mass = same_tree @ mass
    moment = same_tree @ (mass[:, None] * kin.body_com_w)
    # the world's "tree" is the massless world body alone
    return moment / jnp.where(tree_mass > 0, tree_mass, 1.0)[:, None]


def com_inertia(model: Model, kin: Kinematics, centre: jax.Array) -> jax.Array:
    """(nbody, 10) MuJoCo's ``cinert``: per body ``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``
    (kg m^2) of its rotational inertia about ``centre`` (nbody, 3) m in world axes,
    then ``mass * (com - centre)`` (kg m) and ``mass`` (kg)."""
    mass = model.body_mass
    rot = kin.body_rot_w @ math.quat_to_mat(model.body_iquat)  # principal axes, world
    inertia = (rot * model.body_inertia[:, None, :]) @ jnp.swapaxes(rot, -1, -2)
    d = kin.body_com_w - centre
    eye = jnp.eye(3, dtype=d.dtype)
    # parallel-axis theorem: about ``centre`` rather than the body's own com
    inertia = inertia + mass[:, None, None] * (jnp.sum(d * d, -1)[:, None, None] * eye
                                               - d[:, :, None] * d[:, None, :])
    ii, jj = np.array([0, 1, 2, 0, 0, 1]), np.array([0, 1, 2, 1, 2, 2])
    return jnp.concatenate([inertia[:, ii, jj], mass[:, None] * d, mass[:, None]], -1)


def com_velocity(model: Model, kin: Kinematics, v: jax.Array, centre: jax.Array) -> jax.Array:
    """(nbody, 6) MuJoCo's ``cvel``: per body ``[omega (rad/s); velocity (m/s) of the
    body-fixed point at centre (nbody, 3)]``, world axes."""
    body_vel, _ = body_velocities(model, kin, v)  # about each tree's root origin
    omega, v_ref = body_vel[:, :3], body_vel[:, 3:]
    return jnp.concatenate([omega, v_ref + jnp.cross(omega, centre - kin.body_ref_w)], -1)


def com_external_forces(model: Model, kin: Kinematics, pipeline_state: jaxsim.State,
                        centre: jax.Array) -> jax.Array:
    """(nbody, 6) MuJoCo's ``cfrc_ext`` without applied forces: per body, the contact
    ``[torque (N m) about centre (nbody, 3); force (N)]`` on it in the last simulator
    step, world axes, summed over its contacts (0 for bodies without contact).

    ``jaxsim.contact_forces`` gives each contact's torque about its body's centre of
    mass at the start of the last step; ``kin`` (the state's) supplies the arm from
    ``centre`` to that centre of mass, an approximation of one step's motion.
    """
    cf = jaxsim.contact_forces(model, pipeline_state)
    nbody = kin.body_com_w.shape[0]
    wrench = jnp.zeros((nbody, 6), kin.body_com_w.dtype)
    for body, force, torque in ((cf.body1, cf.force1_w, cf.torque1_w), (cf.body2, cf.force2_w, cf.torque2_w)):
        on = cf.active[:, None]
        force, torque = jnp.where(on, force, 0.0), jnp.where(on, torque, 0.0)
        torque = torque + jnp.cross(kin.body_com_w[body] - centre[body], force)
        wrench = wrench.at[body].add(jnp.concatenate([torque, force], -1))
    return wrench


def mass_centre(model: Model, kin: Kinematics) -> jax.Array:
    """(3,) m, the centre of mass of all bodies (gymnasium's ``mass_center``)."""
    mass = model.body_mass
    return mass @ kin.body_com_w / jnp.sum(mass)
