"""Mass matrix (CRBA), bias forces (RNEA), forward dynamics (ABA or CRBA + Cholesky),
passive and actuator forces.

All quantities follow MuJoCo's definitions so they can be compared one to one:
``M`` includes the armature, ``bias = C(q, v) v + g(q)`` (``qfrc_bias``), passive
forces are joint/tendon springs and dampers plus fluid drag (``qfrc_passive``), and
``M qacc = passive + actuator + applied - bias`` without constraints.

Spatial quantities come from ``kinematics``: motion vectors in world orientation about
each tree's reference point (see ``jaxsim.math`` for the conventions).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import kinematics as kin_mod
from jaxsim import linalg, math
from jaxsim.kinematics import Kinematics, dof_blocks, plan
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.precision import full_precision
from jaxsim.types import DynType, JointType, Model

Array = jax.Array


def gravity_acceleration(model: Model, dtype) -> Array:
    """(6,) spatial acceleration of the world that stands in for gravity."""
    return jnp.concatenate([jnp.zeros(3, dtype), -model.opt.gravity.astype(dtype)])


@accepts_explicit_axes
@full_precision
def mass_matrix(model: Model, kin: Kinematics) -> Array:
    """(nv, nv) joint-space inertia matrix, armature included (CRBA)."""
    p = plan(model.topo)
    dtype = kin.dof_motion.dtype
    node_desc = jnp.asarray(p.body_dof.T, dtype)  # (nv, nbody): body below dof
    composite = node_desc @ kin.body_inertia  # (nv, 13) subtree inertia below each dof
    force = math.inertia_apply(composite, kin.dof_motion)  # F_j = Ic_j S_j
    g = linalg.row_products(kin.dof_motion, force)  # g[i, j] = S_i . F_j
    anc = jnp.asarray(p.dof_anc, dtype)  # [i, j]: i is j or an ancestor of j
    strict = anc - jnp.eye(model.nv, dtype=dtype)
    m = anc * g + (strict * g).T
    return m + jnp.diag(model.dof_armature.astype(dtype))


@accepts_explicit_axes
@full_precision
def inverse_dynamics(model: Model, kin: Kinematics, v: Array, qacc: Array,
                     body_vel: Array | None = None, dof_motion_dot: Array | None = None) -> Array:
    """(nv,) generalized force producing ``qacc`` at velocity ``v`` (RNEA, no armature).

    With ``qacc = 0`` this is MuJoCo's ``qfrc_bias`` (Coriolis, centrifugal, gravity).
    """
    p = plan(model.topo)
    dtype = v.dtype
    if body_vel is None:
        body_vel, dof_motion_dot = kin_mod.body_velocities(model, kin, v)
    body_dof = jnp.asarray(p.body_dof, dtype)
    dof_acc = dof_motion_dot * v[:, None] + kin.dof_motion * qacc[:, None]
    body_acc = gravity_acceleration(model, dtype) + body_dof @ dof_acc
    momentum = math.inertia_apply(kin.body_inertia, body_vel)
    force = math.inertia_apply(kin.body_inertia, body_acc) + math.force_cross(body_vel, momentum)
    force = force * jnp.asarray(p.body_node >= 0, dtype)[:, None]  # world-welded bodies
    subtree_force = body_dof.T @ force  # (nv, 6)
    return jnp.sum(kin.dof_motion * subtree_force, -1)


@accepts_explicit_axes
@full_precision
def bias_forces(model: Model, kin: Kinematics, v: Array) -> Array:
    """(nv,) ``C(q, v) v + g(q)`` (MuJoCo's ``qfrc_bias``)."""
    return inverse_dynamics(model, kin, v, jnp.zeros_like(v))


def passive_forces(model: Model, q: Array, v: Array, kin: Kinematics,
                   body_vel: Array | None = None) -> Array:
    """(nv,) joint and tendon springs and dampers, plus fluid forces (``qfrc_passive``)."""
    topo, p = model.topo, plan(model.topo)
    frc = -model.dof_damping * v
    # joint springs
    stiff = model.jnt_stiffness
    for jt in JointType:
        js = p.jnt_of_type[jt]
        if js.size == 0:
            continue
        qa = np.asarray(topo.jnt_qposadr)[js]
        da = np.asarray(topo.jnt_dofadr)[js]
        k = stiff[js][:, None]
        if jt in (JointType.HINGE, JointType.SLIDE):
            frc = frc.at[da].add(-k[:, 0] * (q[qa] - model.qpos_spring[qa]))
            continue
        off = 0
        if jt == JointType.FREE:
            lin = qa[:, None] + np.arange(3)
            frc = frc.at[da[:, None] + np.arange(3)].add(-k * (q[lin] - model.qpos_spring[lin]))
            off = 3
        quat_idx = qa[:, None] + off + np.arange(4)
        dq = math.quat_diff_rotvec(math.normalize(q[quat_idx]), model.qpos_spring[quat_idx])
        frc = frc.at[da[:, None] + off + np.arange(3)].add(-k * dq)
    # fixed tendons: spring with a dead band [low, high], and damping
    if topo.ntendon:
        length = model.tendon_coef @ kin_mod.scalar_joint_positions(model, q)
        lo, hi = model.tendon_lengthspring[:, 0], model.tendon_lengthspring[:, 1]
        stretch = jnp.where(length > hi, hi - length, jnp.where(length < lo, lo - length, 0.0))
        ten_frc = model.tendon_stiffness * stretch - model.tendon_damping * (model.tendon_coef @ v)
        frc = frc + model.tendon_coef.T @ ten_frc
    if model.opt.fluid:
        frc = frc + fluid_forces(model, kin, v, body_vel)
    return frc


def fluid_forces(model: Model, kin: Kinematics, v: Array, body_vel: Array | None = None) -> Array:
    """(nv,) MuJoCo's inertia-box fluid model: each body drags like the uniform box of
    equal inertia (viscous Stokes terms plus quadratic density terms)."""
    p = plan(model.topo)
    dtype = v.dtype
    if body_vel is None:
        body_vel, _ = kin_mod.body_velocities(model, kin, v)
    mass = model.body_mass
    moments = model.body_inertia
    safe_mass = jnp.where(mass > 0, mass, 1.0)
    # box with the body's principal moments: I_x = m (y^2 + z^2) / 12 ...
    box = jnp.sqrt(jnp.maximum(1e-15, (jnp.sum(moments, -1, keepdims=True) - 2 * moments)) * 6.0
                   / safe_mass[:, None])  # full side lengths
    rot_wi = kin.body_rot_w @ math.quat_to_mat(model.body_iquat)  # principal frame to world
    com_rel = kin.body_com_w - kin.body_ref_w
    w_w = body_vel[:, :3]
    vcom_w = body_vel[:, 3:] + jnp.cross(w_w, com_rel) - model.opt.wind
    w = jnp.einsum("bji,bj->bi", rot_wi, w_w)
    u = jnp.einsum("bji,bj->bi", rot_wi, vcom_w)
    rho, beta = model.opt.density, model.opt.viscosity
    diam = jnp.mean(box, -1, keepdims=True)
    torque = -jnp.pi * diam**3 * beta * w
    force = -3.0 * jnp.pi * diam * beta * u
    x, y, z = box[:, 0:1], box[:, 1:2], box[:, 2:3]
    area = jnp.concatenate([y * z, z * x, x * y], -1)
    force = force - 0.5 * rho * area * jnp.abs(u) * u
    lever = jnp.concatenate([x * (y**4 + z**4), y * (z**4 + x**4), z * (x**4 + y**4)], -1) / 64.0
    torque = torque - rho * lever * jnp.abs(w) * w
    moving = jnp.asarray(p.body_node >= 0, dtype)[:, None] * (mass > 0)[:, None]
    torque_w = jnp.einsum("bij,bj->bi", rot_wi, torque) * moving
    force_w = jnp.einsum("bij,bj->bi", rot_wi, force) * moving
    wrench = jnp.concatenate([torque_w + jnp.cross(com_rel, force_w), force_w], -1)  # about ref
    return jnp.sum(kin.dof_motion * (jnp.asarray(p.body_dof.T, dtype) @ wrench), -1)


def clamped_ctrl(model: Model, ctrl: Array) -> Array:
    """(nu,) controls clamped to ctrlrange where limited."""
    lim = jnp.asarray(model.topo.actuator_ctrllimited)
    return jnp.where(lim, jnp.clip(ctrl, model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]), ctrl)


def actuator_drive(model: Model, q: Array, act: Array, ctrl: Array) -> tuple[Array, Array]:
    """``(gain * u, length)`` (nu,) of every actuator: ``u`` its clamped control or
    its activation, ``length`` its transmission's (rad or m, times gear; ``gear .
    rotvec`` on a ball joint, taken modulo 2 pi nearest the servo's target ``-gain
    u / bias[1]``: MuJoCo wraps a ball servo's position error into [-pi, pi))."""
    return _drive(model, q, act, clamped_ctrl(model, ctrl))


def _drive(model: Model, q: Array, act: Array, ctrl: Array) -> tuple[Array, Array]:
    """``actuator_drive`` for controls already clamped."""
    topo = model.topo
    length = model.actuator_moment @ kin_mod.transmission_positions(model, q)
    actadr = np.asarray(topo.actuator_actadr)
    u = ctrl
    if topo.na:
        u = jnp.where(jnp.asarray(actadr >= 0), act[np.maximum(actadr, 0)], ctrl)
    drive = model.actuator_gain * u
    if any(topo.actuator_ball):
        b1 = model.actuator_bias[:, 1]
        servo = jnp.asarray(topo.actuator_ball) & (b1 != 0)
        target = -drive / jnp.where(servo, b1, 1.0)
        wrapped = target - jnp.mod(target - length + jnp.pi, 2 * jnp.pi) + jnp.pi
        length = jnp.where(servo, wrapped, length)
    return drive, length


def actuator_forces(model: Model, q: Array, v: Array, act: Array, ctrl: Array,
                    skip_implicit: bool = False) -> tuple[Array, Array]:
    """Generalized actuator forces and activation derivatives.

    Args:
      q, v: generalized positions and velocities.
      act: (na,) activations; ctrl: (nu,) controls (clamped to ctrlrange if limited).
      skip_implicit: static, leave out the implicit-PD actuators (the step solves
        them as constraint rows, ``contact/rows.py``).

    Returns:
      qfrc_actuator (nv,), act_dot (na,).
    """
    topo = model.topo
    dtype = v.dtype
    if topo.nu == 0:  # nothing to clamp either
        return jnp.zeros_like(v), jnp.zeros((topo.na,), dtype)
    ctrl = clamped_ctrl(model, ctrl)  # also what the activations follow
    drive, length = _drive(model, q, act, ctrl)
    velocity = model.actuator_moment @ v
    actadr = np.asarray(topo.actuator_actadr)
    has_act = actadr >= 0
    bias = model.actuator_bias
    force = drive + bias[:, 0] + bias[:, 1] * length + bias[:, 2] * velocity
    flim = jnp.asarray(topo.actuator_forcelimited)
    force = jnp.where(flim, jnp.clip(force, model.actuator_forcerange[:, 0], model.actuator_forcerange[:, 1]), force)
    if skip_implicit and any(topo.actuator_implicit):
        force = jnp.where(jnp.asarray(topo.actuator_implicit), 0.0, force)
    act_dot = jnp.zeros((topo.na,), dtype)
    if topo.na:
        idx = np.flatnonzero(has_act)
        dyn = np.asarray(topo.actuator_dyntype)[idx]
        a, c, tau = act[actadr[idx]], ctrl[idx], model.actuator_tau[idx]
        filt = (c - a) / jnp.where(jnp.asarray(dyn == DynType.INTEGRATOR), 1.0, tau)
        act_dot = act_dot.at[actadr[idx]].set(jnp.where(jnp.asarray(dyn == DynType.INTEGRATOR), c, filt))
    qfrc = model.actuator_moment.T @ force
    limited = np.flatnonzero(np.asarray(topo.jnt_actfrclimited, bool))
    if limited.size:  # joint-level clamp of the total actuator force (MuJoCo's actuatorfrcrange)
        dof = np.asarray(topo.jnt_dofadr)[limited]
        rng = model.jnt_actfrcrange[limited]
        qfrc = qfrc.at[dof].set(jnp.clip(qfrc[dof], rng[:, 0], rng[:, 1]))
    return qfrc, act_dot


@accepts_explicit_axes
@full_precision
def forward_dynamics_crba(model: Model, kin: Kinematics, tau: Array, bias: Array,
                          extra_diag: Array | float = 0.0) -> Array:
    """(nv,) ``qacc = (M + diag(extra))^-1 (tau - bias)`` by Cholesky."""
    m = mass_matrix(model, kin) + jnp.diag(jnp.broadcast_to(extra_diag, (model.nv,)).astype(tau.dtype))
    return linalg.block_cho_factor(m, dof_blocks(model.topo)).solve(tau - bias)


@accepts_explicit_axes
@full_precision
def forward_dynamics_aba(model: Model, kin: Kinematics, v: Array, tau: Array,
                         extra_diag: Array | float = 0.0, body_vel: Array | None = None,
                         dof_motion_dot: Array | None = None) -> Array:
    """(nv,) forward dynamics by the articulated-body algorithm over the dof tree.

    ``extra_diag`` (nv,) is added to the armature (used for implicit damping).
    """
    p = plan(model.topo)
    nv, dtype = model.nv, v.dtype
    if body_vel is None:
        body_vel, dof_motion_dot = kin_mod.body_velocities(model, kin, v)
    node_body = jnp.asarray(p.node_body, dtype)
    momentum = math.inertia_apply(kin.body_inertia, body_vel)
    ia = math.inertia_matrix(node_body @ kin.body_inertia)  # (nv, 6, 6) articulated inertia
    pa = node_body @ math.force_cross(body_vel, momentum)  # articulated bias force
    s = kin.dof_motion
    c = dof_motion_dot * v[:, None]
    arm = model.dof_armature.astype(dtype) + jnp.broadcast_to(extra_diag, (nv,)).astype(dtype)
    u_vec = jnp.zeros((nv, 6), dtype)
    d = jnp.ones((nv,), dtype)
    u = jnp.zeros((nv,), dtype)
    for level in reversed(p.dof_levels):
        sj = s[level]
        uj = jnp.einsum("jxy,jy->jx", ia[level], sj)
        dj = jnp.sum(sj * uj, -1) + arm[level]
        tj = tau[level] - jnp.sum(sj * pa[level], -1)
        u_vec, d, u = u_vec.at[level].set(uj), d.at[level].set(dj), u.at[level].set(tj)
        parent = p.dof_parent[level]
        has_parent = parent >= 0
        if not np.any(has_parent):
            continue
        lv, par = level[has_parent], parent[has_parent]
        uj, dj, tj = uj[has_parent], dj[has_parent], tj[has_parent]
        i_art = ia[lv] - uj[:, :, None] * uj[:, None, :] / dj[:, None, None]
        p_art = pa[lv] + jnp.einsum("jxy,jy->jx", i_art, c[lv]) + uj * (tj / dj)[:, None]
        ia = ia.at[par].add(i_art)
        pa = pa.at[par].add(p_art)
    acc = jnp.zeros((nv, 6), dtype)
    qacc = jnp.zeros((nv,), dtype)
    a_world = gravity_acceleration(model, dtype)
    for level in p.dof_levels:
        parent = p.dof_parent[level]
        a_par = jnp.where(jnp.asarray(parent >= 0)[:, None], acc[np.maximum(parent, 0)], a_world)
        a_par = a_par + c[level]
        qdd = (u[level] - jnp.sum(u_vec[level] * a_par, -1)) / d[level]
        qacc = qacc.at[level].set(qdd)
        acc = acc.at[level].set(a_par + s[level] * qdd[:, None])
    return qacc


def energy(model: Model, kin: Kinematics, v: Array) -> tuple[Array, Array]:
    """``(kinetic, potential)`` energy in J: ``1/2 v^T M v`` (armature included) and
    the gravitational ``-sum_b m_b g . com_b`` (springs not included)."""
    kinetic = 0.5 * v @ (mass_matrix(model, kin) @ v)
    potential = -jnp.sum(model.body_mass * (kin.body_com_w @ model.opt.gravity.astype(v.dtype)))
    return kinetic, potential
