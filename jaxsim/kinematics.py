"""Forward kinematics, body velocities and Jacobians.

Design: every dof is a node of a *dof tree* whose parent is the previous dof on the
path to the world (a body with several joints, or a ball / free joint, makes a short
chain of dof nodes). Each dof has a motion vector ``dof_motion`` (6,) in world
orientation about its tree's reference point (MuJoCo's ``cdof``), so body velocities,
the mass matrix and bias forces become masked dense products (fast under ``vmap`` and
on GPUs), and ABA runs over the levels of the dof tree.

Positions are computed level by level over the body tree, with the joints of each body
applied in order, grouped by joint type with static index arrays (no per-body Python
loop in the trace).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.precision import full_precision
from jaxsim.types import JointType, Model, Topology, pytree_dataclass

Array = jax.Array


class Plan(NamedTuple):
    """Static index arrays derived from a Topology (NumPy, built once per topology)."""

    body_levels: tuple  # body ids per depth >= 1
    body_slot_jnt: np.ndarray  # (nbody, K) joint in slot k, njnt = none
    body_is_free: np.ndarray  # (nbody,) bool
    body_root: np.ndarray  # (nbody,) root body of the kinematic tree (0 for the world)
    jnt_of_type: dict  # JointType -> joint ids
    jnt_parent_body: np.ndarray  # (njnt,)
    dof_jnt: np.ndarray  # (nv,)
    dof_body: np.ndarray  # (nv,)
    dof_is_rot: np.ndarray  # (nv,) bool
    dof_axis_src: np.ndarray  # (nv,) row of [jnt_axis_w; body axes; world axes]
    dof_parent: np.ndarray  # (nv,) dof-tree parent, -1 for the world
    dof_levels: tuple  # dof ids per dof-tree depth
    dof_scalar_qadr: np.ndarray  # (nv,) qpos address of hinge/slide dofs, -1 otherwise
    body_node: np.ndarray  # (nbody,) last dof on the body's path, -1 if none
    body_dof: np.ndarray  # (nbody, nv) float: dof j moves body b
    dof_anc: np.ndarray  # (nv, nv) float: [i, j] dof i is dof j or an ancestor of it
    dof_velref: np.ndarray  # (nv, nv) float: [j, i] dof i's velocity enters dof j's cdot
    node_body: np.ndarray  # (nv, nbody) float: body b hangs on dof node j


@functools.lru_cache(maxsize=64)
def plan(topo: Topology) -> Plan:
    nbody, njnt, nv = topo.nbody, topo.njnt, topo.nv
    parent = np.asarray(topo.body_parent)
    depth = np.zeros(nbody, int)
    for b in range(1, nbody):
        depth[b] = depth[parent[b]] + 1
    levels = tuple(np.flatnonzero(depth == d) for d in range(1, depth.max(initial=0) + 1))
    k_max = max([1] + list(topo.body_jntnum))
    slot = np.full((nbody, k_max), njnt, dtype=np.int32)
    for b in range(nbody):
        for k in range(topo.body_jntnum[b]):
            slot[b, k] = topo.body_jntadr[b] + k
    jtype = np.asarray(topo.jnt_type, dtype=int)
    is_free = np.zeros(nbody, bool)
    for j in np.flatnonzero(jtype == JointType.FREE):
        is_free[topo.jnt_body[j]] = True
    root = np.zeros(nbody, int)
    for b in range(1, nbody):
        root[b] = b if parent[b] == 0 else root[parent[b]]

    dof_jnt, dof_body, dof_rot, axis_src, velref_start = [], [], [], [], []
    dof_scalar_qadr = []
    body_axis0 = njnt  # body b's column k of rot_wb is row njnt + 3 b + k
    world_axis0 = njnt + 3 * nbody
    for j in range(njnt):
        b, t, d0 = topo.jnt_body[j], jtype[j], topo.jnt_dofadr[j]
        if t in (JointType.HINGE, JointType.SLIDE):
            dof_jnt.append(j), dof_body.append(b), dof_rot.append(t == JointType.HINGE)
            axis_src.append(j), velref_start.append(d0), dof_scalar_qadr.append(topo.jnt_qposadr[j])
            continue
        if t == JointType.FREE:
            for k in range(3):
                dof_jnt.append(j), dof_body.append(b), dof_rot.append(False)
                axis_src.append(world_axis0 + k), velref_start.append(d0), dof_scalar_qadr.append(-1)
        rot0 = d0 + (3 if t == JointType.FREE else 0)
        for k in range(3):  # ball and free rotation: body-frame axes, cdot from before the group
            dof_jnt.append(j), dof_body.append(b), dof_rot.append(True)
            axis_src.append(body_axis0 + 3 * b + k), velref_start.append(rot0), dof_scalar_qadr.append(-1)

    # dof tree: previous dof of the same body, else the last dof above the body
    body_node = np.full(nbody, -1)
    dof_parent = np.full(nv, -1)
    for b in range(1, nbody):
        above = body_node[parent[b]]
        n = topo.body_jntnum[b]
        if n == 0:
            body_node[b] = above
            continue
        first = topo.jnt_dofadr[topo.body_jntadr[b]]
        last_j = topo.body_jntadr[b] + n - 1
        last = topo.jnt_dofadr[last_j] + JointType(jtype[last_j]).nv - 1
        for d in range(first, last + 1):
            dof_parent[d] = above if d == first else d - 1
        body_node[b] = last
    dof_depth = np.zeros(nv, int)
    for d in range(nv):
        dof_depth[d] = 0 if dof_parent[d] < 0 else dof_depth[dof_parent[d]] + 1
    dof_levels = tuple(np.flatnonzero(dof_depth == k) for k in range(dof_depth.max(initial=-1) + 1))

    anc = np.zeros((nv, nv))
    for j in range(nv):
        i = j
        while i >= 0:
            anc[i, j] = 1.0
            i = dof_parent[i]
    body_dof = np.zeros((nbody, nv))
    node_body = np.zeros((nv, nbody))
    for b in range(1, nbody):
        if body_node[b] >= 0:
            body_dof[b] = anc[:, body_node[b]]
            node_body[body_node[b], b] = 1.0
    velref = np.zeros((nv, nv))
    for j in range(nv):
        start = velref_start[j]
        if not dof_rot[j] and jtype[dof_jnt[j]] == JointType.FREE:
            continue  # translation axes are fixed in the world: no cdot
        # every ancestor strictly before the joint group's start (or before j itself)
        for i in range(nv):
            if anc[i, j] and i < start:
                velref[j, i] = 1.0
        if jtype[dof_jnt[j]] in (JointType.HINGE, JointType.SLIDE):
            velref[j, j] = 0.0
    jnt_parent_body = np.asarray([parent[topo.jnt_body[j]] for j in range(njnt)], dtype=int)
    return Plan(
        body_levels=levels, body_slot_jnt=slot, body_is_free=is_free, body_root=root,
        jnt_of_type={t: np.flatnonzero(jtype == t) for t in JointType},
        jnt_parent_body=jnt_parent_body,
        dof_jnt=np.asarray(dof_jnt, int), dof_body=np.asarray(dof_body, int),
        dof_is_rot=np.asarray(dof_rot, bool), dof_axis_src=np.asarray(axis_src, int),
        dof_parent=dof_parent, dof_levels=dof_levels,
        dof_scalar_qadr=np.asarray(dof_scalar_qadr, int),
        body_node=body_node, body_dof=body_dof, dof_anc=anc, dof_velref=velref,
        node_body=node_body,
    )


@functools.lru_cache(maxsize=64)
def dof_blocks(topo: Topology) -> tuple[tuple[int, int], ...]:
    """Static ``(first dof, dof count)`` of every kinematic tree, in dof order: the
    diagonal blocks that hold all of the mass matrix (trees do not share inertia).
    One block of all dofs when some tree's dofs are not contiguous."""
    p = plan(topo)
    tree = p.body_root[p.dof_body]
    if tree.size == 0:
        return ((0, 0),)
    starts = np.flatnonzero(np.r_[True, tree[1:] != tree[:-1]])
    if len(starts) != len(np.unique(tree)):  # a tree in pieces
        return ((0, int(tree.size)),)
    sizes = np.diff(np.r_[starts, tree.size])
    return tuple((int(a), int(n)) for a, n in zip(starts, sizes))


@pytree_dataclass
class Kinematics:
    """Poses and motion subspaces at one configuration (world frame ``_w``).

    Attributes:
      body_pos_w: (nbody, 3) m, body frame origins.
      body_quat_w: (nbody, 4) body orientations.
      body_rot_w: (nbody, 3, 3) ``rot_wb``.
      body_com_w: (nbody, 3) m, centres of mass.
      body_ref_w: (nbody, 3) m, reference point of each body's tree (tree root origin).
      body_inertia: (nbody, 6, 6) spatial inertia about ``body_ref_w``.
      jnt_anchor_w: (njnt, 3) m; jnt_axis_w: (njnt, 3).
      dof_motion: (nv, 6) motion vector of each dof about its body's reference point.
      geom_pos_w: (ngeom, 3) m; geom_rot_w: (ngeom, 3, 3).
    """

    body_pos_w: Array
    body_quat_w: Array
    body_rot_w: Array
    body_com_w: Array
    body_ref_w: Array
    body_inertia: Array
    jnt_anchor_w: Array
    jnt_axis_w: Array
    dof_motion: Array
    geom_pos_w: Array
    geom_rot_w: Array


def _compose(t1, q1, t2, q2):
    """(t1, q1) o (t2, q2): apply frame 2 expressed in frame 1."""
    return t1 + math.quat_rotate(q1, t2), math.quat_mul(q1, q2)


def _joint_transforms(model: Model, q: Array, p: Plan):
    """Per-joint transform of the body frame, in the frame before the joint.

    Returns (njnt + 1, 3) translations and (njnt + 1, 4) quaternions; the extra last
    row is the identity (padding for bodies with fewer joints).
    """
    topo = model.topo
    dtype = q.dtype
    t = jnp.zeros((topo.njnt + 1, 3), dtype)
    r = jnp.zeros((topo.njnt + 1, 4), dtype).at[:, 0].set(1.0)
    qadr = np.asarray(topo.jnt_qposadr, int)
    for jt in (JointType.HINGE, JointType.SLIDE):
        js = p.jnt_of_type[jt]
        if js.size == 0:
            continue
        theta = q[qadr[js]] - model.qpos0[qadr[js]]
        axis, anchor = model.jnt_axis[js], model.jnt_pos[js]
        if jt == JointType.HINGE:
            rq = math.axis_angle_to_quat(axis, theta)
            t = t.at[js].set(anchor - math.quat_rotate(rq, anchor))
            r = r.at[js].set(rq)
        else:
            t = t.at[js].set(axis * theta[:, None])
    js = p.jnt_of_type[JointType.BALL]
    if js.size:
        rq = math.normalize(q[qadr[js][:, None] + np.arange(4)])
        anchor = model.jnt_pos[js]
        t = t.at[js].set(anchor - math.quat_rotate(rq, anchor))
        r = r.at[js].set(rq)
    js = p.jnt_of_type[JointType.FREE]
    if js.size:
        t = t.at[js].set(q[qadr[js][:, None] + np.arange(3)])
        r = r.at[js].set(math.normalize(q[qadr[js][:, None] + 3 + np.arange(4)]))
    return t, r


@accepts_explicit_axes
@full_precision
def forward_kinematics(model: Model, q: Array) -> Kinematics:
    """Poses of bodies, joints and geoms, spatial inertias and dof motion vectors.

    Args:
      model: the Model.
      q: (nq,) generalized positions.
    """
    topo, p = model.topo, plan(model.topo)
    dtype = q.dtype
    jt, jr = _joint_transforms(model, q, p)

    # body frame relative to its parent: fixed offset, then its joints in order.
    # A free joint's pose is absolute (its parent is the world), so it has no offset.
    free = jnp.asarray(p.body_is_free)[:, None]
    loc_t = jnp.where(free, 0.0, model.body_pos).astype(dtype)
    loc_r = jnp.where(free, jnp.array([1.0, 0, 0, 0], dtype), model.body_quat).astype(dtype)
    pre_t = jnp.zeros((topo.njnt + 1, 3), dtype)
    pre_r = jnp.zeros((topo.njnt + 1, 4), dtype)
    for k in range(p.body_slot_jnt.shape[1]):
        js = p.body_slot_jnt[:, k]
        pre_t, pre_r = pre_t.at[js].set(loc_t), pre_r.at[js].set(loc_r)
        loc_t, loc_r = _compose(loc_t, loc_r, jt[js], jr[js])

    pos = jnp.zeros((topo.nbody, 3), dtype)
    quat = jnp.zeros((topo.nbody, 4), dtype).at[:, 0].set(1.0)
    parent = np.asarray(topo.body_parent)
    for bs in p.body_levels:
        t, r = _compose(pos[parent[bs]], quat[parent[bs]], loc_t[bs], loc_r[bs])
        pos, quat = pos.at[bs].set(t), quat.at[bs].set(math.normalize(r))
    rot = math.quat_to_mat(quat)

    # joint anchors and axes in the frame just before each joint
    jb = p.jnt_parent_body
    nj = topo.njnt
    f_t, f_r = _compose(pos[jb], quat[jb], pre_t[:nj], pre_r[:nj])
    anchor = f_t + math.quat_rotate(f_r, model.jnt_pos)
    axis = math.quat_rotate(f_r, model.jnt_axis)
    free_j = p.jnt_of_type[JointType.FREE]
    if free_j.size:
        anchor = anchor.at[free_j].set(pos[np.asarray(topo.jnt_body)[free_j]])

    ref = pos[p.body_root]  # world body: its own origin (0)
    com = pos + jnp.einsum("bij,bj->bi", rot, model.body_com)
    rot_wi = rot @ math.quat_to_mat(model.body_iquat)  # principal axes in the world
    inertia_w = (rot_wi * model.body_inertia[:, None, :]) @ jnp.swapaxes(rot_wi, -1, -2)
    inertia = math.inertia_compact(model.body_mass, com - ref, inertia_w)

    # dof motion vectors
    table = jnp.concatenate([axis, jnp.swapaxes(rot, -1, -2).reshape(-1, 3), jnp.eye(3, dtype=dtype)])
    d_axis = table[p.dof_axis_src]
    d_point = anchor[p.dof_jnt] - ref[p.dof_body]
    rot_dof = jnp.asarray(p.dof_is_rot)[:, None]
    dof_motion = jnp.concatenate(
        [jnp.where(rot_dof, d_axis, 0.0), jnp.where(rot_dof, jnp.cross(d_point, d_axis), d_axis)], -1)

    gb = np.asarray(topo.geom_body, int)
    geom_pos = pos[gb] + jnp.einsum("gij,gj->gi", rot[gb], model.geom_pos)
    geom_rot = rot[gb] @ math.quat_to_mat(model.geom_quat)
    return Kinematics(body_pos_w=pos, body_quat_w=quat, body_rot_w=rot, body_com_w=com,
                      body_ref_w=ref, body_inertia=inertia, jnt_anchor_w=anchor,
                      jnt_axis_w=axis, dof_motion=dof_motion, geom_pos_w=geom_pos,
                      geom_rot_w=geom_rot)


@accepts_explicit_axes
@full_precision
def body_velocities(model: Model, kin: Kinematics, v: Array) -> tuple[Array, Array]:
    """Body spatial velocities and the time derivative of the dof motion vectors.

    Returns:
      body_vel: (nbody, 6) ``[omega; v_ref]`` of each body about its reference point.
      dof_motion_dot: (nv, 6) MuJoCo's ``cdof_dot``.
    """
    p = plan(model.topo)
    sv = kin.dof_motion * v[:, None]
    body_vel = jnp.asarray(p.body_dof, v.dtype) @ sv
    ref_vel = jnp.asarray(p.dof_velref, v.dtype) @ sv
    return body_vel, math.motion_cross(ref_vel, kin.dof_motion)


@accepts_explicit_axes
@full_precision
def point_jacobian(model: Model, kin: Kinematics, body: int, point_w: Array) -> Array:
    """(3, nv) Jacobian of the world velocity of a point fixed to ``body``.

    Args:
      body: body id (static int).
      point_w: (3,) point in world coordinates, m.
    """
    mask = jnp.asarray(plan(model.topo).body_dof[body], point_w.dtype)
    s = kin.dof_motion * mask[:, None]
    r = point_w - kin.body_ref_w[body]
    return (s[:, 3:] + jnp.cross(s[:, :3], r)).T


@accepts_explicit_axes
@full_precision
def body_jacobian(model: Model, kin: Kinematics, body: int) -> Array:
    """(6, nv) Jacobian of ``[omega; v_origin]`` of ``body``'s frame, world orientation."""
    mask = jnp.asarray(plan(model.topo).body_dof[body], kin.dof_motion.dtype)
    s = kin.dof_motion * mask[:, None]
    r = kin.body_pos_w[body] - kin.body_ref_w[body]
    return jnp.concatenate([s[:, :3], s[:, 3:] + jnp.cross(s[:, :3], r)], -1).T


def transmission_positions(model: Model, q: Array) -> Array:
    """(nv,) what actuator transmissions measure, per dof: hinge/slide positions, a
    ball joint's rotation vector (axis * angle, MuJoCo's convention: an actuator's
    length on a ball joint is ``gear . rotvec``), 0 on free joints."""
    x = scalar_joint_positions(model, q)
    topo = model.topo
    balls = [j for j in range(topo.njnt) if JointType(topo.jnt_type[j]) == JointType.BALL]
    if not balls:
        return x
    qadr = np.asarray(topo.jnt_qposadr)[balls]
    dadr = np.asarray(topo.jnt_dofadr)[balls]
    quats = q[qadr[:, None] + np.arange(4)]
    return x.at[(dadr[:, None] + np.arange(3)).reshape(-1)].set(math.quat_to_rotvec(quats).reshape(-1))


def scalar_joint_positions(model: Model, q: Array) -> Array:
    """(nv,) hinge/slide positions at their dof index, 0 for ball/free dofs (the space
    in which tendons and actuator transmissions are linear)."""
    qadr = plan(model.topo).dof_scalar_qadr
    return jnp.where(jnp.asarray(qadr >= 0), q[np.maximum(qadr, 0)], 0.0)
