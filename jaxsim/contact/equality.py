"""Equality constraints as rows (MuJoCo's ``<equality>``): each gives ``k`` rows with a
Jacobian ``J`` (k, nv) and a position error ``e`` (k,) that the rows drive to zero.

  * joint / tendon (k = 1): ``e = x1 - x1_0 - poly(x2 - x2_0)`` with ``poly(d) = c0 +
    c1 d + ... + c4 d^4`` (without a second object ``e = x1 - x1_0 - c0``), ``x`` a
    hinge/slide position or a fixed tendon's length, ``x_0`` its value at ``qpos0``;
    ``J = dx1/dq - poly'(d) dx2/dq``.
  * connect (k = 3): ``e = p1 - p2``, the anchors of the two bodies in the world;
    ``J`` the difference of their point Jacobians.
  * weld (k = 6): the connect rows, then ``s vec(conj(q2) q1)`` with ``q1``, ``q2`` the
    world orientations of the frames held aligned and ``s`` the torque scale; its
    Jacobian is the exact derivative ``s/2 vec(conj(q2) [0, w1 - w2] q1)``. The error
    quaternion is taken with a non-negative scalar part (the shorter rotation).

These are MuJoCo's definitions (``engine_core_constraint.c``), so the rows match
``efc_J`` and ``efc_pos`` of MuJoCo on the same model.

Their impulses are unbounded, so the stage eliminates them exactly instead of handing
them to a contact model's iterative solve (``Elimination``): with ``S = J M^-1 J^T +
R`` it applies the impulse ``p0 = S^-1 (t - J v_free)`` that meets the velocity
target ``t = -e / max(timeconst, dt)``, and every later impulse acts through the
constrained inverse inertia ``W = M^-1 - M^-1 J^T S^-1 J M^-1``, so a contact model
sees the bodies as the equalities hold them together. ``R`` is a regularization
(``SOFT_REGULARIZATION`` times the rows' inverse masses) that keeps ``S`` positive
definite when rows are redundant. Why not as rows of the contact QP: its projected
gradient took 500+ iterations on a double pendulum closed by a connect (the stiff,
unbounded directions of a loop are its worst case), and the error grew every step.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import linalg, math
from jaxsim.kinematics import Kinematics, body_jacobian, point_jacobian, scalar_joint_positions
from jaxsim.types import Model, Topology

Array = jax.Array

ROWS = {"joint": 1, "tendon": 1, "connect": 3, "weld": 6}
SOFT_REGULARIZATION = 1e-6  # compliance of an equality row per unit of its inverse mass


class Elimination(NamedTuple):
    """The equalities solved out of a step (module docstring)."""

    Minv_JT: Array  # (nv, ne) M^-1 J^T of the equality rows
    S_factor: Array  # (ne, ne) Cholesky factor of S = J M^-1 J^T + R
    dv: Array  # (nv,) velocity change of the impulse p0

    def response(self, X: Array, Minv_X: Array) -> Array:
        """``W X`` (nv, k), the velocity change of generalized impulses ``X`` with the
        equalities holding, from ``X`` and ``M^-1 X``."""
        return Minv_X - self.Minv_JT @ linalg.cho_solve(self.S_factor, self.Minv_JT.T @ X)


@functools.lru_cache(maxsize=64)
def equality_sizes(topo: Topology) -> np.ndarray:
    """(neq,) rows per equality (static)."""
    return np.asarray([ROWS[kind] for kind in topo.eq_type], np.int32)


def _scalar(model: Model, kind: str, obj: int, dq: Array) -> tuple[Array, Array]:
    """(x - x_0, dx/dq (nv,)) of a hinge/slide joint or a fixed tendon, from the
    scalar joint displacements ``dq`` (nv,) from ``qpos0``."""
    if kind == "joint":
        row = jnp.zeros((model.nv,), dq.dtype).at[model.topo.jnt_dofadr[obj]].set(1.0)
    else:
        row = model.tendon_coef[obj]
    return row @ dq, row


def _rotation_rows(q2_conj: Array, q1: Array) -> Array:
    """(3, 3) G with ``vec(q2_conj [0, w] q1) = G w``."""
    basis = jnp.concatenate([jnp.zeros((3, 1), q1.dtype), jnp.eye(3, dtype=q1.dtype)], 1)
    return math.quat_mul(math.quat_mul(q2_conj[None], basis), q1[None])[:, 1:].T


def equality_rows(model: Model, kin: Kinematics, q: Array) -> tuple[Array, Array, Array]:
    """The rows of all equalities at configuration ``q`` (nq,) with kinematics ``kin``.

    Returns:
      J (ne, nv), error (ne,) in m, rad or the tendon's unit, timeconst (ne,) s.
    """
    topo, dtype = model.topo, q.dtype
    if not topo.neq:
        return jnp.zeros((0, model.nv), dtype), jnp.zeros((0,), dtype), jnp.zeros((0,), dtype)
    dq = scalar_joint_positions(model, q) - scalar_joint_positions(model, model.qpos0)
    jac, err = [], []
    for e, kind in enumerate(topo.eq_type):
        o1, o2 = topo.eq_obj1[e], topo.eq_obj2[e]
        if kind in ("joint", "tendon"):
            x1, row1 = _scalar(model, kind, o1, dq)
            c = model.eq_polycoef[e]
            if o2 >= 0:
                d, row2 = _scalar(model, kind, o2, dq)
                poly = c[0] + d * (c[1] + d * (c[2] + d * (c[3] + d * c[4])))
                slope = c[1] + d * (2 * c[2] + d * (3 * c[3] + d * 4 * c[4]))
                jac.append((row1 - slope * row2)[None])
                err.append((x1 - poly)[None])
            else:
                jac.append(row1[None])
                err.append((x1 - c[0])[None])
            continue
        anchor = model.eq_anchor[e]
        p1 = kin.body_pos_w[o1] + kin.body_rot_w[o1] @ anchor[0]
        p2 = kin.body_pos_w[o2] + kin.body_rot_w[o2] @ anchor[1]
        jac.append(point_jacobian(model, kin, o1, p1) - point_jacobian(model, kin, o2, p2))
        err.append(p1 - p2)
        if kind == "weld":
            fq = model.eq_frame_quat[e]
            qa = math.quat_mul(kin.body_quat_w[o1], fq[0])
            qb_conj = math.quat_conj(math.quat_mul(kin.body_quat_w[o2], fq[1]))
            rel = math.quat_mul(qb_conj, qa)
            s = jnp.where(rel[0] < 0, -1.0, 1.0).astype(dtype) * model.eq_torquescale[e]
            omega = body_jacobian(model, kin, o1)[:3] - body_jacobian(model, kin, o2)[:3]
            jac.append(0.5 * s * _rotation_rows(qb_conj, qa) @ omega)
            err.append(s * rel[1:])
    timeconst = jnp.repeat(model.eq_timeconst, equality_sizes(topo), total_repeat_length=int(equality_sizes(topo).sum()))
    return jnp.concatenate(jac), jnp.concatenate(err), timeconst


def eliminate(model: Model, kin: Kinematics, q: Array, v_free: Array, factor) -> Elimination:
    """The equalities at configuration ``q`` solved against the contact-free next
    velocity ``v_free`` (nv,), ``factor`` the mass matrix's Cholesky factor."""
    J, err, timeconst = equality_rows(model, kin, q)
    Minv_JT = factor.solve(J.T)
    S = J @ Minv_JT
    S = 0.5 * (S + S.T) + jnp.diag(SOFT_REGULARIZATION * jnp.diag(S))
    S_factor = linalg.cho_factor(S)
    target = -err / jnp.maximum(timeconst, model.opt.timestep)
    p0 = linalg.cho_solve(S_factor, target - J @ v_free)
    return Elimination(Minv_JT, S_factor, Minv_JT @ p0)
