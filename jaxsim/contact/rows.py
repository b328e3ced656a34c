"""Generic constraint rows: the stage builds them, every contact model solves them.

A row ``r`` has a Jacobian ``J_r`` (nv,) (its velocity ``J_r v``), a position error
``dist`` (its distance to the constraint surface in the row's own unit, rad or m;
negative when violated) and impulse bounds ``[lower, upper]``. Today's rows:

  * joint limits: every hinge or slide joint with a range gets one row for the limit
    it is nearer to, ``J_r v = s qdot`` (s = +1 at the lower limit, -1 at the
    upper), impulse ``>= 0`` (it only pushes back into the range);
  * tendon limits: every fixed tendon with a range, the same on its length.

A row is active when it can reach its limit within the step (``dist < dt |J_r
v_free|``, plus a numerical tolerance ``ROW_TOLERANCE`` in the row's unit), so no
length in metres is compared with an angle. The contact models treat a row like a
contact's normal row: target ``v+ >= -dist/dt`` while inside (the limit may be reached
within the step, not passed), and their own position correction once past it. Ball
joint (cone) limits are not enforced.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.kinematics import scalar_joint_positions
from jaxsim.types import JointType, Model, Topology

Array = jax.Array

ROW_TOLERANCE = 1e-6  # rad or m: a row this close to its limit counts as reaching it


class Rows(NamedTuple):
    J: Array  # (nr, nv) row Jacobians (zero where inactive)
    dist: Array  # (nr,) distance to the limit, rad or m (negative: violated)
    active: Array  # (nr,) bool
    lower: Array  # (nr,) impulse bounds, N s or N m s
    upper: Array  # (nr,)


class RowLayout(NamedTuple):
    """Static description of the rows (numpy)."""

    joints: np.ndarray  # (nj,) limited hinge / slide joints (the first nj rows)
    qposadr: np.ndarray  # (nj,)
    dofadr: np.ndarray  # (nj,)
    tendons: np.ndarray  # (nt,) limited tendons (the next nt rows)
    body: np.ndarray  # (nj + nt,) a body each row acts on (its tree, for relaxation)

    @property
    def n(self) -> int:
        return len(self.body)


@functools.lru_cache(maxsize=64)
def row_layout(topo: Topology) -> RowLayout:
    ids = [j for j in range(topo.njnt) if topo.jnt_limited[j]
           and JointType(topo.jnt_type[j]) in (JointType.HINGE, JointType.SLIDE)]
    ids = np.asarray(ids, np.int32)
    tendons = np.asarray([t for t in range(topo.ntendon) if topo.tendon_limited[t]], np.int32)
    # a tendon's joints are data (tendon_coef), not topology: its rows are given the
    # world (no relaxation weight of their own, contact/point.py)
    jnt_body = np.asarray(topo.jnt_body, np.int32).reshape(-1)
    body = np.concatenate([jnt_body[ids], np.zeros(len(tendons), np.int32)]).astype(np.int32)
    return RowLayout(ids, np.asarray(topo.jnt_qposadr, np.int32)[ids],
                     np.asarray(topo.jnt_dofadr, np.int32)[ids], tendons, body)


def constraint_rows(model: Model, q: Array, v_free: Array) -> Rows:
    """The rows at configuration ``q`` (nq,), activity judged at the contact-free next
    velocity ``v_free`` (nv,)."""
    lay = row_layout(model.topo)
    dtype = q.dtype
    lo, hi = model.jnt_range[lay.joints, 0], model.jnt_range[lay.joints, 1]
    x = q[lay.qposadr]
    e = jnp.zeros((len(lay.joints), model.nv), dtype).at[np.arange(len(lay.joints)), lay.dofadr].set(1.0)
    if len(lay.tendons):
        coef = model.tendon_coef[lay.tendons]  # (nt, nv): length = coef . scalar joint positions
        scalar_q = scalar_joint_positions(model, q)
        lo = jnp.concatenate([lo, model.tendon_range[lay.tendons, 0]])
        hi = jnp.concatenate([hi, model.tendon_range[lay.tendons, 1]])
        x = jnp.concatenate([x, coef @ scalar_q])
        e = jnp.concatenate([e, coef])
    lower_side = (x - lo) <= (hi - x)
    dist = jnp.where(lower_side, x - lo, hi - x)
    sign = jnp.where(lower_side, 1.0, -1.0).astype(dtype)
    J = sign[:, None] * e
    reach = model.opt.timestep * jnp.abs(J @ v_free) + ROW_TOLERANCE
    active = dist < reach
    n = dist.shape[0]
    return Rows(jnp.where(active[:, None], J, 0.0), dist, active, jnp.zeros((n,), dtype),
                jnp.full((n,), jnp.inf, dtype))

