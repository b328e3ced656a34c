"""Generic constraint rows: the stage builds them, every contact model solves them.

A row ``r`` has a Jacobian ``J_r`` (nv,) (its velocity ``J_r v``), a position error
``dist`` (its distance to the constraint surface in the row's own unit, rad or m;
negative when violated) and impulse bounds ``[lower, upper]``. Limit rows:

  * joint limits: every hinge or slide joint with a range gets one row for the limit
    it is nearer to, ``J_r v = s qdot`` (s = +1 at the lower limit, -1 at the
    upper), impulse ``>= 0`` (it only pushes back into the range);
  * ball-joint limits (MuJoCo's cone): the rotation angle ``|rotvec|`` stays below
    ``max(range)``, ``J_r v = -a . omega`` with ``a`` the rotation axis;
  * tendon limits: every fixed tendon with a range, the same on its length.

A limit row is active when it can reach its limit within the step (``dist < dt |J_r
v_free|``, plus a numerical tolerance ``ROW_TOLERANCE`` in the row's unit), so no
length in metres is compared with an angle. The contact models treat it like a
contact's normal row: target ``v+ >= -dist/dt`` while inside (the limit may be reached
within the step, not passed), and their own position correction once past it.

Soft rows ``u + R p = t`` (row velocity ``u`` at the step's end, impulse ``p``,
compliance ``R``, target ``t``) are always active: every contact model puts ``R`` on
their diagonal and ``t`` as their target (``soft_diagonal``, ``soft_target``) instead
of its own limit treatment, so they are solved together with contacts and limits by
whichever model is selected:

  * friction loss (MuJoCo's ``frictionloss``): one row per dof that has one, ``t =
    0``, impulse within ``+-frictionloss dt``: the joint stays still unless the rest
    of the step pushes it harder than the loss;
  * implicit PD (the implicit PD paper): every actuator built ``implicit``, a
    position or velocity servo ``force = g u + b0 + b1 L + b2 Ldot`` (``K = -b1 >=
    0``, ``B = -b2 >= 0``, ``K dt + B > 0``), its force evaluated at the step's end,
    ``F = c - (K dt + B) u`` with ``c = g u + b0 + b1 L`` and ``u`` the row velocity
    at the end (``J_r`` = the actuator's moment). With the impulse ``p = F dt``:
    ``R = 1 / (dt (K dt + B))``, ``t = c / (K dt + B)``, impulse bounds
    ``forcerange * dt`` (unbounded without one).

Friction-loss rows are meant to hold exactly: their ``R`` is only a regularization
(``SOFT_REGULARIZATION`` times the row's inverse mass). Equalities are not rows of the
solve: the stage eliminates them exactly (``contact/equality.py``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.dynamics import actuator_drive
from jaxsim.kinematics import scalar_joint_positions
from jaxsim.types import JointType, Model, Topology

Array = jax.Array

ROW_TOLERANCE = 1e-6  # rad or m: a row this close to its limit counts as reaching it
SOFT_REGULARIZATION = 1e-6  # friction-loss compliance per unit inverse mass


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
    """Static description of the rows (numpy), in their order: limit rows (hinge /
    slide joints, ball joints, tendons), then soft rows (friction loss, implicit-PD
    actuators)."""

    joints: np.ndarray  # (nj,) limited hinge / slide joints
    qposadr: np.ndarray  # (nj,)
    dofadr: np.ndarray  # (nj,)
    balls: np.ndarray  # (nb,) limited ball joints
    tendons: np.ndarray  # (nt,) limited tendons
    friction_dofs: np.ndarray  # (nf,) dofs with friction loss
    actuators: np.ndarray  # (na,) implicit-PD actuators
    body: np.ndarray  # (nr,) a body each row acts on (its tree, for relaxation; 0: none)

    @property
    def n(self) -> int:
        return len(self.body)


@functools.lru_cache(maxsize=64)
def row_layout(topo: Topology) -> RowLayout:
    limited = lambda kinds: np.asarray([j for j in range(topo.njnt) if topo.jnt_limited[j]  # noqa: E731
                                        and JointType(topo.jnt_type[j]) in kinds], np.int32)
    ids, balls = limited((JointType.HINGE, JointType.SLIDE)), limited((JointType.BALL,))
    tendons = np.asarray([t for t in range(topo.ntendon) if topo.tendon_limited[t]], np.int32)
    friction = np.flatnonzero(np.asarray(topo.dof_frictional, bool)).astype(np.int32)
    servos = np.flatnonzero(np.asarray(topo.actuator_implicit, bool)).astype(np.int32)
    # a tendon's joints are data (tendon_coef), not topology: its rows are given the
    # world (no relaxation weight of their own, contact/point.py); soft rows replace
    # their diagonal (soft_diagonal): no relaxation tree either
    jnt_body = np.asarray(topo.jnt_body, np.int32).reshape(-1)
    body = np.concatenate([jnt_body[ids], jnt_body[balls],
                           np.zeros(len(tendons) + len(friction) + len(servos), np.int32)]).astype(np.int32)
    return RowLayout(ids, np.asarray(topo.jnt_qposadr, np.int32)[ids], np.asarray(topo.jnt_dofadr, np.int32)[ids],
                     balls, tendons, friction, servos, body)


def servo_elimination(topo: Topology, nr: int, offset: int = 0) -> dict:
    """``qp.solve``'s ``eliminate`` and ``check_bounds`` for a QP holding a problem's
    ``nr`` rows after ``offset`` contact variables: the implicit-PD rows, minimised out
    exactly before iterating, their bounds checked after where any servo has a force
    limit. Nothing to eliminate where the problem does not hold every row."""
    lay = row_layout(topo)
    if nr != lay.n:
        return {"eliminate": (), "check_bounds": False}
    limited = np.asarray(topo.actuator_forcelimited, bool)[lay.actuators]
    first = offset + lay.n - len(lay.actuators)
    return {"eliminate": tuple(range(first, offset + lay.n)), "check_bounds": bool(limited.any())}


def _limit_rows(model: Model, lay: RowLayout, q: Array, v_free: Array) -> Rows:
    """Hinge / slide / tendon limits (the nearer side) and ball-joint cones."""
    dtype, nv = q.dtype, model.nv
    lo, hi = model.jnt_range[lay.joints, 0], model.jnt_range[lay.joints, 1]
    x = q[lay.qposadr]
    e = jnp.zeros((len(lay.joints), nv), dtype).at[np.arange(len(lay.joints)), lay.dofadr].set(1.0)
    if len(lay.tendons):
        coef = model.tendon_coef[lay.tendons]  # (nt, nv): length = coef . scalar joint positions
        lo = jnp.concatenate([lo, model.tendon_range[lay.tendons, 0]])
        hi = jnp.concatenate([hi, model.tendon_range[lay.tendons, 1]])
        x = jnp.concatenate([x, coef @ scalar_joint_positions(model, q)])
        e = jnp.concatenate([e, coef])
    lower_side = (x - lo) <= (hi - x)
    dist = jnp.where(lower_side, x - lo, hi - x)
    J = jnp.where(lower_side, 1.0, -1.0).astype(dtype)[:, None] * e
    if len(lay.balls):
        # MuJoCo's ball limit: the rotation angle stays below max(range); the row
        # velocity is minus the angular velocity along the rotation axis
        qadr, dadr = np.asarray(model.topo.jnt_qposadr)[lay.balls], np.asarray(model.topo.jnt_dofadr)[lay.balls]
        rotvec = math.quat_to_rotvec(q[qadr[:, None] + np.arange(4)])
        angle = math.safe_norm(rotvec)
        axis = rotvec / jnp.maximum(angle, 1e-12)[:, None]
        cols = dadr[:, None] + np.arange(3)
        Jb = jnp.zeros((len(lay.balls), nv), dtype).at[np.arange(len(lay.balls))[:, None], cols].set(-axis)
        dist = jnp.concatenate([dist[:len(lay.joints)], jnp.max(model.jnt_range[lay.balls], -1) - angle,
                                dist[len(lay.joints):]])
        J = jnp.concatenate([J[:len(lay.joints)], Jb, J[len(lay.joints):]])
    reach = model.opt.timestep * jnp.abs(J @ v_free) + ROW_TOLERANCE
    active = dist < reach
    n = dist.shape[0]
    return Rows(jnp.where(active[:, None], J, 0.0), dist, active, jnp.zeros((n,), dtype),
                jnp.full((n,), jnp.inf, dtype))


def _hard_soft_rows(J: Array, target: Array, lower: Array, upper: Array, factor) -> Rows:
    """Soft rows meant to hold exactly (friction loss): their compliance is only
    ``SOFT_REGULARIZATION`` times their inverse mass ``J M^-1 J^T``, which keeps the
    solve and its adjoint regular when rows are redundant."""
    inv_mass = jnp.sum(jnp.square(factor.solve_lower(J.T)), 0)
    on = jnp.ones(target.shape, bool)
    return Rows(J, jnp.zeros_like(target), on, lower, upper, soft=on,
                compliance=SOFT_REGULARIZATION * inv_mass, target=target)


def constraint_rows(model: Model, q: Array, v_free: Array, factor, act: Array | None = None,
                    ctrl: Array | None = None) -> Rows:
    """The rows at configuration ``q`` (nq,), activity of the
    limit rows judged at the contact-free next velocity ``v_free`` (nv,); ``factor``
    the mass matrix's Cholesky factor; the implicit-PD rows at activations ``act``
    (na,) and controls ``ctrl`` (nu,)."""
    lay = row_layout(model.topo)
    dtype, dt = q.dtype, model.opt.timestep
    parts = [_limit_rows(model, lay, q, v_free)]
    if len(lay.friction_dofs):
        nf = len(lay.friction_dofs)
        J = jnp.zeros((nf, model.nv), dtype).at[np.arange(nf), lay.friction_dofs].set(1.0)
        bound = model.dof_frictionloss[lay.friction_dofs] * dt
        parts.append(_hard_soft_rows(J, jnp.zeros((nf,), dtype), -bound, bound, factor))
    if len(lay.actuators):
        parts.append(servo_rows(model, lay.actuators, q, act, ctrl))
    if len(parts) == 1:
        return parts[0]
    no_soft = lambda r: (jnp.zeros(r.dist.shape, bool), jnp.zeros_like(r.dist), jnp.zeros_like(r.dist))  # noqa: E731
    soft = [no_soft(r) if r.soft is None else (r.soft, r.compliance, r.target) for r in parts]
    return Rows(*(jnp.concatenate(x) for x in zip(*(r[:5] for r in parts))),
                *(jnp.concatenate(x) for x in zip(*soft)))


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
