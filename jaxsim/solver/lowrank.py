"""The projected-gradient fixed point's Newton system when H is a diagonal plus a
low-rank product, solved in the rank's dimension.

The contact QP's ``H = diag(c) + U U^T`` with ``U = J L^-T`` (``L L^T = M``; n rows of
contacts and limits, ``k = nv`` generalized velocities; ``U = J`` and ``W^T = M^-1 J^T``
under equality constraints) is dense in n but of rank k, often much smaller (the
humanoid: n = 65, k = 23; eight boxes: 144 and 48). A
Newton step on the fixed point ``x = P(z)``, ``z = x - eta (H x + g)``, solves

    (I - D + eta D H) dx = p,     D = P'(z) = V diag(d) V^T

(``qp.cone_jacobian_eig``: V rotates each cone's three rows, ``d`` in [0, 1]). In V's
basis the directions with ``d = 0`` are fixed (``dx' = p'``) and the others, divided
by ``eta d``, read ``(G + U' W'^T) dx' = rhs`` with ``G = diag((1 - d) / (eta d)) + V^T
diag(c) V``, block-diagonal in 3 x 3 (cones) and 1 x 1 (rows) blocks. The Woodbury
identity turns that into one k x k solve:

    (G + U' W'^T)^-1 = G^-1 - G^-1 U' (I + W'^T G^-1 U')^-1 W'^T G^-1,

where a dense factorization of the n x n system (``qp._spd_tangent``) costs ``(n /
k)^3`` times as much. Written by hand because no library solves a projection's
Newton system through a caller's low-rank factors.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxsim import linalg

Array = jax.Array


def diagonal_part(diag: Array, U: Array, W: Array | None) -> Array:
    """(n,) ``c`` with ``H = diag(c) + U W^T`` (W None: ``U U^T``), from H's diagonal
    ``diag``; clipped at 0 against rounding."""
    return jnp.maximum(diag - jnp.sum(U * (U if W is None else W), -1), 0.0)


def rotate_t(Vc: Array, M: Array) -> Array:
    """``V^T M`` for M (n, ...), V block diagonal: each cone block's eigenvectors
    ``Vc`` (ncone, 3, 3) as columns (the cone blocks first), the identity on the rows
    after them."""
    ncone = Vc.shape[0]
    k = 3 * ncone
    top = linalg.block_apply(jnp.swapaxes(Vc, 1, 2), M[:k].reshape((ncone, 3) + M.shape[1:]))
    return jnp.concatenate([top.reshape((k,) + M.shape[1:]), M[k:]])


def rotate(Vc: Array, v: Array) -> Array:
    """``V v`` for v (n,) (``rotate_t``'s V)."""
    k = 3 * Vc.shape[0]
    return jnp.concatenate([linalg.block_apply(Vc, v[:k].reshape(-1, 3)).reshape(-1), v[k:]])


def newton_system_solve(Vc: Array, d: Array, eta: Array, c: Array, U: Array, W: Array | None, p: Array,
                        ridge: Array) -> Array:
    """``dx`` with ``(I - D + eta D H) dx = p`` for ``H = diag(c) + U W^T`` (module docstring).

    Args:
      Vc: (ncone, 3, 3) each cone block's eigenvectors of ``P'`` (columns).
      d: (n,) the eigenvalues in [0, 1], cone blocks first (in V's basis), then one
        per row.
      eta: (n,) the fixed point's steps, constant within each cone block.
      c: (n,) H's diagonal part (>= 0).
      U, W: (n, k) H's low-rank part ``U W^T``; W None for ``U U^T`` (then the
        k x k solve is a Cholesky, else a pivoted LU).
      p: (n,) right-hand side.
      ridge: () added to G's diagonal, so that a direction with neither compliance
        nor ``1 - d`` stays solvable.

    Returns:
      (n,) dx.
    """
    return newton_system_solver(Vc, d, eta, c, U, W, ridge)(p)


def newton_system_solver(Vc: Array, d: Array, eta: Array, c: Array, U: Array, W: Array | None,
                         ridge: Array) -> Callable[[Array], Array]:
    """``p -> dx`` with ``(I - D + eta D H) dx = p`` (``newton_system_solve``'s
    arguments but ``p``): the system factored once, for several right-hand sides
    (iterative refinement). With ``W`` None the k x k factor is kept; with W, the
    pivoted LU runs with each right-hand side."""
    ncone = Vc.shape[0]
    k3 = 3 * ncone
    symmetric = W is None
    W = U if symmetric else W

    eps = jnp.finfo(d.dtype).eps
    on = d > 16 * eps
    step = eta * jnp.where(on, d, 1.0)
    U1, W1 = rotate_t(Vc, U), rotate_t(Vc, W)
    # G: V^T diag(c) V per cone block, plus (1 - d) / (eta d), decoupled where off
    cc = c[:k3].reshape(ncone, 3)
    C1 = linalg.block_apply(jnp.swapaxes(Vc, 1, 2), cc[:, :, None] * Vc)  # (ncone, 3, 3)
    on_c = on[:k3].reshape(ncone, 3)
    both = on_c[:, :, None] & on_c[:, None, :]
    diag_c = jnp.where(on_c, (1.0 - d[:k3].reshape(ncone, 3)) / step[:k3].reshape(ncone, 3) + ridge, 1.0)
    G_c = jnp.where(both, C1, 0.0) + jax.vmap(jnp.diag)(diag_c)
    G_r = jnp.where(on[k3:], (1.0 - d[k3:]) / step[k3:] + c[k3:] + ridge, 1.0)
    Gi_c = linalg.inverse3(G_c)

    def g_inv(M):  # G^-1 M for M (n, ...)
        top = linalg.block_apply(Gi_c, M[:k3].reshape((ncone, 3) + M.shape[1:]))
        rest = M[k3:] / G_r.reshape((-1,) + (1,) * (M.ndim - 1))
        return jnp.concatenate([top.reshape((k3,) + M.shape[1:]), rest])

    U_on, W_on = jnp.where(on[:, None], U1, 0.0), jnp.where(on[:, None], W1, 0.0)
    Gi_U = g_inv(U_on)
    inner = jnp.eye(U.shape[1], dtype=d.dtype) + W_on.T @ Gi_U
    if symmetric:  # G is symmetric positive definite, so is the inner matrix
        factor = linalg.cho_factor(0.5 * (inner + inner.T))
        inner_solve = lambda b: linalg.cho_solve(factor, b)  # noqa: E731
    else:
        inner_solve = lambda b: linalg.solve(inner, b)  # noqa: E731

    def apply(p: Array) -> Array:
        p1 = rotate_t(Vc, p)
        y_off = jnp.where(on, 0.0, p1 / jnp.maximum(1.0 - d, eps))
        # the on rows' right-hand side, with the fixed directions' coupling moved over
        coupled = jnp.concatenate([linalg.block_apply(C1, y_off[:k3].reshape(ncone, 3)).reshape(-1),
                                   c[k3:] * y_off[k3:]]) + U1 @ (W1.T @ y_off)
        rhs = jnp.where(on, p1 / step - coupled, 0.0)
        Gi_rhs = g_inv(rhs)
        y = Gi_rhs - Gi_U @ inner_solve(W_on.T @ Gi_rhs) + y_off
        return rotate(Vc, y)
    return apply
