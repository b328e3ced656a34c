"""Generic constraint rows: the stage builds them, every contact model solves them.

A row ``r`` has a Jacobian ``J_r`` (nv,) (its velocity ``J_r v``), a position error
``dist`` (its distance to the constraint surface in the row's own unit, rad or m;
negative when violated) and impulse bounds ``[lower, upper]``. Today's rows:

  * joint limits: every hinge or slide joint with a range gets one row for the limit
    it is nearer to, ``J_r v = s qdot`` (s = +1 at the lower limit, -1 at the
    upper), impulse ``>= 0`` (it only pushes back into the range);
  * tendon limits: every fixed tendon with a range, the same on its length;
  * implicit PD (SPEC section 5, seed 001): every actuator built ``implicit``, a
    position or velocity servo ``force = g u + b0 + b1 L + b2 Ldot`` (``K = -b1 >=
    0``, ``B = -b2 >= 0``, ``K dt + B > 0``), its force evaluated at the step's end,
    ``F = c - (K dt + B) u`` with ``c = g u + b0 + b1 L`` and ``u`` the row velocity
    at the end (``J_r`` = the actuator's moment). With the impulse ``p = F dt``:
    ``u + R p = t``, compliance ``R = 1 / (dt (K dt + B))`` and target ``t = c / (K
    dt + B)``, impulse bounds ``forcerange * dt`` (unbounded without one). These
    rows are ``soft``: every contact model puts ``R`` on their diagonal and ``t``
    as their target (``soft_diagonal``, ``soft_target``) instead of its own limit
    treatment, so the servo is solved together with contacts and limits by
    whichever model is selected.

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

from jaxsim.dynamics import actuator_drive
from jaxsim.kinematics import scalar_joint_positions
from jaxsim.types import JointType, Model, Topology

Array = jax.Array

ROW_TOLERANCE = 1e-6  # rad or m: a row this close to its limit counts as reaching it


class Rows(NamedTuple):
    J: Array  # (nr, nv) row Jacobians (zero where inactive)
    dist: Array  # (nr,) distance to the limit, rad or m (negative: violated); 0 on soft rows
    active: Array  # (nr,) bool
    lower: Array  # (nr,) impulse bounds, N s or N m s
    upper: Array  # (nr,)
    soft: Array | None = None  # (nr,) bool, implicit-PD rows (None: no soft row)
    compliance: Array | None = None  # (nr,) R of the soft rows (1 / (kg m^2) or 1 / kg), else 0
    target: Array | None = None  # (nr,) t of the soft rows (rad/s or m/s), else 0


class RowLayout(NamedTuple):
    """Static description of the rows (numpy)."""

    joints: np.ndarray  # (nj,) limited hinge / slide joints (the first nj rows)
    qposadr: np.ndarray  # (nj,)
    dofadr: np.ndarray  # (nj,)
    tendons: np.ndarray  # (nt,) limited tendons (the next nt rows)
    actuators: np.ndarray  # (na,) implicit-PD actuators (the last na rows)
    body: np.ndarray  # (nj + nt + na,) a body each row acts on (its tree, for relaxation)

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
    # servo rows replace their diagonal (soft_diagonal): like tendons, no relaxation tree
    servos = np.flatnonzero(np.asarray(topo.actuator_implicit, bool)).astype(np.int32)
    body = np.concatenate([jnt_body[ids], np.zeros(len(tendons) + len(servos), np.int32)]).astype(np.int32)
    return RowLayout(ids, np.asarray(topo.jnt_qposadr, np.int32)[ids],
                     np.asarray(topo.jnt_dofadr, np.int32)[ids], tendons, servos, body)


def constraint_rows(model: Model, q: Array, v_free: Array, act: Array | None = None,
                    ctrl: Array | None = None) -> Rows:
    """The rows at configuration ``q`` (nq,), activity judged at the contact-free next
    velocity ``v_free`` (nv,); the implicit-PD rows at activations ``act`` (na,) and
    controls ``ctrl`` (nu,)."""
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
    limits = Rows(jnp.where(active[:, None], J, 0.0), dist, active, jnp.zeros((n,), dtype),
                  jnp.full((n,), jnp.inf, dtype))
    if not len(lay.actuators):
        return limits
    servo = servo_rows(model, lay.actuators, q, act, ctrl)
    zeros, no = jnp.zeros((n,), dtype), jnp.zeros((n,), bool)
    return Rows(*(jnp.concatenate([a, b]) for a, b in zip(limits[:5], servo[:5])),
                soft=jnp.concatenate([no, servo.soft]), compliance=jnp.concatenate([zeros, servo.compliance]),
                target=jnp.concatenate([zeros, servo.target]))


def servo_rows(model: Model, ids: np.ndarray, q: Array, act: Array, ctrl: Array) -> Rows:
    """The soft rows of the implicit-PD actuators ``ids`` (module docstring)."""
    dtype, dt = q.dtype, model.opt.timestep
    moment = model.actuator_moment[ids]  # (na, nv)
    drive, length = actuator_drive(model, q, act, ctrl)
    bias = model.actuator_bias[ids]
    stiff, damp = -bias[:, 1], -bias[:, 2]
    denom = stiff * dt + damp  # > 0 (checked at build)
    c = drive[ids] + bias[:, 0] + bias[:, 1] * length[ids]
    limited = jnp.asarray(np.asarray(model.topo.actuator_forcelimited, bool)[ids])
    inf = jnp.full((len(ids),), jnp.inf, dtype)
    lower = jnp.where(limited, model.actuator_forcerange[ids, 0] * dt, -inf)
    upper = jnp.where(limited, model.actuator_forcerange[ids, 1] * dt, inf)
    on = jnp.ones((len(ids),), bool)
    return Rows(moment, jnp.zeros((len(ids),), dtype), on, lower, upper, soft=on,
                compliance=1.0 / (dt * denom), target=c / denom)


def soft_target(rows: Rows, target: Array) -> Array:
    """(nr,) the rows' lowest allowed velocity at the step's end: a model's own
    ``target`` (m/s or rad/s) on limit rows, ``t`` on the soft rows."""
    return target if rows.soft is None else jnp.where(rows.soft, rows.target, target)


def soft_diagonal(rows: Rows, diag) -> Array:
    """(nr,) what a model adds to the diagonal of its rows: its own ``diag``
    (relaxation, or 0) on limit rows, the compliance ``R`` on the soft rows."""
    if rows.soft is None:
        return jnp.broadcast_to(diag, rows.dist.shape)
    return jnp.where(rows.soft, rows.compliance, diag)
