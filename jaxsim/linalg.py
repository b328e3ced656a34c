"""Small dense factorizations in plain JAX: Cholesky, triangular solves, pivoted LU.

Why not ``jax.scipy.linalg``: on CPU those lower to jaxlib's LAPACK custom calls,
which split a vmapped batch over XLA's intra-op thread pool from inside a task of that
same pool. On a 2-core machine a 1024-env step deadlocked there (every pool thread
blocked in ``ParallelBatchMap`` waiting for work only the pool could run). Written
with ordinary array ops, the factorizations batch like the rest of the step, run the
same on CPU and GPU, and differentiate without custom rules.

The matrices here are small (nv of a robot, 3 x contacts), so up to ``UNROLL`` rows
the column loop is unrolled at trace time (static slices, no loop overhead); larger
ones use ``lax.fori_loop`` over full-size masked rows (O(n^3) either way).

Derivatives are given by rules (``jax.custom_jvp``), not by differentiating the loops:
a differentiated loop keeps every iteration's carry for the reverse pass (a Cholesky
of the humanoid's 27 x 27 mass matrix kept 27 copies of it, every step of a
rollout), while the rules need only the factor. Cholesky: ``dL = L Phi(L^-1 dA L^-T)``
(``Phi``: the lower triangle, half the diagonal); solves: ``dx = A^-1 (db - dA x)``.
Their tangents are triangular solves with the primal factor, linear in the tangents,
which JAX transposes for reverse mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.math import SHORT_AXIS, small_dot
from jaxsim.precision import full_precision
from jaxsim.types import pytree_dataclass, static

Array = jax.Array
UNROLL = 8  # largest n whose loops are unrolled (more: compile time grows, run time does not drop)


@jax.custom_jvp
def cho_factor(a: Array) -> Array:
    """(n, n) lower Cholesky factor L of a symmetric positive-definite ``a`` (L L^T = a;
    only the lower triangle of ``a`` is read)."""
    return _cho_factor(jnp.asarray(a))


@cho_factor.defjvp
@full_precision
def _cho_factor_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    L = _cho_factor(a)
    da = jnp.tril(da) + jnp.tril(da, -1).T  # only the lower triangle is read
    x = _forward(L, _forward(L, da).T)  # L^-1 dA L^-T (dA symmetric)
    phi = jnp.tril(x, -1) + 0.5 * jnp.diag(jnp.diagonal(x))
    return L, L @ phi


def _cho_factor(a: Array) -> Array:
    n = a.shape[-1]
    L = jnp.zeros_like(a)
    if n <= UNROLL:
        for j in range(n):  # left-looking: column j from the columns before it
            v = a[j:, j] - L[j:, :j] @ L[j, :j]
            d = jnp.sqrt(v[0])
            L = L.at[j, j].set(d).at[j + 1:, j].set(v[1:] / d)
        return L
    idx = jnp.arange(n)

    def column(j, L):
        v = a[:, j] - L @ L[j]  # L[j] is zero from column j on
        d = jnp.sqrt(v[j])
        return L.at[:, j].set(jnp.where(idx > j, v / d, jnp.where(idx == j, d, 0.0)))
    return jax.lax.fori_loop(0, n, column, L)


def _forward(L: Array, b: Array, unit_diag: bool = False) -> Array:
    """y with L y = b (L lower triangular; b (n,) or (n, k))."""
    n = L.shape[0]
    diag = (lambda i: 1.0) if unit_diag else (lambda i: L[i, i])  # noqa: E731
    y = jnp.zeros_like(b)
    if n <= UNROLL:
        for i in range(n):
            y = y.at[i].set((b[i] - L[i, :i] @ y[:i]) / diag(i))
        return y
    return jax.lax.fori_loop(0, n, lambda i, y: y.at[i].set((b[i] - L[i] @ y) / diag(i)), y)


def _backward(U: Array, y: Array) -> Array:
    """x with U x = y (U upper triangular; y (n,) or (n, k))."""
    n = U.shape[0]
    x = jnp.zeros_like(y)
    if n <= UNROLL:
        for i in reversed(range(n)):
            x = x.at[i].set((y[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i])
        return x

    def row(k, x):
        i = n - 1 - k
        return x.at[i].set((y[i] - U[i] @ x) / U[i, i])  # x is zero up to i
    return jax.lax.fori_loop(0, n, row, x)


@jax.custom_jvp
def solve_lower(L: Array, b: Array) -> Array:
    """y with L y = b, L lower triangular (``cho_factor``); b (n,) or (n, k)."""
    return _forward(jnp.asarray(L), jnp.asarray(b))


@solve_lower.defjvp
@full_precision
def _solve_lower_jvp(primals, tangents):
    (L, b), (dL, db) = primals, tangents
    y = _forward(L, b)
    return y, _forward(L, db - jnp.tril(dL) @ y)


@jax.custom_jvp
def cho_solve(L: Array, b: Array) -> Array:
    """x with (L L^T) x = b, for L from ``cho_factor``; b (n,) or (n, k)."""
    return _cho_solve(jnp.asarray(L), jnp.asarray(b))


@cho_solve.defjvp
@full_precision
def _cho_solve_jvp(primals, tangents):
    (L, b), (dL, db) = primals, tangents
    x = _cho_solve(L, b)
    # d(L L^T) x = dL (L^T x) + L (dL^T x)
    return x, _cho_solve(L, db - dL @ (L.T @ x) - L @ (dL.T @ x))


def _cho_solve(L: Array, b: Array) -> Array:
    return _backward(L.T, _forward(L, b))


def _lower_of_upper(L: Array, y: Array) -> Array:
    """x with L^T x = y (L lower triangular), as the lower-triangular solve of the
    factor with both orders reversed, so that ``solve_lower``'s rule differentiates it."""
    return solve_lower(L.T[::-1, ::-1], y[::-1])[::-1]


def _groups(blocks: tuple) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Static ``(start, size)`` diagonal blocks grouped by size: (sizes, starts per size)."""
    sizes = tuple(sorted({n for _, n in blocks}))
    return sizes, tuple(tuple(i for i, n in blocks if n == size) for size in sizes)


def _diagonal_blocks(a: Array, size: int, starts: tuple[int, ...]) -> Array:
    """(g, size, size) the diagonal blocks of ``a`` that start at ``starts``."""
    return jnp.stack([a[i:i + size, i:i + size] for i in starts])


def _split(b: Array, sizes: tuple[int, ...], starts: tuple) -> list[Array]:
    """Per group of blocks, b's rows of its blocks: (g, size) + b.shape[1:]."""
    return [jnp.stack([b[i:i + size] for i in st]) for size, st in zip(sizes, starts)]


def _join(parts: list[Array], starts: tuple) -> Array:
    """The inverse of ``_split``: the blocks' rows back in the matrix's order."""
    pieces = sorted(((i, p[k]) for p, st in zip(parts, starts) for k, i in enumerate(st)), key=lambda e: e[0])
    return pieces[0][1] if len(pieces) == 1 else jnp.concatenate([p for _, p in pieces])


def _per_block(fn, *blocks: Array) -> Array:
    """``fn`` on each of a group's blocks (leading axis g): under ``vmap``, or called
    on the block itself when the group holds one (a single tree keeps the plain dense
    program: a one-element ``vmap`` only adds batch dimensions to its gathers)."""
    if blocks[0].shape[0] == 1:
        return fn(*(x[0] for x in blocks))[None]
    return jax.vmap(fn)(*blocks)


@pytree_dataclass
class BlockCholesky:
    """The lower Cholesky factor of a block-diagonal symmetric positive-definite
    matrix, kept as its diagonal blocks: a mass matrix, whose blocks are the
    kinematic trees (``kinematics.dof_blocks``).

    Blocks of one size are factored and solved together under ``vmap``. Eight free
    bodies are then eight 6 x 6 factors whose loops unroll, where one 48 x 48 factor
    is a loop of 48 dependent steps (its forward solve another 48, each step a
    kernel launch on a GPU); a single tree is the plain dense factor. The blocks go
    through ``cho_factor``, ``solve_lower`` and ``cho_solve``, whose rules give the
    derivatives.
    """

    factors: tuple  # per group of equal blocks: (g, s, s) lower factors
    starts: tuple = static()  # per group: the first row of each of its g blocks

    def _each(self, fn, b: Array) -> Array:
        sizes = tuple(f.shape[-1] for f in self.factors)
        return _join([_per_block(fn, f, x) for f, x in zip(self.factors, _split(b, sizes, self.starts))],
                     self.starts)

    def solve_lower(self, b: Array) -> Array:
        """y with L y = b; b (n,) or (n, k)."""
        return self._each(solve_lower, b)

    def solve_lower_t(self, y: Array) -> Array:
        """x with L^T x = y; y (n,) or (n, k)."""
        return self._each(_lower_of_upper, y)

    def solve(self, b: Array) -> Array:
        """x with (L L^T) x = b; b (n,) or (n, k)."""
        return self._each(cho_solve, b)


def block_cho_factor(a: Array, blocks: tuple) -> BlockCholesky:
    """``BlockCholesky`` of the (n, n) ``a``, whose diagonal blocks ``blocks`` (static
    ``(start, size)`` pairs covering 0..n) hold all of it; the rest of ``a`` is not read."""
    sizes, starts = _groups(blocks)
    return BlockCholesky(tuple(_per_block(cho_factor, _diagonal_blocks(a, size, st)) for size, st in zip(sizes, starts)),
                         starts)


def block_solve(a: Array, b: Array, blocks: tuple) -> Array:
    """x with a x = b for a nonsingular (n, n) ``a`` whose diagonal blocks ``blocks``
    (as ``block_cho_factor``'s) hold all of it: ``solve`` on each block, the blocks of
    one size together under ``vmap``; b (n,) or (n, k)."""
    sizes, starts = _groups(blocks)
    parts = [_per_block(solve, _diagonal_blocks(a, size, st), x)
             for size, st, x in zip(sizes, starts, _split(b, sizes, starts))]
    return _join(parts, starts)


@jax.custom_jvp
def solve(a: Array, b: Array) -> Array:
    """x with a x = b for a general nonsingular (n, n) ``a`` (LU with partial
    pivoting); b (n,) or (n, k)."""
    lu, perm = _lu(jnp.asarray(a))
    return _lu_solve(lu, perm, jnp.asarray(b))


@solve.defjvp
@full_precision
def _solve_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    lu, perm = _lu(a)
    x = _lu_solve(lu, perm, b)
    return x, _lu_solve(lu, perm, db - da @ x)


def _lu(a: Array) -> tuple[Array, Array]:
    """Packed LU factors (unit lower below the diagonal, upper on and above it) and the
    row permutation of ``a``."""
    n = a.shape[-1]
    rows = jnp.arange(n)

    def eliminate(k, carry):
        lu, perm = carry
        p = jnp.argmax(jnp.where(rows >= k, jnp.abs(lu[:, k]), -1.0))
        swap = jnp.where(rows == k, p, jnp.where(rows == p, k, rows))
        lu, perm = lu[swap], perm[swap]
        factor = jnp.where(rows > k, lu[:, k] / lu[k, k], 0.0)
        # rows below k: subtract factor x row k right of column k; store the factor at k
        upd = lu - factor[:, None] * jnp.where(rows > k, lu[k], 0.0)[None, :]
        return jnp.where((rows > k)[:, None] & (rows == k)[None, :], factor[:, None], upd), perm

    if n <= UNROLL:
        carry = (a, rows)
        for k in range(n):
            carry = eliminate(k, carry)
        lu, perm = carry
    else:
        lu, perm = jax.lax.fori_loop(0, n, eliminate, (a, rows))
    return lu, perm


def _lu_solve(lu: Array, perm: Array, b: Array) -> Array:
    lower = jnp.tril(lu, -1) + jnp.eye(lu.shape[-1], dtype=lu.dtype)
    return _backward(jnp.triu(lu), _forward(lower, b[perm], unit_diag=True))


def inverse3(a: Array) -> Array:
    """Inverses of (..., 3, 3) blocks by their adjugates: elementwise work, which
    batches over many small blocks far faster than a batched factorization (a LAPACK
    one would also be a custom call, the module docstring)."""
    def minor(i, j):  # the cofactor of entry (i, j)
        r, c = [k for k in range(3) if k != i], [k for k in range(3) if k != j]
        sign = 1.0 if (i + j) % 2 == 0 else -1.0
        return sign * (a[..., r[0], c[0]] * a[..., r[1], c[1]] - a[..., r[0], c[1]] * a[..., r[1], c[0]])
    cof = [[minor(i, j) for j in range(3)] for i in range(3)]
    det = a[..., 0, 0] * cof[0][0] + a[..., 0, 1] * cof[0][1] + a[..., 0, 2] * cof[0][2]
    adj = jnp.stack([jnp.stack([cof[j][i] for j in range(3)], -1) for i in range(3)], -2)  # cofactors transposed
    return adj / det[..., None, None]


# most multiplications (rows x columns x shared length) that ``row_products`` does
# as element-wise products rather than a matrix product
SMALL_PRODUCT = 1024


def block_apply(a: Array, m: Array) -> Array:
    """(c, r, ...) ``a[i] @ m[i]`` for each of c small blocks ``a`` (c, r, s) and
    ``m`` (c, s, ...), term by term over the short shared axis (see ``math.small_dot``:
    under ``vmap`` the einsum is a batched matrix product of tiny matrices, one
    library call per env on the CPU)."""
    s = a.shape[-1]
    if not 0 < s <= SHORT_AXIS:
        return jnp.einsum("crs,cs...->cr...", a, m)
    col = lambda j: a[:, :, j].reshape(a.shape[:2] + (1,) * (m.ndim - 2))  # noqa: E731
    out = col(0) * m[:, None, 0]
    for j in range(1, s):
        out = out + col(j) * m[:, None, j]
    return out


def row_products(a: Array, b: Array) -> Array:
    """(n, m) dot products of the rows of ``a`` (n, k) with the rows of ``b`` (m, k),
    ``a @ b.T``.

    Why not always ``a @ b.T``: under ``vmap`` that is a batched matrix product, which
    XLA's CPU backend runs as one library call per env, each costing far more than
    the few multiplications of a small product (a cube's 6 x 6 x 6 at 64 envs took a
    twentieth of its step). Up to ``SMALL_PRODUCT`` multiplications, and for rows of
    3 (points, normals) at any count, the product is written as element-wise products
    (``math.small_dot`` of every row pair), which XLA fuses into one loop over the
    batch; larger ones keep the matrix product, whose library call then pays off."""
    n, k = a.shape
    if n * b.shape[0] * k <= SMALL_PRODUCT or k <= 3:
        return small_dot(a[:, None, :], b[None, :, :])
    return a @ b.T
