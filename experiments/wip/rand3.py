import jax, jax.numpy as jnp, numpy as np, time, sys
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, "/tmp/fr")
from gen import problem, M
Ws, qs, mus, ms = map(np.array, zip(*[problem(s) for s in range(200)]))
from jaxsim.solver import friction, qp
npass = int(sys.argv[1]); qit = int(sys.argv[2]); nit = int(sys.argv[3])
def init(W, q, mu):
    r = jnp.zeros_like(q); s = jnp.zeros_like(mu)
    for k in range(npass):
        r, _ = qp.solve(qp.QP(W, q.at[0::3].add(s), jnp.zeros(3*M), jnp.zeros(3*M), mu), r, 1e-10, max_iter=qit, block=(3, M))
        u = W @ r + q
        s = mu * jnp.linalg.norm(u.reshape(-1, 3)[:, 1:], axis=-1)
    return r
def run(W, q, mu):
    r0 = init(W, q, mu)
    res0 = friction.residual(W, q, mu, r0)
    r, u, st = friction.solve(W, q, mu, "exact", tol=1e-10, max_iter=nit, r0=r0)
    return res0, st
f = jax.jit(jax.vmap(run))
t = time.time(); res0, st = f(Ws, qs, mus); print("time", time.time() - t)
res = np.asarray(st.residual); its = np.asarray(st.iterations)
print("init res median/max", np.median(res0), res0.max())
print("max res", res.max(), "iters mean/max", its.mean(), its.max(), "bad", np.sum(res > 1e-8), np.flatnonzero(res > 1e-8))
