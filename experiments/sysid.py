"""System identification by gradient: recover physical parameters from noisy
trajectories, with jaxsim and with MuJoCo MJX side by side.

For each case a trajectory is simulated with the true parameters and observed with
Gaussian noise; the parameters are fitted back from a guess perturbed by +-30 %.

Observations, every step: the full generalized positions q (joint encoders and, for
a floating base, its pose) and the world positions of a few body frames. Noise model
(sigma = 0 or 1 mm, independent draws per component and step): frame positions and
a free joint's position get N(0, sigma^2) per axis; hinge and slide coordinates get
N(0, (sigma / 1 m)^2), i.e. 1 mrad (1 mm at a 1 m lever) or 1 mm; a free joint's
quaternion is rotated by a rotation vector drawn from N(0, (sigma / 1 m)^2) per axis.
The residual is predicted minus observed, in units of 1 mm / 1 mrad (rotations as
the rotation vector between the two quaternions).

Method: multiple shooting without continuity constraints. The trajectory is cut into
K segments of L steps (0.25-0.3 s, per case), starting at the second observation;
every segment is simulated from its own initial state, which is an extra unknown: a
tangent offset dq (hinge and slide coordinates add, a free joint's position adds and
its orientation is rotated by a rotation vector, so the quaternion stays normalized)
from the observed q at the segment's first step, and the velocity v. Without noise
they start at the observed q and its backward difference (exact: the step integrates
q' = q + v' dt); with noise, at the value and slope of a local quadratic fit to the
observed q (+-w steps). The physical parameters (as logarithms) are shared by all
segments. Levenberg-Marquardt on the stacked residual: each segment's residual
depends only on its own state and the parameters, so the Jacobian is one
``jax.vmap`` over segments of ``jax.jacfwd`` (tangents: the segment's state
unknowns, 2 nv or fewer, and the parameters; forward mode, since MJX's solver loops are
``while_loop``s), assembled into a block-sparse matrix and solved densely (at most a
few hundred unknowns). Short rollouts keep the residual smooth at the scale of the
fit's steps (long ones through impacts, joint limits and slipping feet are not, and a
single-shooting fit of the whole trajectory from a 30 % guess found no descent). The
horizon grows within the segments (0.2, 0.5, then 1 L); in the shorter stages a
parameter the horizon does not determine (Gauss-Newton standard deviation above 20 %
at 1 mm of noise, e.g. mu_s before the box's breakaway) is held, since the noise alone
would move it.
float64 throughout. The inputs (controls and applied forces) are replayed open loop,
as recorded while the data were generated.

Cases:

  a  box    A 0.1 m, 0.5 kg box thrown onto the floor (1 m/s forward, 2 rad/s spin,
            from 0.2 m), then pushed through its centre by a *known* force
            (``qfrc_applied``): zero until t = 0.5 s, a ramp at 25 N/s up to 7 N, held
            until t = 0.9 s, then released so that it slides to a stop. Fitted:
            mu_s, mu_k (``geom_friction[box, 0:2]``) and the mass (``body_mass``).
            The landing and the free slides decelerate at mu_k g (mass-free); the
            known force's acceleration F/m - mu_k g gives the mass; the ramp crosses
            breakaway: the box leaves when F = mu_s m g, and it is held on the static
            cone until it reaches the contact model's slip speed (1 cm/s). The switch
            to mu_k happens at a step boundary, so the rollout is piecewise smooth in
            mu_s (one step earlier or later changes the later speed by
            (mu_s - mu_k) g dt); segments bound how far such a jump propagates, and
            ``--box-dt`` sets the timestep (default 1 ms; 0.5 ms halves the jump).
            The floor's own friction is 0 so that the pair's friction is the box's.
            Observed: the box's pose (q). 6 segments of 0.25 s.
  b  arm    gymnasium's ``pusher.xml`` (7-dof arm, zero gravity, dt 10 ms). The data
            are generated under a joint PD controller (torques clipped to the file's
            +-2 N m ctrlrange) that tracks a reference lowering the hand below the
            table's surface and sweeping it sideways, plus smooth random torques; the
            applied torques are recorded and replayed. The hand is pressed onto the
            table and slides on it (the log counts the steps with hand-table and
            hand-object contact force, and the steps within 1 mrad of a joint limit).
            Fitted: the masses of the upper arm, the forearm and the hand
            (``body_mass``) and the damping of the shoulder pan, shoulder lift and
            elbow joints (``dof_damping``). Observed: q (arm and object) and the
            elbow, wrist, fingertip and object frames. 10 segments of 0.25 s.
  c  quad   the implicit-PD quadruped (``jaxsim.scenes.quadruped``, implicit servos,
            dt 10 ms) standing for 0.3 s, then walking (``quadruped.gait_ctrl``, a
            larger and faster stride than the default) on a slippery floor. Fitted:
            the trunk's mass (the front and rear trunk bodies, one parameter each) and
            the hooves' friction (one coefficient, mu_s = mu_k, on the four hoof
            geoms; the floor's is 0 so the hoof's governs). Observed: q (base pose
            and 50 joint coordinates), both trunk bodies and the four hooves. The log
            prints how far the hooves slid while down (a sticking hoof carries no
            friction information). 4 segments of 0.3 s; in the shorter stages
            only the base's 6 dofs have state unknowns (12 of the 112: the
            Jacobian's cost grows with them), in the last one all dofs.

MJX: the same fits, with the same segments and the same optimizer, through
``mjx.step`` on the MuJoCo model of the same scene (the box as an MJCF string built
to match, the arm from the same XML, the quadruped from
``jaxsim/assets/quadruped.xml`` at dt 10 ms); a segment's state goes to ``qpos`` and
``qvel`` (same layout and conventions as jaxsim: body-frame angular velocity of a
free joint), frames come from ``mjx.kinematics`` of the predicted ``qpos``. MJX
generates its own data with the same true values, controller and noise draws (each
simulator identifies itself). MuJoCo's friction is one sliding coefficient: for the
box MJX fits (mu, mass) with mu = the true mu_k. MJX's segments are mapped one after
the other (``lax.map``; see ``MjxSim``). Each fit prints its Jacobian at the
initial guess (segment states at their initial estimates) against central finite
differences of the same segmented rollout (cosine and norm ratio per parameter).

Run from the repository root:

    python experiments/sysid.py [--cases a b c] [--sides jaxsim mjx] [--quick] [--box-dt 5e-4]

``--quick`` caps the iterations (a smoke run). Writes experiments/results/sysid.json
and experiments/results/sysid_log.txt and prints the table.
"""

from __future__ import annotations

from jaxsim.xla_flags import use_fast_cpu_compile

use_fast_cpu_compile()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxsim  # noqa: E402
from jaxsim import ModelBuilder, math, quadruped, scenes  # noqa: E402
from jaxsim.integrator import integrate_positions  # noqa: E402
from jaxsim.io import load_mjcf  # noqa: E402
from jaxsim.kinematics import forward_kinematics  # noqa: E402
from jaxsim.types import JointType  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
NOISE = (0.0, 1e-3)  # m (and rad per m of lever): standard deviation of the observation noise
PERTURB = 0.3  # initial guess: true * (1 +- 0.3), alternating sign
UNIT = 1e-3  # residual unit: 1 mm / 1 mrad
DQ_UNIT, DV_UNIT = 1e-3, 1e-2  # scaling of the segment-state unknowns (m or rad; m/s or rad/s)
LOG: list[str] = []


def log(*args) -> None:
    line = " ".join(str(a) for a in args)
    print(line, flush=True)
    LOG.append(line)


# ------------------------------------------------------------------ configuration space

class Layout:
    """Index sets of q and v by joint kind (from the jaxsim model; MuJoCo's layout of
    the same scene is the same, checked where used)."""

    def __init__(self, model):
        topo = model.topo
        types = np.asarray(topo.jnt_type, int)
        qadr, dadr = np.asarray(topo.jnt_qposadr, int), np.asarray(topo.jnt_dofadr, int)
        self.model, self.nq, self.nv = model, model.nq, model.nv
        lin = types == int(JointType.HINGE)
        lin |= types == int(JointType.SLIDE)
        self.lin_q, self.lin_v = qadr[lin], dadr[lin]
        free, ball = types == int(JointType.FREE), types == int(JointType.BALL)
        self.pos_q = (qadr[free][:, None] + np.arange(3)).reshape(-1)
        self.quat_q = np.concatenate([qadr[free][:, None] + 3 + np.arange(4),
                                      qadr[ball][:, None] + np.arange(4)]).reshape(-1, 4)

    def retract(self, q, dq):
        """q moved by the tangent offset dq (nv,): quaternions by body-frame rotation vectors."""
        return integrate_positions(self.model, q, dq, 1.0)

    def residual(self, q_pred, q_obs):
        """Per time step (nq-ish,) in m / rad: coordinates, free positions, rotation vectors."""
        rot = math.quat_diff_rotvec(q_pred[..., self.quat_q], q_obs[..., self.quat_q])
        return jnp.concatenate([q_pred[..., self.lin_q] - q_obs[..., self.lin_q],
                                q_pred[..., self.pos_q] - q_obs[..., self.pos_q],
                                rot.reshape(rot.shape[:-2] + (-1,))], -1)

    def tangent(self, q, qref):
        """The offset dq (nv,) with retract(qref, dq) = q (numpy, for the velocity estimate)."""
        d = np.zeros(q.shape[:-1] + (self.nv,))
        qj, qr = jnp.asarray(q), jnp.asarray(qref)
        topo = self.model.topo
        types = np.asarray(topo.jnt_type, int)
        qadr, dadr = np.asarray(topo.jnt_qposadr, int), np.asarray(topo.jnt_dofadr, int)
        for j, t in enumerate(types):
            a, b = qadr[j], dadr[j]
            if t in (int(JointType.HINGE), int(JointType.SLIDE)):
                d[..., b] = q[..., a] - qref[..., a]
            elif t == int(JointType.FREE):
                d[..., b:b + 3] = q[..., a:a + 3] - qref[..., a:a + 3]
                d[..., b + 3:b + 6] = np.asarray(math.quat_diff_rotvec(qj[..., a + 3:a + 7], qr[..., a + 3:a + 7]))
            else:
                d[..., b:b + 3] = np.asarray(math.quat_diff_rotvec(qj[..., a:a + 4], qr[..., a:a + 4]))
        return d

    def noisy(self, q, sigma, rng):
        """q with the observation noise of the module docstring."""
        q = np.array(q)
        q[..., self.lin_q] += sigma * rng.standard_normal(q[..., self.lin_q].shape)
        q[..., self.pos_q] += sigma * rng.standard_normal(q[..., self.pos_q].shape)
        if self.quat_q.size:
            rv = sigma * rng.standard_normal(q.shape[:-1] + (self.quat_q.shape[0], 3))
            q[..., self.quat_q] = np.asarray(math.quat_mul(jnp.asarray(q[..., self.quat_q]), math.rotvec_to_quat(jnp.asarray(rv))))
        return q


def state_estimate(layout: Layout, q_obs: np.ndarray, t0: int, w: int, dt: float):
    """(q, v) at step t0 from the observed q. Without noise (w = 0): q_obs[t0] and the
    backward difference tangent(q_obs[t0], q_obs[t0-1]) / dt, which is the velocity
    the step integrated (semi-implicit Euler: q' = q + v' dt), so it is exact. With
    noise: a least-squares quadratic through q_obs[t0-w..t0+w] (tangent offsets from
    q_obs[t0]): its value and its slope."""
    if w == 0:
        return q_obs[t0], layout.tangent(q_obs[t0], q_obs[t0 - 1]) / dt
    idx = np.arange(max(0, t0 - w), min(len(q_obs), t0 + w + 1))
    d = layout.tangent(q_obs[idx], np.broadcast_to(q_obs[t0], q_obs[idx].shape))
    tt = (idx - t0) * dt
    X = np.stack([np.ones_like(tt), tt, tt ** 2], 1)
    coef = np.linalg.lstsq(X, d, rcond=None)[0]
    return np.asarray(layout.retract(jnp.asarray(q_obs[t0]), jnp.asarray(coef[0]))), coef[1]


def velocity_check(layout: Layout, qs: np.ndarray, vs: np.ndarray, dt: float) -> str:
    """Log line: the backward-difference velocity of the noise-free data against the
    simulator's own velocities."""
    err = float(np.max(np.abs(layout.tangent(qs[1:], qs[:-1]) / dt - vs)))
    return f"backward-difference velocity of the noise-free data vs the simulated one: max error {err:.2g}"


# ------------------------------------------------------------------ simulators

class JaxsimSim:
    """jaxsim behind the common interface: model(p), start, step, frames."""

    sequential_segments = False  # segments vmapped

    def __init__(self, model, model_fn, frame_ids):
        self.model, self.model_fn, self.frame_ids = model, model_fn, np.asarray(frame_ids)

    def params(self, p):
        return self.model_fn(self.model, p)

    def start(self, m, q, v):
        return jaxsim.make_state(m, q, v)

    def step(self, m, s, u, f):
        return jaxsim.step(m, s, u, f)

    def qv(self, s):
        return s.q, s.v

    def frames(self, m, q):
        return forward_kinematics(m, q).body_pos_w[self.frame_ids]


class MjxSim:
    """MJX behind the same interface. Its segments are mapped sequentially
    (``lax.map``), not vmapped: MJX factorizes the mass matrix with LAPACK, and
    jaxlib's batched triangular solve deadlocked its CPU thread pool inside the
    vmapped Jacobians of the arm and the quadruped."""

    sequential_segments = True

    def __init__(self, mjm, setter, frame_ids):
        from mujoco import mjx
        self.mjx = mjx
        self.mm = mjx.put_model(mjm)
        self.d0 = mjx.make_data(self.mm)
        self.setter, self.frame_ids = setter, np.asarray(frame_ids)

    def params(self, p):
        return self.setter(self.mm, p)

    def start(self, m, q, v):
        return self.d0.replace(qpos=q, qvel=v)

    def step(self, m, d, u, f):
        return self.mjx.step(m, d.replace(ctrl=u, qfrc_applied=f))

    def qv(self, d):
        return d.qpos, d.qvel

    def frames(self, m, q):
        return self.mjx.kinematics(m, self.d0.replace(qpos=q)).xpos[self.frame_ids]


def generate(sim, p, q0, v0, ctrl_fn, forces, n_obs: int):
    """The true trajectory: q (n_obs, nq), frames (n_obs, k, 3), the applied controls
    (n_obs - 1, nu) and the final simulator state."""
    m = sim.params(jnp.asarray(p))

    def body(s, x):
        k, f = x
        q, v = sim.qv(s)
        u = ctrl_fn(k, q, v)
        s = sim.step(m, s, u, f)
        return s, (sim.qv(s)[0], u, s)

    ks = jnp.arange(n_obs - 1)
    s0 = sim.start(m, jnp.asarray(q0), jnp.asarray(v0))
    _, (qs, us, states) = jax.jit(lambda s0: jax.lax.scan(body, s0, (ks, forces)))(s0)
    qs = jnp.concatenate([jnp.asarray(q0)[None], qs])
    frames = jax.jit(jax.vmap(lambda q: sim.frames(m, q)))(qs)
    return np.asarray(qs), np.asarray(frames), np.asarray(us), states


# ------------------------------------------------------------------ segmented fit

def make_segment_fns(sim, layout: Layout, K: int, L: int):
    """Jitted ``res(th, Z, data) -> (K, R)`` and ``jac(th, Z, data, h, cols) -> (Jth
    (K, R, P), Jz (K, R, len(cols)), r (K, R))``; ``data`` = (q_anchor (K, nq), v_anchor
    (K, nv), inputs (K, L-1, nu), forces (K, L-1, nv), q_obs (K, L, nq), frames_obs
    (K, L, k, 3)). A segment's state unknowns z (2 nv,) are offsets of its initial
    positions (tangent) and velocities from their estimates; ``cols`` (a static tuple)
    are the ones the Jacobian differentiates (the stage fits those)."""
    nv = layout.nv

    def seg_res(th, z, h, qa, va, U, F, qo, fo):
        m = sim.params(jnp.exp(th))
        q0 = layout.retract(qa, z[:nv] * DQ_UNIT)
        v0 = va + z[nv:] * DV_UNIT

        def body(s, x):
            s = sim.step(m, s, *x)
            return s, sim.qv(s)[0]

        qs = jax.lax.scan(body, sim.start(m, q0, v0), (U, F))[1]
        qs = jnp.concatenate([q0[None], qs])
        fr = jax.vmap(lambda q: sim.frames(m, q))(qs)
        r = jnp.concatenate([layout.residual(qs, qo), (fr - fo).reshape(L, -1)], -1) / UNIT
        return (r * (jnp.arange(L) < h)[:, None]).reshape(-1)

    def over_segments(one, th, Z, h, data):
        if sim.sequential_segments:
            return jax.lax.map(lambda x: one(th, x[0], h, *x[1:]), (Z, *data))
        return jax.vmap(one, in_axes=(None, 0, None, 0, 0, 0, 0, 0, 0))(th, Z, h, *data)

    def res(th, Z, data, h=L):
        return over_segments(seg_res, th, Z, h, data)

    def jac(th, Z, data, h=L, cols=()):
        idx = np.asarray(cols, int)

        def one(th, z, h, *d):
            f = lambda t, zc: seg_res(t, z.at[idx].set(zc), h, *d)  # noqa: E731
            (jt, jz), r = jax.jacfwd(lambda t, zc: (f(t, zc),) * 2, argnums=(0, 1), has_aux=True)(th, z[idx])
            return jt, jz, r

        return over_segments(one, th, Z, h, data)

    return jax.jit(res), jax.jit(jac, static_argnames="cols")


def levenberg_marquardt(res_fn, jac_fn, th0, Z0, max_iter: int, xtol: float = 1e-9, ftol: float = 1e-12,
                        max_step: float = 0.2, state_cols=None, hold_std: float = np.inf):
    """Minimise 0.5 |r(th, Z)|^2 over the parameters th (P,) and the segment states Z (K, n).

    Marquardt's scaling (damping ``lambda diag(J^T J)``, floored at 1e-9 of its
    largest entry), Nielsen's update of lambda, steps scaled so that no log parameter
    moves by more than ``max_step`` (a factor e^0.2 = 1.22). The Jacobian is block
    sparse (each segment's rows see its own state and th); the normal equations are
    assembled densely. Returns (th, Z, info): iterations = accepted steps (one
    Jacobian each), evaluations = residual-only trial rollouts. Only the columns
    ``state_cols`` of Z are fitted (all by default; ``jac_fn``'s state block has
    those columns), the others are held. Parameters whose standard deviation at the start (log, for unit
    noise, the states marginalized) exceeds ``hold_std`` are held: the data at this
    horizon do not determine them, and noise alone would move them."""
    P, K = len(th0), Z0.shape[0]
    cols = np.arange(Z0.shape[1]) if state_cols is None else np.asarray(state_cols, int)
    n = len(cols)

    def normal(th, Z):
        Jt, Jz, r = map(np.asarray, jac_fn(jnp.asarray(th), jnp.asarray(Z)))
        A = np.zeros((P + K * n, P + K * n))
        g = np.zeros(P + K * n)
        A[:P, :P] = np.einsum("kri,krj->ij", Jt, Jt)
        g[:P] = np.einsum("kri,kr->i", Jt, r)
        for k in range(K):
            s = slice(P + k * n, P + (k + 1) * n)
            A[s, s] = Jz[k].T @ Jz[k]
            A[:P, s] = Jt[k].T @ Jz[k]
            A[s, :P] = A[:P, s].T
            g[s] = Jz[k].T @ r[k]
        ok = np.all(np.isfinite(Jt)) and np.all(np.isfinite(Jz))
        return A, g, 0.5 * float(np.sum(r * r)), ok

    th, Z = np.asarray(th0, float), np.asarray(Z0, float)
    A, g, cost, ok = normal(th, Z)
    info = dict(iterations=0, evaluations=0, converged=False, reason="iteration cap", cost0=cost)
    if not (ok and np.isfinite(cost)):
        info.update(reason="non-finite Jacobian or residual at the start", cost=cost)
        return th, Z, info
    free = np.ones(P + K * n, bool)
    if np.isfinite(hold_std):
        free[:P] = log_std(A, P) <= hold_std
    info["held"] = np.flatnonzero(~free[:P]).tolist()
    lam, nu = 1e-3, 2.0  # dimensionless: the damping is lam diag(A)
    while info["iterations"] < max_iter:
        d = np.maximum(np.diag(A), 1e-9 * np.max(np.diag(A)) + 1e-300)
        M = (A + lam * np.diag(d))[np.ix_(free, free)]
        delta = np.zeros(P + K * n)
        try:
            delta[free] = np.linalg.solve(M, -g[free])
        except np.linalg.LinAlgError:
            delta[free] = np.linalg.lstsq(M, -g[free], rcond=None)[0]
        delta *= min(1.0, max_step / max(np.max(np.abs(delta[:P])), 1e-300))
        if np.max(np.abs(delta)) < xtol:
            info.update(converged=True, reason="step below xtol")
            break
        th_new, Z_new = th + delta[:P], Z.copy()
        Z_new[:, cols] += delta[P:].reshape(K, n)
        r_new = np.asarray(res_fn(jnp.asarray(th_new), jnp.asarray(Z_new)))
        info["evaluations"] += 1
        cost_new = 0.5 * float(np.sum(r_new * r_new)) if np.all(np.isfinite(r_new)) else np.inf
        pred = -(g @ delta + 0.5 * delta @ A @ delta)
        if cost_new < cost:
            rho = (cost - cost_new) / max(pred, 1e-300)
            rel = (cost - cost_new) / cost
            th, Z, cost = th_new, Z_new, cost_new
            A, g, _, ok = normal(th, Z)
            info["iterations"] += 1
            if not ok:
                info.update(reason="non-finite Jacobian")
                break
            lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            nu = 2.0
            if rel < ftol or np.max(np.abs(delta)) < xtol:
                info.update(converged=True, reason="relative cost decrease below ftol" if rel < ftol
                            else "step below xtol")
                break
        else:
            lam *= nu
            nu *= 2.0
            if lam > 1e16:
                info.update(converged=True, reason="no decrease at any damping (stalled)")
                break
    info["cost"] = cost
    info["log_std"] = log_std(A, P).tolist()
    return th, Z, info


def log_std(A: np.ndarray, P: int) -> np.ndarray:
    """Standard deviations (P,) of the log parameters for unit noise, from the
    Gauss-Newton matrix A (the states marginalized); inf where A is singular."""
    try:
        return np.sqrt(np.maximum(np.diag(np.linalg.inv(A))[:P], 0.0))
    except np.linalg.LinAlgError:
        return np.full(P, np.inf)


def gradient_check(res_fn, jac_fn, th, Z, data, eps=(1e-3, 1e-5)) -> list[dict]:
    """jacfwd's parameter columns at (th, Z) against central differences of the same
    segmented rollout (steps ``eps`` in the log parameter)."""
    Jt = np.asarray(jac_fn(jnp.asarray(th), jnp.asarray(Z), data)[0])
    Jt = Jt.reshape(-1, len(th))
    out = []
    for i in range(len(th)):
        nj = float(np.linalg.norm(Jt[:, i]))
        row = dict(jac_norm=nj, finite=bool(np.all(np.isfinite(Jt[:, i]))), fd_norm={}, cosine={})
        for h in eps:
            e = np.zeros(len(th))
            e[i] = h
            fd = (np.asarray(res_fn(jnp.asarray(th + e), jnp.asarray(Z), data))
                  - np.asarray(res_fn(jnp.asarray(th - e), jnp.asarray(Z), data))).reshape(-1) / (2 * h)
            nf = float(np.linalg.norm(fd))
            row["fd_norm"][h] = nf
            row["cosine"][h] = float(Jt[:, i] @ fd / (nj * nf)) if nj > 0 and nf > 0 and np.isfinite(nj) else float("nan")
        out.append(row)
    return out


# ------------------------------------------------------------------ case a: box

BOX_DT, BOX_T = 1e-3, 1.5
BOX_SEG = 0.25  # s
BOX_PUSH = dict(start=0.5, rate=25.0, peak=7.0, release=0.9)  # s, N/s, N, s
BOX_TRUE = dict(mu_s=0.6, mu_k=0.4, mass=0.5)
BOX_H = 0.05
BOX_V0 = (1.0, 0.2, 0.0, 0.0, 0.0, 2.0)


def box_force(dt: float, n: int) -> np.ndarray:
    t = dt * np.arange(n)
    f = np.zeros((n, 6))
    p = BOX_PUSH
    f[:, 0] = np.where(t < p["start"], 0.0, np.minimum(p["rate"] * (t - p["start"]), p["peak"])) * (t < p["release"])
    return f


def box_case(dt: float) -> dict:
    m_true = BOX_TRUE["mass"]
    inertia = m_true * (2 * BOX_H) ** 2 / 6.0
    b = ModelBuilder(timestep=dt, solver_tol=1e-10)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(0.0, 0.0))
    b.add_body("box", "world", pos=(0, 0, 0.2), mass=m_true, inertia=np.full(3, inertia))
    b.add_joint("box", "free", name="box")
    b.add_geom("box", "box", (BOX_H,) * 3, name="box", friction=(BOX_TRUE["mu_s"], BOX_TRUE["mu_k"]))
    model = b.build(jnp.float64)
    gid, bid = model.geom_id("box"), model.body_id("box")
    L = int(round(BOX_SEG / dt))
    K = int(round(BOX_T / BOX_SEG))
    forces = jnp.asarray(box_force(dt, K * L))

    def model_fn(m, p):
        return m.replace(geom_friction=m.geom_friction.at[gid].set(p[:2]), body_mass=m.body_mass.at[bid].set(p[2]))

    q0 = np.array([0, 0, 0.2, 1, 0, 0, 0.0])
    common = dict(layout=Layout(model), K=K, L=L, dt=dt, window=int(round(0.04 / dt)), q0=q0,
                  v0=np.asarray(BOX_V0),
                  forces=forces, ctrl_fn=lambda k, q, v: jnp.zeros((0,)))
    out = dict(name="a box", common=common,
               jaxsim=dict(params=["mu_s", "mu_k", "mass kg"], true=[BOX_TRUE["mu_s"], BOX_TRUE["mu_k"], m_true],
                           sim=JaxsimSim(model, model_fn, [bid])))

    def mjx_part():
        import mujoco
        xml = f"""<mujoco model="sysid_box">
  <option timestep="{dt}"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05" friction="0 0.005 0.0001"/>
    <body name="box" pos="0 0 0.2">
      <freejoint name="box"/>
      <inertial pos="0 0 0" mass="{m_true}" diaginertia="{inertia} {inertia} {inertia}"/>
      <geom name="box" type="box" size="{BOX_H} {BOX_H} {BOX_H}" friction="{BOX_TRUE['mu_k']} 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>"""
        mjm = mujoco.MjModel.from_xml_string(xml)
        g, bb = mjm.geom("box").id, mjm.body("box").id

        def setter(mm, p):
            return mm.replace(geom_friction=mm.geom_friction.at[g, 0].set(p[0]),
                              body_mass=mm.body_mass.at[bb].set(p[1]))

        return dict(params=["mu (sliding)", "mass kg"], true=[BOX_TRUE["mu_k"], m_true], sim=MjxSim(mjm, setter, [bb]),
                    rows=["mu_k", "mass kg"], nq=mjm.nq, nv=mjm.nv)

    out["mjx"] = mjx_part
    return out


# ------------------------------------------------------------------ case b: arm

ARM_T, ARM_SEG = 2.5, 0.25
ARM_MASS_BODIES = ("r_upper_arm_link", "r_forearm_link", "r_wrist_roll_link")
ARM_DAMP_JOINTS = ("r_shoulder_pan_joint", "r_shoulder_lift_joint", "r_elbow_flex_joint")
ARM_OBS = ("r_elbow_flex_link", "r_wrist_flex_link", "tips_arm", "object")
ARM_KP, ARM_KD = 8.0, 0.8  # N m / rad, N m s / rad: the data's PD controller


def pusher_xml() -> str:
    import gymnasium
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "pusher.xml")


def arm_reference(n: int, dt: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The PD reference (n, 7) and smooth random torques (n, 7): the shoulder lift goes
    from 0 to 0.85 rad (the straight arm's hand reaches the table at about 0.47 rad)
    between 0.2 and 0.8 s, the pan sweeps +-0.45 rad, the elbow and wrist stay bent
    away from their limits."""
    rng = np.random.default_rng(seed)
    t = dt * np.arange(n)
    ramp = np.clip((t - 0.2) / 0.6, 0.0, 1.0)
    ref = np.zeros((n, 7))
    ref[:, 0] = 0.2 + 0.45 * np.sin(2 * np.pi * 0.5 * t)
    ref[:, 1] = 0.85 * ramp + 0.1 * np.sin(2 * np.pi * 0.9 * t)
    ref[:, 3] = -0.45 + 0.2 * np.sin(2 * np.pi * 0.7 * t + 1.0)
    ref[:, 5] = -0.5 + 0.2 * np.sin(2 * np.pi * 0.6 * t)
    noise = np.zeros((n, 7))
    for j in range(7):
        for _ in range(3):
            noise[:, j] += rng.uniform(0.1, 0.3) * np.sin(2 * np.pi * rng.uniform(0.3, 2.0) * t + rng.uniform(0, 2 * np.pi))
    return ref, noise


def arm_case(dt_unused: float) -> dict:
    import mujoco
    path = pusher_xml()
    model = load_mjcf(path, dtype=jnp.float64, solver_tol=1e-10)
    dt = float(model.opt.timestep)
    K, L = int(round(ARM_T / ARM_SEG)), int(round(ARM_SEG / dt))
    n = K * L
    ref, noise = map(jnp.asarray, arm_reference(n, dt))
    nu = model.nu

    def ctrl_fn(k, q, v):
        u = ARM_KP * (ref[k] - q[:nu]) - ARM_KD * v[:nu] + noise[k]
        return jnp.clip(u, -2.0, 2.0)

    bids = np.array([model.body_id(b) for b in ARM_MASS_BODIES])
    dofs = np.array([model.topo.jnt_dofadr[model.joint_id(j)] for j in ARM_DAMP_JOINTS])
    oids = np.array([model.body_id(b) for b in ARM_OBS])
    true = np.concatenate([np.asarray(model.body_mass)[bids], np.asarray(model.dof_damping)[dofs]])

    def model_fn(m, p):
        return m.replace(body_mass=m.body_mass.at[bids].set(p[:3]), dof_damping=m.dof_damping.at[dofs].set(p[3:]))

    names = [f"mass {b.split('_', 1)[1].rsplit('_', 1)[0]} kg" for b in ARM_MASS_BODIES] + \
            [f"damping {j.split('_', 1)[1].rsplit('_', 1)[0]}" for j in ARM_DAMP_JOINTS]
    common = dict(layout=Layout(model), K=K, L=L, dt=dt, window=5, q0=np.asarray(model.qpos0),
                  v0=np.zeros(model.nv), forces=jnp.zeros((n, model.nv)), ctrl_fn=ctrl_fn, diag=arm_contacts(model))
    out = dict(name="b arm", common=common, jaxsim=dict(params=names, true=true.tolist(),
                                                         sim=JaxsimSim(model, model_fn, oids)))

    def mjx_part():
        mjm = mujoco.MjModel.from_xml_path(path)
        mb = np.array([mjm.body(b).id for b in ARM_MASS_BODIES])
        md = np.array([mjm.jnt_dofadr[mjm.joint(j).id] for j in ARM_DAMP_JOINTS])
        mo = np.array([mjm.body(b).id for b in ARM_OBS])

        def setter(mm, p):
            return mm.replace(body_mass=mm.body_mass.at[mb].set(p[:3]), dof_damping=mm.dof_damping.at[md].set(p[3:]))

        t = np.concatenate([mjm.body_mass[mb], mjm.dof_damping[md]])
        return dict(params=names, true=t.tolist(), sim=MjxSim(mjm, setter, mo), rows=names, nq=mjm.nq, nv=mjm.nv)

    out["mjx"] = mjx_part
    return out


def arm_contacts(model):
    """Log line for the arm's data: steps with hand-table and hand-object contact force
    (> 1 mN), and steps within 1 mrad of a joint limit."""
    hand, obj = model.body_id("r_wrist_roll_link"), model.body_id("object")

    def diag(states, qs):
        cf = jax.vmap(lambda s: jaxsim.contact_forces(model, s))(states)
        fmag = np.linalg.norm(np.asarray(cf.force2_w), axis=-1) * np.asarray(cf.active)
        b1, b2 = np.asarray(cf.body1)[0], np.asarray(cf.body2)[0]
        table = ((b1 == 0) & (b2 == hand)) | ((b2 == 0) & (b1 == hand))
        with_obj = ((b1 == obj) & (b2 == hand)) | ((b2 == obj) & (b1 == hand))
        ft = np.sum(np.where(table, fmag, 0.0), 1)
        fo = np.sum(np.where(with_obj, fmag, 0.0), 1)
        rng = np.asarray(model.jnt_range) if hasattr(model, "jnt_range") else None
        lim = ""
        if rng is not None:
            qa = qs[:, :7]
            near = (np.abs(qa - rng[:7, 0]) < 1e-3) | (np.abs(qa - rng[:7, 1]) < 1e-3)
            lim = f", {int(np.sum(np.any(near, 1)))} steps within 1 mrad of an arm joint limit"
        return (f"hand-table contact force in {int(np.sum(ft > 1e-3))} of {len(ft)} steps (max {ft.max():.2f} N), "
                f"hand-object in {int(np.sum(fo > 1e-3))} (max {fo.max():.2f} N){lim}; object moved "
                f"{np.linalg.norm(qs[-1, 7:9] - qs[0, 7:9]) * 1e3:.0f} mm")

    return diag


# ------------------------------------------------------------------ case c: quadruped

QUAD_DT, QUAD_T, QUAD_SEG, QUAD_STAND = 0.01, 1.2, 0.3, 0.3
QUAD_TRUE_MU = 0.3
QUAD_GAIT = dict(amplitude=0.3, frequency=1.5)
HOOVES = ("front_left_hoof", "front_right_hoof", "rear_left_hoof", "rear_right_hoof")
QUAD_OBS = ("trunk_front", "trunk_rear") + HOOVES


def quad_ctrls(model, n: int, dt: float) -> np.ndarray:
    t = dt * np.arange(1, n + 1)
    walk = jax.vmap(lambda s: quadruped.gait_ctrl(model, s - QUAD_STAND, **QUAD_GAIT))(jnp.asarray(t))
    return np.where((t > QUAD_STAND)[:, None], np.asarray(walk), 0.0)


def quad_case(dt_unused: float) -> dict:
    import mujoco
    model = scenes.quadruped(QUAD_DT, implicit=True, dtype=jnp.float64, solver_tol=1e-10)
    K, L = int(round(QUAD_T / QUAD_SEG)), int(round(QUAD_SEG / QUAD_DT))
    n = K * L
    ctrls = jnp.asarray(quad_ctrls(model, n, QUAD_DT))
    floor = model.geom_id("floor")
    hooves = np.array([model.geom_id(h) for h in HOOVES])
    trunk = np.array([model.body_id("trunk_front"), model.body_id("trunk_rear")])
    oids = np.array([model.body_id(b) for b in QUAD_OBS])
    fr = model.geom_friction.at[floor].set(0.0).at[hooves].set(QUAD_TRUE_MU)
    model = model.replace(geom_friction=fr)
    true = np.concatenate([np.asarray(model.body_mass)[trunk], [QUAD_TRUE_MU]])

    def model_fn(m, p):
        return m.replace(body_mass=m.body_mass.at[trunk].set(p[:2]), geom_friction=m.geom_friction.at[hooves].set(p[2]))

    names = ["mass trunk front kg", "mass trunk rear kg", "mu hooves"]
    # the segment-state unknowns of the shorter stages are the base's 6 dofs (12 of
    # 2 nv = 112: the Jacobian's cost grows with them), all of them in the last stage
    free = int(np.flatnonzero(np.asarray(model.topo.jnt_type) == int(JointType.FREE))[0])
    base_dofs = int(model.topo.jnt_dofadr[free]) + np.arange(6)
    common = dict(layout=Layout(model), K=K, L=L, dt=QUAD_DT, window=4, q0=np.asarray(model.qpos0),
                  v0=np.zeros(model.nv), forces=jnp.zeros((n, model.nv)), ctrl_fn=lambda k, q, v: ctrls[k],
                  state_dofs=(base_dofs, np.arange(model.nv)),
                  frames_diag=hoof_slip)
    out = dict(name="c quadruped", common=common, jaxsim=dict(params=names, true=true.tolist(),
                                                               sim=JaxsimSim(model, model_fn, oids)))

    def mjx_part():
        mjm = mujoco.MjModel.from_xml_path(quadruped.ASSET)
        mjm.opt.timestep = QUAD_DT
        mh = np.array([mjm.geom(h).id for h in HOOVES])
        mjm.geom_friction[mjm.geom("floor").id, 0] = 0.0
        mjm.geom_friction[mh, 0] = QUAD_TRUE_MU
        mt = np.array([mjm.body("trunk_front").id, mjm.body("trunk_rear").id])
        mo = np.array([mjm.body(b).id for b in QUAD_OBS])

        def setter(mm, p):
            return mm.replace(body_mass=mm.body_mass.at[mt].set(p[:2]), geom_friction=mm.geom_friction.at[mh, 0].set(p[2]))

        t = np.concatenate([mjm.body_mass[mt], [QUAD_TRUE_MU]])
        return dict(params=names, true=t.tolist(), sim=MjxSim(mjm, setter, mo), rows=names, nq=mjm.nq, nv=mjm.nv,
                    q0=np.asarray(mjm.qpos0))

    out["mjx"] = mjx_part
    return out


def hoof_slip(frames: np.ndarray, dt: float) -> str:
    """How far the hooves slid while down (hoof frame within 5 mm of its starting
    height)."""
    hoof = frames[:, 2:, :]  # (T, 4, 3)
    z0 = hoof[0, :, 2]
    down = hoof[1:, :, 2] < z0 + 5e-3
    step = np.linalg.norm(np.diff(hoof[:, :, :2], axis=0), axis=-1)
    return (f"hooves slid {np.sum(step * down):.3f} m in total while down "
            f"(max {np.max(np.where(down, step, 0)) / dt:.3f} m/s)")


# growing horizon within every segment (fractions of L): with a 30 % parameter error a
# full segment's mismatch is large enough that the segment states absorb it in
# non-physical ways (the box's states learnt to hop off the floor to shed friction);
# over a short horizon the mismatch is small and the parameters move first
STAGES = (0.2, 0.5, 1.0)
# in the shorter stages a parameter is held while its standard deviation (log, at the
# 1 mm noise unit) exceeds this: e.g. the box's mu_s, which only its breakaway later
# in a segment determines
HOLD_STD = 0.2

CASES = {"a": box_case, "b": arm_case, "c": quad_case}
# iteration caps (accepted LM steps) of the last stage per case, both simulators alike
# (the shorter stages get half each), sized to a 2-core CPU run
ITERATIONS = {"a": 20, "b": 16, "c": 10}


# ------------------------------------------------------------------ driver

def run_side(case_name: str, side: str, spec: dict, common: dict, quick: bool) -> list[dict]:
    sim, true = spec["sim"], np.asarray(spec["true"], float)
    layout, K, L, dt = common["layout"], common["K"], common["L"], common["dt"]
    if "nq" in spec and (spec["nq"], spec["nv"]) != (layout.nq, layout.nv):
        raise ValueError(f"MuJoCo layout nq, nv = {spec['nq']}, {spec['nv']} differs from jaxsim's")
    P = len(true)
    signs = np.array([1.0 if i % 2 == 0 else -1.0 for i in range(P)])
    init = true * (1 + PERTURB * signs)
    th_true, th0 = np.log(true), np.log(init)
    t0 = time.perf_counter()
    q0 = spec.get("q0", common["q0"])
    qs, frames, us, states = generate(sim, true, q0, common["v0"], common["ctrl_fn"], common["forces"], K * L + 1)
    log(f"[{case_name} / {side}] data: {K * L + 1} observations of q ({layout.nq}) and {frames.shape[1]} frames, "
        f"{K} segments of {L} steps ({L * dt:g} s), finite {np.all(np.isfinite(qs))}, {time.perf_counter() - t0:.1f} s")
    if "diag" in common and side == "jaxsim":
        log("  " + common["diag"](states, qs))
    if "frames_diag" in common:
        log("  " + common["frames_diag"](frames, dt))
    log("  " + velocity_check(layout, qs, np.asarray(sim.qv(states)[1]), dt))
    # the dofs whose initial states are fitted: in the shorter stages, in the last one
    nv = layout.nv
    stage_dofs = common.get("state_dofs", (np.arange(nv), np.arange(nv)))
    cols = [tuple(int(c) for c in np.concatenate([d, nv + np.asarray(d)])) for d in stage_dofs]
    res_fn, jac_fn = make_segment_fns(sim, layout, K, L)
    # segment k covers observations 1 + kL .. (k + 1) L: every segment start has an
    # observation before it (the backward difference of the state estimate)
    def per_segment(x):  # steps 1 + kL .. (k + 1) L - 1 of the inputs, (K, L - 1, ...)
        x = np.asarray(x)[1:]
        return jnp.asarray(np.concatenate([x, np.zeros_like(x[:1])]).reshape((K, L) + x.shape[1:])[:, :L - 1])

    U, F = per_segment(us), per_segment(common["forces"])
    starts = 1 + np.arange(K) * L
    rows = []
    cap = ITERATIONS[case_name.split()[0]]
    max_iter = min(cap, 3) if quick else cap
    checks = None
    for sigma in NOISE:
        rng = np.random.default_rng(1234)
        q_obs = layout.noisy(qs, sigma, rng)
        f_obs = frames + sigma * rng.standard_normal(frames.shape)
        # the segment states start from the backward difference without noise, and from
        # a local quadratic fit over +-window steps with noise (over +-10 ms a 1 mm
        # noise leaves the slope 4 cm/s off, 9 mm after a 0.25 s segment)
        window = 0 if sigma == 0 else common["window"]
        est0 = [state_estimate(layout, q_obs, s, window, dt) for s in starts]
        qa, va = np.stack([e[0] for e in est0]), np.stack([e[1] for e in est0])
        data = (jnp.asarray(qa), jnp.asarray(va), U, F, jnp.asarray(q_obs[1:].reshape(K, L, -1)),
                jnp.asarray(f_obs[1:].reshape((K, L) + frames.shape[1:])))
        Z0 = np.zeros((K, 2 * nv))
        hL = jnp.asarray(L)
        t0 = time.perf_counter()
        for c in set(cols):
            jax.block_until_ready(jac_fn(jnp.asarray(th0), jnp.asarray(Z0), data, hL, cols=c))
        jax.block_until_ready(res_fn(jnp.asarray(th0), jnp.asarray(Z0), data, hL))
        compile_s = time.perf_counter() - t0
        n_row = layout.nv + 3 * frames.shape[1]
        n_res = K * L * n_row
        if checks is None:
            checks = gradient_check(lambda t, z, d: res_fn(t, z, d, hL),
                                    lambda t, z, d: jac_fn(t, z, d, hL, cols=cols[-1]), th0, Z0, data)
            for name, c in zip(spec["params"], checks):
                fd = ", ".join(f"{h:g}: |fd| {c['fd_norm'][h]:.4g} cos {c['cosine'][h]:.3f}" for h in c["fd_norm"])
                log(f"  d res / d log {name} at the guess: |jacfwd| {c['jac_norm']:.4g}; central differences {fd}")
        # the segment states at the true parameters fitted alone would be the ideal; the
        # rms at the guess says how far the initial state estimates are
        r0 = np.asarray(res_fn(jnp.asarray(th_true), jnp.asarray(Z0), data, hL))
        t0 = time.perf_counter()
        th, Z, iters, evals, stages = th0, Z0, 0, 0, []
        for frac in STAGES:
            h, c = jnp.asarray(int(round(frac * L))), cols[-1] if frac == 1.0 else cols[0]
            th, Z, info = levenberg_marquardt(
                lambda t, z: res_fn(t, z, data, h), lambda t, z: jac_fn(t, z, data, h, cols=c), th, Z,
                max_iter if frac == 1.0 else max(1, max_iter // 2), state_cols=c,
                hold_std=np.inf if frac == 1.0 else HOLD_STD)
            iters, evals = iters + info["iterations"], evals + info["evaluations"]
            held = "".join(f", {spec['params'][i]} held" for i in info["held"])
            stages.append(f"{frac:g} L, {len(c)} state unknowns{held}: {info['iterations']} it, "
                          f"rms {np.sqrt(2 * info['cost'] / (K * frac * L * n_row)):.3g}")
        cost0 = 0.5 * float(np.sum(np.asarray(res_fn(jnp.asarray(th0), jnp.asarray(Z0), data, hL)) ** 2))
        info.update(iterations=iters, evaluations=evals, cost0=cost0)
        wall = time.perf_counter() - t0
        rms0 = np.sqrt(2 * info["cost0"] / n_res)
        rms = float(np.sqrt(2 * info["cost"] / n_res))
        log(f"  noise {sigma * 1e3:g} mm: {info['iterations']} iterations ({info['evaluations']} trial rollouts), "
            f"{wall:.1f} s (+{compile_s:.1f} s compile), rms residual {rms0:.3g} -> {rms:.3g} mm "
            f"(true parameters with the initial segment states: {np.sqrt(np.mean(r0 ** 2)):.3g}), {info['reason']}; "
            f"horizons {'; '.join(stages)}")
        est = np.exp(th)
        # Gauss-Newton standard deviations at the end for 1 unit (1 mm / 1 mrad) of noise,
        # as % of the value: what the data can determine at that noise
        std_pct = 100 * np.asarray(info["log_std"])
        log("    relative std of the estimates at 1 mm noise (Gauss-Newton, states marginalized): "
            + ", ".join(f"{n} {v:.2g} %" for n, v in zip(spec["params"], std_pct)))
        for i, name in enumerate(spec["params"]):
            err = 100 * (est[i] - true[i]) / true[i]
            log(f"    {name:22s} true {true[i]:.5g}  init {init[i]:.5g}  recovered {est[i]:.6g}  error {err:+.3f} %")
            rows.append(dict(case=case_name, side=side, noise_mm=sigma * 1e3, param=name,
                             row=spec.get("rows", spec["params"])[i], true=float(true[i]), initial=float(init[i]),
                             recovered=float(est[i]), error_pct=float(err), iterations=info["iterations"],
                             evaluations=info["evaluations"], wall_s=wall, compile_s=compile_s,
                             converged=bool(info["converged"]), reason=info["reason"], rms_mm=rms, rms0_mm=float(rms0),
                             grad_check=checks[i], segments=[int(K), int(L)], std_pct_at_1mm=float(std_pct[i])))
    return rows


SHORT = {"iteration cap": "cap", "step below xtol": "xtol", "relative cost decrease below ftol": "ftol",
         "no decrease at any damping (stalled)": "stalled"}


def table(rows: list[dict]) -> str:
    head = ("| case | noise mm | parameter | true | initial | jaxsim recovered | err % | iters | wall s | stop, rms "
            "| MJX recovered | err % | iters | wall s | stop, rms |")
    out = [head, "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    keys = []
    for r in rows:
        key = (r["case"], r["noise_mm"], r["row"])
        if key not in keys:
            keys.append(key)
    for key in keys:
        j = next((r for r in rows if r["side"] == "jaxsim" and (r["case"], r["noise_mm"], r["row"]) == key), None)
        m = next((r for r in rows if r["side"] == "mjx" and (r["case"], r["noise_mm"], r["row"]) == key), None)
        ref = j or m

        def cols(r):
            if r is None:
                return "n/a | | | | "
            if r.get("failed"):
                return f"failed | | | | {r['reason']}"
            stop = SHORT.get(r["reason"], r["reason"])
            return (f"{r['recovered']:.4g} | {r['error_pct']:+.2f} | {r['iterations']} | {r['wall_s']:.0f} | "
                    f"{stop}, {r['rms_mm']:.2g} mm")

        out.append(f"| {key[0]} | {key[1]:g} | {key[2]} | {ref['true']:.4g} | {ref['initial']:.4g} | {cols(j)} | "
                   f"{cols(m) if m or not j or key[2] != 'mu_s' else 'not representable | | | | '} |")
    return "\n".join(out)


def compact_table(rows: list[dict]) -> str:
    """The table of the system-identification page (docs/pages/sysid.md): one row per case and
    noise level, the parameters joined."""
    out = ["| case | noise | parameters | true | jaxsim | err % | iters, s | rms mm | MJX | err % | iters, s | rms mm |",
           "|---|---:|---|---|---|---|---|---:|---|---|---|---:|"]
    keys = []
    for r in rows:
        if not r.get("failed") and (r["case"], r["noise_mm"]) not in keys:
            keys.append((r["case"], r["noise_mm"]))

    def fmt(rs, what):
        return " / ".join(f"{r[what]:.3g}" if what != "error_pct" else f"{r[what]:+.1f}" for r in rs)

    for case, noise in keys:
        part = {side: [r for r in rows if (r["case"], r["noise_mm"], r["side"]) == (case, noise, side)
                       and not r.get("failed")] for side in ("jaxsim", "mjx")}
        failed = [r for r in rows if r["case"] == case and r["side"] == "mjx" and r.get("failed")]
        cols = []
        for side in ("jaxsim", "mjx"):
            rs = part[side]
            if rs:
                names = [r["row"] for r in rs] if side == "mjx" else None
                val = fmt(rs, "recovered") if names is None or names == [r["row"] for r in part["jaxsim"]] else \
                    " / ".join(f"{r['param']} {r['recovered']:.3g}" for r in rs)
                cols.append(f"{val} | {fmt(rs, 'error_pct')} | {rs[0]['iterations']}, {rs[0]['wall_s']:.0f} | "
                            f"{rs[0]['rms_mm']:.2g}")
            else:
                cols.append(("failed: " + failed[0]["reason"][:60] if side == "mjx" and failed else "not run")
                            + " | | | ")
        ref = part["jaxsim"] or part["mjx"]
        names, trues = " / ".join(r["row"] for r in ref), " / ".join(f"{r['true']:.3g}" for r in ref)
        out.append(f"| {case.split()[1]} | {noise:g} mm | {names} | {trues} | {cols[0]} | {cols[1]} |")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--quick", action="store_true", help="cap the iterations (smoke run)")
    p.add_argument("--sides", nargs="+", default=["jaxsim", "mjx"], choices=["jaxsim", "mjx"],
                   help="the simulators that fit (default both)")
    p.add_argument("--box-dt", type=float, default=BOX_DT, help="the box's timestep, s")
    p.add_argument("--out", default=os.path.join(RESULTS, "sysid.json"))
    p.add_argument("--table", metavar="JSON", help="only print the tables of a saved run")
    p.add_argument("--merge", nargs="+", metavar="JSON", help="join saved runs (one per case) into --out")
    a = p.parse_args()
    if a.merge:
        rows, logs = [], []
        for path in a.merge:
            with open(path) as f:
                rows += json.load(f)["rows"]
            with open(path.replace(".json", "_log.txt")) as f:
                logs.append(f.read())
        with open(a.out, "w") as f:
            json.dump(dict(rows=rows, noise_m=list(NOISE), perturbation=PERTURB, merged=a.merge), f, indent=1)
        with open(a.out.replace(".json", "_log.txt"), "w") as f:
            f.write("\n".join(logs) + "\n" + table(rows) + "\n")
        print(table(rows))
        return
    if a.table:
        with open(a.table) as f:
            rows = json.load(f)["rows"]
        print(table(rows) + "\n\n" + compact_table(rows))
        return
    log(f"jax {jax.__version__} on {jax.devices()[0].platform}, float64, quick={a.quick}, box dt {a.box_dt:g} s")
    rows: list[dict] = []
    t_start = time.perf_counter()
    for c in a.cases:
        case = CASES[c](a.box_dt)
        if "jaxsim" in a.sides:
            rows += run_side(case["name"], "jaxsim", case["jaxsim"], case["common"], a.quick)
        if "mjx" in a.sides:
            try:
                spec = case["mjx"]()
                rows += run_side(case["name"], "mjx", spec, case["common"], a.quick)
            except Exception as e:  # report, do not hide, an MJX failure
                msg = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                log(f"[{case['name']} / mjx] failed: {msg}")
                rows.append(dict(case=case["name"], side="mjx", noise_mm=0.0, row="(all)", param="(all)",
                                 true=float("nan"), initial=float("nan"), failed=True, reason=msg))
        with open(a.out, "w") as f:
            json.dump(dict(rows=rows, quick=a.quick, noise_m=list(NOISE), perturbation=PERTURB, box_dt=a.box_dt),
                      f, indent=1)
    log(f"\ntotal wall {time.perf_counter() - t_start:.0f} s\n")
    log(table(rows))
    log_path = os.path.join(os.path.dirname(a.out), os.path.basename(a.out).replace(".json", "_log.txt"))
    with open(log_path, "w") as f:
        f.write("\n".join(LOG) + "\n")
    log(f"wrote {a.out} and {log_path}")


if __name__ == "__main__":
    sys.exit(main())
