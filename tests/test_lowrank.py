"""The QP's Newton steps through H's low-rank factors (jaxsim/solver/lowrank.py and
``qp.QP(factors=)``): the Woodbury solve against the dense Newton system, and solves
with factors against the same problems solved without them."""

import numpy as np
import jax
import jax.numpy as jnp

from jaxsim.solver import lowrank, qp as Q


def contact_problem(rng, m=4, nr=2, nv=6, relaxation=1e-3):
    """``m`` friction cones and ``nr`` bounded rows on ``nv`` dof: ``H = J M^-1 J^T + C``
    (rank ``nv`` of ``3 m + nr`` plus a relaxation ``C`` of ``relaxation`` times H's
    mean diagonal, twice as large on the tangents), approaching contacts on average;
    returns the QP with and without its factors ``(J, J M^-1)``."""
    n = 3 * m + nr
    J = rng.standard_normal((n, nv))
    minv = rng.uniform(0.02, 2.0, nv)  # masses spread 100x
    A = J @ np.diag(minv) @ J.T
    c = relaxation * np.mean(np.diag(A)) * np.r_[np.tile([1.0, 2.0, 2.0], m), np.ones(nr)]
    g = rng.standard_normal(n)
    g[:3 * m:3] -= 1.0
    lower = np.r_[np.zeros(3 * m), -rng.uniform(0.1, 1.0, nr)]
    upper = np.r_[np.zeros(3 * m), rng.uniform(0.1, 1.0, nr)]
    plain = Q.QP(*(jnp.asarray(a) for a in (A + np.diag(c), g, lower, upper, rng.uniform(0.2, 1.0, m))))
    return plain, plain._replace(factors=(jnp.asarray(J), jnp.asarray(J * minv)))


def test_woodbury_solve_equals_the_dense_newton_system():
    """``newton_system_solve``, with factors ``U W^T`` and ``U U^T``, against ``(I - D
    + eta D H) dx = p`` with ``D`` the projection's Jacobian by automatic
    differentiation, at random points where cones are inside, on the surface and in
    the polar cone, and rows free and at bounds."""
    rng = np.random.default_rng(0)
    cases = [contact_problem(rng)[1] for _ in range(6)]
    batch = jax.tree.map(lambda *a: jnp.stack(a), *cases)
    x, p = (jnp.asarray(rng.standard_normal((6, 14))) for _ in range(2))

    def residual(problem, x, p):
        U, W = problem.factors
        eta = Q._block_steps(problem.H, (3, 4), 4)
        z = x - eta * (problem.H @ x + problem.g)
        Vc, dc = Q.cone_jacobian_eig(z[:12].reshape(4, 3), problem.mu)
        d = jnp.concatenate([dc.reshape(-1), Q._free(problem, z)])
        c = jnp.diagonal(problem.H) - jnp.sum(U * W, -1)
        dx = lowrank.newton_system_solve(Vc, d, eta, c, U, W, p, jnp.zeros(()))
        # the symmetric form U U^T (W None: a Cholesky instead of an LU)
        dx_sym = lowrank.newton_system_solve(Vc, d, eta, c, U * jnp.sqrt(W[0] / U[0]), None, p, jnp.zeros(()))
        D = jax.jacfwd(lambda z_: Q.project(z_, problem.lower, problem.upper, problem.mu))(z)
        system = jnp.eye(14) - D + D @ (eta[:, None] * problem.H)
        return jnp.stack([jnp.max(jnp.abs(system @ y - p)) for y in (dx, dx_sym)]) / jnp.max(jnp.abs(p)), d

    res, d = jax.jit(jax.vmap(residual))(batch, x, p)
    d = np.asarray(d)
    assert np.any(d == 0.0) and np.any(d == 1.0) and np.any((d > 0) & (d < 1))  # every branch
    assert float(res.max()) < 1e-9


def test_factors_give_the_same_solution_and_gradient_in_fewer_iterations():
    """16 rank-deficient contact problems, each solved to 1e-10 from the solution of a
    neighbour (its free velocity ``g`` 5 % away, as the step before gives a warm
    start), with and without their factors: both stop below the cap at a natural-map
    residual (recomputed here in the solver's scaled variables) under 1e-8, the
    solutions agree, the Newton steps cut the median problem's iterations at least
    threefold, and the implicit gradients with respect to J (through H and the
    factors) agree."""
    rng = np.random.default_rng(3)
    problems = [contact_problem(rng) for _ in range(16)]
    plain, factored = (jax.tree.map(lambda *a: jnp.stack(a), *ps) for ps in zip(*problems))
    n = plain.g.shape[-1]

    def solve(problem, x0):
        return Q.solve(problem, x0, 1e-10, max_iter=3000, block=(3, 4))

    # one problem after another: the test is about the factors, and a vmap of 16
    # would compile the solver's loop in five compacting stages
    batched = jax.jit(lambda p, x0: jax.lax.map(lambda a: solve(*a), (p, x0)))
    shifted = plain.g * (1.0 + 0.05 * jnp.asarray(rng.standard_normal(plain.g.shape)))
    x_prev, _ = batched(plain._replace(g=shifted), jnp.zeros_like(plain.g))
    (x0, s0), (x1, s1) = (batched(p, x_prev) for p in (plain, factored))
    for i in range(16):
        p = jax.tree.map(lambda a: a[i], plain)
        sp, s = Q._scaled(p, (3, 4))
        z = np.asarray(x1[i]) / np.asarray(s)
        r = z - np.asarray(Q.project(jnp.asarray(z - (np.asarray(sp.H) @ z + sp.g)), sp.lower, sp.upper, sp.mu))
        assert np.abs(r).max() <= 1e-8 * np.abs(z).max()
    np.testing.assert_allclose(x1, x0, atol=1e-6 * float(jnp.abs(x0).max()))  # H's condition: about 1e4
    assert int(s0.iterations.max()) < 3000 and int(s1.iterations.max()) < 3000
    # per problem, not summed: one or two slow problems of either kind would decide a
    # sum (seeds 0-7 of this generator: the medians 4x-26x apart, the sums 1.7x-5.7x)
    without, with_factors = np.asarray(s0.iterations), np.asarray(s1.iterations)
    print("iterations without / with factors:", sorted(without.tolist()), sorted(with_factors.tolist()))
    assert 3 * np.median(with_factors) < np.median(without)

    p_plain = jax.tree.map(lambda a: a[0], plain)
    J, JM = (f[0] for f in factored.factors)
    minv = JM[0] / J[0]  # the diagonal M^-1 (J's entries are nonzero)
    relaxation = p_plain.H - J @ JM.T
    weights = jnp.arange(1.0, n + 1)

    def loss(J, with_factors):
        problem = p_plain._replace(H=J @ (J * minv).T + relaxation, factors=(J, J * minv) if with_factors else None)
        return jnp.sum(solve(problem, x_prev[0])[0] * weights)

    grads = [jax.jit(jax.grad(loss), static_argnums=1)(J, f) for f in (False, True)]
    # the solutions agree to the tolerance, their gradients to about H's condition times it
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-4 * float(jnp.abs(grads[0]).max()))
