"""Springhead's impact/resting contact model: constraints at the corners of
the contact polygon, restitution for impacts, depth correction for resting contact,
static/kinetic friction boxes.

Slots: ``collision="polygon"`` (the corners of each polyhedral pair's contact polygon,
every corner at the pair's depth, as Springhead's shape pair); sphere and capsule pairs
keep their point slots (a one-corner polygon). Per slot, read from Springhead's
``PHContactPoint`` (``CompBias``, ``Projection``):

* frame: x the normal (relative velocity positive when separating), y along the
  tangential relative velocity at the step's start (tangent 1 when it is ~0), z = x
  cross y. The slot's rows are turned into this frame for the solve and back after.
* normal row: an impact when the approach is faster than ``impact_threshold``
  (``v_x < -V_th``): target ``v_x+ = -e v_x`` with ``e`` the pair's restitution (the
  mean of the two geoms'), no depth correction; otherwise resting: target
  ``v_x+ = gamma max(d - d_tol, 0) / dt`` (``gamma`` ``correction_rate``, ``d_tol``
  ``contact_tolerance``), which leaves the depth ``d - gamma max(d - d_tol, 0)``:
  only depth beyond ``d_tol`` is removed (Springhead keeps touching bodies touching),
  a shallower slot just stops approaching. ``f_x >= 0`` (the LCP's complementarity).
* speculative slots (jaxsim's collision reports pairs up to a step's travel apart;
  Springhead's only penetrating ones): a slot with a gap ``-d`` may close it within
  the step (target ``d / dt``), and is an impact only if its approach closes the gap
  within the step, so a fast body bounces from where it reaches the surface rather
  than a step's travel deep.
* friction: a box per tangent axis, ``|f_y|, |f_z| <= mu0 f_x`` while the slot slips
  slower than ``opt.slip_speed`` (``V_f``), ``<= mu f_x`` beyond, with ``mu0``,
  ``mu`` the pair's static and kinetic friction.

Solvers (``solver``, static; ``"pgs"`` by default: in ``experiments/bench_step.py``
it ran 1.6-12x faster than the QP at batch 1-1024 on the cube, 8 boxes and humanoid,
and both solve the same LCP; the QP is the choice when a statically indeterminate
load must be split evenly, or for implicit gradients):

* ``"qp"``: the shared projected-gradient QP (``solver/qp.py``, ``cone="box"``),
  ``min 1/2 x^T A x + x^T (b - target)`` over the boxes; that is the mixed LCP of the
  rows, except that a box whose bound moves with ``f_x`` lifts a sliding slot at
  ``mu |v_y|`` (the dual of the pyramid), so the normal target carries De Saxce's
  shift ``mu |v_y|`` for sliding slots, from the slip left by a first solve (two
  solves, as the point model). Gradients: implicit, at each solve's solution.
* ``"pgs"``: Springhead's projected Gauss-Seidel, row by row in slot order (normal,
  y, z; then the generic rows), ``sweeps`` sweeps (15), each friction row
  clamped to the box of its slot's current normal force, warm-started from
  ``warm_start`` (0.7) times the slot's impulse of the last step. Gradients: the
  fixed sweeps are differentiated as they run (``lax.scan``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.contact import common
from jaxsim.contact.interface import ContactModel, Problem, Solution, param, register
from jaxsim.contact.rows import servo_elimination
from jaxsim.contact.space import block_diagonal
from jaxsim.solver import qp
from jaxsim.types import Model, SolverStats, pytree_dataclass

Array = jax.Array
SOLVERS = ("qp", "pgs")
IMPACT_GRADIENTS = ("step", "time_of_impact")


@pytree_dataclass
class SpringheadParams:
    impact_threshold: Array = param(10.0, "m/s, V_th: an approach faster than this is an impact (restitution)")
    correction_rate: Array = param(0.1, "gamma: share of the depth beyond contact_tolerance removed per step")
    contact_tolerance: Array = param(0.002, "m, d_tol: depth never corrected (a shallower slot stops approaching)")
    warm_start: Array = param(0.7, "share of last step's impulses the Gauss-Seidel sweeps start from")
    solver: str = param("pgs", "'pgs' (Springhead's Gauss-Seidel, the default) or 'qp' (shared projected-gradient QP)",
                        static=True, choices=SOLVERS)
    sweeps: int = param(15, "Gauss-Seidel sweeps per step (static)", minimum=1, static=True)
    impact_gradient: str = param("step", "impacts' derivative: 'step' (the step's own) or 'time_of_impact' (a "
                                 "bounce's at the instant of contact; the values do not change)", static=True,
                                 choices=IMPACT_GRADIENTS)


def init(model: Model, n: int) -> tuple:
    return ()


def _turn(v_t: Array) -> Array:
    """(m, 3, 3) rotations from a slot's contact frame (normal, tangent 1, tangent 2) to
    Springhead's (normal, along the slip ``v_t`` (m, 2), normal cross that)."""
    speed = math.safe_norm(v_t)
    moving = speed > 1e-9
    safe = jnp.where(moving, speed, 1.0)
    c = jnp.where(moving, v_t[:, 0] / safe, 1.0)
    s = jnp.where(moving, v_t[:, 1] / safe, 0.0)
    one, zero = jnp.ones_like(c), jnp.zeros_like(c)
    return jnp.stack([jnp.stack([one, zero, zero], -1), jnp.stack([zero, c, s], -1),
                      jnp.stack([zero, -s, c], -1)], -2)


def _targets(model: Model, problem: Problem, v_x: Array, slip: Array):
    """Per slot: normal target (m,) (module docstring), box coefficient (m,) and
    whether it is an impact (m,)."""
    p, dt = model.contact_params, model.opt.timestep
    d = problem.contacts.depth
    e = problem.slots.restitution.astype(v_x.dtype)
    # an impact only where the approach closes the slot's gap within the step
    impact = (v_x < -p.impact_threshold) & (d - v_x * dt > 0)
    resting = common.contact_targets(d, dt, lambda depth: p.correction_rate
                                     * jnp.maximum(depth - p.contact_tolerance, 0.0) / dt)
    bounce = -e * v_x
    if p.impact_gradient == "time_of_impact":
        bounce = bounce + _time_of_impact_velocity(model, problem, v_x, e)
    target = jnp.where(impact, bounce, resting)
    _, mu = common.friction_mode(problem.slots.friction, slip, model.opt.slip_speed)
    return target, mu.astype(v_x.dtype), impact


def _time_of_impact_velocity(model: Model, problem: Problem, v_x: Array, e: Array) -> Array:
    """(m,) zero, with the derivative of an impact's rebound speed with respect to the
    slot's separation at the step's start, for a bounce at the instant of contact: a
    body accelerating towards the surface at ``a`` (from the step's contact-free
    velocity) reaches it ``-s / v_x`` later at a speed ``a s / v_x`` higher than
    ``v_x``, and leaves at ``e`` times that plus what ``a`` takes off it over the rest
    of the step: ``d v+ / d s = (1 + e) a / |v_x|``; the step's derivative is 0.
    ``_time_of_impact_impulse`` gives the positions' part."""
    m, d = problem.m, problem.contacts.depth
    b_x = problem.space.b[np.arange(m) * 3]
    approach = jax.lax.stop_gradient((v_x - b_x) / model.opt.timestep)  # m/s^2, a
    return (1 + e) * approach / _approach_speed(v_x) * (jax.lax.stop_gradient(d) - d)


def _approach_speed(v_x: Array) -> Array:
    """(m,) m/s, ``|v_x|`` of approaching slots (floored at 1e-9), a constant to the
    derivative: the time-of-impact terms divide by it."""
    return jax.lax.stop_gradient(jnp.maximum(-v_x, 1e-9))


def _pgs(H: Array, g: Array, lower: Array, upper: Array, mu: Array, x0: Array, sweeps: int):
    """Projected Gauss-Seidel on ``H x + g`` (rows: m slots of (normal, y, z), then the
    generic rows), friction rows clamped to ``mu`` times their slot's current normal
    impulse. Returns the impulses and the largest change of the last sweep (relative)."""
    n, m = g.shape[0], mu.shape[0]
    index = np.arange(n)
    slot_row = jnp.asarray(index < 3 * m)
    normal_of = jnp.asarray(np.where(index < 3 * m, 3 * (index // 3), 0))
    friction_row = slot_row & jnp.asarray(index % 3 != 0)
    mu_row = jnp.concatenate([jnp.repeat(mu, 3), jnp.zeros((n - 3 * m,), g.dtype)])
    diag = jnp.diagonal(H)
    inv = jnp.where(diag > 0, 1.0 / jnp.where(diag > 0, diag, 1.0), 0.0)

    def row(x, i):
        xi = x[i] - inv[i] * (H[i] @ x + g[i])
        bound = mu_row[i] * x[normal_of[i]]
        lo = jnp.where(friction_row[i], -bound, jnp.where(slot_row[i], 0.0, lower[i]))
        hi = jnp.where(friction_row[i], bound, jnp.where(slot_row[i], jnp.inf, upper[i]))
        return x.at[i].set(jnp.where(diag[i] > 0, jnp.clip(xi, lo, hi), 0.0)), None

    def sweep(x, _):
        new, _ = jax.lax.scan(row, x, jnp.arange(n))
        return new, jnp.max(jnp.abs(new - x)) / jnp.maximum(jnp.max(jnp.abs(new)), 1e-12)

    x, change = jax.lax.scan(sweep, x0, None, length=sweeps)
    return x, change[-1]


def solve(model: Model, problem: Problem, carry: tuple) -> Solution:
    """One step of Springhead's model on the problem's m slots and nr rows."""
    p, opt, space = model.contact_params, model.opt, problem.space
    c_, rows, m, nr = problem.contacts, problem.rows, problem.m, problem.nr
    dtype = space.b.dtype
    v_start, _ = common.split(common.start_velocity(problem), problem)  # contact frame, start of the step
    R = _turn(v_start[:, 1:])
    T = block_diagonal(R, nr)  # to Springhead's frames; the generic rows stay
    A, b = T @ space.A @ T.T, T @ space.b
    target, mu, impact = _targets(model, problem, v_start[:, 0], common.tangential_speed(v_start))
    # generic rows (joint limits): close at most the gap, remove gamma of a violation
    limit = common.limit_targets(rows, opt.timestep, lambda depth: p.correction_rate * depth / opt.timestep)
    on = common.row_mask(problem)
    goal = jnp.concatenate([jnp.stack([target, jnp.zeros_like(target), jnp.zeros_like(target)], -1).reshape(-1),
                            limit])
    H = common.restrict(common.add_diagonal(A, jnp.zeros((3 * m,), dtype), rows), on)
    g = jnp.where(on, b - goal, 0.0)
    lower, upper = common.cone_bounds(m, rows)
    prev = jnp.einsum("mij,mj->mi", R, problem.prev_impulse).reshape(-1)

    if p.solver == "pgs":
        x0 = jnp.concatenate([p.warm_start * prev, jnp.zeros((nr,), dtype)])
        x, change = _pgs(H, g, lower, upper, mu, x0, p.sweeps)
        stats = SolverStats(jnp.asarray(p.sweeps, jnp.int32), change)
    else:
        servos = servo_elimination(model.topo, nr, 3 * m)

        def qp_solve(g_, x0, skip=None):
            return qp.solve(qp.QP(H, g_, lower, upper, mu), x0, opt.solver_tol, max_iter=opt.solver_iterations,
                            block=(3, m), adjoint=opt.adjoint, cone="box", skip=skip,
                            smoothing=opt.gradient_smoothing, **servos)

        def shift(x_):
            """De Saxce's ``mu |v_y|`` on the normal target of sliding slots."""
            s = common.tangential_speed(common.end_velocity(A, b, x_, m))
            sliding, _ = common.friction_mode(problem.slots.friction, s, opt.slip_speed, c_.active)
            return common.desaxce_shift(sliding, mu, s)

        x0 = jnp.concatenate([prev, jnp.zeros((nr,), dtype)])
        x, stats, _ = common.two_passes(qp_solve, common.add_to_normals(g, problem, shift(jnp.zeros_like(g))),
                                        lambda x1: (common.add_to_normals(g, problem, shift(x1)), None, ()), x0)
    x = jnp.where(on, T.T @ x, 0.0)
    position = None
    if p.impact_gradient == "time_of_impact":
        position = _time_of_impact_impulse(model, problem, impact & c_.active, v_start[:, 0], x)
    return Solution(x, (), stats, position)


def _time_of_impact_impulse(model: Model, problem: Problem, impact: Array, v_x: Array, x: Array) -> Array:
    """Position impulses (R m + nr,) of value zero whose derivative makes an impact
    step's derivative that of a bounce at the instant of contact.

    The step applies an impact slot's impulse ``x`` from its start, a bounce at the
    instant of contact ``tau = s / -v_x`` into it (``s`` the slot's separation, -depth,
    ``v_x < 0`` its approach): the positions at the step's end differ by ``-tau``
    times the velocity change ``x`` makes. Which step an impact falls in shifts the
    discrete path by up to ``(1 + e) |v_x| dt``, so the step's exact derivative
    describes a sawtooth whose teeth slope ``(1 + e)`` per unit of ``s`` against its
    trend (on a throw off a wall it points the gradient the wrong way). Here each
    impact slot gets ``-(tau - stop_gradient(tau)) x / dt``: zero, with the derivative
    of the missing term. ``_time_of_impact_velocity`` gives the velocities' part.
    """
    m, d = problem.m, problem.contacts.depth
    shift = jnp.where(impact, (d - jax.lax.stop_gradient(d)) / _approach_speed(v_x), 0.0)  # -(tau - sg(tau))
    per_slot = jax.lax.stop_gradient(x[:3 * m].reshape(m, 3)) * (shift / model.opt.timestep)[:, None]
    return jnp.concatenate([per_slot.reshape(-1), jnp.zeros((x.shape[0] - 3 * m,), x.dtype)])


register(ContactModel("springhead", SpringheadParams, init, solve,
                      "Springhead: polygon corners, restitution, depth tolerance, friction boxes",
                      collision="polygon", slot_rows=3, friction_blend="mean", default_restitution=0.4))
