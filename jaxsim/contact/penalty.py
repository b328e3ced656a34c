"""The contact model ``"penalty"``: every slot a penalty spring-damper with regularized
friction (``penalty_forces.py``, Springhead's penalty mode), and the generic rows (joint and
tendon limits, friction loss, implicit PD) a rigid QP given those forces.

A limit row past its limit is pushed back at ``limit_rate`` times its violation (capped
at 1/dt), at most at ``max_depenetration_speed``; before it, it may reach it within
the step and no further.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsim.contact import common
from jaxsim.contact.interface import ContactModel, Problem, Solution, param, register
from jaxsim.contact.penalty_forces import slot_impulses
from jaxsim.contact.rows import servo_elimination
from jaxsim.solver import qp
from jaxsim.types import Model, pytree_dataclass

Array = jax.Array


@pytree_dataclass
class PenaltyParams:
    limit_rate: Array = param(1000.0, "1/s, correction rate of a violated joint limit (capped at 1/dt)")
    max_depenetration_speed: Array = param(0.5, "m/s (rad/s for hinge limits), cap on the limit correction")


class PenaltyCarry(NamedTuple):
    pass


def init(model: Model, n: int) -> PenaltyCarry:
    return PenaltyCarry()


def solve(model: Model, problem: Problem, carry: PenaltyCarry) -> Solution:
    """Every slot a penalty spring; the generic rows a rigid QP given those forces."""
    dt, opt = model.opt.timestep, model.opt
    m, rows, space = problem.m, problem.rows, problem.space
    df, stats = slot_impulses(model, problem)
    nr = problem.nr
    if nr == 0:
        return Solution(df.reshape(-1), carry, stats)
    p = model.contact_params
    target = common.limit_targets(rows, dt, common.pushed_out(jnp.minimum(p.limit_rate, 1.0 / dt),
                                                              p.max_depenetration_speed))
    b_rows = space.b[3 * m:] + space.A[3 * m:, :3 * m] @ df.reshape(-1)
    A_rows = common.add_diagonal(space.A[3 * m:, 3 * m:], jnp.zeros((0,), space.b.dtype), rows)
    problem_qp = qp.QP(A_rows, jnp.where(rows.active, b_rows - target, 0.0), rows.lower,
                       rows.upper, jnp.zeros((0,), space.b.dtype))
    x, st = qp.solve(problem_qp, jnp.zeros((nr,), space.b.dtype), opt.solver_tol,
                     max_iter=opt.solver_iterations, adjoint=opt.adjoint, smoothing=opt.gradient_smoothing,
                     **servo_elimination(model.topo, nr))
    x = jnp.where(rows.active, x, 0.0)
    return Solution(jnp.concatenate([df.reshape(-1), x]), carry, common.merge_stats(stats, st))


register(ContactModel("penalty", PenaltyParams, init, solve,
                      "spring-damper contacts with regularized friction, no solver (Springhead's penalty mode)"))
