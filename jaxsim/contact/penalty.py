"""Penalty contacts (SPEC section 4, Springhead's penalty mode): a spring-damper force
along the normal and regularized Coulomb friction along the tangent, no solver rows.

Per active slot with depth ``d`` (m), normal velocity ``v_n`` (geom2 relative to
geom1, positive apart) and tangential velocity ``v_t``, with the pair's stiffness
``k`` (N/m), damping ``c`` (N s/m) and friction ``mu``:

    f_n = k d+ - c v_n+ >= 0,   f_t = -beta v_t+,   beta = mu f_n0 / max(|v_t|, v_s)

``f_n0`` the normal force at the step's start and ``v_s`` ``opt.penalty_slip_speed``:
below ``v_s`` friction is viscous (it holds a body on a slope to a creep of
``v_s`` times the fraction of the friction cone it uses), above it has Coulomb's
magnitude ``mu f_n``. The forces are taken at the step's end, ``d+ = d - dt v_n+``
and ``v+`` (linearly implicit Euler, as implicit joint damping): with ``v+ = b + A
dt f`` in the slots' contact space,

    (I + dt C A) dt f = dt (f_0 - C b),   C = diag(k dt + c, beta, beta),  f_0 = (k d, 0, 0),

so a stiff spring on a light body is stable at any time step, and the step only
dissipates. A slot takes part when it penetrates now or would at the end of the step
without its force (``d - dt b_n > 0``), so a fast body meets the spring in the step it
arrives. Afterwards ``f_n`` is clipped at 0 (no adhesion) and ``|f_t|`` at ``mu f_n``.

At rest a body of weight ``m g`` on ``n`` equally loaded points sinks ``m g / (n k)``.

The same force serves two callers: the constraint stage applies it to the pairs of
mode ``penalty`` as a smooth force before the selected model's solve, and the contact
model ``"penalty"`` (registered here) uses it for every pair, with the generic rows
(joint limits) solved as a rigid QP.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsim import math
from jaxsim.contact import ContactModel, Problem, Solution, param, register
from jaxsim.solver import qp
from jaxsim.types import Model, SolverStats, pytree_dataclass

Array = jax.Array


def slot_impulses(model: Model, problem: Problem) -> Array:
    """(m, 3) impulses (N s, contact frame, on geom2) over the step of the problem's
    active slots, from the first 3m rows of its contact space."""
    dt = model.opt.timestep
    contacts, space, slots = problem.contacts, problem.space, problem.slots
    m = contacts.active.shape[0]
    dtype = space.b.dtype
    A, b = space.A[:3 * m, :3 * m], space.b[:3 * m].reshape(m, 3)
    v0 = (space.J[:3 * m] @ problem.v).reshape(m, 3)
    depth = contacts.depth
    on = contacts.active & (jnp.maximum(depth, depth - dt * b[:, 0]) > 0)
    k, c = slots.stiffness, slots.damping
    mu = jnp.where(math.safe_norm(v0[:, 1:]) > model.opt.penalty_slip_speed, slots.friction[:, 1],
                   slots.friction[:, 0])
    fn0 = jnp.maximum(k * depth - c * v0[:, 0], 0.0)
    beta = mu * fn0 / jnp.maximum(math.safe_norm(v0[:, 1:]), model.opt.penalty_slip_speed)
    gain = jnp.where(on[:, None], jnp.stack([k * dt + c, beta, beta], -1), 0.0)  # (m, 3): C
    f0 = jnp.where(on, k * depth, 0.0)
    rhs = dt * (jnp.zeros((m, 3), dtype).at[:, 0].set(f0) - gain * b).reshape(-1)
    lhs = jnp.eye(3 * m, dtype=dtype) + dt * gain.reshape(-1)[:, None] * A
    df = jnp.linalg.solve(lhs, rhs).reshape(m, 3)
    fn = jnp.maximum(df[:, 0], 0.0)
    ft = df[:, 1:] * jnp.minimum(1.0, mu * fn / jnp.maximum(math.safe_norm(df[:, 1:]), jnp.finfo(dtype).tiny))[:, None]
    return jnp.where(on[:, None], jnp.concatenate([fn[:, None], ft], -1), 0.0)


@pytree_dataclass
class PenaltyParams:
    limit_stiffness: Array = param(1000.0, "1/s, correction rate of a violated joint limit (capped at 1/dt)")
    max_depenetration_speed: Array = param(0.5, "m/s (rad/s for hinge limits), cap on the limit correction")


class PenaltyCarry(NamedTuple):
    pass


def init(model: Model, n: int) -> PenaltyCarry:
    return PenaltyCarry()


def solve(model: Model, problem: Problem, carry: PenaltyCarry) -> Solution:
    """Every slot a penalty spring; the generic rows a rigid QP given those forces."""
    dt, opt = model.opt.timestep, model.opt
    m, rows, space = problem.contacts.active.shape[0], problem.rows, problem.space
    df = slot_impulses(model, problem)
    nr = rows.dist.shape[0]
    stats = SolverStats(jnp.zeros((), jnp.int32), jnp.zeros((), space.b.dtype))
    if nr == 0:
        return Solution(df.reshape(-1), carry, stats)
    p = model.contact_params
    k = jnp.minimum(p.limit_stiffness, 1.0 / dt)
    target = jnp.where(rows.dist >= 0, rows.dist / dt, jnp.maximum(k * rows.dist, -p.max_depenetration_speed))
    b_rows = space.b[3 * m:] + space.A[3 * m:, :3 * m] @ df.reshape(-1)
    problem_qp = qp.QP(space.A[3 * m:, 3 * m:], jnp.where(rows.active, b_rows + target, 0.0), rows.lower,
                       rows.upper, jnp.zeros((0,), space.b.dtype))
    x, st = qp.solve(problem_qp, jnp.zeros((nr,), space.b.dtype), opt.solver_tol,
                     max_iter=opt.solver_iterations, adjoint=opt.adjoint)
    x = jnp.where(rows.active, x, 0.0)
    return Solution(jnp.concatenate([df.reshape(-1), x]), carry, SolverStats(st.iterations, st.residual))


register(ContactModel("penalty", PenaltyParams, init, solve,
                      "spring-damper contacts with regularized friction, no solver (SPEC section 4)"))
