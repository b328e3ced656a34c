"""jaxsim.linalg (plain-JAX Cholesky and LU) against NumPy/LAPACK, unrolled and looped
sizes, batched, and its gradients against finite differences."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from jax.test_util import check_grads

from jaxsim import linalg, math

SIZES = (1, 5, linalg.UNROLL + 7)  # unrolled and fori_loop paths


def spd(rng, n):
    x = rng.normal(size=(n, n))
    return x @ x.T + n * np.eye(n)


@pytest.mark.parametrize("n", SIZES)
def test_cholesky_and_solves_match_numpy(n):
    rng = np.random.default_rng(n)
    a, b, g = spd(rng, n), rng.normal(size=(n, 4)), rng.normal(size=(n, n))
    L = linalg.cho_factor(jnp.asarray(a))
    np.testing.assert_allclose(L, np.linalg.cholesky(a), atol=1e-12)
    np.testing.assert_allclose(linalg.cho_solve(L, jnp.asarray(b)), np.linalg.solve(a, b), atol=1e-12)
    np.testing.assert_allclose(linalg.cho_solve(L, jnp.asarray(b[:, 0])), np.linalg.solve(a, b[:, 0]),
                               atol=1e-12)
    if n > 1:  # LU needs its pivoting: a zero leading entry
        g[0, 0] = 0.0
    np.testing.assert_allclose(jax.jit(linalg.solve)(jnp.asarray(g), jnp.asarray(b)),
                               np.linalg.solve(g, b), rtol=1e-9, atol=1e-9)


def test_batched_and_float32():
    rng = np.random.default_rng(1)
    n = linalg.UNROLL + 3
    a = np.stack([spd(rng, n) for _ in range(6)]).astype(np.float32)
    b = rng.normal(size=(6, n)).astype(np.float32)
    x = jax.jit(jax.vmap(lambda a, b: linalg.cho_solve(linalg.cho_factor(a), b)))(a, b)
    assert x.dtype == jnp.float32
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(float), b[..., None].astype(float))[..., 0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", (4, linalg.UNROLL + 2))
def test_gradients_match_finite_differences(n):
    rng = np.random.default_rng(2)
    a, b, g = jnp.asarray(spd(rng, n)), jnp.asarray(rng.normal(size=n)), jnp.asarray(spd(rng, n) + rng.normal(size=(n, n)))
    check_grads(jax.jit(lambda a, b: linalg.cho_solve(linalg.cho_factor(a), b)), (a, b), order=1,
                modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    check_grads(jax.jit(linalg.solve), (g, b), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    sym = lambda a: 0.5 * (a + a.T)  # noqa: E731 -- the factor reads one triangle: perturb both
    check_grads(jax.jit(lambda a: linalg.cho_factor(sym(a))), (a,), order=1, modes=("fwd", "rev"),
                atol=1e-6, rtol=1e-6)
    check_grads(jax.jit(lambda a, b: linalg.solve_lower(linalg.cho_factor(sym(a)), b)), (a, b), order=1,
                modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_derivative_rules_keep_no_per_iteration_carries():
    """The rules' reverse pass keeps the factor, not one copy per loop iteration: the
    residuals that ``jax.linearize`` saves for a looped size stay O(n^2), not O(n^3)
    (measured at n = 32: 20 n^2 entries with the rules, 3.3 n^3 without)."""
    n = 64
    rng = np.random.default_rng(3)
    a, b = jnp.asarray(spd(rng, n)), jnp.asarray(rng.normal(size=(n, n)))
    f = lambda a, b: linalg.cho_solve(linalg.cho_factor(a), b)  # noqa: E731
    _, lin = jax.linearize(f, a, b)
    saved = sum(x.size for x in jax.tree.leaves(lin) if hasattr(x, "size"))
    assert saved < n ** 3 / 2, (saved, n ** 3)


@pytest.mark.parametrize("shape", [(6, 6, 6), (27, 27, 6)])  # either side of SMALL_PRODUCT
def test_row_products_match_numpy(shape):
    n, m, k = shape
    assert (n * m * k <= linalg.SMALL_PRODUCT) == (n == 6)
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, k)), rng.normal(size=(m, k))
    np.testing.assert_allclose(linalg.row_products(jnp.asarray(a), jnp.asarray(b)), a @ b.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [0, 3, math.SHORT_AXIS + 4])  # empty, written out term by term, and a sum
def test_small_dot_and_block_apply_match_numpy(k):
    rng = np.random.default_rng(k)
    x, y = rng.normal(size=(5, 4, k)), rng.normal(size=(4, k))
    np.testing.assert_allclose(math.small_dot(jnp.asarray(x), jnp.asarray(y)), np.sum(x * y, -1),
                               rtol=1e-12, atol=1e-12)
    a, m = rng.normal(size=(6, 2, k)), rng.normal(size=(6, k, 7))
    np.testing.assert_allclose(linalg.block_apply(jnp.asarray(a), jnp.asarray(m)), a @ m, rtol=1e-12, atol=1e-12)
    v = rng.normal(size=(6, k))
    np.testing.assert_allclose(linalg.block_apply(jnp.asarray(a), jnp.asarray(v)), np.einsum("crs,cs->cr", a, v),
                               rtol=1e-12, atol=1e-12)
    many = rng.normal(size=(300, 3))  # rows of 3: element-wise at any count
    np.testing.assert_allclose(linalg.row_products(jnp.asarray(many), jnp.asarray(many[:40])), many @ many[:40].T,
                               rtol=1e-12, atol=1e-12)


BLOCKS = ((0, 6), (6, 3), (9, 6), (15, linalg.UNROLL + 2))  # two sizes repeat, one looped size


def block_diagonal(rng, blocks, make):
    n = sum(size for _, size in blocks)
    a = np.zeros((n, n))
    for start, size in blocks:
        a[start:start + size, start:start + size] = make(rng, size)
    return a


def test_block_cholesky_matches_numpy():
    """Each block's factor and solves against the dense NumPy ones, also under jit and
    vmap; entries outside the blocks are not read."""
    rng = np.random.default_rng(4)
    a = block_diagonal(rng, BLOCKS, spd)
    n = a.shape[0]
    b = rng.normal(size=(n, 3))
    noisy = jnp.asarray(a + np.where(a == 0.0, rng.normal(size=a.shape), 0.0))
    L = np.linalg.cholesky(a)
    factor = jax.jit(linalg.block_cho_factor, static_argnums=1)(noisy, BLOCKS)
    np.testing.assert_allclose(factor.solve(jnp.asarray(b)), np.linalg.solve(a, b), atol=1e-12)
    np.testing.assert_allclose(factor.solve(jnp.asarray(b[:, 0])), np.linalg.solve(a, b[:, 0]), atol=1e-12)
    np.testing.assert_allclose(factor.solve_lower(jnp.asarray(b)), np.linalg.solve(L, b), atol=1e-12)
    np.testing.assert_allclose(factor.solve_lower_t(jnp.asarray(b)), np.linalg.solve(L.T, b), atol=1e-12)
    g = block_diagonal(rng, BLOCKS, lambda r, s: r.normal(size=(s, s)) + s * np.eye(s))
    np.testing.assert_allclose(linalg.block_solve(jnp.asarray(g), jnp.asarray(b), BLOCKS), np.linalg.solve(g, b),
                               rtol=1e-10, atol=1e-10)
    many = jnp.stack([jnp.asarray(a), jnp.asarray(2.0 * a)])
    x = jax.vmap(lambda m, y: linalg.block_cho_factor(m, BLOCKS).solve(y))(many, jnp.asarray(b[:, :2].T))
    np.testing.assert_allclose(x[1], 0.5 * np.linalg.solve(a, b[:, 1]), atol=1e-12)


def test_block_cholesky_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    blocks = ((0, 3), (3, 2), (5, 3))
    a = jnp.asarray(block_diagonal(rng, blocks, spd))
    b = jnp.asarray(rng.normal(size=a.shape[0]))
    sym = lambda a: 0.5 * (a + a.T)  # noqa: E731
    check_grads(jax.jit(lambda a, b: linalg.block_cho_factor(sym(a), blocks).solve(b)), (a, b), order=1,
                modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    check_grads(jax.jit(lambda a, b: linalg.block_cho_factor(sym(a), blocks).solve_lower_t(b)), (a, b), order=1,
                modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    check_grads(jax.jit(lambda a, b: linalg.block_solve(a, b, blocks)), (a + jnp.asarray(np.triu(a, 1)), b),
                order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
