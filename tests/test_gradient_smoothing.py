"""Gradient smoothing (the ``gradient_smoothing`` option; ``smoothing=`` of
``qp.solve`` and ``friction.solve``): the solution is unchanged to the bit, the
smoothed derivative converges to the exact one as the smoothing goes to zero
(quadratically away from the projection's kinks: an error ratio near 100 per decade),
and the exact one matches central finite differences. Float64.

The QP problems have three friction cones and two interval rows, with a Delassus-like
H of rank 8 plus a small diagonal, so that contacts separate, stick, slide and rows
sit at bounds at the solution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import ModelBuilder, scenes
from jaxsim.solver import friction, qp
from jaxsim.types import ModelError

M, NR = 3, 2
N = 3 * M + NR
SMOOTHING = (1e-1, 1e-2, 1e-3)


def _problem():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(N, 8))
    H = jnp.asarray(A @ A.T + 0.01 * np.eye(N))
    g = jnp.asarray(rng.normal(size=N))
    lower = jnp.concatenate([jnp.zeros(3 * M), jnp.full(NR, -0.5)])
    upper = jnp.concatenate([jnp.zeros(3 * M), jnp.full(NR, 0.3)])
    return H, g, lower, upper, jnp.full(M, 0.5)


def _check_convergence(solve, g):
    """``solve(g, smoothing) -> x``: the forward pass ignores the smoothing, the exact
    Jacobian matches finite differences, the smoothed one tends to it."""
    fn = jax.jit(solve)
    assert bool(jnp.all(fn(g, 0.0) == fn(g, 0.3)))
    jac = jax.jit(jax.jacfwd(fn))
    exact = jac(g, 0.0)
    eps = 1e-6
    fd = jnp.stack([(fn(g + eps * e, 0.0) - fn(g - eps * e, 0.0)) / (2 * eps) for e in jnp.eye(N)], 1)
    np.testing.assert_allclose(exact, fd, atol=1e-6)
    errors = [float(jnp.max(jnp.abs(jac(g, s) - exact))) for s in SMOOTHING]
    assert errors[0] > 1e-3, errors  # the smoothing does something at 0.1
    assert errors[1] < 0.05 * errors[0] and errors[2] < 0.05 * errors[1], errors
    # reverse mode transposes the smoothed rule
    np.testing.assert_allclose(jax.jacrev(fn)(g, SMOOTHING[0]), jac(g, SMOOTHING[0]), atol=1e-12)


@pytest.mark.parametrize("cone", ["circle", "box"])
def test_qp_smoothing_converges_to_the_exact_derivative(cone):
    H, g, lower, upper, mu = _problem()

    def solve(g, smoothing):
        x, _ = qp.solve(qp.QP(H, g, lower, upper, mu), jnp.zeros(N), 1e-14, max_iter=20000, block=(3, M),
                        cone=cone, smoothing=smoothing)
        return x

    _check_convergence(solve, g)


def test_exact_friction_smoothing_converges_to_the_exact_derivative():
    H, g, lower, upper, mu = _problem()

    def solve(q, smoothing):
        return friction.solve(H, q, mu, "exact", tol=1e-12, lower=lower[3 * M:], upper=upper[3 * M:],
                              smoothing=smoothing)[0]

    _check_convergence(solve, g)
    with pytest.raises(ValueError, match="nakaoka"):
        friction.solve(H, g, mu, "nakaoka", smoothing=0.1)


def test_step_gradient_smoothing_leaves_the_motion_and_converges():
    """A cube thrown onto the floor, sliding then sticking (relaxed point model), with a
    batch of Models that differ only in ``opt.gradient_smoothing``: the rollouts are
    equal to the bit; the gradient of the final position with respect to the throw
    moves with the smoothing and tends to the exact one."""
    model = scenes.cube(height=0.051, dtype=jnp.float64)
    values = jnp.asarray([0.0, 1e-1, 1e-2, 1e-3])
    models = jax.vmap(lambda s: model.replace(opt=model.opt.replace(gradient_smoothing=s)))(values)

    def final(m, v0):
        state = jaxsim.make_state(m, v=jnp.concatenate([v0, jnp.zeros(3)]))
        return jaxsim.rollout(m, state, jnp.zeros((40, 0)))[0].q[:3]

    # forward mode: the same implicit rule, a lighter program to compile than reverse mode
    q, jac = jax.jit(jax.vmap(lambda m, v0: (final(m, v0), jax.jacfwd(final, 1)(m, v0)), (0, None)))(
        models, jnp.asarray([0.6, 0.2, -0.3]))
    assert bool(jnp.all(q == q[0]))
    errors = np.asarray(jnp.max(jnp.abs(jac[1:] - jac[0]), (1, 2)))
    assert np.all(np.isfinite(jac)) and errors[0] > 1e-4, errors
    assert errors[2] < 0.1 * errors[0], errors


@pytest.mark.parametrize("options", [dict(gradient_smoothing=-0.1), dict(gradient_smoothing=0.1, adjoint="unrolled"),
                                     dict(gradient_smoothing=0.1, contact="cone", solver="nakaoka"),
                                     dict(gradient_smoothing=0.1, contact="springhead")])
def test_gradient_smoothing_without_an_implicit_solve_is_refused(options):
    with pytest.raises(ModelError, match="gradient_smoothing"):
        ModelBuilder(**options)
