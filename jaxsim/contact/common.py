"""Pieces of a step that every contact model builds the same way.

Velocities. ``start_velocity``: the rows' velocities ``J v`` at the step's start
(``split`` into slots and generic rows, ``normals`` of the slots); ``end_velocity``:
the slots' velocities ``A x + b`` at its end under impulses ``x``;
``tangential_speed``: a slot's slip from its tangent rows.

Targets (the lowest velocity a row may have at the step's end). A contact at depth
``d`` (m; negative: a gap) and a limit row at ``dist`` from its limit (depth ``d =
-dist``, m or rad) get the same rule, ``separation_target``: apart, the gap may close
within the step and no further (``d / dt``: speculative contacts, a limit that may be
reached but not passed); penetrating, the model's own position correction, a velocity
that is a function of the depth (``pushed_out``: ``rate d``, at most ``cap``).
``contact_targets`` applies it to slots, ``limit_targets`` to the generic rows, whose
soft rows (friction loss, implicit PD) keep their own target (``rows.soft_target``).

Friction. ``friction_mode``: Coulomb's coefficient of a slot, the kinetic one where it
slips (its tangential speed above ``opt.slip_speed``, or held kinetic by the model),
the static one else. ``desaxce_shift``: De Saxce's ``mu |v_t|`` added to the normal
target of a slipping slot, which keeps the cone's normal velocity ``mu |v_t|`` from
lifting it; ``add_to_normals`` puts a per-slot value on the normal rows.
``two_passes``: De Saxce's fixed point taken one step further, a second solve from the
first one's solution with the friction mode and shift of the velocities the first one
left (everywhere, or only where ``redo``), both passes through one solve in the program.

Rows of the solve. ``row_mask`` (the active slot rows, then the active generic rows),
``restrict`` (a matrix decoupled outside the mask), ``mask`` (impulses zero outside
it), ``add_diagonal`` (a model's relaxation on the slot and limit rows, the
compliance on the soft rows), ``cone_bounds`` (the bounds that follow 3m friction-cone
entries of the QP: the generic rows' intervals), ``warm_start`` (last step's impulses,
0 on the generic rows), ``as_stats`` and ``merge_stats`` (the stats of several solves).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxsim import math
from jaxsim.contact.interface import Problem
from jaxsim.contact.rows import Rows, soft_diagonal, soft_target
from jaxsim.types import SolverStats

Array = jax.Array

Correction = Callable[[Array], Array]  # depth (m or rad, > 0 past the surface) -> velocity (m/s or rad/s)


# ------------------------------------------------------------------------------ velocities


def start_velocity(problem: Problem) -> Array:
    """(R m + nr,) the row velocities ``J v`` at the step's start (``split`` them)."""
    return problem.space.J @ problem.v


def split(x: Array, problem: Problem) -> tuple[Array, Array]:
    """Values ``x`` over the problem's rows as (m, R) per slot (contact frame: normal,
    tangent 1, tangent 2, then the angular rows) and (nr,) per generic row."""
    m, R = problem.m, problem.slot_rows
    return x[:R * m].reshape(m, R), x[R * m:]


def normals(x: Array, problem: Problem) -> Array:
    """(m,) the slots' normal rows of ``x`` over the problem's rows."""
    return x[:problem.m * problem.slot_rows:problem.slot_rows]


def end_velocity(A: Array, b: Array, x: Array, m: int, R: int = 3) -> Array:
    """(m, R) the slot rows' velocities ``A x + b`` at the step's end under the impulses
    ``x`` (the first R m rows of a contact space, or of a model's own turn of it)."""
    return (A[:R * m] @ x + b[:R * m]).reshape(m, R)


def tangential_speed(v: Array) -> Array:
    """(m,) m/s, the slip of slots with row velocities ``v`` (m, R): the norm of the two
    tangent rows."""
    return math.safe_norm(v[:, 1:3])


# --------------------------------------------------------------------------------- targets


def separation_target(depth: Array, dt, correction: Array) -> Array:
    """The lowest velocity at the step's end along a contact's normal or a limit row
    (m/s or rad/s) at ``depth`` (negative: a gap): ``correction`` where it penetrates,
    else ``depth / dt`` (the gap may close within the step, no further)."""
    return jnp.where(depth >= 0, correction, depth / dt)


def pushed_out(rate, cap) -> Correction:
    """The position correction that pushes a penetration out at ``rate`` (1/s) times its
    depth, at most at ``cap`` (m/s or rad/s)."""
    return lambda depth: jnp.minimum(rate * depth, cap)


def contact_targets(depth: Array, dt, correction: Correction) -> Array:
    """(m,) the normal targets of slots at ``depth`` (m) under a model's ``correction``."""
    return separation_target(depth, dt, correction(depth))


def limit_targets(rows: Rows, dt, correction: Correction) -> Array:
    """(nr,) the generic rows' targets: a limit row at ``dist`` from its limit gets the
    contact rule at depth ``-dist`` under the model's ``correction``; a soft row its
    own target."""
    depth = -rows.dist
    return soft_target(rows, separation_target(depth, dt, correction(depth)))


# -------------------------------------------------------------------------------- friction


def friction_mode(friction: Array, speed: Array, slip_speed, active=True, held=False) -> tuple[Array, Array]:
    """Per slot: (slipping (m,) bool, Coulomb's coefficient mu (m,)). A slot slips where
    it is ``active`` and its tangential ``speed`` (m/s) exceeds ``slip_speed`` or the
    model ``held`` it kinetic; ``friction`` (m, 2) the pair's (static, kinetic)
    coefficients: kinetic where it slips, static else."""
    slipping = active & ((speed > slip_speed) | held)
    return slipping, jnp.where(slipping, friction[:, 1], friction[:, 0])


def desaxce_shift(slipping: Array, mu: Array, speed: Array) -> Array:
    """(m,) m/s, De Saxce's shift ``mu |v_t|`` of a slipping slot's normal target."""
    return jnp.where(slipping, mu * speed, 0.0)


def add_to_normals(g: Array, problem: Problem, value: Array) -> Array:
    """``g`` over the problem's rows with ``value`` (m,) added on the active slots'
    normal rows."""
    m, R = problem.m, problem.slot_rows
    return g.at[:R * m:R].add(jnp.where(problem.contacts.active, value, 0.0))


def two_passes(solve: Callable, first, second: Callable, x0: Array):
    """De Saxce's second pass: a first solve from ``x0``, then a second one from its
    solution, posed with the friction mode and shift of the velocities the first one
    left.

    Args:
      solve: ``(args, x0, skip) -> (x, stats)``, where ``args`` is a pytree of the
        arrays the two passes pose differently (the QP's g and mu, say).
      first: the first pass's ``args``.
      second: ``x1 -> (args, redo, extra)``: the second pass's ``args`` from the first
        one's solution ``x1``, where it is needed (a () bool, or None: everywhere),
        and a pytree of anything else the caller wants from ``x1``.
      x0: the first pass's warm start.

    Returns:
      (the solution, both passes' ``SolverStats``, ``second``'s ``extra``).

    Why one solve for both: the passes run as a two-step ``lax.scan`` over a single
    call of ``solve``, so the solver's loops, its Newton steps and, under ``grad``,
    its adjoint are compiled once; two calls would be two copies of them in the
    program (XLA inlines both). Where the second pass is not needed a ``lax.cond``
    skips it; under ``vmap``, where a ``cond`` runs both branches for every env,
    ``skip`` keeps those envs out of the solver's loop. One scan body means ``second``
    also runs at the first pass, on ``x0``, and is discarded there: for the point
    models one product with the contact operator, against the dozens a solve takes."""
    def one_pass(carry, is_second):
        x, stats = carry
        args2, redo, extra = second(x)
        args = jax.tree.map(lambda a, b: jnp.where(is_second, b, a), first, args2)
        if redo is None:
            x_new, new = solve(args, x, None)
            return (x_new, merge_stats(stats, new)), extra
        run = ~is_second | redo

        def solved():
            x_, new = solve(args, x, ~run)
            return x_, as_stats(new)

        def skipped():
            return x, SolverStats(jnp.zeros_like(stats.iterations), jnp.zeros_like(stats.residual))
        x_new, new = jax.lax.cond(run, solved, skipped)
        return (x_new, merge_stats(stats, new)), extra

    start = SolverStats(jnp.zeros((), jnp.int32), jnp.zeros((), x0.dtype))
    (x, stats), extras = jax.lax.scan(one_pass, (x0, start), jnp.asarray([False, True]))
    return x, stats, jax.tree.map(lambda e: e[1], extras)


# ------------------------------------------------------------------------- rows of a solve


def row_mask(problem: Problem) -> Array:
    """(R m + nr,) bool: the rows of active slots, then the active generic rows."""
    return jnp.concatenate([jnp.repeat(problem.contacts.active, problem.slot_rows), problem.rows.active])


def mask(problem: Problem, x: Array) -> Array:
    """Impulses ``x`` over all rows, zero on the inactive ones."""
    return jnp.where(row_mask(problem), x, 0.0)


def restrict(A: Array, on: Array) -> Array:
    """``A`` with the rows and columns outside ``on`` zeroed."""
    return jnp.where(on[:, None] & on[None, :], A, 0.0)


def add_diagonal(A: Array, slot_diag: Array, rows: Rows, row_diag=0.0) -> Array:
    """``A`` plus a diagonal: ``slot_diag`` on the slot rows, ``row_diag`` on the limit
    rows and the compliance ``R`` on the soft rows (``rows.soft_diagonal``)."""
    return A + jnp.diag(jnp.concatenate([slot_diag, soft_diagonal(rows, row_diag)]))


def low_rank_factors(space) -> tuple[Array, Array | None] | None:
    """The contact-space ``A`` as ``U W^T`` for ``qp.QP(factors=)``, so that the QP
    starts with Newton steps solved in the dof's dimension (``jaxsim.solver.lowrank``):
    ``(J L^-T, None)`` (``A = U U^T``), or ``(J, (M^-1 J^T)^T)`` under equality
    constraints. None where the Jacobian has at least half as many columns (dof) as
    rows: on such small problems a Newton step costs what the projected-gradient
    iterations it saves do (a resting cube's four contacts on its 6 dof take one; a
    sliding box and ball, 18 rows on 12 dof, a mean of 8 against 2.4 with Newton
    steps, at 0.93 times the step rate), and it adds a fifth to the compile time."""
    n, nv = space.J.shape
    if 2 * nv >= n:
        return None
    return (space.J_Lt, None) if space.J_Lt is not None else (space.J, space.Minv_JT.T)


def cone_bounds(m: int, rows: Rows) -> tuple[Array, Array]:
    """(lower, upper) of a QP over 3m friction-cone entries (0: its cone blocks do not
    read them) and the generic rows (their impulse intervals)."""
    zeros = jnp.zeros((3 * m,), rows.dist.dtype)
    return jnp.concatenate([zeros, rows.lower]), jnp.concatenate([zeros, rows.upper])


def warm_start(problem: Problem) -> Array:
    """(R m + nr,) last step's impulses of the slots (0 where not kept), 0 on the rows."""
    return jnp.concatenate([problem.prev_impulse.reshape(-1), jnp.zeros_like(problem.rows.dist)])


def as_stats(stats) -> SolverStats:
    """A solver's ``(iterations, residual)`` as ``SolverStats``."""
    return SolverStats(stats.iterations, stats.residual)


def merge_stats(a, b) -> SolverStats:
    """Two solves' stats as one: iterations summed, the larger residual."""
    return SolverStats(a.iterations + b.iterations, jnp.maximum(a.residual, b.residual))
