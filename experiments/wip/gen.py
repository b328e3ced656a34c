import numpy as np
M = 8
def skew(p):
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
def problem(seed):
    """Contacts of 1-3 stacked rigid bodies (body 0 on the ground, body k on body k-1)."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, M + 1))
    nb = int(rng.integers(1, 4))
    mass = 10 ** rng.uniform(0, 3, nb)
    Minv = np.zeros((6 * nb, 6 * nb))
    for b in range(nb):
        size = rng.uniform(0.05, 0.5, 3)
        I = mass[b] / 12 * np.array([size[1]**2 + size[2]**2, size[0]**2 + size[2]**2, size[0]**2 + size[1]**2])
        Minv[6*b:6*b+3, 6*b:6*b+3] = np.eye(3) / mass[b]
        Minv[6*b+3:6*b+6, 6*b+3:6*b+6] = np.diag(1 / I)
    mu = rng.uniform(0.1, 1.5, m)
    J = np.zeros((3 * m, 6 * nb))
    for k in range(m):
        b = int(rng.integers(0, nb))
        tilt = rng.uniform(0, 0.8 * np.arctan(1 / mu[k])); az = rng.uniform(0, 2 * np.pi)
        n = np.array([np.sin(tilt) * np.cos(az), np.sin(tilt) * np.sin(az), np.cos(tilt)])
        t1 = np.cross(n, [1.0, 0, 0]); t1 /= np.linalg.norm(t1); t2 = np.cross(n, t1)
        F = np.stack([n, t1, t2])
        p = rng.uniform(-0.3, 0.3, 3)
        # relative velocity of body b (upper) w.r.t. body b-1 (or ground): linear + omega x p
        rows = lambda body: F @ np.hstack([np.eye(3), -skew(p)])
        J[3*k:3*k+3, 6*b:6*b+6] += rows(b)
        if b > 0:
            J[3*k:3*k+3, 6*(b-1):6*(b-1)+6] -= rows(b - 1)
    W = J @ Minv @ J.T
    v = rng.normal(size=6 * nb) * np.sqrt(np.diag(Minv)) * rng.uniform(0.1, 3)
    q = J @ v
    q[0::3] += rng.normal(size=m) * rng.uniform(0.1, 2) * np.sqrt(np.diag(W)[0::3])
    Wp = np.eye(3 * M); Wp[:3*m, :3*m] = 0.5 * (W + W.T)
    qp_ = np.tile([1.0, 0, 0], M); qp_[:3*m] = q
    mup = np.full(M, 0.5); mup[:m] = mu
    return Wp, qp_, mup, m
