"""Convex QP over a product of simple sets, by accelerated projected gradient.

    minimize  1/2 x^T H x + g^T x   subject to  x in C = C_1 x ... x C_k

with H symmetric positive semi-definite (n, n) and each C_i one of
  * an interval ``lower_j <= x_j <= upper_j`` (a half-line with one bound infinite,
    the whole line with both), per variable;
  * a friction cone ``||(x_1, x_2)|| <= mu x_0`` on a block of three consecutive
    variables (normal, tangent, tangent); the first ``3 * ncone`` variables form the
    cone blocks when ``mu`` has ``ncone`` entries. Cone blocks ignore their bounds.
    With ``cone="box"`` (static) the blocks are Springhead's friction boxes instead,
    ``|x_1| <= mu x_0`` and ``|x_2| <= mu x_0`` (a four-sided pyramid).

An optional per-variable ``compliance`` (n,) is added to the diagonal of H (soft
rows: implicit PD, relaxed resting contacts).

Method (optimistix-style ``init / step / terminate`` on a state pytree, run under
``lax.while_loop``): FISTA (Nesterov-accelerated projected gradient) with the
gradient-based adaptive restart of O'Donoghue & Candes (momentum is dropped whenever
the step points uphill) and an adaptive step ``1 / L``. ``L`` starts at ``L_max``, the
smaller of the Gershgorin and Frobenius bounds on H's largest eigenvalue, shrinks by
10 % after every accepted step, and a step whose curvature ``d^T H d / d^T d`` (``d``:
the step) exceeds ``L`` is rejected and retried with ``L`` raised to that curvature
(at least doubled, at most ``L_max``, where every step is accepted): the backtracking
of Beck & Teboulle with the decreasing estimate of Scheinberg, Goldfarb & Bai, as in
Chrono's APGD. The curvature along the step, not H's largest eigenvalue, then limits
the step: contact problems have a few stiff directions that the iterates rarely
point along. Each iteration multiplies by H once (``H x``;
``H y`` and ``H d`` follow by linearity from two fresh products, so nothing drifts).
Before solving, variables are scaled by a Jacobi preconditioner (``_scaled``): per
cone one scale for its normal and one shared by its two tangents, with the cone's
``mu`` scaled to match (a scaled cone is again a cone, so its projection stays
exact), and after the cones one scale per block of ``block`` variables (half-lines
through 0 stay what they are). It equalises bodies of very different masses, and a
contact's sliding rows with its pressing row where a lever arm weighs them apart.
A diagonal entry is floored at ``eps`` times the largest, not left unscaled: a
finger's limit row can weigh 1e7 times less than its contact, and unscaled it would
move at ``1 / L_max`` of the step it needs.
The warm start is moved along its ray to the objective's least value on it
(``along_ray``, one product with H): last step's impulses often point the right way
at the wrong size. So is the projected steepest
descent direction ``P(-g)`` (in the scaled variables, a Jacobi step from 0), and the
iterations start from whichever of the two has the lower objective: where there is no
warm start (a reset, contacts that have just appeared) that one step of the right
length is often the solution itself (a box landing flat on four corners).

Variables that the caller names (``eliminate``: servo rows) are minimised out exactly
before iterating, their bounds ignored (``_eliminate``, one Cholesky of their block),
and recovered after, so stiff rows do not set the iteration count; where one of them
then lies outside its bounds, all variables are iterated on from there.

Newton steps through H's low-rank factors. Where the caller passes ``factors = (U,
W)``, each (n, k) with k < n, such that H is a diagonal plus ``U W^T`` (``U U^T`` where
W is None; the contact QPs pass ``J L^-T`` with ``L L^T = M``, k = nv dof), the loop
starts with up to ``NEWTON_STEPS`` semismooth Newton steps on the fixed point ``x =
P(x - eta (H x + g))`` from the start (``_newton``). The projection's derivative there
says which cones are inside, on their surface or at their apex and which rows are at
a bound; a Newton step solves that face's linearisation in one k x k factorization
(``lowrank``), where a dense one of the n x n system would cost ``(n / k)^3`` times as
much. From a warm start on the right face one step lands on the solution. Each step
is taken at the best of the lengths ``NEWTON_LENGTHS``, while its gradient-mapping
residual stays below ``NEWTON_SLACK`` times the lowest so far (non-monotone: the
iteration may rise once before it falls), and the point with the lowest residual
goes on to the projected gradient, which finishes; none is taken from a start that
meets the tolerance (``_newton_steps``). The cap is ``solve``'s ``newton_steps``.
Each Newton step counts as one iteration. On a CPU a step costs about ten
projected-gradient iterations, about what it saves from a step's warm start; from a
cold start (``x0 = 0``) it rarely saves any. More steps cut the iterations but not,
on a CPU, the time: on problems captured from the ant, eight steps instead of two
cut the mean iterations from 4.9 to 1.7 and the largest from 96 to 7, while ten
steps of 64 ant envs took 37 % longer (the steps run until the batch's last env
stops).

The returned point is scaled along its ray to be no worse than ``x = 0`` when 0 is
feasible (``no_worse_than_zero``: a no-op at the solution).

Termination: ``||x_k+1 - y_k||_inf L / L_max <= tol * max(||x_k+1||_inf, floor)`` (the
gradient-mapping step, relative, in units of a ``1 / L_max`` step), ``max_iter``
iterations (rejected steps count), or a non-finite residual
(NaN: a problem with non-finite data stops after one iteration). The iteration count and
that residual are returned. Under ``vmap`` the loop iterates only on the problems
still running (``compaction.while_loop``), so a batch's cost follows the sum of its
problems' iterations, not its hardest problem's times the batch size.

Gradients (``adjoint="implicit"``, the default) come from the implicit function
theorem at the solution, not from differentiating the loop: ``x*`` is a fixed point of
``T(x) = P_C(x - eta (H x + g))`` (``eta`` per variable, ``1 / diag H`` averaged over each
cone's block), so ``(I - dT/dx) dx = dT/dtheta dtheta`` for the
parameters ``theta = (H, g, lower, upper, mu)``. The rule is a ``jax.custom_jvp``
(forward mode), and JAX transposes it for reverse mode: ``grad``, ``jacfwd`` and
``jacrev`` all work. Where the projection has a kink (a variable exactly at a bound)
the one-sided derivative with the bound active is used. With circular cones the
linear system is solved through one Cholesky in the eigenbasis of the projection's
Jacobian (``_spd_tangent``); with friction boxes by a pivoted LU. ``smoothing`` (a speed)
replaces ``P_C``'s switching derivative by a blended one (``blend``), which trades the
exact derivative's jumps for a bias that vanishes as it goes to 0; the solution is
not touched. ``adjoint="unrolled"`` instead
runs exactly ``max_iter`` iterations under ``lax.scan`` and lets JAX differentiate
them (for checking the implicit gradients).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import linalg, math
from jaxsim.precision import full_precision
from jaxsim.solver import compaction, lowrank

Array = jax.Array


class QP(NamedTuple):
    """Problem data (all arrays may be batched by ``vmap``).

    ``H`` (n, n), ``g`` (n,), ``lower`` / ``upper`` (n,) and ``mu`` (ncone,) define the
    problem (module docstring); ``compliance`` (n,) is added to H's diagonal;
    ``factors``, optional, is ``(U, W)`` with U (n, k), k < n, and W (n, k) or None,
    such that H minus a diagonal is ``U W^T`` (``U U^T`` where W is None): the solve
    then starts with Newton steps through them (module docstring). The factors must
    describe H; its gradients come from H, not from them.
    """

    H: Array  # (n, n)
    g: Array  # (n,)
    lower: Array  # (n,) may be -inf
    upper: Array  # (n,) may be +inf
    mu: Array  # (ncone,) friction coefficients of the cone blocks (may be empty)
    compliance: Array | None = None  # (n,) added to H's diagonal
    factors: tuple[Array, Array | None] | None = None  # (U, W): the class docstring


class Stats(NamedTuple):
    iterations: Array  # () int32
    residual: Array  # () relative gradient-mapping step at exit


class _Carry(NamedTuple):
    x: Array  # (n,) the last accepted iterate
    Hx: Array  # (n,) H x
    y: Array  # (n,) the extrapolated point the next step starts from
    Hy: Array  # (n,) H y
    t: Array  # () FISTA's momentum parameter
    L: Array  # () the current curvature estimate (step 1 / L)
    it: Array  # () int32 iterations, rejected ones included
    res: Array  # () relative gradient-mapping step of the last accepted iteration


# ---------------------------------------------------------------------------- projection


def project_cone(x: Array, mu: Array) -> Array:
    """Euclidean projection of (..., 3) blocks onto ``||x[1:]|| <= mu x[0]``."""
    n, t = x[..., 0], x[..., 1:]
    tn = jnp.sqrt(math.small_dot(t, t) + jnp.finfo(x.dtype).tiny)
    inside = tn <= mu * n
    polar = mu * tn <= -n  # in the polar cone: projects to the apex
    # onto the cone's surface: scale along the ray (1, mu t/|t|)
    alpha = (n + mu * tn) / (1.0 + mu * mu)
    on_surface = jnp.concatenate([alpha[..., None], (mu * alpha / tn)[..., None] * t], -1)
    out = jnp.where(inside[..., None], x, on_surface)
    return jnp.where(polar[..., None], 0.0, out)


def project_box(x: Array, mu: Array) -> Array:
    """Euclidean projection of (..., 3) blocks onto ``|x[1]| <= mu x[0], |x[2]| <= mu
    x[0], x[0] >= 0``. By symmetry it works on ``a = |x[1:]|``: every tangent is free,
    at ``mu n`` or at 0 (nine active sets, plus the apex); the nearest candidate that
    is feasible is the projection (each active set's candidate is the projection onto
    its face, so a feasible one is never nearer than the true projection)."""
    n, t = x[..., 0], x[..., 1:]
    a, sign = jnp.abs(t), jnp.where(t < 0, -1.0, 1.0).astype(x.dtype)
    mu = jnp.asarray(mu, x.dtype)[..., None]
    tol = 1e-12 if x.dtype == jnp.float64 else 1e-6
    best, best_d = jnp.zeros_like(x), jnp.full(n.shape, jnp.inf, x.dtype)
    for s1 in range(3):  # 0 free, 1 at mu n, 2 at zero
        for s2 in range(3):
            up = jnp.asarray([s1 == 1, s2 == 1])
            zero = jnp.asarray([s1 == 2, s2 == 2])
            n_c = (n + mu[..., 0] * jnp.sum(jnp.where(up, a, 0.0), -1)) / (1.0 + mu[..., 0] ** 2 * jnp.sum(up))
            a_c = jnp.where(up, mu * n_c[..., None], jnp.where(zero, 0.0, a))
            scale = 1.0 + jnp.abs(n_c)
            ok = (n_c >= -tol * scale) & jnp.all((a_c >= -tol * scale[..., None])
                                                 & (a_c <= mu * n_c[..., None] + tol * scale[..., None]), -1)
            cand = jnp.concatenate([n_c[..., None], a_c], -1)
            d = jnp.where(ok, jnp.sum((cand - jnp.concatenate([n[..., None], a], -1)) ** 2, -1), jnp.inf)
            better = d < best_d
            best, best_d = jnp.where(better[..., None], cand, best), jnp.where(better, d, best_d)
    apex = jnp.isinf(best_d)  # nothing feasible but the apex (n < 0 in the polar cone)
    best = jnp.where(apex[..., None], 0.0, best)
    return jnp.concatenate([best[..., :1], sign * best[..., 1:]], -1)


def project(x: Array, lower: Array, upper: Array, mu: Array, cone: str = "circle") -> Array:
    """Projection onto the product set (module docstring)."""
    ncone = mu.shape[-1]
    boxed = jnp.clip(x[3 * ncone:], lower[3 * ncone:], upper[3 * ncone:])
    if ncone == 0:
        return boxed
    blocks = x[: 3 * ncone].reshape(ncone, 3)
    cones = project_box(blocks, mu) if cone == "box" else project_cone(blocks, mu)
    return jnp.concatenate([cones.reshape(-1), boxed])


# ---------------------------------------------------------------------------- solver


def _lipschitz(H: Array) -> Array:
    gershgorin = jnp.max(jnp.sum(jnp.abs(H), -1))
    frobenius = jnp.sqrt(jnp.sum(H * H))
    return jnp.maximum(jnp.minimum(gershgorin, frobenius), jnp.finfo(H.dtype).tiny)


def _block_diagonal(H: Array, block, ncone: int) -> tuple[Array, Array]:
    """(n,) H's diagonal averaged over each cone's three variables (the first ``3 *
    ncone``) and, after them, within each block of ``block`` variables (``block`` =
    (size, count) puts only the first ``count`` blocks together, the rest one per
    variable), and (n,) where it is positive (above rounding)."""
    raw = jnp.abs(jnp.diagonal(H))
    n, k = raw.shape[0], 3 * ncone
    size, count = block if isinstance(block, tuple) else (block, n // block if n % block == 0 else 0)
    d = raw
    if size > 1 and count > 0:
        m = size * count
        d = jnp.concatenate([jnp.repeat(jnp.mean(raw[:m].reshape(-1, size), -1), size), raw[m:]])
    if k:
        d = jnp.concatenate([jnp.repeat(jnp.mean(raw[:k].reshape(-1, 3), -1), 3), d[k:]])
    return d, _positive(d)


def _diagonal_floor(d: Array) -> Array:
    """The least diagonal entry counted apart from rounding: ``eps`` times the largest."""
    return jnp.maximum(jnp.finfo(d.dtype).eps * jnp.max(d, initial=0.0), jnp.finfo(d.dtype).tiny)


def _positive(d: Array) -> Array:
    return d > _diagonal_floor(d)


def _scales(H: Array, block, ncone: int) -> Array:
    """(n,) Jacobi scales ``1 / sqrt(diag H)``, the diagonal floored at
    ``_diagonal_floor`` (a row it leaves unscaled would crawl at ``1 / L_max``): per cone
    one for its normal and one for its two tangents, the mean of their diagonal (so
    the scaled cone is again a cone, ``_scaled``); after the cones equal within each
    block (``_block_diagonal``)."""
    d, _ = _block_diagonal(H, block, 0)
    k = 3 * ncone
    if k:
        triples = jnp.abs(jnp.diagonal(H))[:k].reshape(-1, 3)
        tangent = jnp.mean(triples[:, 1:], -1)
        d = jnp.concatenate([jnp.stack([triples[:, 0], tangent, tangent], -1).reshape(-1), d[k:]])
    return 1.0 / jnp.sqrt(jnp.maximum(d, _diagonal_floor(d)))


def _block_steps(H: Array, block, ncone: int) -> Array:
    """(n,) the fixed-point steps ``1 / diag H``, equal within each cone's block and
    each block of ``block`` (``_block_diagonal``: a cone's projection is then the same
    for any of them); ``1 / L_max`` where it is below ``_diagonal_floor``. With them ``(z - x) /
    eta`` is a velocity and ``x / eta`` the velocity the impulse ``x`` makes alone."""
    d, positive = _block_diagonal(H, block, ncone)
    return jnp.where(positive, 1.0 / jnp.where(positive, d, 1.0), 1.0 / _lipschitz(H))


def _scaled(qp: QP, block) -> tuple[QP, Array]:
    """The problem in the Jacobi-scaled variables ``x / s`` (``_scales``), and ``s``.

    A cone ``||x_t|| <= mu x_n`` whose normal is scaled by ``s_n`` and both tangents by
    ``s_t`` is the cone of friction coefficient ``mu s_n / s_t`` in the scaled
    variables, so its projection stays exact. Why separate scales: a contact's
    tangential rows can weigh several times its normal row (a foot at the end of a
    lever: rotation adds to sliding, not to pressing), and one mean scale for both
    leaves that spread in the scaled operator."""
    ncone = qp.mu.shape[0]
    s = jax.lax.stop_gradient(_scales(qp.H, block, ncone))
    mu = qp.mu
    if ncone:
        triples = s[:3 * ncone].reshape(-1, 3)
        mu = qp.mu * jax.lax.stop_gradient(triples[:, 0] / triples[:, 1])
    factors = None if qp.factors is None else tuple(None if f is None else f * s[:, None] for f in qp.factors)
    return QP(qp.H * s[:, None] * s[None, :], qp.g * s, qp.lower / s, qp.upper / s, mu, factors=factors), s


SHRINK = 0.9  # L's factor after an accepted step (a 10 % longer next step)
GROW = 2.0  # least factor on L after a rejected step
MIN_L = 1e-3  # L never below this fraction of L_max


def init(qp: QP, x0: Array, L_max: Array, cone: str = "circle") -> _Carry:
    """The state at the better of two starts, the warm start ``x0`` and the steepest
    descent direction ``-g``, each projected and moved along its ray to the
    objective's least value there (``along_ray``): the one with the lower objective
    (module docstring)."""
    warm = along_ray(qp, project(x0, qp.lower, qp.upper, qp.mu, cone), cone)
    steepest = along_ray(qp, project(-qp.g, qp.lower, qp.upper, qp.mu, cone), cone)
    Hw, Hs = qp.H @ warm, qp.H @ steepest
    pick = steepest @ (0.5 * Hs + qp.g) < warm @ (0.5 * Hw + qp.g)
    x, Hx = jnp.where(pick, steepest, warm), jnp.where(pick, Hs, Hw)
    dtype = x.dtype
    return _Carry(x, Hx, x, Hx, jnp.ones((), dtype), jnp.asarray(L_max, dtype), jnp.zeros((), jnp.int32),
                  jnp.full((), jnp.inf, dtype))


def along_ray(qp: QP, x: Array, cone: str = "circle") -> Array:
    """The feasible ``x`` scaled by the ``a >= 0`` that minimises the objective along
    the ray ``a x`` (then projected: ``a x`` can leave a row's interval), or ``x``
    where the objective has no curvature along it.

    Why: a warm start often points the right way at the wrong size. Last step's
    impulses on a body that has since slowed or sped up are a multiple of this
    step's; from them the projected gradient spends most of its iterations in the
    directions A leaves to the small compliance (how the weight of a box spreads
    over its four corners), which scaling along the ray leaves in place."""
    a, curved = _ray_minimum(qp, x)
    return jnp.where(curved, project(a * x, qp.lower, qp.upper, qp.mu, cone), x)


def _ray_minimum(qp: QP, x: Array) -> tuple[Array, Array]:
    """The ``a >= 0`` that minimises the objective along the ray ``a x``, and whether
    the objective curves along ``x`` (``x^T H x > 0``; else ``a`` is meaningless)."""
    xhx = x @ (qp.H @ x)
    curved = xhx > 0
    return jnp.maximum(-(x @ qp.g) / jnp.where(curved, xhx, 1.0), 0.0), curved


def step(qp: QP, L_max: Array, c: _Carry, floor: float, cone: str = "circle") -> _Carry:
    """One projected-gradient step from ``c.y`` with step ``1 / c.L``, accepted or
    rejected by the curvature along it (module docstring)."""
    x_new = project(c.y - (c.Hy + qp.g) / c.L, qp.lower, qp.upper, qp.mu, cone)
    Hx_new = qp.H @ x_new
    d, Hd = x_new - c.y, Hx_new - c.Hy
    dd = d @ d
    # the curvature only chooses the step; its derivative would divide by dd^2, which
    # underflows to 0 for a tiny step
    curvature = jax.lax.stop_gradient((d @ Hd) / jnp.maximum(dd, jnp.finfo(dd.dtype).tiny))
    # at L_max every step is accepted: a larger curvature there is rounding (a step of
    # the size of float32's last digits)
    accept = (curvature <= c.L) | (c.L >= L_max)
    t_new = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * c.t * c.t))
    uphill = jnp.dot(c.y - x_new, x_new - c.x) > 0  # adaptive restart
    t_new = jnp.where(uphill, 1.0, t_new)
    beta = jnp.where(uphill, 0.0, (c.t - 1.0) / t_new)
    res = (jnp.max(jnp.abs(d), initial=0.0) * (c.L / L_max)
           / jnp.maximum(jnp.max(jnp.abs(x_new), initial=0.0), floor))
    L_new = jnp.where(accept, jnp.maximum(SHRINK * c.L, MIN_L * L_max),
                      jnp.minimum(jnp.maximum(GROW * c.L, curvature), L_max))
    taken = _Carry(x_new, Hx_new, x_new + beta * (x_new - c.x), Hx_new + beta * (Hx_new - c.Hx), t_new, L_new,
                   c.it + 1, res)
    kept = c._replace(L=L_new, it=c.it + 1)
    return jax.tree.map(lambda a, b: jnp.where(accept, a, b), taken, kept)


def terminate(c: _Carry, tol: Array, max_iter: int) -> Array:
    # a non-finite residual stops at once: under vmap one diverged env would otherwise
    # make every env of its batch run to the iteration cap, every step
    return (c.it >= max_iter) | (c.res <= tol) | jnp.isnan(c.res)


def _floor(dtype) -> float:
    return 1e-12 if dtype == jnp.float64 else 1e-6


def no_worse_than_zero(qp: QP, x: Array) -> Array:
    """``x`` scaled by the ``a`` in [0, 1] that minimises the objective along the ray
    ``a x``, where the feasible set holds 0 (then it holds ``a x`` too).

    At the solution ``a = 1`` (``x . (H x + g) = 0`` there); at an iteration cap it
    makes the returned point never worse than ``x = 0``. For the contact QPs, whose
    objective is the kinetic energy an impulse adds (``contact/point.py``), a step
    that stops at the cap then still does not add energy."""
    a, curved = _ray_minimum(qp, x)
    zero_feasible = jnp.all((qp.lower <= 0) & (qp.upper >= 0))
    return jnp.where(zero_feasible & curved, jax.lax.stop_gradient(jnp.minimum(a, 1.0)) * x, x)


def _eliminate(qp: QP, drop: tuple[int, ...]) -> tuple[QP, np.ndarray, object]:
    """The QP over the variables other than ``drop`` (static indices after the cone
    blocks), with those minimised out exactly, their bounds ignored: ``x_d = -H_dd^-1
    (H_dk x_k + g_d)``, so ``H_kk - H_kd H_dd^-1 H_dk`` and ``g_k - H_kd H_dd^-1 g_d``
    (the Schur complement; ``H_dd`` must be positive definite). Returns it, the kept
    indices and the map from a reduced point back to all ``n`` variables.

    Why: a stiff row (a servo at a large time step) adds H's largest eigenvalues, and
    the projected gradient's iterations grow with the square root of the condition
    number; minimising it out costs one Cholesky of its rows and leaves the
    contacts' conditioning."""
    n = qp.g.shape[0]
    drop = np.asarray(drop)
    kept = np.setdiff1d(np.arange(n), drop)
    H_dk = qp.H[np.ix_(drop, kept)]
    sol = linalg.cho_solve(linalg.cho_factor(qp.H[np.ix_(drop, drop)]),
                           jnp.concatenate([H_dk, qp.g[drop][:, None]], 1))  # H_dd^-1 [H_dk, g_d]
    H = qp.H[np.ix_(kept, kept)] - H_dk.T @ sol[:, :-1]
    reduced = QP(0.5 * (H + H.T), qp.g[kept] - H_dk.T @ sol[:, -1], qp.lower[kept], qp.upper[kept], qp.mu)

    def expand(x_kept: Array) -> Array:
        x_drop = -(sol[:, :-1] @ x_kept + sol[:, -1])
        return jnp.zeros((n,), x_kept.dtype).at[kept].set(x_kept).at[drop].set(x_drop)
    return reduced, kept, expand


# QPs of at most TINY variables (a cube's four contacts) compact their batch in stages
# that shrink by TINY_STAGE_SHRINK: an iteration of such a problem costs less than a
# stage's hand-over (cube at 64 envs: 7-10 % less time per step than halving stages)
TINY = 16
TINY_STAGE_SHRINK = 4

NEWTON_STEPS = 2  # default cap on the Newton steps before the projected-gradient loop
# a Newton step is kept as the next one's start while its residual stays below this
# factor times the lowest so far (``_newton_steps``)
NEWTON_SLACK = 2.0
NEWTON_LENGTHS = (1.0, 0.5, 0.25)  # the Newton step's lengths tried at once


def _gradient_map_residual(qp: QP, L_max: Array, x: Array, Hx: Array, floor: float) -> Array:
    """The relative size of the projected-gradient step ``P(x - (H x + g) / L_max) -
    x``: ``terminate``'s residual at ``L = L_max``."""
    x_new = project(x - (Hx + qp.g) / L_max, qp.lower, qp.upper, qp.mu)
    return jnp.max(jnp.abs(x_new - x), initial=0.0) / jnp.maximum(jnp.max(jnp.abs(x_new), initial=0.0), floor)


def _newton(qp: QP, L_max: Array, c: _Carry, bound: Array, tol: Array, skip: Array, floor: float,
            block) -> _Carry:
    """One semismooth Newton step on the fixed point ``x = P(x - eta (H x + g))`` from
    ``c.x`` (module docstring), solved through H's low-rank factors
    (``lowrank.newton_system_solve``), projected, at the best of a few lengths. Taken
    where its gradient-mapping residual is below ``bound`` (momentum reset); counted
    as an iteration where the solve had not converged yet. Returns the state and
    whether the step was taken."""
    x = c.x
    U, W = qp.factors
    ncone = qp.mu.shape[0]
    eta = _block_steps(qp.H, block, ncone)
    k = 3 * ncone
    z = x - eta * (c.Hx + qp.g)
    F = x - project(z, qp.lower, qp.upper, qp.mu)
    Vc, dc = cone_jacobian_eig(z[:k].reshape(ncone, 3), qp.mu)
    d = jnp.concatenate([dc.reshape(-1), _free(qp, z)])
    ridge = _tangent_ridge(qp.H)
    compliance = lowrank.diagonal_part(jnp.diagonal(qp.H), U, W)
    dx = lowrank.newton_system_solve(Vc, d, eta, compliance, U, W, -F, ridge)
    lengths = jnp.asarray(NEWTON_LENGTHS, x.dtype)
    trials = jax.vmap(lambda a: project(x + a * dx, qp.lower, qp.upper, qp.mu))(lengths)
    Hx = trials @ qp.H  # (H symmetric)
    res = jax.vmap(lambda y, Hy: _gradient_map_residual(qp, L_max, y, Hy, floor))(trials, Hx)
    res = jnp.where(jnp.isfinite(res), res, jnp.inf)
    best = jnp.argmin(res)
    needed = ~skip & (c.res > tol)
    better = needed & (res[best] < bound)
    x_new, Hx_new = trials[best], Hx[best]
    taken = _Carry(x_new, Hx_new, x_new, Hx_new, jnp.ones_like(c.t), c.L, c.it + 1, res[best])
    kept = c._replace(it=c.it + needed.astype(c.it.dtype))
    return jax.tree.map(lambda a, b: jnp.where(better, a, b), taken, kept), better


def _newton_steps(qp: QP, L_max: Array, c: _Carry, tol: Array, skip: Array, floor: float, block,
                  steps: int) -> _Carry:
    """Up to ``steps`` Newton steps (``_newton``), none where the start already meets
    the tolerance. Non-monotone: each step starts from the last one taken, and a step
    is taken while its gradient-mapping residual stays below ``NEWTON_SLACK`` times
    the lowest one so far. The steps stop once one meets the tolerance, at a step not
    taken (the next one would start from the same point and be rejected again), or
    after ``steps``, and the point with the lowest residual is returned (the start
    where none lowered it), with every step counted.

    Why non-monotone: near the surface of a sliding contact's cone the semismooth
    Newton iteration often raises the residual a few per cent once before it falls by
    orders of magnitude (the ant's slowest captured problems: up 4 %, then down from
    1e-3 to 1e-7 in three steps); a monotone rule stops at that step and leaves the
    projected gradient 50-100 iterations.

    A plain ``lax.while_loop``: under ``vmap`` it runs until every env has stopped,
    never more than ``steps``; alone it skips the steps that cannot help (8 boxes at
    batch 1: a quarter less time per step)."""
    start = _gradient_map_residual(qp, L_max, c.x, c.Hx, floor)

    def running(carry):
        _, _, lowest, count, moved = carry
        return ~skip & moved & (count < steps) & (lowest > tol)

    def body(carry):
        c, best, lowest, count, _ = carry
        c, moved = _newton(qp, L_max, c, NEWTON_SLACK * lowest, tol, skip, floor, block)
        lower = moved & (c.res < lowest)
        best = jax.tree.map(lambda a, b: jnp.where(lower, a, b), c, best)
        return c, best, jnp.where(lower, c.res, lowest), count + 1, moved

    # best starts as c, whose res is inf until a step is taken: where no step lowers
    # the residual, the projected gradient starts from c as it would without them
    c, best, _, _, _ = jax.lax.while_loop(running, body, (c, c, start, jnp.zeros((), jnp.int32),
                                                          jnp.ones((), bool)))
    return best._replace(it=c.it)


def _run(qp: QP, x0: Array, tol: Array, max_iter: int, block: int, cone: str,
         skip: Array | bool = False, eliminate: tuple = ((), False),
         newton_steps: int = NEWTON_STEPS) -> tuple[Array, Stats]:
    drop, check_bounds = eliminate
    if drop:
        # the reduced objective at x_k is the least full objective with that x_k, so
        # its never-worse-than-zero point stays no worse than x = 0 once expanded
        reduced, kept, expand = _eliminate(qp, drop)
        if kept.size == 0:  # nothing left to iterate on
            x, stats = expand(x0[kept]), Stats(jnp.zeros((), jnp.int32), jnp.zeros((), x0.dtype))
        else:
            x, stats = _run(reduced, x0[kept], tol, max_iter, block, cone, skip, newton_steps=newton_steps)
            x = expand(x)
        if not check_bounds:
            return x, stats
        # within their bounds the reduced solution solves the full problem too (it
        # minimises a relaxation of it); elsewhere iterate on everything from there
        idx = np.asarray(drop)
        within = jnp.all((x[idx] >= qp.lower[idx]) & (x[idx] <= qp.upper[idx]))
        x2, stats2 = _run(qp, x, tol, max_iter, block, cone, skip | within, newton_steps=newton_steps)
        return (jnp.where(within, x, x2),
                Stats(stats.iterations + stats2.iterations, jnp.where(within, stats.residual, stats2.residual)))
    sqp, s = _scaled(qp, block)
    L_max = _lipschitz(sqp.H)
    floor = _floor(qp.g.dtype)
    skip = jnp.asarray(skip, bool)
    c = init(sqp, x0 / s, L_max, cone)
    if sqp.factors is not None and cone == "circle":
        # a loop rather than unrolled, so XLA compiles the Newton step once: a tenth
        # to a fifth less compile time for a humanoid step, at the same speed
        c = _newton_steps(sqp, L_max, c, tol, skip, floor, block, min(newton_steps, max_iter))
    # the loop does not read the factors: kept out of its operands, which every
    # compacting stage gathers
    operands = (sqp._replace(factors=None), L_max, tol, skip)
    c = compaction.while_loop(lambda ops, c: ~(terminate(c, ops[2], max_iter) | ops[3]),
                              lambda ops, c: step(ops[0], ops[1], c, floor, cone), operands, c,
                              shrink=TINY_STAGE_SHRINK if qp.g.shape[0] <= TINY else compaction.STAGE_SHRINK)
    return no_worse_than_zero(qp, c.x * s), Stats(c.it, c.res)


@functools.partial(jax.custom_jvp, nondiff_argnums=(5, 6, 7, 8, 9))
def _solve_implicit(qp: QP, x0: Array, tol: Array, skip: Array, smoothing: Array, max_iter: int, block: int,
                    cone: str, eliminate: tuple, newton_steps: int):
    return _run(qp, x0, tol, max_iter, block, cone, skip, eliminate, newton_steps)


def blend(distance: Array, width: Array) -> Array:
    """The smoothed step ``(1 + s / sqrt(s^2 + w^2)) / 2`` of a signed distance ``s``
    into a set (positive inside): 1/2 on its boundary, 0.85 one ``width`` inside and
    0.15 one ``width`` outside; ``distance = +-inf`` gives 1 or 0. It is the
    derivative of the Chen-Harker-Kanzow-Smale smoothing ``(s + sqrt(s^2 + w^2)) / 2``
    of ``max(s, 0)``: a bound's complementarity relaxed to ``slack * multiplier = w^2
    / 4`` at the point of the central path nearest the solution."""
    finite = jnp.isfinite(distance)
    s = jnp.where(finite, distance, 0.0)
    smooth = 0.5 * (1.0 + s / jnp.sqrt(s * s + width * width + jnp.finfo(s.dtype).tiny))
    return jnp.where(finite, smooth, (distance > 0).astype(s.dtype))


def cone_jacobian_eig(z: Array, mu: Array, width: Array | None = None) -> tuple[Array, Array]:
    """The derivative of ``project_cone`` at (..., 3) blocks ``z``, as ``V diag(d)
    V^T`` with V (..., 3, 3) orthogonal (columns: eigenvectors) and d (..., 3) in [0, 1].

    Inside the cone ``d = 1`` (V = I); in its polar ``d = 0``; on the surface, with
    ``u = z_t / |z_t|`` and ``s = sqrt(1 + mu^2)``: the generator ``(1, mu u) / s``
    keeps 1, the surface normal ``(-mu, u) / s`` gets 0, and the circumferential
    ``(0, u_perp)`` gets ``mu alpha / |z_t|`` (the factor by which the projection
    shrinks the tangent, ``alpha = (z_n + mu |z_t|) / (1 + mu^2)``). The branches are
    ``project_cone``'s, boundary cases included.

    With a ``width`` (..., same units as z) the two switches are blended (``blend``)
    instead: the generator's 1 by the distance ``a = (z_n + mu |z_t|) / s`` from the
    polar cone (separating or not), the surface normal's by ``a`` and the distance
    ``-b = (mu z_n - |z_t|) / s`` inside the surface (sticking or sliding), always in
    the surface frame; the circumferential value, already continuous, is clipped to
    [0, 1]. A width of 0 gives the branches above."""
    n, t = z[..., 0], z[..., 1:]
    tn = jnp.sqrt(jnp.sum(t * t, -1) + jnp.finfo(z.dtype).tiny)
    inside, polar = tn <= mu * n, mu * tn <= -n
    # the slip direction; on the axis (no tangent) any, for the smoothed frame
    u = jnp.where((jnp.sum(t * t, -1) > 0)[..., None], t / tn[..., None], jnp.asarray([1.0, 0.0], z.dtype))
    sc = jnp.sqrt(1.0 + mu * mu)
    zero = jnp.zeros_like(n)
    gen = jnp.stack([1.0 / sc, mu * u[..., 0] / sc, mu * u[..., 1] / sc], -1)
    nrm = jnp.stack([-mu / sc, u[..., 0] / sc, u[..., 1] / sc], -1)
    circ = jnp.stack([zero, -u[..., 1], u[..., 0]], -1)
    surface_v = jnp.stack([gen, nrm, circ], -1)  # columns
    alpha = (n + mu * tn) / (1.0 + mu * mu)
    surface_d = jnp.stack([jnp.ones_like(n), zero, mu * alpha / tn], -1)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=z.dtype), surface_v.shape)
    simple = (inside | polar)[..., None]
    V = jnp.where(simple[..., None], eye, surface_v)
    d = jnp.where(simple, jnp.where(inside, 1.0, 0.0)[..., None] * jnp.ones_like(z), surface_d)
    if width is None:
        return V, d
    # smoothed: always the surface frame
    a, b = (n + mu * tn) / sc, (tn - mu * n) / sc
    d_gen = blend(a, width)
    d_circ = jnp.clip(mu * jnp.maximum(alpha, 0.0) / tn, 0.0, 1.0)
    smooth_d = jnp.stack([d_gen, d_gen * blend(-b, width), d_circ], -1)
    smooth = (width > 0)[..., None]
    return jnp.where(smooth[..., None], surface_v, V), jnp.where(smooth, smooth_d, d)


# steps of iterative refinement after the low-rank tangent solve: Woodbury's formula
# loses digits where G is only the ridge (sticking rigid contacts, more rows than
# dof). One step brings the gradients of settled scenes to the dense Cholesky's (1e-13
# apart in float64); on a rank-deficient rigid problem with every cone sticking it
# leaves H dx 1e-7 (relative) from it, two 1e-11, at 10 % more gradient time
REFINEMENTS = 1


def _tangent_ridge(H: Array) -> Array:
    """() the ridge added to the tangent systems' diagonal, so that a direction with
    neither compliance nor ``1 - d`` stays solvable."""
    eps = jnp.finfo(H.dtype).eps
    return (1e-12 if H.dtype == jnp.float64 else 1e-6) * jnp.maximum(jnp.mean(jnp.abs(jnp.diagonal(H))), eps)


def _spd_tangent(qp: QP, x: Array, z: Array, eta: Array, rhs_b: Array, p: Array,
                 width: Array | None = None) -> Array:
    """``dx`` of the fixed point ``x = P(z)``, ``z = x - eta (H x + g)``, with a circular
    cone's (or no) cones: ``(I - D + eta D H) dx = eta D rhs_b + p`` (``rhs_b = -(dH x +
    dg)``, ``p`` the projection's derivative in its bounds and mu, ``D = P'(z)``),
    solved through a symmetric positive-definite system.

    ``D = V diag(d) V^T`` blockwise (``cone_jacobian_eig``; an interval row has d = 1
    strictly inside its bounds, else 0). In V's basis a direction with ``d = 0`` has
    ``dx' = p'``; the others, divided by ``eta d``, read ``((1 - d) / (eta d)) dx' + (H'
    dx')`` with ``H' = V^T H V``: diagonal plus H restricted to them, positive definite,
    so one Cholesky does (a pivoted LU of the general system cost 5x as much). Where
    ``qp.factors`` give H as a diagonal plus ``U W^T`` of rank k, that system is the
    Newton step's and is solved in k dimensions (``lowrank.newton_system_solver``,
    factored once) instead of n, with one step of iterative refinement
    (``REFINEMENTS``).

    ``eta`` (n,) is constant on each cone block. With ``width`` (n,), D is the smoothed
    one (``cone_jacobian_eig``, ``_free``)."""
    ncone = qp.mu.shape[0]
    k = 3 * ncone
    Vc, dc = cone_jacobian_eig(z[:k].reshape(ncone, 3), qp.mu, None if width is None else width[:k:3])
    d = jnp.concatenate([dc.reshape(-1), _free(qp, z, None if width is None else width[k:])])
    eps = jnp.finfo(x.dtype).eps
    on = d > 16 * eps
    ridge = _tangent_ridge(qp.H)
    b1, p1 = lowrank.rotate_t(Vc, rhs_b), lowrank.rotate_t(Vc, p)
    if qp.factors is not None:
        U, W = qp.factors
        compliance = lowrank.diagonal_part(jnp.diagonal(qp.H), U, W)
        rhs = lowrank.rotate(Vc, jnp.where(on, eta * d * b1, 0.0) + p1)  # eta D rhs_b + p

        def system(dx):  # the regularized system that both branches solve, applied to dx
            y = lowrank.rotate_t(Vc, dx)
            hy = lowrank.rotate_t(Vc, qp.H @ dx) + ridge * y
            return lowrank.rotate(Vc, (1.0 - d) * y + jnp.where(on, eta * d * hy, 0.0))

        solve = lowrank.newton_system_solver(Vc, d, eta, compliance, U, W, ridge)
        dx = solve(rhs)
        for _ in range(REFINEMENTS):
            dx = dx + solve(rhs - system(dx))
        return dx
    H1 = lowrank.rotate_t(Vc, lowrank.rotate_t(Vc, qp.H).T)  # V^T H V (H symmetric)
    both = on[:, None] & on[None, :]
    diag = jnp.where(on, (1.0 - d) / (eta * jnp.where(on, d, 1.0)) + ridge, 1.0)
    factor = linalg.cho_factor(jnp.where(both, H1, 0.0) + jnp.diag(diag))
    dx_off = jnp.where(on, 0.0, p1 / jnp.maximum(1.0 - d, eps))
    rhs = jnp.where(on, b1 + p1 / (eta * jnp.where(on, d, 1.0)) - H1 @ dx_off, dx_off)
    return lowrank.rotate(Vc, linalg.cho_solve(factor, rhs))


def _free(qp: QP, z: Array, width: Array | None = None) -> Array:
    """(n - 3 ncone,) 1 for the interval rows strictly inside their bounds at ``z``, 0
    for the others; with ``width`` (n - 3 ncone,) and where it is positive, the
    product of the two bounds' ``blend``."""
    k = 3 * qp.mu.shape[0]
    zr = z[k:]
    hard = ((zr > qp.lower[k:]) & (zr < qp.upper[k:])).astype(z.dtype)
    if width is None:
        return hard
    smooth = blend(zr - qp.lower[k:], width) * blend(qp.upper[k:] - zr, width)
    return jnp.where(width > 0, smooth, hard)


def _box_jacobian(z: Array, x: Array, mu: Array, width: Array) -> Array:
    """(m, 3, 3) the smoothed derivative of ``project_box`` at blocks ``z`` (m, 3)
    projected to ``x``: the box is the cone ``N_i . x <= 0`` of five unit normals (the
    four faces ``+-x_t,j - mu x_n``, and ``x_n >= 0``), each with its slack ``s_i = -N_i
    . x`` and its multiplier ``l_i`` in ``z - x = sum l_i N_i``. Relaxing each face's
    complementarity gives ``(I + N^T diag(c / b) N)^-1`` with ``b = blend(s - l)`` and ``c
    = 1 - b``, which tends to the projection onto the active faces' intersection as
    the width goes to 0. It is evaluated as ``I - N^T C^1/2 (diag(b) + C^1/2 N N^T
    C^1/2)^-1 C^1/2 N`` (Woodbury), whose inner matrix has a unit diagonal, so a face
    far on either side (b or c rounding to 0) costs no precision."""
    c = jnp.sqrt(1.0 + mu * mu)
    zero, one = jnp.zeros_like(mu), jnp.ones_like(mu)
    normals = jnp.stack([jnp.stack([-mu, one, zero], -1), jnp.stack([-mu, -one, zero], -1),
                         jnp.stack([-mu, zero, one], -1), jnp.stack([-mu, zero, -one], -1)], -2) / c[:, None, None]
    normals = jnp.concatenate([normals, jnp.broadcast_to(jnp.asarray([-1.0, 0.0, 0.0], z.dtype),
                                                         (mu.shape[0], 1, 3))], -2)  # (m, 5, 3)
    r = z - x
    rt = r[:, 1:]
    lam_t = jnp.stack([jnp.maximum(rt[:, 0], 0.0), jnp.maximum(-rt[:, 0], 0.0),
                       jnp.maximum(rt[:, 1], 0.0), jnp.maximum(-rt[:, 1], 0.0)], -1) * c[:, None]
    lam_n = jnp.maximum(-r[:, 0] - mu * jnp.sum(jnp.abs(rt), -1), 0.0)
    lam = jnp.concatenate([lam_t, lam_n[:, None]], -1)
    slack = -jnp.einsum("mij,mj->mi", normals, x)
    dist, w = slack - lam, width[:, None]
    b, c = blend(dist, w), blend(-dist, w)
    scaled = jnp.sqrt(c)[..., None] * normals  # (m, 5, 3) C^1/2 N
    inner = jnp.einsum("mij,mkj->mik", scaled, scaled) + jax.vmap(jnp.diag)(b)
    inner = inner + 1e3 * jnp.finfo(z.dtype).eps * jnp.eye(5, dtype=z.dtype)  # five faces meet at the apex
    return jnp.eye(3, dtype=z.dtype) - jnp.einsum("mij,mik->mjk", scaled, jnp.linalg.solve(inner, scaled))


def _param_tangent(qp: QP, dqp: QP, z: Array, cone: str) -> Array:
    """(n,) the projection's derivative at ``z`` along the bounds' and mu's tangents: a
    cone block's through mu, an interval row's that of the bound it is held at (at or
    beyond it: the one-sided derivative with the bound active)."""
    k = 3 * qp.mu.shape[0]
    cones = jnp.zeros((0,), z.dtype)
    if k:
        proj = project_box if cone == "box" else project_cone
        _, cones = jax.jvp(lambda mu: proj(z[:k].reshape(-1, 3), mu), (qp.mu,), (dqp.mu,))
    zr = z[k:]
    rows = jnp.where(zr <= qp.lower[k:], dqp.lower[k:], jnp.where(zr >= qp.upper[k:], dqp.upper[k:], 0.0))
    return jnp.concatenate([cones.reshape(-1), rows])


@_solve_implicit.defjvp
@full_precision
def _solve_implicit_jvp(max_iter, block, cone, eliminate, newton_steps, primals, tangents):
    qp, x0, tol, skip, smoothing = primals
    dqp = tangents[0]
    x, stats = _run(qp, x0, tol, max_iter, block, cone, skip, eliminate, newton_steps)
    x = jax.lax.stop_gradient(x)
    eta = _block_steps(qp.H, block, qp.mu.shape[0])
    width = smoothing * eta  # the smoothing speed as an impulse per variable
    zeros = Stats(np.zeros((), jax.dtypes.float0), jnp.zeros_like(stats.residual))
    z = x - eta * (qp.H @ x + qp.g)
    p = _param_tangent(qp, dqp, z, cone)
    if cone == "circle":
        return (x, stats), (_spd_tangent(qp, x, z, eta, -(dqp.H @ x + dqp.g), p, width), zeros)
    # the projection's derivative (cheap: H enters linearly, P is evaluated once)
    n, k = x.shape[0], 3 * qp.mu.shape[0]
    jac_p = jax.jacfwd(lambda z_: project(z_, qp.lower, qp.upper, qp.mu, cone))(z)  # (n, n) dP/dz
    if k:
        idx = jnp.arange(k).reshape(-1, 3)
        blocks = _box_jacobian(z[:k].reshape(-1, 3), project(z, qp.lower, qp.upper, qp.mu, cone)[:k].reshape(-1, 3),
                               qp.mu, width[:k:3])
        smoothed = jac_p.at[idx[:, :, None], idx[:, None, :]].set(blocks)
        jac_p = jnp.where(smoothing > 0, smoothed, jac_p)
    jac_p = jac_p.at[k:, k:].set(jnp.diag(_free(qp, z, width[k:])))  # a row at a bound is held
    dz = -eta * (dqp.H @ x + dqp.g)
    rhs = jac_p @ dz + p
    system = jnp.eye(n, dtype=x.dtype) - jac_p @ (jnp.eye(n, dtype=x.dtype) - eta[:, None] * qp.H)
    # a tiny ridge keeps the system solvable where H is only semi-definite
    ridge = (1e-12 if x.dtype == jnp.float64 else 1e-6) * jnp.eye(n, dtype=x.dtype)
    dx = linalg.solve(system + ridge, rhs)
    return (x, stats), (dx, zeros)


def _solve_unrolled(qp: QP, x0: Array, max_iter: int, block: int, cone: str) -> tuple[Array, Stats]:
    sqp, s = _scaled(qp, block)
    L_max = _lipschitz(sqp.H)
    floor = _floor(qp.g.dtype)
    c, _ = jax.lax.scan(lambda c, _: (step(sqp, L_max, c, floor, cone), None), init(sqp, x0 / s, L_max, cone),
                        None, length=max_iter)
    return no_worse_than_zero(qp, c.x * s), Stats(c.it, c.res)


def solve(qp: QP, x0: Array, tol, max_iter: int = 200, block: int | tuple = 1,
          adjoint: str = "implicit", cone: str = "circle", skip: Array | None = None,
          smoothing: Array | float = 0.0, eliminate: tuple[int, ...] = (),
          check_bounds: bool = False, newton_steps: int = NEWTON_STEPS) -> tuple[Array, Stats]:
    """Solve the QP from the warm start ``x0``.

    Args:
      qp: the problem.
      x0: (n,) warm start (projected onto C first).
      tol: relative tolerance (module docstring).
      max_iter: static iteration cap.
      block: static block size of the Jacobi preconditioner, blocks counted from
        variable 0, or (size, count): only the first ``count`` blocks (then single
        variables). Cone blocks are scaled as cones whatever it is (module
        docstring): (3, ncone) scales every other variable by itself.
      adjoint: "implicit" (implicit function theorem) or "unrolled" (differentiate
        exactly ``max_iter`` iterations).
      cone: static, "circle" (friction cones) or "box" (friction boxes).
      skip: optional () bool: where true the loop runs no iteration (the result is the
        projected ``x0``, for the caller to discard). Under ``vmap`` a ``lax.cond``
        runs both branches for every env; passing its predicate here as well keeps
        the envs that take the other branch from running the loop (implicit adjoint
        only; the unrolled one always runs ``max_iter``).
      smoothing: () >= 0, a speed (velocity units of ``H x + g``; implicit adjoint
        only): the derivative is taken with every switch of the projection (a bound
        or cone becoming active, a cone's stick/slide) blended over about this much
        separation speed or impulse-made speed on either side of it (``blend``), the
        derivative of a relaxed complementarity problem at the solution. The solution
        itself is unchanged; 0 gives the exact derivative.
      eliminate: static indices of variables after the cone blocks, whose block of H
        is positive definite (servo rows), that the implicit solve minimises out
        exactly before iterating, their bounds ignored, and recovers after
        (``_eliminate``): the same solution where they end within their bounds, in
        the iterations of the other variables' conditioning. The unrolled adjoint
        iterates on all variables.
      check_bounds: static; where some eliminated variables have finite bounds: a
        solve whose eliminated variables end outside them goes on over all variables
        from that point (projected), its iterations added. Without it their bounds
        are not read: pass False only for variables without bounds.
      newton_steps: static cap on the Newton steps before the projected gradient
        (module docstring; read only with ``qp.factors`` and circular cones). More
        steps cut the iterations where they are taken and cost about ten
        projected-gradient iterations each; the default suits a CPU.

    Returns:
      (x (n,), Stats).

    Jitted with its static arguments: called outside ``jit`` (in a loop over problems,
    say) it compiles once per problem size and settings, not on every call.
    """
    if cone not in ("circle", "box"):
        raise ValueError(f"cone must be 'circle' or 'box', got {cone!r}")
    if adjoint not in ("implicit", "unrolled"):
        raise ValueError(f"adjoint must be 'implicit' or 'unrolled', got {adjoint!r}")
    skip = jnp.zeros((), bool) if skip is None else skip
    block = tuple(block) if isinstance(block, list) else block
    drop = tuple(int(i) for i in eliminate)
    k, n = 3 * np.shape(qp.mu)[-1], np.shape(qp.g)[-1]
    if drop and (min(drop) < k or max(drop) >= n or len(set(drop)) != len(drop)):
        raise ValueError(f"eliminate must name distinct variables in [{k}, {n}) (after the cone blocks), got {drop}")
    if int(newton_steps) < 0:
        raise ValueError(f"newton_steps must be >= 0, got {newton_steps}")
    return _solve(qp, x0, tol, skip, smoothing, int(max_iter), block, adjoint, cone, (drop, bool(check_bounds)),
                  int(newton_steps))


@functools.partial(jax.jit, static_argnums=(5, 6, 7, 8, 9, 10))
@full_precision
def _solve(qp: QP, x0: Array, tol, skip: Array, smoothing, max_iter: int, block, adjoint: str,
           cone: str, eliminate: tuple, newton_steps: int) -> tuple[Array, Stats]:
    if qp.compliance is not None:  # outside the custom rule: gradients flow through H
        qp = qp._replace(H=qp.H + jnp.diag(qp.compliance), compliance=None)
    if adjoint == "unrolled":
        return _solve_unrolled(qp, x0, max_iter, block, cone)
    tol = jnp.asarray(tol, qp.g.dtype)
    skip = jnp.asarray(skip, bool)
    smoothing = jax.lax.stop_gradient(jnp.asarray(smoothing, qp.g.dtype))
    return _solve_implicit(qp, jax.lax.stop_gradient(x0), tol, skip, smoothing, max_iter, block, cone, eliminate,
                           newton_steps)
