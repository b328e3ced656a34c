"""Seed 001's quadruped (``jaxsim.quadruped``): the MJCF asset is the builder's robot
(MuJoCo's dynamics of it against jaxsim's, float64), and with implicit PD it stands
20 s and walks 20 s at dt = 50 ms where explicit PD diverges (float32, as users run
it). The long sweeps (dt = 50, 20, 10, 1 ms, MuJoCo beside it) are
``experiments/seed001_quadruped.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import quadruped, scenes
from jaxsim.io import from_mjmodel
from jaxsim.types import JointType

mujoco = pytest.importorskip("mujoco")


def test_asset_is_the_robot_and_matches_mujoco():
    with open(quadruped.ASSET) as fh:
        assert fh.read() == quadruped.mjcf(), "jaxsim/assets/quadruped.xml is stale: rewrite it from mjcf()"
    model = scenes.quadruped(dtype=jnp.float64)
    types = [JointType(t) for t in model.topo.jnt_type]
    assert (model.topo.nbody - 1, types.count(JointType.BALL), types.count(JointType.HINGE), model.nu) == (23, 14, 8,
                                                                                                          50)
    mm = mujoco.MjModel.from_xml_path(quadruped.ASSET)
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    rng = np.random.default_rng(0)
    d = mujoco.MjData(mm)
    qs, vs, us, want_m, want_acc = [], [], [], [], []
    for _ in range(3):  # near the standing pose, joints turned up to ~0.5 rad
        d.qpos[:] = mm.qpos0
        for j in range(mm.njnt):
            if mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
                rv = rng.uniform(-0.3, 0.3, 3)
                angle = np.linalg.norm(rv)
                d.qpos[mm.jnt_qposadr[j]:mm.jnt_qposadr[j] + 4] = np.r_[np.cos(angle / 2), np.sin(angle / 2) * rv / angle]
            elif mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                d.qpos[mm.jnt_qposadr[j]] = rng.uniform(-0.5, 0.5)
        d.qvel[:] = rng.normal(size=mm.nv)
        d.ctrl[:] = rng.uniform(-0.3, 0.3, mm.nu)
        mujoco.mj_forward(mm, d)
        full = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, d, full)
        qs.append(d.qpos.copy()), vs.append(d.qvel.copy()), us.append(d.ctrl.copy())
        want_m.append(full), want_acc.append(d.qacc.copy())
    loaded = from_mjmodel(mm, dtype=jnp.float64)

    def one(m, q, v, u):
        mass = jaxsim.mass_matrix(m, jaxsim.forward_kinematics(m, q))
        return mass, jaxsim.accelerations(m, q, v, jnp.zeros((0,)), u)[0]

    for m in (model, loaded):  # the builder's robot and MuJoCo's file, loaded
        got_m, got_acc = jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0)))(m, *map(jnp.asarray, (qs, vs, us)))
        np.testing.assert_allclose(got_m, np.array(want_m), rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(got_acc, np.array(want_acc), rtol=1e-7, atol=1e-6 * np.abs(want_acc).max())


def test_stands_and_walks_at_50ms_where_explicit_pd_diverges():
    model = scenes.quadruped(0.05)
    t = 0.05 * jnp.arange(1, 401)
    walk = jax.vmap(lambda s: quadruped.gait_ctrl(model, s))(t)
    ctrls = jnp.concatenate([jnp.zeros_like(walk), walk])  # 20 s standing, then 20 s walking
    final, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), ctrls)
    z = np.asarray(traj.q[:, 2])
    depth = np.asarray(jnp.max(jnp.where(traj.contact.active, traj.contact.depth, 0.0), axis=-1))
    print(f"\nstanding trunk height {z[:400].min():.4f}-{z[:400].max():.4f} m (nominal {quadruped.HEIGHT} m), "
          f"walking {z[400:].min():.4f}-{z[400:].max():.4f}; max penetration {depth.max() * 1e3:.1f} mm; "
          f"QP iterations mean {float(np.mean(traj.solver.iterations)):.0f}")
    assert not bool(final.nonfinite) and np.all(np.isfinite(np.asarray(traj.q)))
    assert np.all(np.abs(z[:400] - quadruped.HEIGHT) < 0.02)
    assert depth.max() < 0.01
    assert float(traj.q[-1, 0]) > float(traj.q[399, 0])  # the walk goes forward
    explicit = scenes.quadruped(0.05, implicit=False)  # expected to diverge (seed 001's point)
    final, _ = jax.jit(jaxsim.rollout)(explicit, jaxsim.make_state(explicit), jnp.zeros((40, explicit.nu)))
    assert bool(final.nonfinite) or float(jnp.max(jnp.abs(final.v))) > 1e3
