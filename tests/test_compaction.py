"""``solver.compaction.while_loop``: under ``vmap`` the same carries as JAX's own
batching of ``lax.while_loop``, in stages that iterate only on the running envs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsim.solver import compaction, qp


def _collatz_ops(ops, c):
    """One step of the Collatz map on ``c[0]``, counting steps in ``c[1]`` and summing
    ``ops[0] * value`` in ``c[2]``: envs need very different numbers of steps."""
    x, count, acc = c
    x = jnp.where(x % 2 == 0, x // 2, 3 * x + 1)
    return x, count + 1, acc + ops[0] * x.astype(acc.dtype)


def _running(ops, c):
    return (c[0] != 1) & (c[1] < ops[1])


def _plain(ops, c):
    return jax.lax.while_loop(lambda c: _running(ops, c), lambda c: _collatz_ops(ops, c), c)


def _compacted(ops, c):
    return compaction.while_loop(_running, _collatz_ops, ops, c)


def _start(batch):
    x = jnp.arange(1, batch + 1, dtype=jnp.int32)  # 0 to 112 steps for 1..64
    return x, jnp.zeros(batch, jnp.int32), jnp.zeros(batch, jnp.float32)


def test_stage_sizes():
    assert compaction.stage_sizes(1) == (1,)
    assert compaction.stage_sizes(64) == (64, 32, 16, 8, 4, 2, 1)
    assert compaction.stage_sizes(17) == (17, 9, 5, 3, 2, 1)
    assert compaction.stage_sizes(64, shrink=4) == (64, 16, 4, 1)
    assert compaction.stage_sizes(compaction.MIN_BATCH - 1) == (compaction.MIN_BATCH - 1,)


@pytest.mark.parametrize("batch", [1, 17, 64])
def test_vmapped_loop_equals_jax_s_batching(batch):
    """Equal carries, each env's own step count (0 to 100 here), with operands batched
    or shared, and unbatched initial carries broadcast (an integer loop: no rounding)."""
    weights = jnp.linspace(0.5, 1.5, batch, dtype=jnp.float32)
    cap = jnp.int32(100)  # six of 64 envs stop at the cap, the others on their own
    x0 = _start(batch)
    for axes in (((0, None), 0), ((None, None), 0)):
        ops = (weights if axes[0][0] == 0 else jnp.float32(0.7), cap)
        want = jax.jit(jax.vmap(_plain, axes))(ops, x0)
        got = jax.jit(jax.vmap(_compacted, axes))(ops, x0)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(np.asarray(w), np.asarray(g))
    counts = np.asarray(want[1])
    assert batch == 1 or counts.max() > 2 * np.median(counts)  # the stages have work to shed
    shared_start = jax.jit(jax.vmap(_compacted, ((0, None), (None, None, None))))(
        (weights, cap), jax.tree.map(lambda a: a[0], x0))
    single = jax.jit(_plain)((weights[-1], cap), jax.tree.map(lambda a: a[0], x0))
    for w, g in zip(single, shared_start):
        np.testing.assert_array_equal(np.asarray(w), np.asarray(g)[-1])


def test_nested_vmap_and_stage_shapes():
    """Nested ``vmap`` gives the flat result; the program holds one loop per stage, at
    the stages' batch sizes."""
    ops = (jnp.linspace(0.5, 1.5, 64, dtype=jnp.float32), jnp.int32(200))
    x0 = _start(64)
    axes = ((0, None), 0)
    flat = jax.jit(jax.vmap(_compacted, axes))(ops, x0)
    nested = jax.jit(jax.vmap(jax.vmap(_compacted, axes), axes))((ops[0].reshape(8, 8), ops[1]),
                                                                jax.tree.map(lambda a: a.reshape(8, 8), x0))
    for f, n in zip(flat, nested):
        np.testing.assert_array_equal(np.asarray(f), np.asarray(n).reshape(-1))
    text = str(jax.make_jaxpr(jax.vmap(_compacted, axes))(ops, x0))
    assert text.count("while[") == len(compaction.stage_sizes(64))
    for size in compaction.stage_sizes(64):
        assert f"i32[{size}]" in text


def test_batched_qp_solves_equal_one_by_one_ones_and_differentiate():
    """The contact QP vmapped over problems of very different difficulty: each solved
    to its tolerance, as when solved alone, and a gradient that matches central
    differences (float64)."""
    rng = np.random.default_rng(3)
    m, batch = 4, 16
    n = 3 * m
    J = rng.normal(size=(batch, n, 8))
    ridge = 10.0 ** rng.uniform(-4, 0, size=batch)  # condition numbers spread over decades
    H = jnp.asarray(J @ J.transpose(0, 2, 1) + ridge[:, None, None] * np.eye(n))
    g = jnp.asarray(rng.normal(size=(batch, n)))
    mu = jnp.full((m,), 0.6)

    def solve(H, g, tol=1e-10):
        return qp.solve(qp.QP(H, g, jnp.zeros(n), jnp.full(n, jnp.inf), mu), jnp.zeros(n), tol,
                        max_iter=40000, block=(3, m))

    x, stats = jax.jit(jax.vmap(solve))(H, g)
    iters = np.asarray(stats.iterations)
    assert iters.max() > 2 * np.median(iters)
    assert np.all(np.asarray(stats.residual) <= 1e-10)
    for i in range(0, batch, 5):  # alone, unbatched: the same solve up to rounding
        x_i, stats_i = jax.jit(solve)(H[i], g[i])
        np.testing.assert_allclose(np.asarray(x[i]), np.asarray(x_i), rtol=0, atol=1e-8 * float(jnp.max(jnp.abs(x_i))))
        assert abs(int(stats_i.iterations) - iters[i]) <= 0.05 * iters[i]

    def loss(g, tol=1e-10):
        return jnp.sum(jnp.sin(jax.vmap(lambda H, g: solve(H, g, tol))(H, g)[0]))
    grad = jax.jit(jax.grad(loss))(g)
    direction = jnp.asarray(rng.normal(size=g.shape))
    # the differences from solves to 1e-13: at 1e-10 the worst-conditioned problems'
    # solutions are off by about 1e-6, which a step of 1e-5 turns into 5 % noise
    h = 1e-5
    fd = (loss(g + h * direction, 1e-13) - loss(g - h * direction, 1e-13)) / (2 * h)
    np.testing.assert_allclose(float(jnp.sum(grad * direction)), float(fd), rtol=1e-3)
