"""The projected-gradient QP solver (jaxsim/solver/qp.py): solutions against SciPy and
the KKT conditions, cone projection against its definition, implicit gradients against
finite differences and against the unrolled iteration, jit / vmap / float32."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from jax.test_util import check_grads
from scipy.optimize import minimize

from jaxsim.solver import qp as Q


def random_problem(rng, n, ncone=0, cond=50.0):
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    H = u @ np.diag(np.geomspace(1.0, cond, n)) @ u.T
    g = rng.standard_normal(n) * 3
    lower = np.where(rng.random(n) < 0.5, 0.0, -np.inf)
    upper = np.where(rng.random(n) < 0.3, 0.5, np.inf)
    mu = rng.uniform(0.2, 1.0, ncone)
    return Q.QP(*(jnp.asarray(a) for a in (H, g, lower, upper, mu)))


solve = jax.jit(Q.solve, static_argnames=("max_iter", "block", "adjoint"))


def scipy_solution(p):
    H, g = np.asarray(p.H), np.asarray(p.g)
    n, ncone = len(g), len(p.mu)

    def cone(x, i):  # mu x_n - |x_t| >= 0
        return float(p.mu[i]) * x[3 * i] - np.linalg.norm(x[3 * i + 1:3 * i + 3])

    def cone_jac(x, i):  # its gradient: SLSQP's own finite differences cost seconds
        d = np.zeros(n)
        d[3 * i] = float(p.mu[i])
        d[3 * i + 1:3 * i + 3] = -x[3 * i + 1:3 * i + 3] / max(np.linalg.norm(x[3 * i + 1:3 * i + 3]), 1e-300)
        return d

    cons = [{"type": "ineq", "fun": cone, "jac": cone_jac, "args": (i,)} for i in range(ncone)]
    bounds = [(None if not np.isfinite(lo) else lo, None if not np.isfinite(up) else up)
              for lo, up in zip(np.asarray(p.lower), np.asarray(p.upper))]
    for i in range(3 * ncone):
        bounds[i] = (0.0, None) if i % 3 == 0 else (None, None)
    r = minimize(lambda x: 0.5 * x @ H @ x + g @ x, np.zeros(n), jac=lambda x: H @ x + g,
                 bounds=bounds, constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    return r.x


@pytest.mark.parametrize("ncone, block", [(0, 1), (3, 3), (3, 1)])
def test_matches_scipy(ncone, block):
    """Against SLSQP; with cones, for both Jacobi blockings (``block=1`` scales a cone's
    normal apart from its tangents, and the scaled problem's cone must follow)."""
    rng = np.random.default_rng(ncone)
    for _ in range(3):
        p = random_problem(rng, 12, ncone)
        x, stats = solve(p, jnp.zeros(12), 1e-12, max_iter=20000, block=block)
        # SLSQP may violate the cone constraints by ~1e-8: compare with its projection
        ref = np.asarray(Q.project(jnp.asarray(scipy_solution(p)), p.lower, p.upper, p.mu))
        f = lambda z: 0.5 * z @ np.asarray(p.H) @ z + np.asarray(p.g) @ z  # noqa: E731
        assert int(stats.iterations) < 20000 and float(stats.residual) <= 1e-12
        assert f(np.asarray(x)) <= f(ref) + 1e-12
        np.testing.assert_allclose(x, ref, atol=5e-5)



def test_a_row_lighter_than_float32_rounding_of_the_heaviest_is_scaled_too():
    """A heavy contact (a light finger link: diagonal up to 6,400) and, on the same
    dof, a half-line row 4e8 times lighter, under float32's ``eps`` times the largest
    diagonal. Left unscaled its step would be ``1 / L_max`` of what it needs (500
    iterations without converging); with the diagonal floored instead, the float32
    solve converges to SLSQP's solution."""
    rng = np.random.default_rng(3)
    J = np.vstack([20.0 * rng.standard_normal((3, 6)), 2e-3 * rng.standard_normal((1, 6)),
                   rng.standard_normal((2, 6))])
    H = J @ J.T + 1e-6 * np.eye(6)
    g = np.concatenate([[2.0, 0.3, -0.2, -5e-3], rng.standard_normal(2)])
    lower, upper = np.array([0.0, 0.0, 0.0, 0.0, -np.inf, 0.0]), np.full(6, np.inf)
    assert H[3, 3] < np.finfo(np.float32).eps * H.max()
    p64 = Q.QP(*(jnp.asarray(a) for a in (H, g, lower, upper, np.array([0.8]))))
    ref = np.asarray(Q.project(jnp.asarray(scipy_solution(p64)), p64.lower, p64.upper, p64.mu))
    p32 = jax.tree.map(lambda a: a.astype(jnp.float32), p64)
    x, stats = solve(p32, jnp.zeros(6, jnp.float32), 1e-6, max_iter=500, block=1)
    assert int(stats.iterations) < 500 and float(stats.residual) <= 1e-6
    np.testing.assert_allclose(x, ref, rtol=1e-3, atol=1e-5)

def test_kkt_box():
    """Box QP: the gradient vanishes on free variables and points inward at bounds."""
    rng = np.random.default_rng(5)
    p = random_problem(rng, 30, cond=1e3)
    x, _ = solve(p, jnp.zeros(30), 1e-13, max_iter=50000)
    x, grad = np.asarray(x), np.asarray(p.H @ x + p.g)
    lo, up = np.asarray(p.lower), np.asarray(p.upper)
    free = (x > lo + 1e-9) & (x < up - 1e-9)
    assert np.max(np.abs(grad[free])) < 1e-7
    assert np.all(grad[np.isclose(x, lo)] > -1e-7) and np.all(grad[np.isclose(x, up)] < 1e-7)


def test_cone_projection_definition():
    rng = np.random.default_rng(1)
    for _ in range(200):
        x, mu = rng.standard_normal(3) * 2, rng.uniform(0.1, 2.0)
        p = np.asarray(Q.project_cone(jnp.asarray(x), jnp.asarray(mu)))
        assert np.linalg.norm(p[1:]) <= mu * p[0] + 1e-12
        # the projection's optimality: (x - p) is in the polar cone and orthogonal to p
        r = x - p
        assert abs(r @ p) < 1e-10
        for _ in range(20):  # no feasible point is closer
            n = abs(rng.standard_normal()) * 3
            t = rng.standard_normal(2)
            t = t / np.linalg.norm(t) * mu * n * rng.random()
            assert np.linalg.norm(x - np.r_[n, t]) >= np.linalg.norm(r) - 1e-12


def test_warm_start_from_solution_stops_at_once():
    rng = np.random.default_rng(2)
    p = random_problem(rng, 12, 2)
    x, s1 = solve(p, jnp.zeros(12), 1e-10, max_iter=20000, block=3)
    _, s2 = solve(p, x, 1e-10, max_iter=20000, block=3)
    assert int(s2.iterations) <= 2 < int(s1.iterations)


def test_warm_start_moved_along_its_ray():
    rng = np.random.default_rng(5)
    p = random_problem(rng, 12, 2)._replace(upper=jnp.full(12, jnp.inf))  # cones and half-lines through 0
    x, _ = solve(p, jnp.zeros(12), 1e-12, max_iter=20000, block=3)
    for scale in (0.3, 3.4):  # the solution at the wrong size is put back on it, and the solve stops at once
        np.testing.assert_allclose(Q.along_ray(p, scale * x), x, rtol=1e-8, atol=1e-12)
        _, stats = solve(p, scale * x, 1e-10, max_iter=20000, block=3)
        assert int(stats.iterations) <= 2
    H, g = np.asarray(p.H), np.asarray(p.g)
    z = np.asarray(Q.project(jnp.asarray(rng.standard_normal(12)), p.lower, p.upper, p.mu))  # any feasible start
    y = np.asarray(Q.along_ray(p, jnp.asarray(z)))
    rays = np.linspace(0.0, 20.0, 40001)[:, None] * z  # its least objective on the ray, by brute force
    brute = np.min(0.5 * np.einsum("ri,ij,rj->r", rays, H, rays) + rays @ g)
    assert 0.5 * y @ H @ y + g @ y <= brute + 1e-12
    assert np.allclose(y, (y @ z) / (z @ z) * z)  # on the ray


def test_cold_start_lands_a_flat_box_at_once():
    """A 0.1 m, 0.5 kg box landing flat at 0.1 m/s on its four bottom corners: by
    symmetry each corner takes the same normal impulse and no friction, the least
    of the objective along (1, 0, 0) x 4. With no warm start the steepest descent
    direction is that ray, so the first iterate is the solution."""
    h, m = 0.05, 0.5
    inertia = m * (2 * h) ** 2 / 6
    M_inv = np.diag([1 / m] * 3 + [1 / inertia] * 3)
    rows = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            p = np.array([sx * h, sy * h, -h])
            skew = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
            point = np.hstack([np.eye(3), -skew])  # the corner's velocity from (v, w)
            rows += [point[2], point[0], point[1]]  # normal, then the two tangents
    J = np.array(rows)
    A = J @ M_inv @ J.T + 1e-3 * np.eye(12)
    g = J @ np.array([0.0, 0.0, -0.1, 0.0, 0.0, 0.0])
    problem = Q.QP(jnp.asarray(A), jnp.asarray(g), jnp.zeros(12), jnp.full(12, jnp.inf), jnp.full(4, 0.5))
    x, stats = solve(problem, jnp.zeros(12), 1e-10, max_iter=200, block=(3, 4))
    normal = np.tile([1.0, 0.0, 0.0], 4)
    expected = -(g @ normal) / (normal @ A @ normal) * normal
    assert int(stats.iterations) == 1
    np.testing.assert_allclose(x, expected, rtol=1e-10, atol=1e-14)


def loss_fn(adjoint, max_iter):
    def loss(H_half, g, lower, upper, mu):
        H = H_half @ H_half.T + 0.5 * jnp.eye(H_half.shape[0])
        x, _ = Q.solve(Q.QP(H, g, lower, upper, mu), jnp.zeros_like(g), 1e-14, max_iter=max_iter,
                       block=3, adjoint=adjoint)
        return jnp.sum(jnp.sin(x) * jnp.arange(1, g.shape[0] + 1))
    return loss


def test_implicit_gradients_against_finite_differences_and_unrolled():
    rng = np.random.default_rng(3)
    n = 9
    args = (jnp.asarray(rng.standard_normal((n, n)) * 0.5), jnp.asarray(rng.standard_normal(n)),
            jnp.asarray(np.r_[np.zeros(6), -np.inf * np.ones(3)]), jnp.asarray(np.r_[np.full(6, np.inf), [0.3, np.inf, np.inf]]),
            jnp.asarray([0.6]))
    implicit = jax.jit(loss_fn("implicit", 100000))
    check_grads(lambda H_half, g: implicit(H_half, g, *args[2:]), args[:2], order=1, modes=("fwd", "rev"),
                atol=1e-5, rtol=1e-5)
    g_imp = jax.jit(jax.grad(loss_fn("implicit", 100000), argnums=(0, 1, 3, 4)))(*args)
    g_unr = jax.jit(jax.grad(loss_fn("unrolled", 4000), argnums=(0, 1, 3, 4)))(*args)
    for a, b in zip(g_imp, g_unr):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # friction coefficient and bound: central differences
    f = jax.jit(loss_fn("implicit", 100000))
    for k, idx in ((4, 0), (3, 6)):
        h = 1e-6
        up = [a for a in args]
        dn = [a for a in args]
        up[k] = args[k].at[idx].add(h)
        dn[k] = args[k].at[idx].add(-h)
        fd = (f(*up) - f(*dn)) / (2 * h)
        np.testing.assert_allclose(g_imp[2 if k == 3 else 3][idx], fd, rtol=1e-5, atol=1e-8)


def test_vmap_float32():
    rng = np.random.default_rng(4)
    ps = [random_problem(rng, 9, 1) for _ in range(4)]
    batch = jax.tree.map(lambda *a: jnp.stack(a), *ps)
    xs, st = jax.jit(jax.vmap(lambda p: Q.solve(p, jnp.zeros(9), 1e-12, max_iter=20000, block=3)))(batch)
    for i, p in enumerate(ps):
        x, _ = solve(p, jnp.zeros(9), 1e-12, max_iter=20000, block=3)
        np.testing.assert_allclose(xs[i], x, atol=1e-9)
        p32 = jax.tree.map(lambda a: a.astype(jnp.float32), p)
        x32, s32 = solve(p32, jnp.zeros(9, jnp.float32), 1e-6, max_iter=20000, block=3)
        assert x32.dtype == jnp.float32
        np.testing.assert_allclose(x32, x, atol=1e-3)


def test_skip_runs_no_iteration_for_the_skipped_envs_of_a_batch():
    """``skip`` (a ``lax.cond`` predicate under vmap): skipped envs run no iteration, the
    others solve exactly as alone, and the batch runs as long as its slowest kept env."""
    rng = np.random.default_rng(5)
    ps = [random_problem(rng, 6, 1) for _ in range(4)]
    batch = jax.tree.map(lambda *a: jnp.stack(a), *ps)
    skip = jnp.array([True, False, True, False])
    xs, st = jax.jit(jax.vmap(lambda p, k: Q.solve(p, jnp.zeros(6), 1e-10, max_iter=5000, block=3, skip=k)))(
        batch, skip)
    np.testing.assert_array_equal(np.asarray(st.iterations)[[0, 2]], 0)
    for i in (1, 3):
        x, s_ = solve(ps[i], jnp.zeros(6), 1e-10, max_iter=5000, block=3)
        assert int(st.iterations[i]) == int(s_.iterations) > 0
        np.testing.assert_allclose(xs[i], x, atol=1e-12)


def test_friction_box_projection_is_the_nearest_feasible_point():
    """project_box against the variational inequality of a projection: for its output
    p of x and every feasible y, (x - p) . (y - p) <= 0 (checked on random points)."""
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(400, 3)) * 2.0)
    mu = jnp.asarray(rng.uniform(0.0, 1.5, 400))
    p = np.asarray(Q.project_box(x, mu))
    mu_ = np.asarray(mu)
    assert np.all(p[:, 0] >= -1e-12) and np.all(np.abs(p[:, 1:]) <= mu_[:, None] * p[:, :1] + 1e-12)
    y_n = rng.uniform(0, 3, (400, 50))
    y = np.stack([y_n, *(mu_[:, None] * y_n * rng.uniform(-1, 1, (400, 50)) for _ in range(2))], -1)
    vi = np.einsum("bi,bki->bk", np.asarray(x) - p, y - p[:, None, :])
    assert vi.max() <= 1e-9
    inside = np.asarray(Q.project_box(jnp.asarray(y[:, 0]), mu))
    np.testing.assert_allclose(inside, y[:, 0], atol=1e-12)  # feasible points stay


def test_compliance_equals_a_larger_diagonal():
    rng = np.random.default_rng(4)
    L = rng.normal(size=(6, 6))
    H, g = jnp.asarray(L @ L.T), jnp.asarray(rng.normal(size=6))
    r = jnp.asarray(rng.uniform(0.1, 1.0, 6))
    lo, up = jnp.zeros(6), jnp.full(6, jnp.inf)

    def compliant(r):  # r as the QP's compliance
        return Q.solve(Q.QP(H, g, lo, up, jnp.zeros(0), r), jnp.zeros(6), 1e-12, max_iter=5000)[0]

    def stiffer(r):  # r added to the Hessian's diagonal
        return Q.solve(Q.QP(H + jnp.diag(r), g, lo, up, jnp.zeros(0)), jnp.zeros(6), 1e-12, max_iter=5000)[0]

    def grad_and_solution(f):  # one jitted program: eager dispatch would compile op by op
        def loss(r):
            x = f(r)
            return jnp.sum(x ** 2), x
        return jax.jit(jax.grad(loss, has_aux=True))(r)

    (da, a), (db, b) = grad_and_solution(compliant), grad_and_solution(stiffer)
    np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(da, db, rtol=1e-6, atol=1e-9)


def test_solvers_called_in_a_loop_compile_once():
    """``qp.solve`` and ``friction.solve`` called outside ``jit`` on new problems of the
    same size run the program compiled for the first one (no compile per call)."""
    from conftest import count_compiles
    from jaxsim.solver import friction

    rng = np.random.default_rng(3)
    problems = [random_problem(rng, 9, ncone=2) for _ in range(3)]
    calls = [lambda p: Q.solve(p, jnp.zeros(9), 1e-8)]
    calls += [lambda p, m=m: friction.solve(p.H, p.g, p.mu, m, max_iter=20, lower=p.lower[6:], upper=p.upper[6:])
              for m in friction.METHODS]
    for call in calls:
        jax.block_until_ready(call(problems[0]))
        with count_compiles() as compiled:
            for p in problems[1:]:
                jax.block_until_ready(call(p))
        assert not compiled, f"{len(compiled)} compiles in 2 calls"


def test_rank_deficient_contact_problems_stop_at_a_small_natural_map_residual():
    """Problems shaped like a body's resting contacts: four friction cones on 6 dof (W =
    J M^-1 J^T of rank 6 of 12, masses spread 100x) plus a relaxation of 1e-3 of W's
    mean diagonal, the slow case for a first-order method. Solved from zero to
    ``tol`` = 1e-10, each stops before the cap, and the natural-map residual
    ``||z - P(z - (H z + g))||_inf / ||z||_inf``, recomputed here in the solver's
    Jacobi-scaled variables, is below 1e-8 (measured: at most 7.5e-10, in 65-1,111
    iterations)."""
    rng = np.random.default_rng(0)
    m, nv, n = 4, 6, 12
    problems = []
    for _ in range(16):
        J = rng.standard_normal((3 * m, nv))
        W = J @ np.diag(rng.uniform(0.5, 50.0, nv)) @ J.T
        W += 1e-3 * np.mean(np.diag(W)) * np.eye(n)
        g = rng.standard_normal(n)
        g[::3] -= 1.0  # approaching on average
        problems.append((W, g, rng.uniform(0.2, 1.0, m)))
    H, g, mu = (jnp.asarray(np.stack(a)) for a in zip(*problems))
    lower, upper = jnp.zeros(n), jnp.full(n, jnp.inf)

    def solve(H, g, mu):
        x, stats = Q.solve(Q.QP(H, g, lower, upper, mu), jnp.zeros(n), 1e-10, max_iter=3000, block=(3, m))
        return x, stats.iterations

    x, iterations = jax.jit(jax.vmap(solve))(H, g, mu)
    for Hi, gi, mui, xi in zip(H, g, mu, x):
        sp, s = Q._scaled(Q.QP(Hi, gi, lower, upper, mui), (3, m))
        z = np.asarray(xi) / np.asarray(s)
        r = z - np.asarray(Q.project(jnp.asarray(z - (np.asarray(sp.H) @ z + sp.g)), sp.lower, sp.upper, sp.mu))
        assert np.abs(r).max() <= 1e-8 * np.abs(z).max()
    assert int(iterations.max()) < 3000


def stiff_row_problem(rng, m=4, nv=6):
    """Contacts and servos on one body: ``H = J M^-1 J^T + R`` with ``m`` cones, one
    unbounded row per dof whose compliance is 1e-4 of its inverse mass (a stiff servo
    at a large step) and a relaxation of 1e-3 on the contacts."""
    rows = nv
    J = rng.standard_normal((3 * m + rows, nv))
    H = J @ np.diag(rng.uniform(0.5, 5.0, nv)) @ J.T
    d = np.diag(H)
    H += np.diag(np.r_[1e-3 * d[:3 * m], 1e-4 * d[3 * m:]])
    g = rng.standard_normal(3 * m + rows)
    g[:3 * m:3] -= 1.0
    lower = np.r_[np.zeros(3 * m), np.full(rows, -np.inf)]
    upper = np.full(3 * m + rows, np.inf)
    return Q.QP(*(jnp.asarray(a) for a in (H, g, lower, upper, rng.uniform(0.3, 1.0, m))))


def test_eliminated_rows_give_the_same_solution_and_gradient_in_fewer_iterations():
    """``eliminate=``: the rows solved exactly by elimination, the cones iterated on. The
    natural-map residual of the whole solution (recomputed here), the full solve's
    solution and its implicit gradient (also against finite differences) agree, and the
    iterations drop, since the stiff rows set H's largest eigenvalues. With bounds on
    those rows (``check_bounds``) the solution is still the full solve's."""
    rng = np.random.default_rng(7)
    p = stiff_row_problem(rng)
    n, free = p.g.shape[0], tuple(range(12, 18))

    def run(g, free_):
        return Q.solve(p._replace(g=g), jnp.zeros(n), 1e-12, max_iter=100_000, block=(3, 4), eliminate=free_)

    (x_full, s_full), (x_free, s_free) = (jax.jit(run, static_argnums=1)(p.g, f) for f in ((), free))
    H, g = np.asarray(p.H), np.asarray(p.g)
    z = np.asarray(x_free)
    r = z - np.asarray(Q.project(jnp.asarray(z - (H @ z + g) / np.diag(H).max()), p.lower, p.upper, p.mu))
    assert np.abs(r).max() <= 1e-9 * np.abs(z).max()
    np.testing.assert_allclose(x_free, x_full, atol=1e-7 * np.abs(z).max())  # H's condition: about 1e6
    assert 5 * int(s_free.iterations) < int(s_full.iterations)  # measured: 75-261 against 2,993-4,412

    weights = jnp.arange(1.0, n + 1)
    loss = lambda g, f: jnp.sum(run(g, f)[0] * weights)  # noqa: E731
    grads = [jax.jit(jax.grad(loss), static_argnums=1)(p.g, f) for f in ((), free)]
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-6 * np.abs(grads[0]).max())
    check_grads(lambda g: loss(g, free), (p.g,), order=1, modes=("rev",), atol=1e-5, rtol=1e-5)

    # bounds on the eliminated rows: checked after; loose ones change nothing, tight
    # ones send the solve on over all variables, to the full solve's solution
    rows = np.abs(np.asarray(x_full)[12:]).max()
    for bound, fallback in ((2.0 * rows, False), (0.5 * rows, True)):
        bounded = p._replace(lower=p.lower.at[12:].set(-bound), upper=p.upper.at[12:].set(bound))
        x_ref, _ = Q.solve(bounded, jnp.zeros(n), 1e-12, max_iter=100_000, block=(3, 4))
        x_b, s_b = Q.solve(bounded, jnp.zeros(n), 1e-12, max_iter=100_000, block=(3, 4), eliminate=free,
                           check_bounds=True)
        np.testing.assert_allclose(x_b, x_ref, atol=1e-7 * np.abs(z).max())
        assert (int(s_b.iterations) > int(s_free.iterations)) == fallback
    with pytest.raises(ValueError, match="eliminate must name"):
        Q.solve(p, jnp.zeros(n), 1e-8, block=(3, 4), eliminate=(2,))


def test_newton_steps_go_on_past_a_step_that_raises_the_residual():
    """A contact QP captured from the ant (float32 data, solved here in float64): 16
    contact cones and 8 joint-limit rows on 14 dof, four feet sliding near their
    cones' surfaces, H = a compliance diagonal + U U^T. From its warm start the
    second Newton step raises the gradient-mapping residual by 0.4 % and the next
    three bring it from 2.4e-3 to 1e-12. With up to 8 Newton steps the solve meets
    1e-10 in at most 6 iterations (a rule that stops at the first step raising the
    residual leaves this one to the projected gradient); the natural-map residual,
    recomputed here in the solver's scaled variables, is below 1e-9; the default 2
    steps end at the same point in more iterations."""
    import os
    data = np.load(os.path.join(os.path.dirname(__file__), "data", "ant_sliding_feet_qp.npz"))
    H, g, lower, upper, mu, x0, U = (jnp.asarray(data[k], jnp.float64)
                                     for k in ("H", "g", "lower", "upper", "mu", "x0", "U"))
    problem, block = Q.QP(H, g, lower, upper, mu, factors=(U, None)), (3, 16)
    x8, st8 = Q.solve(problem, x0, 1e-10, max_iter=500, block=block, newton_steps=8)
    x2, st2 = Q.solve(problem, x0, 1e-10, max_iter=500, block=block)
    assert int(st8.iterations) <= 6 < int(st2.iterations), (int(st8.iterations), int(st2.iterations))
    sp, s = Q._scaled(Q.QP(H, g, lower, upper, mu), block)
    z = np.asarray(x8) / np.asarray(s)
    r = z - np.asarray(Q.project(jnp.asarray(z - (np.asarray(sp.H) @ z + sp.g)), sp.lower, sp.upper, sp.mu))
    assert np.abs(r).max() <= 1e-9 * np.abs(z).max()
    np.testing.assert_allclose(np.asarray(x2), np.asarray(x8), rtol=0, atol=1e-7 * np.abs(np.asarray(x8)).max())
    with pytest.raises(ValueError, match="newton_steps must be >= 0"):
        Q.solve(problem, x0, 1e-10, block=block, newton_steps=-1)
