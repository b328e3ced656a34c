"""Rigid frictional contact with a Baumgarte-like relaxation and a choice of friction
law (exact Coulomb, Anitescu-Tasora or Nakaoka): the contact model ``"cone"``.

Slots: ``collision="points"`` (as the relaxed model), three rows each (normal,
tangent 1, tangent 2); the generic rows (joint and tendon limits) follow. The step's
problem is the local one of ``solver/friction.py``, ``u = W r + q``, with ``W = A``
(the contact-space inverse inertia) and ``q = b - target``: ``u`` is the velocity at
the step's end relative to the target, and Coulomb's law (or its relaxation) holds
between ``r`` and ``u``.

Baumgarte-like relaxation (normal rows and limit rows). Kikuuwe and Brogliato's
formulation relaxes the unilateral condition ``x >= 0`` on the gap ``x`` to ``x'' +
2 zeta x' / delta + x / delta^2 >= 0`` (complementary to the normal impulse);
``delta -> 0`` is the rigid law. Discretised by implicit Euler over the step (``x''
= (v+ - v) / dt``, ``x' = v+``, ``x`` at the step's end ``x + dt v+``):

    v+ >= (delta^2 v - dt x) / (delta^2 + 2 zeta delta dt + dt^2)

with ``v`` the normal velocity at the step's start. A penetration decays as the
damped oscillator of time constant ``delta``; implicit Euler keeps its eigenvalues
real and in (0, 1) for ``zeta >= 1`` (each ``1 / (1 + dt / delta)`` at ``zeta = 1``),
so there is no overshoot in discrete time either. Tied to the step: a relaxation
faster than one step cannot be resolved, so the model uses ``delta_eff = max(delta,
dt)``; the default ``delta = 0`` gives ``delta_eff = dt``, the stiffest the step
resolves (a penetration shrinks to ``(1 + k) 2^-k`` of itself after k steps, with
a quarter of the approach speed kept in the first). ``delta_eff -> 0`` would push a
whole penetration out in one step. Slots still apart (speculative, ``x > 0``) get
the rigid target ``v+ >= -x / dt`` (the gap may close within the step, no further:
a body arriving at a surface stops there). The tangent rows carry no relaxation
(the formulation's ``2 zeta / delta`` damping of tangential velocity would
let a sliding body's velocity, not its slip, set friction's direction); their target
is 0.

Friction (``solver``, static), with the pair's kinetic coefficient:

* ``"exact"``: Coulomb's law itself (``friction.solve(..., "exact")``): non-smooth
  Gauss-Seidel with exact one-contact solves and semismooth Newton steps, to the
  natural-map residual ``tolerance``; warm-started from last step's impulses,
  ``start_passes`` convex solves first (each with the QP's ``solver_iterations`` and
  ``solver_tol``, loosened from a warm start where ``A`` is factored:
  ``friction.WARM_START_TOL``). The
  Newton steps are solved in the dof's dimension through ``A``'s factors
  (``common.low_rank_factors``); the start's QPs run the projected gradient alone.
  Gradients: implicit, at the solution.
* ``"anitescu-tasora"``: the convex cone QP (Chrono): fast, but a sliding contact
  leaves with a normal velocity ``mu |v_t|`` (it hovers). Gradients: implicit.
* ``"nakaoka"``: Choreonoid's per-contact projection, up to ``sweeps`` Gauss-Seidel
  sweeps, stopping once one changes the impulses by at most ``sweep_tol`` (relative):
  fast, not converged to Coulomb's law. Gradients: unrolled sweeps.

``SolverStats.residual`` is the natural-map residual of the step's solution (Siconos'
normalisation, ``friction.residual``) for every friction model, so they compare.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.contact import common
from jaxsim.contact.interface import ContactModel, Problem, Solution, param, register
from jaxsim.contact.rows import servo_elimination, soft_target
from jaxsim.solver import friction
from jaxsim.types import Model, pytree_dataclass

Array = jax.Array


@pytree_dataclass
class ConeParams:
    zeta: Array = param(1.0, "damping ratio of the Baumgarte-like relaxation (1: critical)")
    delta: Array = param(0.0, "s, its time constant; the model uses max(delta, dt) (default: dt)")
    sweep_tol: Array = param(1e-8, "where the sweeps stop: 'exact' at this natural-map residual, 'nakaoka' once a "
                             "sweep changes the impulses by this much relative to their largest (raised to 100 eps "
                             "of the dtype)")
    solver: str = param("exact", "'exact' (Coulomb), 'anitescu-tasora' (convex cone QP) or 'nakaoka' "
                        "(per-contact projection)", static=True, choices=friction.METHODS)
    sweeps: int = param(50, "cap on the sweeps of 'exact' and 'nakaoka' (static)", minimum=1,
                        static=True)
    start_passes: int = param(2, "convex QPs that start 'exact' each step (static)", minimum=0, static=True)


def init(model: Model, n: int) -> tuple:
    return ()


def relaxed_correction(v: Array, x: Array, dt: float, zeta: Array, delta: Array) -> Array:
    """The lowest velocity allowed at the step's end for a row at gap ``x`` (m or rad;
    negative: violated) moving at ``v`` (module docstring)."""
    delta = jnp.maximum(delta, dt)
    return (delta ** 2 * v - dt * x) / (delta ** 2 + 2.0 * zeta * delta * dt + dt ** 2)


def local_problem(model: Model, problem: Problem):
    """``(W, q, mu, on)`` of the step's frictional problem: inactive slots and rows
    decoupled (identity block, separating ``q``) so they get no impulse."""
    p, dt, space = model.contact_params, model.opt.timestep, problem.space
    c_, rows, m = problem.contacts, problem.rows, problem.m
    v = common.start_velocity(problem)
    # the normal rows of the slots, then the generic rows: relaxed where they penetrate
    gap = jnp.concatenate([-c_.depth, rows.dist])
    relaxed = relaxed_correction(jnp.concatenate([common.normals(v, problem), v[3 * m:]]), gap, dt, p.zeta, p.delta)
    normal = common.separation_target(-gap, dt, relaxed)
    slot_target = jnp.stack([normal[:m], jnp.zeros_like(normal[:m]), jnp.zeros_like(normal[:m])], -1)
    target = jnp.concatenate([slot_target.reshape(-1), soft_target(rows, normal[m:])])
    on = common.row_mask(problem)
    off = jnp.concatenate([jnp.tile(jnp.asarray([1.0, 0.0, 0.0], target.dtype), m),
                           jnp.ones_like(rows.dist)])
    A = common.add_diagonal(space.A, jnp.zeros((3 * m,), space.A.dtype), rows)
    W = common.restrict(A, on) + jnp.diag(jnp.where(on, 0.0, 1.0))
    q = jnp.where(on, space.b - target, off)
    return W, q, problem.slots.friction[:, 1].astype(q.dtype), on


def solve(model: Model, problem: Problem, carry: tuple) -> Solution:
    """One step of the cone model on the problem's m slots and nr rows."""
    p, opt = model.contact_params, model.opt
    rows = problem.rows
    W, q, mu, on = local_problem(model, problem)
    eps = jnp.finfo(q.dtype).eps
    if p.solver == "anitescu-tasora":
        tol, max_iter = opt.solver_tol, opt.solver_iterations
    else:
        tol, max_iter = jnp.maximum(p.sweep_tol, 100 * eps), p.sweeps
    servos = servo_elimination(model.topo, problem.nr, 3 * problem.m) if p.solver == "anitescu-tasora" else {}
    factors = common.low_rank_factors(problem.space)
    if factors is not None:  # of W: the inactive rows' coupling removed, as restrict does
        factors = tuple(None if f is None else jnp.where(on[:, None], f, 0.0) for f in factors)
    r, _, st = friction.solve(W, q, mu, p.solver, tol=tol, max_iter=max_iter, r0=common.warm_start(problem),
                              lower=rows.lower, upper=rows.upper, start_passes=p.start_passes,
                              start_tol=opt.solver_tol, start_iterations=opt.solver_iterations,
                              smoothing=0.0 if p.solver == "nakaoka" else opt.gradient_smoothing,
                              factors=factors, **servos)
    return Solution(jnp.where(on, r, 0.0), (), common.as_stats(st))


register(ContactModel("cone", ConeParams, init, solve,
                      "rigid frictional contact, Baumgarte-like relaxation, exact / Anitescu-Tasora / Nakaoka "
                      "friction", collision="points", slot_rows=3))
