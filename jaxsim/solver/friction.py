"""One frictional contact problem in local coordinates, three ways (exact /
Anitescu-Tasora / Nakaoka friction).

    u = W r + q,   contacts i = 1..m with r_i, u_i = (normal, tangent, tangent),

W (n, n) symmetric positive semi-definite; the first 3 m variables are the contacts,
optional further variables are interval rows ``lower <= r_j <= upper`` (joint limits:
``r_j`` in its interval, ``u_j`` in its normal cone). Coulomb's law at a contact:
``r_i`` in the cone ``K_i = {||r_T|| <= mu_i r_n}``, and, with De Saxce's modified
velocity ``uh_i = u_i + mu_i ||u_T,i|| e_n``, ``K_i* ∋ uh_i ⟂ r_i`` (separating, sticking
with ``u_i = 0``, or sliding with ``r_T`` opposite to ``u_T`` on the cone's surface).
That is neither an LCP nor a second-order cone complementarity problem. Its accuracy
measure (Siconos, FCLib) is the natural map

    F(r) = r - P_K(r - uh(W r + q)),   residual = ||F(r)|| / (1 + ||q||),

zero exactly at a solution (``residual``). Methods (``solve``):

* ``"exact"``: Coulomb's law itself. Start: De Saxce's fixed point by convex solves
  (``_convex_start``: cone QPs with the normal velocity shifted by ``mu ||u_T||`` of
  the previous pass), from ``r0``; from a nonzero (warm) ``r0``, given W's factors,
  the QPs stop at a looser tolerance (``WARM_START_TOL``). Then
  non-smooth Gauss-Seidel sweeps (NSGS, Siconos' workhorse): each contact solved
  exactly with the others held (``local_solve``: separate, stick or slide, the slip
  angle bracketed on a grid and found by safeguarded Newton steps), with a small
  proximal term against the sweeps' oscillation; after each sweep a damped
  semismooth Newton step on the Alart-Curnier function (``W + diag(eps)`` in its
  Jacobian, ``eps`` shrinking with the residual: a rank-deficient W leaves the
  undamped step undefined), 8 step lengths tried at once and kept only where the
  residual drops. Given W's low-rank factors (``factors``: ``W = diag(c) + U V^T``,
  as a Delassus operator is), that step is solved in their k dimensions
  (``_lowrank_newton``); the start's QPs run the projected gradient alone.
  Sweeps that have not converged after 50 (or half of ``max_iter``, if less) start
  again from the start with a stronger proximal term for as many, then the first run
  resumes where it stopped: on about 1 % of rank-deficient problems (more contact
  rows than the bodies' degrees of freedom, as when boxes rest on a floor) the first
  run cycles and the restart breaks the cycle, on fewer it converges slowly and the
  resumed sweeps finish it. Those sweeps form a round of at most 300. Where
  ``max_iter`` holds twelve rounds (``ROUNDS``; the default in float64: 3,600
  sweeps), a problem that the first round leaves unsolved goes on through
  regularized ones: each solves ``W + eps mean(diag W) I``, eps from 1 down to 1e-4
  (``REGULARIZATION``), until its residual reaches ``tol`` or the round ends, from
  the last round's point; then a round solves the problem itself again. Strongly
  regularized, the contacts nearly decouple and the sweeps converge; the rounds
  carry that solution towards the problem's (a continuation). A problem still
  unsolved gets a last round from another start: the start's fixed point carried on
  for ``ANDERSON_PASSES`` more passes under Anderson's acceleration
  (``_accelerated_start``), which reaches the fixed point where the plain passes
  cycle. The stopping test reads the problem's own residual throughout, and the best
  point met is returned. It stops at ``residual <= tol`` or ``max_iter`` sweeps.
  Its ``iterations`` count the sweeps
  plus the starts' QP iterations; under ``vmap`` the sweeps run only on the
  problems still running (``compaction.while_loop``), so the rounds cost only the
  rare problems that need them. With the defaults, every one of 13,000 random
  problems of 1-8 contacts on 1-5 stacked bodies (up to 1,000:1 masses) reaches
  1e-8, and every one of 3,600 random problems with random contact Jacobians on 6-30
  dof (a third of them rank-deficient) (both generators are
  ``tests/test_friction.py``'s; ``experiments/exact_robustness.py``).
* ``"anitescu-tasora"``: the convex relaxation ``r - W^-1 ... in -W^-1 N_K(r)``, i.e.
  ``min 1/2 r^T W r + q^T r`` over the cones (Chrono), by the shared accelerated
  projected gradient of ``solver/qp.py``. A sliding contact gets the separating normal
  velocity ``mu ||u_T||`` (its residual is that, not zero).
* ``"nakaoka"``: Choreonoid's per-contact projection in Gauss-Seidel sweeps: per
  contact the normal row is updated and clamped to ``>= 0``, then the two tangent
  rows, and the tangential pair is scaled into the disk of radius ``mu r_n``; then
  each interval row, clamped. Up to ``max_iter`` sweeps (``lax.scan``), stopping
  once a sweep changes the impulses by at most ``tol`` relative to their largest
  (as Choreonoid's solver stops on its error criterion).

Gradients: ``exact`` by the implicit function theorem at ``F(r*) = 0``
(``J_F dr = -dF/dtheta dtheta``, a ``custom_jvp`` that JAX transposes for reverse
mode); at a kink of ``P_K`` or of ``||u_T||`` (a contact exactly at the cone's apex
or surface, or ``u_T = 0``) the derivative is the one-sided one that JAX's
``jnp.where`` branches select (the inside/sticking branch on the boundary, tangent
direction derivative zero at ``u_T = 0``). ``anitescu-tasora``: ``solver/qp.py``'s
implicit rule. ``nakaoka``: the sweeps are differentiated as they run. The
``smoothing`` of ``solve`` blends the first two's switches in the derivative only.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import linalg
from jaxsim.precision import full_precision
from jaxsim.solver import compaction, lowrank, qp

Array = jax.Array
METHODS = ("exact", "anitescu-tasora", "nakaoka")


class Stats(NamedTuple):
    iterations: Array  # () int32: exact: sweeps plus its start's QP iterations; QP iterations; sweeps
    residual: Array  # () the natural-map residual ||F(r)|| / (1 + ||q||) at exit


def _split(x: Array, m: int) -> tuple[Array, Array]:
    return x[:3 * m].reshape(m, 3), x[3 * m:]


def modified_velocity(u: Array, mu: Array) -> Array:
    """De Saxce's ``uh``: ``u + mu ||u_T|| e_n`` on the m contacts (first 3 m
    entries), ``u`` on the rows after them."""
    m = mu.shape[0]
    uc, ur = _split(u, m)
    ut = jnp.sqrt(jnp.sum(uc[:, 1:] ** 2, -1) + jnp.finfo(u.dtype).tiny)
    return jnp.concatenate([uc.at[:, 0].add(mu * ut).reshape(-1), ur])


def project(z: Array, mu: Array, lower: Array, upper: Array) -> Array:
    """Onto the cones (first 3 m entries) and the rows' intervals."""
    m = mu.shape[0]
    zc, zr = _split(z, m)
    return jnp.concatenate([qp.project_cone(zc, mu).reshape(-1), jnp.clip(zr, lower, upper)])


def natural_map(r: Array, u: Array, mu: Array, lower: Array | None = None, upper: Array | None = None,
                rho: Array | float = 1.0) -> Array:
    """``r - P(r - rho uh(u))`` (n,): zero exactly where (r, u) satisfy Coulomb's law
    and the rows' complementarity."""
    lower, upper = _bounds(r, mu, lower, upper)
    return r - project(r - rho * modified_velocity(u, mu), mu, lower, upper)


def residual(W: Array, q: Array, mu: Array, r: Array, lower: Array | None = None,
             upper: Array | None = None) -> Array:
    """Siconos' normalised natural-map residual ``||F(r)|| / (1 + ||q||)`` (rho = 1)."""
    return jnp.linalg.norm(natural_map(r, W @ r + q, mu, lower, upper)) / (1.0 + jnp.linalg.norm(q))


def _bounds(x: Array, mu: Array, lower, upper) -> tuple[Array, Array]:
    nr = x.shape[0] - 3 * mu.shape[0]
    lower = jnp.zeros((nr,), x.dtype) if lower is None else jnp.asarray(lower, x.dtype)
    upper = jnp.full((nr,), jnp.inf, x.dtype) if upper is None else jnp.asarray(upper, x.dtype)
    return lower, upper


def _rho(W: Array, m: int) -> Array:
    """(n,) per-contact (block-constant) and per-row step scales, 1 / mean diagonal."""
    d = jnp.abs(jnp.diagonal(W))
    dc, dr = _split(d, m)
    d = jnp.concatenate([jnp.repeat(jnp.mean(dc, -1), 3), dr])
    ok = d > jnp.finfo(W.dtype).eps * jnp.maximum(jnp.max(d, initial=0.0), 1.0)
    return jax.lax.stop_gradient(jnp.where(ok, 1.0 / jnp.where(ok, d, 1.0), 1.0))


class _Problem(NamedTuple):
    W: Array
    q: Array
    mu: Array
    lower: Array
    upper: Array


@jax.custom_jvp
def _clamp(x: Array, width: Array) -> Array:
    """``max(x, 0)`` whose derivative is blended over ``width`` (``qp.blend``) instead of
    stepping from 0 to 1: the gradient smoothing of ``solve``."""
    return jnp.maximum(x, 0.0)


@_clamp.defjvp
@full_precision
def _clamp_jvp(primals, tangents):
    x, width = primals
    return jnp.maximum(x, 0.0), qp.blend(x, width) * tangents[0]


@jax.custom_jvp
def _disk(zt: Array, radius: Array, width: Array) -> Array:
    """``zt`` (2,) projected onto the disk of ``radius >= 0``, whose derivative blends
    the inside one (identity) and the outside one (``min(radius / |zt|, 1)`` across
    ``zt``, ``radius`` along it) by ``qp.blend(radius - |zt|, width)``."""
    norm = jnp.sqrt(zt @ zt + jnp.finfo(zt.dtype).tiny)
    return zt * jnp.minimum(1.0, radius / norm)


@_disk.defjvp
@full_precision
def _disk_jvp(primals, tangents):
    zt, radius, width = primals
    dzt, dradius, _ = tangents
    norm = jnp.sqrt(zt @ zt + jnp.finfo(zt.dtype).tiny)
    t = zt / norm
    inside = qp.blend(radius - norm, width)
    outside = jnp.minimum(radius / norm, 1.0) * (dzt - t * (t @ dzt)) + t * dradius
    return zt * jnp.minimum(1.0, radius / norm), inside * dzt + (1.0 - inside) * outside


def _local_ac(r: Array, u: Array, mu: Array, rho: Array, width: Array | None = None) -> Array:
    """One contact's Alart-Curnier function (3,): the normal impulse projected on
    ``r_n >= 0``, the tangential one on the disk of radius ``mu`` times that. With a
    ``width`` (an impulse; the gradient rule's) where it is > 0, its value is the same
    and its derivative that of the gradient smoothing (``_clamp``, ``_disk``)."""
    zt = r[1:] - rho * u[1:]
    zn = jnp.maximum(r[0] - rho * u[0], 0.0)
    norm = jnp.sqrt(zt @ zt + jnp.finfo(r.dtype).tiny)
    pt = zt * jnp.minimum(1.0, mu * zn / norm)
    if width is not None:
        zn_s = _clamp(r[0] - rho * u[0], width)
        pt_s = _disk(zt, mu * zn_s, width)
        smooth = width > 0
        zn, pt = jnp.where(smooth, zn_s, zn), jnp.where(smooth, pt_s, pt)
    return jnp.concatenate([(r[0] - zn)[None], r[1:] - pt])


def _phi(p: _Problem, rho: Array, r: Array, u: Array, width: Array | None = None) -> Array:
    m = p.mu.shape[0]
    rc, rr = _split(r, m)
    uc, ur = _split(u, m)
    zr = rr - rho[3 * m:] * ur
    fr = rr - jnp.clip(zr, p.lower, p.upper)
    if width is None:
        return jnp.concatenate([jax.vmap(_local_ac)(rc, uc, p.mu, rho[:3 * m:3]).reshape(-1), fr])
    fc = jax.vmap(_local_ac)(rc, uc, p.mu, rho[:3 * m:3], width[:3 * m:3])
    wr = width[3 * m:]  # a row's clip, its derivative smoothed like the contacts' clamps
    clipped = zr + _clamp(p.lower - zr, wr) - _clamp(zr - p.upper, wr)
    return jnp.concatenate([fc.reshape(-1), jnp.where(wr > 0, rr - clipped, fr)])


def _F(p: _Problem, rho: Array, r: Array, width: Array | None = None) -> Array:
    return _phi(p, rho, r, p.W @ r + p.q, width)


def _local_jacobians(p: _Problem, rho: Array, r: Array, u: Array, width: Array | None = None):
    """The blocks of ``F(r) = phi(r, W r + q)``'s generalised Jacobian ``Phi_r + Phi_u
    W``: (Pr, Pu) (m, 3, 3) per contact and (dr, du) (nr,) per row. With a ``width``
    (n,), of the smoothed ``phi``."""
    m = p.mu.shape[0]
    rc, rr = _split(r, m)
    uc, ur = _split(u, m)
    local = jax.vmap(jax.jacfwd(_local_ac, argnums=(0, 1)))
    if width is None:
        Pr, Pu = local(rc, uc, p.mu, rho[:3 * m:3])
    else:
        Pr, Pu = local(rc, uc, p.mu, rho[:3 * m:3], width[:3 * m:3])
    zr = rr - rho[3 * m:] * ur
    free = ((zr > p.lower) & (zr < p.upper)).astype(r.dtype)
    if width is not None:
        wr = width[3 * m:]
        free = jnp.where(wr > 0, qp.blend(zr - p.lower, wr) - qp.blend(zr - p.upper, wr), free)
    # rows: F = r - clip(r - rho u): dF/dr = 1 - free, dF/du = rho free
    return Pr, Pu, 1.0 - free, rho[3 * m:] * free


def _jacobian(p: _Problem, rho: Array, r: Array, u: Array, width: Array | None = None) -> Array:
    """Generalised Jacobian (n, n) of ``F(r) = phi(r, W r + q)`` at ``r`` (``u = W r +
    q``): ``Phi_r + Phi_u W`` with ``Phi_r``, ``Phi_u`` block diagonal (3x3 per contact,
    1x1 per row). With a ``width`` (n,), of the smoothed ``phi``."""
    m, n = p.mu.shape[0], r.shape[0]
    Pr, Pu, dr, du = _local_jacobians(p, rho, r, u, width)
    top = jnp.einsum("mij,mjk->mik", Pu, p.W[:3 * m].reshape(m, 3, n)).reshape(3 * m, n)
    J = jnp.concatenate([top, du[:, None] * p.W[3 * m:]])
    diag_r = jnp.zeros((n, n), r.dtype)
    idx = jnp.arange(3 * m).reshape(m, 3)
    diag_r = diag_r.at[idx[:, :, None], idx[:, None, :]].set(Pr)
    diag_r = diag_r.at[jnp.arange(3 * m, n), jnp.arange(3 * m, n)].set(dr)
    return J + diag_r


def _lowrank_newton(p: _Problem, rho: Array, r: Array, u: Array, F: Array, factors: tuple, c: Array,
                    eps: Array) -> Array:
    """``dr`` with ``(Phi_r + Phi_u (W + diag(eps))) dr = -F`` for ``W = diag(c) + U
    V^T`` (``factors = (U, V)``, n x k): with ``G = Phi_r + Phi_u diag(c + eps)``
    (block diagonal, 3 x 3 per contact) the Woodbury identity leaves one k x k solve,

        dr = G^-1 f - G^-1 Phi_u U (I + V^T G^-1 Phi_u U)^-1 V^T G^-1 f,   f = -F,

    instead of an n x n one. ``eps`` > 0 keeps G invertible where a contact sticks
    (``Phi_r = 0`` there) and, larger, damps the step like a proximal term; a
    Levenberg-Marquardt step would need ``J^T J``, which has twice the rank. Written by
    hand: ``lowrank.newton_system_solve`` is for a symmetric projection's Jacobian,
    and the Alart-Curnier one is not."""
    m = p.mu.shape[0]
    U, V = factors[0], factors[0] if factors[1] is None else factors[1]
    Pr, Pu, dr, du = _local_jacobians(p, rho, r, u)
    ce = c + eps
    G_c = Pr + Pu * ce[:3 * m].reshape(m, 1, 3)
    G_r = dr + du * ce[3 * m:]
    Gi_c = linalg.inverse3(G_c)
    GiB_c = jnp.einsum("mij,mjk->mik", Gi_c, Pu)
    GiB_U = jnp.concatenate([jnp.einsum("mij,mjk->mik", GiB_c, U[:3 * m].reshape(m, 3, -1)).reshape(3 * m, -1),
                             (du / G_r)[:, None] * U[3 * m:]])
    Gi_f = jnp.concatenate([jnp.einsum("mij,mj->mi", Gi_c, -F[:3 * m].reshape(m, 3)).reshape(-1),
                            -F[3 * m:] / G_r])
    inner = jnp.eye(U.shape[1], dtype=r.dtype) + V.T @ GiB_U
    return Gi_f - GiB_U @ linalg.solve(inner, V.T @ Gi_f)


SLIDE_GRID = 64  # slip directions tried by the one-contact solve before refining
SLIDE_BRACKETS = 2  # sign changes of those that are refined
REFINEMENTS = {4: 6, 8: 8}  # per itemsize: the slide's Newton steps on the slip angle (from a 0.1 rad bracket)
PROX = (0.01, 1.0)  # proximal weights of the sweeps (x the block's mean diagonal): first run, restart
RESTART_AFTER = 50  # sweeps of a round's first run, then of its restart (half of the round's sweeps if less)
ROUND_SWEEPS = 300  # sweeps of a round: the problem itself, then each regularized one
# the regularized rounds' eps (x W's mean diagonal), from nearly decoupled contacts to
# nearly the problem: each round starts from the last one's solution
REGULARIZATION = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4)
SHIFT_PASSES = 60  # default number of convex cone QPs of the De Saxce fixed point that gives the exact method its start
SHIFT_QP_ITER = 3000
# the last round's start: this many passes of the start's fixed point under Anderson's
# acceleration, combining the last ANDERSON_MEMORY passes
ANDERSON_PASSES = 30
ANDERSON_MEMORY = 3
ANDERSON_RIDGE = {4: 1e-6, 8: 1e-12}  # per itemsize: its least squares' ridge, x the trace of the normal matrix
# from a warm start the start's QPs stop at this relative step: the sweeps finish the
# job, and on large rank-deficient problems the QPs' last iterations are the slow ones
WARM_START_TOL = 1e-3
STEP_LENGTHS = 8  # the Newton step's lengths 1, 1/2, ..., 2^-7, tried at once
# the Newton step's damping, relative to each contact's mean diagonal: min(a, b x the
# natural-map residual)
NEWTON_DAMPING = (0.1, 10.0)
DEFAULT_TOL = 1e-10  # solve's tolerance, where the dtype's rounding allows it
# solve's default caps (exact's in float64: every round of ``_exact_run``)
ROUNDS = len(REGULARIZATION) + 3  # the problem, each regularized one, the problem again, the accelerated start
MAX_ITER = {"exact": ROUND_SWEEPS * ROUNDS, "anitescu-tasora": 100, "nakaoka": 100}


def _slide(Wi: Array, qi: Array, mu: Array) -> tuple[Array, Array]:
    """The sliding solution of one contact (``qi_n < 0``): ``u_n = 0`` and ``r_T = -mu
    r_n e`` with the slip ``u_T`` along ``e = (cos t, sin t)``. With ``d = (1, -mu e)``
    and ``a = Wi d``, ``u_n = 0`` gives ``r_n = -qi_n / a_n``, and ``u_T`` along ``e``
    is ``G(t) = e x (a_n qi_T - qi_n a_T) = 0`` (``u_T`` times ``a_n``: no pole where
    ``a_n`` crosses zero), valid where ``a_n > 0`` and the slip is along ``+e``. G is
    sampled on a grid of ``SLIDE_GRID`` angles; of its sign changes, the
    ``SLIDE_BRACKETS`` most likely to hold a valid root (valid at both grid ends, then
    at one, then the first) are refined at once by Newton steps on G, each kept inside
    the bracket it shrinks (a bisection where it would leave it), and the first valid
    root is taken.
    Roots come in pairs, slip along ``+e`` and along ``-e``, and the validity of the
    slip direction does not change within a grid cell away from ``u_T = 0``, so the
    grid's ends tell the valid bracket apart. Returns (r (3,), found)."""
    def at(theta):  # elementwise in theta (a batched 3 x 3 product per angle is slower)
        c, s = jnp.cos(theta), jnp.sin(theta)
        a0, a1, a2 = (Wi[i, 0] - mu * (Wi[i, 1] * c + Wi[i, 2] * s) for i in range(3))
        w1, w2 = a0 * qi[1] - qi[0] * a1, a0 * qi[2] - qi[0] * a2  # a_n u_T
        G = c * w2 - s * w1
        valid = (a0 > 0) & (c * w1 + s * w2 > 0)
        rn = -qi[0] / jnp.where(a0 > 0, a0, 1.0)
        return jnp.stack([rn, -mu * rn * c, -mu * rn * s], -1), G, valid

    theta = jnp.asarray(np.linspace(0.0, 2.0 * np.pi, SLIDE_GRID + 1), qi.dtype)  # a constant: folded
    _, G, ok = at(theta)
    change = jnp.sign(G[:-1]) != jnp.sign(G[1:])
    # rank the cells: sign change first, then validity at both, one or neither end, then angle
    score = change * (1 + ok[:-1].astype(jnp.int32) + ok[1:]) * (2 * SLIDE_GRID) - jnp.arange(SLIDE_GRID)
    cells = []  # the best SLIDE_BRACKETS cells by repeated argmax (XLA's top_k is slow on small rows)
    for _ in range(SLIDE_BRACKETS):
        cells.append(jnp.argmax(score))
        score = score.at[cells[-1]].set(jnp.iinfo(score.dtype).min)
    cells = jnp.stack(cells)
    lo, hi, g_lo = theta[cells], theta[cells + 1], G[cells]

    def refine(c, _):  # Newton on G, kept inside the bracket that it shrinks
        lo, hi, g_lo, t = c
        g, dg = jax.jvp(lambda s: at(s)[1], (t,), (jnp.ones_like(t),))
        left = jnp.sign(g) == jnp.sign(g_lo)
        lo, hi, g_lo = jnp.where(left, t, lo), jnp.where(left, hi, t), jnp.where(left, g, g_lo)
        newton = t - g / jnp.where(dg != 0, dg, 1.0)
        inside = (newton >= lo) & (newton <= hi) & (dg != 0)
        return (lo, hi, g_lo, jnp.where(inside, newton, 0.5 * (lo + hi))), None

    (lo, hi, _, t), _ = jax.lax.scan(refine, (lo, hi, g_lo, 0.5 * (lo + hi)), None,
                                     length=REFINEMENTS[jnp.dtype(qi.dtype).itemsize])
    r, _, valid = at(t)
    good = change[cells] & valid
    return r[jnp.argmax(good)], jnp.any(good)


def local_solve(Wi: Array, qi: Array, mu: Array) -> Array:
    """Coulomb's law for one contact, ``u = Wi r + qi`` with Wi (3, 3) positive
    definite, by enumeration: separating (``r = 0`` if ``qi_n >= 0``), else sticking
    (``r = -Wi^-1 qi`` if inside the cone), else sliding (``_slide``); a degenerate
    block (no normal stiffness) gets no impulse."""
    eps = jnp.finfo(qi.dtype).eps
    scale = jnp.maximum(jnp.trace(Wi), jnp.finfo(qi.dtype).tiny)
    stick = -linalg.inverse3(Wi + eps * scale * jnp.eye(3, dtype=qi.dtype)) @ qi
    inside = (stick[0] > 0) & (jnp.sqrt(stick[1:] @ stick[1:]) <= mu * stick[0] * (1 + 1e3 * eps))
    slide, found = _slide(Wi, qi, mu)
    fallback = qp.project_cone(stick, mu)  # no bracket (a grid cell holding two roots)
    r = jnp.where(inside, stick, jnp.where(found, slide, fallback))
    return jnp.where((qi[0] >= 0) | (Wi[0, 0] <= 0), 0.0, r)


def _sweep(p: _Problem, r: Array, prox: Array) -> Array:
    """One non-smooth Gauss-Seidel sweep: each contact solved exactly with the others
    held (``local_solve``), then each row projected."""
    m, n = p.mu.shape[0], r.shape[0]

    def contact(r, i):
        rows = jax.lax.dynamic_slice_in_dim(p.W, 3 * i, 3, 0)  # (3, n)
        Wi = jax.lax.dynamic_slice_in_dim(rows, 3 * i, 3, 1)
        ri = jax.lax.dynamic_slice_in_dim(r, 3 * i, 3)
        qi = jax.lax.dynamic_slice_in_dim(p.q, 3 * i, 3) + rows @ r - Wi @ ri
        eps = prox * jnp.trace(Wi) / 3.0  # proximal term: damps the sweeps' oscillation
        new = local_solve(Wi + eps * jnp.eye(3, dtype=r.dtype), qi - eps * ri, p.mu[i])
        return jax.lax.dynamic_update_slice_in_dim(r, new, 3 * i, 0), None

    def row(r, j):
        k = 3 * m + j
        d = p.W[k, k]
        x = r[k] - (p.W[k] @ r + p.q[k]) / jnp.where(d > 0, d, 1.0)
        return r.at[k].set(jnp.where(d > 0, jnp.clip(x, p.lower[j], p.upper[j]), 0.0)), None

    if m:  # (the body is traced even for an empty scan)
        r, _ = jax.lax.scan(contact, r, jnp.arange(m))
    if n > 3 * m:
        r, _ = jax.lax.scan(row, r, jnp.arange(n - 3 * m))
    return r


def _cone_qp(p: _Problem, q: Array, r0: Array, tol, max_iter: int, smoothing=0.0,
             eliminate: tuple = ((), False), factors=None) -> tuple[Array, qp.Stats]:
    """The convex cone QP ``min 1/2 r^T W r + q^T r`` over the cones and the rows'
    intervals (the shared solver; its bounds cover every variable, cones ignore theirs;
    ``eliminate``: its rows minimised out first, and whether to check their bounds;
    ``factors``: W's low-rank part, for the QP's Newton steps)."""
    pad = jnp.zeros((3 * p.mu.shape[0],), q.dtype)
    bounds = jnp.concatenate([pad, p.lower]), jnp.concatenate([pad, p.upper])
    return qp.solve(qp.QP(p.W, q, *bounds, p.mu, factors=factors), r0, tol, max_iter=max_iter,
                    block=(3, p.mu.shape[0]), smoothing=smoothing, eliminate=eliminate[0],
                    check_bounds=eliminate[1])


def _shift(p: _Problem, r: Array) -> Array:
    """(m,) De Saxce's normal velocity shifts ``mu_i ||u_T,i||`` at impulses ``r``."""
    m = p.mu.shape[0]
    u = (p.W @ r + p.q)[:3 * m].reshape(m, 3)
    return p.mu * jnp.sqrt(jnp.sum(u[:, 1:] ** 2, -1) + jnp.finfo(r.dtype).tiny)


def _convex_start(p: _Problem, r0: Array, tol: Array, passes: int, qp_iter: int,
                  loose: Array | bool = False) -> tuple[Array, Array]:
    """De Saxce's fixed point by convex solves: the cone QP (Anitescu-Tasora) with the
    normal velocity shifted by ``s_i = mu_i ||u_T,i||`` of the previous pass, whose fixed
    point is Coulomb's law. It rarely converges exactly, but it lands where the sweeps
    below converge (from zero they cycle on 1-2 % of random problems). Where
    ``loose``, the QPs stop at a relative step of ``WARM_START_TOL`` (or ``tol``, if
    looser). The QPs run the projected gradient alone, without Newton steps through
    W's factors: from the previous pass's point a few iterations finish them, and a
    Newton step costs several (on eight boxes' captured problems the exact solve took
    a quarter less time without them, at the same residuals). Returns the start and
    the QP iterations it took."""
    m = p.mu.shape[0]
    tol = jnp.where(loose, jnp.maximum(tol, WARM_START_TOL), tol)

    def one(r, _):
        r, st = _cone_qp(p, p.q.at[:3 * m:3].add(_shift(p, r)), r, tol, qp_iter)
        return r, st.iterations

    r, iterations = jax.lax.scan(one, r0, None, length=passes)
    return r, jnp.sum(iterations).astype(jnp.int32)


def _accelerated_start(p: _Problem, r0: Array, tol: Array, passes: int, qp_iter: int) -> tuple[Array, Array]:
    """``_convex_start``'s fixed point ``s = G(s) = mu ||u_T(s)||`` (``s`` the normal
    velocity shifts), its passes combined by Anderson's acceleration: each pass's shift
    is the combination of the last ``ANDERSON_MEMORY`` ones whose residuals
    ``G(s) - s`` best cancel (least squares). Where the plain passes cycle (rank-deficient
    W, more contact rows than dof) it can reach the fixed point, and where they converge
    it can overshoot, so it gives the sweeps' last round its start rather than the
    first. Written here rather than taken from a library (jaxopt's
    ``AndersonAcceleration``, not a dependency) because each pass also carries the
    impulses from one QP to the next as its warm start and counts the QP's iterations,
    and the accelerated shift is clipped to ``s >= 0``. Returns the impulses of the
    last pass and the QP iterations it took."""
    m = p.mu.shape[0]

    def one(carry, k):
        r, s, s_prev, f_prev, ds, df = carry
        r, st = _cone_qp(p, p.q.at[:3 * m:3].add(s), r, tol, qp_iter)
        f = _shift(p, r) - s
        slot, seen = k % ANDERSON_MEMORY, k > 0
        ds = jnp.where(seen, ds.at[slot].set(s - s_prev), ds)
        df = jnp.where(seen, df.at[slot].set(f - f_prev), df)
        gram = df @ df.T  # the ridge keeps nearly parallel differences from blowing gamma up
        ridge = ANDERSON_RIDGE[r.dtype.itemsize] * jnp.trace(gram) + jnp.finfo(r.dtype).tiny
        gamma = jnp.linalg.solve(gram + ridge * jnp.eye(ANDERSON_MEMORY, dtype=r.dtype), df @ f)
        mixed = jnp.maximum(s + f - (ds + df).T @ gamma, 0.0)
        return (r, jnp.where(jnp.all(jnp.isfinite(mixed)), mixed, s + f), s, f, ds, df), st.iterations

    hist = jnp.zeros((ANDERSON_MEMORY, m), r0.dtype)
    s0 = _shift(p, r0)
    (r, *_), iterations = jax.lax.scan(one, (r0, s0, s0, jnp.zeros_like(s0), hist, hist), jnp.arange(passes))
    return r, jnp.sum(iterations).astype(jnp.int32)


class _Exact(NamedTuple):
    r: Array
    res: Array  # normalised natural-map residual (rho = 1) of the problem itself
    it: Array
    held: Array  # (n,) where the first run stopped for the restart, resumed after it
    best: Array  # (n,) the iterate of least residual so far: the result
    best_res: Array  # () its residual
    round: Array  # () int32: 0 the problem, one per REGULARIZATION level, the problem again, the accelerated start
    since: Array  # () int32 sweeps in this round
    start: Array  # (n,) this round's start (the convex start in the first), where its restart begins


class _SweepData(NamedTuple):
    """What the sweep loop reads (everything batched passes through the loop's
    operands: ``compaction.while_loop``)."""

    p: _Problem
    rho: Array  # (n,) the Alart-Curnier steps (``_rho``)
    qn: Array  # () 1 + ||q||, the residual's normalisation
    tol: Array  # () natural-map tolerance
    factors: tuple | None  # (U (n, k), V (n, k) or None for U): W = diag(c) + U V^T; None: dense Newton
    c: Array | None  # (n,) that diagonal
    phase: Array  # () int32: 0 the rounds up to the problem again, 1 the last round (``_exact_run``)


def _exact_run(p: _Problem, r0: Array, tols: Array, factors, max_iter: int,
               start: tuple[int, int]) -> tuple[Array, Stats]:
    """Gauss-Seidel sweeps with exact one-contact solves (global progress), each
    followed by a semismooth Newton step on the Alart-Curnier function that is kept
    only where it lowers the residual (quadratic convergence near the solution).
    ``tols``: (natural-map tolerance, start QPs' tolerance); ``factors``: W's
    low-rank part ``(U, V)`` or None; ``start``: (QPs, cap on each one's iterations)."""
    m, n = p.mu.shape[0], r0.shape[0]
    round_sweeps = min(ROUND_SWEEPS, max_iter)
    restart = max(min(RESTART_AFTER, round_sweeps // 2), 1)  # a round's sweep at which the restart begins
    resume = 2 * restart  # and at which the first run resumes
    # the regularized rounds and the last one, only where every round fits in max_iter
    levels = REGULARIZATION if max_iter >= ROUND_SWEEPS * ROUNDS else ()
    eps_table = np.asarray((0.0,) + levels + (0.0, 0.0))

    def res_at(d: _SweepData, r, u):
        return jnp.linalg.norm(natural_map(r, u, d.p.mu, d.p.lower, d.p.upper)) / d.qn

    def step(d: _SweepData, c: _Exact) -> _Exact:
        p = d.p
        if levels:  # this round's problem: W + eps mean(diag W) I
            eps_reg = jnp.asarray(eps_table, c.r.dtype)[c.round] * jnp.mean(jnp.diagonal(p.W))
            p = p._replace(W=p.W + eps_reg * jnp.eye(n, dtype=c.r.dtype))
        alphas = 0.5 ** jnp.arange(STEP_LENGTHS, dtype=c.r.dtype)
        # NSGS can cycle (a rank-deficient W); a restart with a stronger proximal term
        # from the same start breaks the cycles the first run fell into, and a first
        # run that was converging slowly resumes from where the restart took over
        r_in = jnp.where(c.since == restart, c.start, jnp.where(c.since == resume, c.held, c.r))
        held = jnp.where(c.since == restart, c.r, c.held)
        r1 = _sweep(p, r_in, jnp.where((c.since >= restart) & (c.since < resume), PROX[1], PROX[0]))
        u1 = p.W @ r1 + p.q
        res1 = res_at(d, r1, u1)
        F = _phi(p, d.rho, r1, u1)
        # one damped Newton step (W + diag(eps) in its Jacobian, eps shrinking with the
        # residual): where W is rank-deficient the undamped one is not defined
        floor = 1e-12 if c.r.dtype == jnp.float64 else 1e-6
        eps = (jnp.minimum(NEWTON_DAMPING[0], NEWTON_DAMPING[1] * res1) + floor) / d.rho
        if d.factors is None:
            dr = -linalg.solve(_jacobian(p._replace(W=p.W + jnp.diag(eps)), d.rho, r1, u1), F)
        else:  # the same system, in the factors' k dimensions
            dr = _lowrank_newton(p, d.rho, r1, u1, F, d.factors, d.c + (eps_reg if levels else 0.0), eps)
        trials = r1 + alphas[:, None] * dr
        res = jax.vmap(lambda r: res_at(d, r, p.W @ r + p.q))(trials)
        res = jnp.where(jnp.isfinite(res), res, jnp.inf)
        best = jnp.argmin(res)
        better = res[best] < res1
        r_new, res_round = jnp.where(better, trials[best], r1), jnp.where(better, res[best], res1)
        # the problem's own residual (the same as the round's outside regularized rounds)
        res_new = res_at(d, r_new, d.p.W @ r_new + d.p.q) if levels else res_round
        improved = res_new < c.best_res
        # the next round starts where this one converged, or stopped at its sweeps (the
        # last round's start is set between the two phases below)
        advance = ((c.round <= len(levels) + 1) & ((res_round <= d.tol) | (c.since + 1 >= round_sweeps))
                   if levels else jnp.zeros((), bool))
        return _Exact(r_new, res_new, c.it + 1, held, jnp.where(improved, r_new, c.best),
                      jnp.where(improved, res_new, c.best_res), c.round + advance.astype(jnp.int32),
                      jnp.where(advance, 0, c.since + 1), jnp.where(advance, r_new, c.start))

    # a loose start from a warm one where W is factored: more rows than dof, whose QPs
    # converge slowly at the end; small problems' QPs end in an iteration or two
    loose = jnp.any(r0 != 0) & (factors is not None)
    passes, qp_iter = start
    start, qp_iterations = _convex_start(p, project(r0, p.mu, p.lower, p.upper), tols[1], passes, qp_iter, loose)
    c = None if factors is None else lowrank.diagonal_part(jnp.diagonal(p.W), *factors)
    data = _SweepData(p, _rho(p.W, m), 1.0 + jnp.linalg.norm(p.q), tols[0], factors, c, jnp.zeros((), jnp.int32))
    res0 = res_at(data, start, p.W @ start + p.q)
    zero = jnp.zeros((), jnp.int32)
    # a phase's rounds: up to the problem again, then (phase 1) the accelerated start's
    sweeps = functools.partial(compaction.while_loop, lambda d, c: ((c.it < max_iter) & (c.res > d.tol)
                                                                    & jnp.isfinite(c.res)
                                                                    & (c.round <= len(levels) + 1 + d.phase)), step)
    c = _Exact(start, res0, zero, start, start, res0, zero, zero, start)
    if not (levels and passes):
        c = sweeps(data, c)
        return c.best, Stats(c.it + qp_iterations, c.best_res)

    def phase(k, carry):
        # the problems that the rounds left unsolved (none in phase 0) go on from the plain
        # start by the accelerated passes, whose end starts their last round; the others
        # skip them (under vmap, where both branches run, their QPs stop at once: an
        # infinite tolerance) and their sweeps do not resume
        c, qp_iterations = carry
        unsolved = (k == 1) & (c.best_res > data.tol) & jnp.isfinite(c.res)
        last, its = jax.lax.cond(
            unsolved, lambda: _accelerated_start(p, start, jnp.where(unsolved, tols[1], jnp.inf), ANDERSON_PASSES,
                                                 qp_iter),
            lambda: (c.r, jnp.zeros((), jnp.int32)))
        c = c._replace(r=jnp.where(unsolved, last, c.r), start=jnp.where(unsolved, last, c.start))
        c = sweeps(data._replace(phase=k), c)
        return c, qp_iterations + jnp.where(unsolved, its, 0)

    c, qp_iterations = jax.lax.fori_loop(0, 2, phase, (c, qp_iterations))
    return c.best, Stats(c.it + qp_iterations, c.best_res)


@functools.partial(jax.custom_jvp, nondiff_argnums=(5, 6))
def _exact(p: _Problem, r0: Array, tols: Array, smoothing: Array, factors, max_iter: int,
           start: tuple[int, int]) -> tuple[Array, Stats]:
    return _exact_run(p, r0, tols, factors, max_iter, start)


@_exact.defjvp
@full_precision
def _exact_jvp(max_iter, start, primals, tangents):
    p, r0, tols, smoothing, factors = primals
    dp = tangents[0]
    r, stats = _exact_run(p, r0, tols, factors, max_iter, start)
    r = jax.lax.stop_gradient(r)
    rho = _rho(p.W, p.mu.shape[0])
    width = smoothing * rho  # (n,) the smoothing speed as an impulse per variable
    J = _jacobian(p, rho, r, p.W @ r + p.q, width)
    _, dF = jax.jvp(lambda pp: _F(pp, rho, r, width), (p,), (dp,))
    n = r.shape[0]
    ridge = (1e-12 if r.dtype == jnp.float64 else 1e-6) * jnp.eye(n, dtype=r.dtype)
    dr = linalg.solve(J + ridge, -dF)
    zeros = Stats(np.zeros((), jax.dtypes.float0), jnp.zeros_like(stats.residual))
    return (r, stats), (dr, zeros)


def _nakaoka(p: _Problem, r0: Array, sweeps: int, tol: Array) -> tuple[Array, Array]:
    """At most ``sweeps`` sweeps (module docstring); once a sweep changes the impulses
    by at most ``tol`` relative to their largest, the remaining ones are skipped (a
    ``lax.cond``: skipped work for one problem, a select under ``vmap``; unlike a
    ``while_loop`` it stays reverse-differentiable). Returns the impulses and the
    sweeps run."""
    m = p.mu.shape[0]
    W, q = p.W, p.q
    diag = jnp.diagonal(W)
    inv = jnp.where(diag > 0, 1.0 / jnp.where(diag > 0, diag, 1.0), 0.0)
    nr = r0.shape[0] - 3 * m
    # per contact: its three rows of W, their free velocities and inverse diagonals
    # (scanned over as slices, so a contact's update is one (3, n) product)
    rows_c = W[:3 * m].reshape(m, 3, -1)
    block_c = jnp.einsum("mimj->mij", rows_c[:, :, :3 * m].reshape(m, 3, m, 3))  # (m, 3, 3) diagonal blocks
    q_c, inv_c = q[:3 * m].reshape(m, 3), inv[:3 * m].reshape(m, 3)

    def contact(r, xs):
        i, w, blk, qi, di, mu = xs
        old = jax.lax.dynamic_slice_in_dim(r, 3 * i, 3)
        u = w @ r + qi  # the three rows' velocities before this contact's update
        # rows in turn, each seeing the ones before it (Gauss-Seidel within the contact)
        rn = jnp.maximum(old[0] - di[0] * u[0], 0.0)
        t1 = old[1] - di[1] * (u[1] + blk[1, 0] * (rn - old[0]))
        t2 = old[2] - di[2] * (u[2] + blk[2, 0] * (rn - old[0]) + blk[2, 1] * (t1 - old[1]))
        norm_t = jnp.sqrt(t1 * t1 + t2 * t2 + jnp.finfo(r.dtype).tiny)
        scale = jnp.minimum(1.0, mu * rn / norm_t)
        new = jnp.stack([rn, scale * t1, scale * t2])
        return jax.lax.dynamic_update_slice_in_dim(r, new, 3 * i, 0), None

    def row(r, j):
        k = 3 * m + j
        x = jnp.clip(r[k] - inv[k] * (W[k] @ r + q[k]), p.lower[j], p.upper[j])
        return r.at[k].set(jnp.where(diag[k] > 0, x, 0.0)), None

    def one_sweep(r):
        if m:
            r, _ = jax.lax.scan(contact, r, (jnp.arange(m), rows_c, block_c, q_c, inv_c, p.mu))
        if nr:
            r, _ = jax.lax.scan(row, r, jnp.arange(nr))
        return r

    floor = qp._floor(r0.dtype)  # the QP's relative-step floor: the same measure

    def sweep(carry, _):
        r, done, count = carry
        new = jax.lax.cond(done, lambda r: r, one_sweep, r)
        change = jnp.max(jnp.abs(new - r), initial=0.0) / jnp.maximum(jnp.max(jnp.abs(new), initial=0.0), floor)
        return (new, done | (change <= tol), count + (~done).astype(jnp.int32)), None

    start = (project(r0, p.mu, p.lower, p.upper), jnp.zeros((), bool), jnp.zeros((), jnp.int32))
    (r, _, count), _ = jax.lax.scan(sweep, start, None, length=sweeps)
    return r, count


def solve(W: Array, q: Array, mu: Array, method: str = "exact", tol: float | None = None, max_iter: int | None = None,
          r0: Array | None = None, lower: Array | None = None, upper: Array | None = None,
          start_passes: int = SHIFT_PASSES, start_tol: float | None = None,
          start_iterations: int = SHIFT_QP_ITER, smoothing: Array | float = 0.0, eliminate: tuple[int, ...] = (),
          check_bounds: bool = False, factors: tuple[Array, Array | None] | None = None
          ) -> tuple[Array, Array, Stats]:
    """Solve one frictional contact problem (module docstring).

    Args:
      W: (n, n) symmetric positive semi-definite (Delassus operator, 1/kg).
      q: (n,) free velocity (m/s).
      mu: (m,) friction coefficients; the first 3 m variables are the contacts
        (normal, tangent, tangent), the remaining n - 3 m interval rows.
      method: static, ``"exact"``, ``"anitescu-tasora"`` or ``"nakaoka"``.
      tol: natural-map residual (``exact``), relative step (``anitescu-tasora``) or
        a sweep's relative change of the impulses (``nakaoka``) at which to stop
        (default ``DEFAULT_TOL``, or 100 machine epsilons of the problem's dtype if
        larger: 1e-10 in float64, 1.2e-5 in float32, where rounding keeps the
        residual from 1e-10 and the solve would run every sweep and start iteration
        it is allowed).
      max_iter: static cap on sweeps (``exact``, ``nakaoka``) or QP iterations
        (default ``MAX_ITER[method]``: 3,600 for ``exact`` in float64, the cap at
        which its regularized rounds and its last round run, and they run only on
        the few problems in ten thousand that its first 300 sweeps leave unsolved;
        300 in float32; 100 for the others).
      r0: (n,) warm start (default zero).
      lower, upper: (n - 3 m,) the rows' impulse bounds (default ``[0, inf)``).
      start_passes: static, convex QPs of the ``exact`` method's start (0: start
        from ``r0`` itself; from a nonzero ``r0``, given ``factors``, they stop at a
        relative step of ``WARM_START_TOL``, or ``start_tol`` if looser).
      start_tol, start_iterations: relative-step tolerance (default ``tol``) and
        static iteration cap of each of those QPs (a step bounds its cost with
        the QP's own settings; a loose start only costs sweeps).
      smoothing: () >= 0, a speed (m/s for contact problems): the gradient's
        smoothing (``exact``: the derivatives of the Alart-Curnier function's clamps
        blended over this speed, as an impulse through each contact's ``rho``:
        ``_clamp``, ``_disk``; ``anitescu-tasora``: ``qp.solve``'s). The solution is unchanged; 0
        gives the exact derivative. ``nakaoka``, differentiated as it runs, has none.
      eliminate, check_bounds: ``anitescu-tasora`` only: rows (indices among all n
        variables, after the contacts) that the QP minimises out before iterating,
        and whether their bounds are checked after (``qp.solve``'s; servo rows).
      factors: optional ``(U, V)``, U (n, k) and V (n, k) or None (then U), with
        ``W - U V^T`` diagonal (a Delassus operator ``J M^-1 J^T`` has ``U = J L^-T``,
        ``L L^T = M``, k = the dof). ``exact`` then solves its Newton steps, and
        ``anitescu-tasora`` its QP's Newton steps, in k dimensions instead of n
        (``_lowrank_newton``, ``qp.QP``); ``exact`` also starts from a warm ``r0``
        with looser QPs (``WARM_START_TOL``). They must describe W; gradients come
        from W, not from them.

    Returns:
      (r (n,) impulses, u = W r + q (n,), Stats(iterations, natural-map residual)).

    Jitted with its static arguments: called outside ``jit`` (in a loop over problems,
    say) it compiles once per problem size and settings, not on every call.
    """
    if method not in METHODS:
        raise ValueError(f"friction method must be one of {list(METHODS)}, got {method!r}")
    W, q, mu = jnp.asarray(W), jnp.asarray(q), jnp.asarray(mu)
    n, m = q.shape[-1], mu.shape[-1]
    if W.shape != (n, n) or 3 * m > n:
        raise ValueError(f"friction.solve: W must be (n, n) with q (n,) and 3 * len(mu) <= n; got W "
                         f"{W.shape}, q {q.shape}, mu {mu.shape}")
    if method == "nakaoka" and isinstance(smoothing, (int, float)) and smoothing != 0:
        raise ValueError("friction.solve: method 'nakaoka' is differentiated through its sweeps and has no "
                         f"gradient smoothing; got smoothing={smoothing}")
    if factors is not None:
        U, V = factors
        if U.ndim != 2 or U.shape[0] != n or U.shape[1] >= n or (V is not None and V.shape != U.shape):
            raise ValueError(f"friction.solve: factors must be (U, V) with U (n, k), k < n = {n}, and V None or "
                             f"U's shape; got U {U.shape}, V {None if V is None else V.shape}")
    dtype = jnp.result_type(W.dtype, q.dtype)
    if tol is None:
        tol = max(DEFAULT_TOL, 100 * float(jnp.finfo(dtype).eps))
    if max_iter is None:
        # float32 cannot reach the residuals that the regularized rounds are for
        max_iter = MAX_ITER[method] if method != "exact" or dtype == jnp.float64 else ROUND_SWEEPS
    return _solve(W, q, mu, r0, lower, upper, tol, tol if start_tol is None else start_tol, smoothing, factors,
                  method, int(max_iter), int(start_passes),
                  int(start_iterations),
                  (tuple(int(i) for i in eliminate), bool(check_bounds)))


@functools.partial(jax.jit, static_argnums=(10, 11, 12, 13, 14))
@full_precision
def _solve(W: Array, q: Array, mu: Array, r0, lower, upper, tol, start_tol, smoothing, factors, method: str,
           max_iter: int, start_passes: int, start_iterations: int, eliminate: tuple) -> tuple[Array, Array, Stats]:
    n = q.shape[-1]
    dtype = jnp.result_type(W.dtype, q.dtype)
    W, q, mu = W.astype(dtype), q.astype(dtype), mu.astype(dtype)
    if factors is not None:  # read as data only, never differentiated
        factors = tuple(None if f is None else jax.lax.stop_gradient(jnp.asarray(f, dtype)) for f in factors)
    lower, upper = _bounds(q, mu, lower, upper)
    p = _Problem(W, q, mu, lower, upper)
    r0 = jnp.zeros((n,), dtype) if r0 is None else jnp.asarray(r0, dtype)
    if method == "exact":
        tols = jnp.stack([jnp.asarray(tol, dtype), jnp.asarray(start_tol, dtype)])
        smoothing = jax.lax.stop_gradient(jnp.asarray(smoothing, dtype))
        r, stats = _exact(p, jax.lax.stop_gradient(r0), tols, smoothing, factors, max_iter,
                          (start_passes, start_iterations))
        stats = Stats(stats.iterations, jax.lax.stop_gradient(stats.residual))
    elif method == "anitescu-tasora":
        r, st = _cone_qp(p, q, r0, tol, max_iter, smoothing, eliminate, factors)
        stats = Stats(st.iterations, residual(W, q, mu, r, lower, upper))
    else:
        r, sweeps = _nakaoka(p, r0, max_iter, jax.lax.stop_gradient(jnp.asarray(tol, dtype)))
        stats = Stats(sweeps, residual(W, q, mu, r, lower, upper))
    return r, W @ r + q, stats
