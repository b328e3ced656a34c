"""Penalty contacts (Springhead's penalty mode): a spring-damper force along the normal
and regularized Coulomb friction along the tangent, no solver rows.

Per active slot with depth ``d`` (m), normal velocity ``v_n`` (geom2 relative to
geom1, positive apart) and tangential velocity ``v_t``, with the pair's stiffness
``k`` (N/m), damping ``c`` (N s/m) and friction ``mu``:

    f_n = k d+ - c v_n+ >= 0,   f_t,i = -beta v_t,i+ with |f_t,i| <= mu f_n0,   beta = mu f_n0 / v_s

``f_n0`` the slot's normal force in the last step (the spring's at the step's start
for a new slot) and ``v_s`` ``opt.slip_speed``: below ``v_s`` friction is
viscous (a body on a slope creeps at a speed below ``v_s``), above it saturates at
Coulomb's ``mu f_n`` (regularized Coulomb friction). With ``beta = mu f_n0 / |v_t|``
instead, a sliding box is under-braked by 30 %: its load moves to the leading corners
within the step, so the start's ``f_n0`` is not the step's ``f_n``. The forces are
taken at the step's end, ``d+ = d - dt v_n+`` and ``v+`` (linearly implicit Euler, as
implicit joint damping), so a stiff spring on a light body is stable at any time step. With ``v+ = b + A df``
in the slots' contact space and ``df = dt f`` this reads ``v+ = target - R df``, the
optimality condition of the small convex QP

    min 1/2 df^T (A + R) df + df^T (b - target),  df_n >= 0,  |df_t,i| <= mu f_n0 dt,
    R = diag(1 / (dt (k dt + c)), 1 / (dt beta), 1 / (dt beta)),
    target = (k d / (k dt + c), 0, 0),

solved by the shared QP (``solver/qp.py``, per-row compliance, implicit gradients).
The bounds give ``f_n >= 0`` (no adhesion: a spring never pulls) and Springhead's
friction box per tangent axis. Solving the linear system and clipping afterwards
instead lets a clipped adhesive force leave its neighbours' balancing forces
unopposed (a random scene gained 188 J in 2 s that way). The QP form only
dissipates, apart from the energy the spring stored. A slot takes part when it
penetrates now or would at the end of the step without its force (``d - dt b_n >
0``), so a fast body meets the spring in the step it arrives.

At rest a body of weight ``m g`` on ``n`` equally loaded points sinks ``m g / (n k)``.

The force has two callers: the constraint stage applies it to the pairs of mode
``penalty`` as a smooth force before the selected model's solve, and the contact model
``"penalty"`` (``penalty.py``) uses it for every pair.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.contact import common
from jaxsim.contact.interface import Problem, zero_stats
from jaxsim.solver import qp
from jaxsim.types import Model, SolverStats

Array = jax.Array


def slot_impulses(model: Model, problem: Problem) -> tuple[Array, SolverStats]:
    """(m, 3) impulses (N s, contact frame, on geom2) over the step of the problem's
    active slots, from the first 3m rows of its contact space, and the solve's stats."""
    opt, dt = model.opt, model.opt.timestep
    contacts, space, slots = problem.contacts, problem.space, problem.slots
    m = problem.m
    dtype = space.b.dtype
    if m == 0:  # only generic rows (a robot without geoms)
        return jnp.zeros((0, 3), dtype), zero_stats(dtype)
    b = space.b[:3 * m].reshape(m, 3)
    v0, _ = common.split(common.start_velocity(problem), problem)
    depth, k, c = contacts.depth, slots.stiffness, slots.damping
    on = contacts.active & (jnp.maximum(depth, depth - dt * b[:, 0]) > 0)
    _, mu = common.friction_mode(slots.friction, common.tangential_speed(v0), opt.slip_speed)
    # the slot's normal force: last step's where it was kept, else the spring's now
    fn0 = jnp.maximum(jnp.maximum(k * depth - c * v0[:, 0], 0.0), problem.prev_impulse[:, 0] / dt)
    beta = mu * fn0 / opt.slip_speed
    # compliance R = (dt C)^-1; a tangent without friction load gets a large finite one
    # (up to 1e3 times its normal's, smoothly: no overflow in gradients), which keeps
    # the QP's block scaling sound
    a_diag = jnp.diagonal(space.A)[:3 * m].reshape(m, 3)
    r_n = 1.0 / (dt * (k * dt + c))
    r_t = 1.0 / (dt * beta + 1e-3 / (a_diag[:, 0] + r_n))
    compliance = jnp.where(on[:, None], jnp.stack([r_n, r_t, r_t], -1), 1.0).reshape(-1)
    target = jnp.zeros((m, 3), dtype).at[:, 0].set(k * jnp.maximum(depth, 0.0) / (k * dt + c))
    row_on = jnp.repeat(on, 3)
    A = common.restrict(space.A[:3 * m, :3 * m], row_on)
    g = jnp.where(row_on, (b - target).reshape(-1), 0.0)
    # friction bounds from the estimated normal force, per tangent axis (Springhead's
    # friction box): a cone on the QP's own f_n let the compliant normal grow to make
    # room for more viscous friction (a box sliding at 1 m/s was thrown up at 0.3 m/s)
    cap = jnp.where(on, mu * fn0 * dt, 0.0)
    bound = jnp.stack([jnp.full_like(cap, jnp.inf), cap, cap], -1).reshape(-1)
    lower = jnp.stack([jnp.zeros_like(cap), -cap, -cap], -1).reshape(-1)
    problem_qp = qp.QP(A, g, lower, bound, jnp.zeros((0,), dtype), compliance)
    warm = jnp.where(on[:, None], problem.prev_impulse, 0.0).reshape(-1)
    x, st = qp.solve(problem_qp, warm, opt.solver_tol, max_iter=opt.solver_iterations, block=(3, m),
                     adjoint=opt.adjoint, smoothing=opt.gradient_smoothing)
    return jnp.where(on[:, None], x.reshape(m, 3), 0.0), common.as_stats(st)
