"""Contact-space operators: ``v+ = A df + b``.

For the ``m = ncon`` contact slots (three rows each: normal, tangent 1, tangent 2 of
the slot's ``frame_w``) the contact Jacobian ``J`` (3m, nv) maps generalized
velocities to the velocity of geom2's contact point relative to geom1's, in the
contact frame; impulses ``df`` act on geom2 (and the opposite on geom1). Then

    A = J M^-1 J^T  (3m, 3m),   b = J v_free = J (v + dt M^-1 (tau - c)) = a0 dt + v-

built densely from the mass matrix's Cholesky factor (CRBA). Inactive slots get zero
rows, so they exert nothing and see nothing.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import linalg
from jaxsim.collision.pairs import pair_plan
from jaxsim.kinematics import Kinematics, plan
from jaxsim.types import Contacts, Model, Topology

Array = jax.Array


class SlotInfo(NamedTuple):
    """Static per-slot indices (numpy)."""

    geom1: np.ndarray  # (ncon,)
    geom2: np.ndarray
    body1: np.ndarray
    body2: np.ndarray
    groups: tuple  # ((first slot, npair, nslot), ...) contiguous blocks of one pair kind
    pair: np.ndarray  # (ncon,) row of the pair table
    mode: np.ndarray  # (ncon,) ContactMode of that pair


@functools.lru_cache(maxsize=64)
def slot_info(topo: Topology) -> SlotInfo:
    pp = pair_plan(topo)
    g1 = np.concatenate([np.repeat(g.geom1, g.nslot) for g in pp.groups] or [np.zeros(0, int)])
    g2 = np.concatenate([np.repeat(g.geom2, g.nslot) for g in pp.groups] or [np.zeros(0, int)])
    body = np.asarray(topo.geom_body, np.int32)  # int even with no geom
    groups = tuple((int(g.slot0[0]), len(g.geom1), g.nslot) for g in pp.groups)
    per_slot = lambda f: np.concatenate([np.repeat(f(g), g.nslot) for g in pp.groups] or [np.zeros(0, int)])  # noqa: E731
    return SlotInfo(g1.astype(np.int32), g2.astype(np.int32), body[g1], body[g2], groups,
                    per_slot(lambda g: g.pair).astype(np.int32), per_slot(lambda g: g.mode).astype(np.int32))


def _point_jacobians(model: Model, kin: Kinematics, bodies, point_w: Array) -> Array:
    """(ncon, 3, nv) world-velocity Jacobians of points fixed to ``bodies`` (ncon,)."""
    mask = jnp.asarray(plan(model.topo).body_dof, point_w.dtype)[bodies]  # (ncon, nv)
    s = kin.dof_motion  # (nv, 6) about each body's tree reference point
    r = point_w - kin.body_ref_w[bodies]  # (ncon, 3)
    lin = s[None, :, 3:] + jnp.cross(s[None, :, :3], r[:, None, :])  # (ncon, nv, 3)
    return jnp.swapaxes(lin * mask[..., None], 1, 2)


def _angular_jacobians(model: Model, kin: Kinematics, bodies) -> Array:
    """(ncon, 3, nv) Jacobians of the world angular velocities of ``bodies`` (ncon,)."""
    mask = jnp.asarray(plan(model.topo).body_dof, kin.dof_motion.dtype)[bodies]
    return jnp.swapaxes(kin.dof_motion[None, :, :3] * mask[..., None], 1, 2)


def contact_jacobian(model: Model, kin: Kinematics, contacts: Contacts, body1, body2,
                     angular: bool = False) -> Array:
    """(ncon, R, nv) Jacobian of geom2's point velocity relative to geom1's, in each
    slot's contact frame (rows: normal, tangent 1, tangent 2); zero for inactive slots.
    ``body1``, ``body2`` (ncon,): the bodies of the slots' geoms. ``angular`` (static):
    R = 6, the relative angular velocity in the same frame follows."""
    j2 = _point_jacobians(model, kin, body2, contacts.pos_w)
    j1 = _point_jacobians(model, kin, body1, contacts.pos_w)
    jac = j2 - j1
    if angular:
        jac = jnp.concatenate([jac, _angular_jacobians(model, kin, body2) - _angular_jacobians(model, kin, body1)],
                              1)
        f = contacts.frame_w
        frame = jnp.zeros(f.shape[:-2] + (6, 6), f.dtype).at[..., :3, :3].set(f).at[..., 3:, 3:].set(f)
    else:
        frame = contacts.frame_w
    jac = linalg.block_apply(frame, jac)
    return jnp.where(contacts.active[:, None, None], jac, 0.0)


class ContactSpace(NamedTuple):
    J: Array  # (3m, nv)
    Minv_JT: Array  # (nv, 3m)
    A: Array  # (3m, 3m)
    b: Array  # (3m,) m/s, contact velocities after the step without contact impulses
    # (3m, nv) J L^-T with L L^T = M, so that A = J_Lt J_Lt^T; None with equality
    # constraints (A is then J W J^T, W the constrained inverse inertia)
    J_Lt: Array | None = None


def contact_space(jac: Array, mass_factor, v_free: Array, equalities=None) -> ContactSpace:
    """The contact-space operators (``v+ = A df + b``) from the Jacobian ((ncon, 3, nv)
    or rows (k, nv)), the Cholesky factor of M (``jaxsim.linalg.BlockCholesky``) and
    the contact-free next velocity; with ``equalities`` (``equality.Elimination``)
    ``M^-1`` is the constrained inverse inertia ``W`` (``v_free`` then already holds
    them)."""
    J = jac.reshape(-1, jac.shape[-1])
    half = mass_factor.solve_lower(J.T)  # L^-1 J^T
    minv_jt = mass_factor.solve_lower_t(half)
    J_Lt = half.T
    if equalities is not None:
        minv_jt, J_Lt = equalities.response(J.T, minv_jt), None
    A = J @ minv_jt
    return ContactSpace(J, minv_jt, 0.5 * (A + A.T), J @ v_free, J_Lt)


def block_diagonal(blocks: Array, nr: int) -> Array:
    """Block-diagonal ``(rows m + nr, cols m + nr)``: the slots' blocks ``(m, rows, cols)``, then the
    identity on the nr generic rows (built by broadcasting: a scatter is a separate
    kernel on CPU). The volume model's levers and Springhead's frame turns."""
    m, rows, cols = blocks.shape
    dtype = blocks.dtype
    diag = (jnp.eye(m, dtype=dtype)[:, None, :, None] * blocks[:, :, None, :]).reshape(rows * m, cols * m)
    return jnp.block([[diag, jnp.zeros((rows * m, nr), dtype)],
                      [jnp.zeros((nr, cols * m), dtype), jnp.eye(nr, dtype=dtype)]])
