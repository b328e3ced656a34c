"""The implicit-PD quadruped (``jaxsim.quadruped``): the MJCF asset is the builder's
robot (MuJoCo's dynamics of it against jaxsim's, float64), and with implicit PD it
stands 5 s and walks 5 s at dt = 50 ms where explicit PD diverges (float32, as users
run it). The long sweeps (dt = 50, 20, 10, 1 ms, MuJoCo beside it) are
``experiments/implicit_pd_quadruped.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim import quadruped, scenes
from jaxsim.io import from_mjmodel
from jaxsim.types import JointType

mujoco = pytest.importorskip("mujoco")

CHUNK = 40  # steps per rollout call: every rollout of a PD law shares one compile


def _rollout(model, ctrls):
    """(final State, trajectory) of ``ctrls`` (T, nu), T a multiple of CHUNK."""
    return rollout_in_chunks(model, jaxsim.make_state(model), ctrls, CHUNK)


def _joint_angles(model, q):
    """(T, 50) hinge angles and ball-joint rotation vectors (rad) of trajectory ``q``."""
    return np.asarray(jax.vmap(lambda x: jaxsim.kinematics.transmission_positions(model, x))(q))[:, 6:]


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
    half = 100  # steps: 5 s standing, then 5 s walking
    t = 0.05 * jnp.arange(1, half + 1)
    walk = jax.vmap(lambda s: quadruped.gait_ctrl(model, s))(t)
    ctrls = jnp.concatenate([jnp.zeros_like(walk), walk])
    final, traj = _rollout(model, ctrls)
    z = np.asarray(traj.q[:, 2])
    depth = np.asarray(jnp.max(jnp.where(traj.contact.active, traj.contact.depth, 0.0), axis=-1))
    print(f"\nstanding trunk height {z[:half].min():.4f}-{z[:half].max():.4f} m (nominal {quadruped.HEIGHT} m), "
          f"walking {z[half:].min():.4f}-{z[half:].max():.4f}; max penetration {depth.max() * 1e3:.1f} mm; "
          f"QP iterations mean {float(np.mean(traj.solver.iterations)):.0f}")
    assert not bool(final.nonfinite) and np.all(np.isfinite(np.asarray(traj.q)))
    assert np.all(np.abs(z[:half] - quadruped.HEIGHT) < 0.02)
    assert depth.max() < 0.01
    assert float(traj.q[-1, 0]) > float(traj.q[half - 1, 0])  # the walk goes forward
    explicit = scenes.quadruped(0.05, implicit_pd=False)  # expected to diverge (implicit PD's point)
    final, _ = _rollout(explicit, jnp.zeros((CHUNK, explicit.nu)))
    assert bool(final.nonfinite) or float(jnp.max(jnp.abs(final.v))) > 1e3


def test_at_1ms_implicit_and_explicit_pd_agree_and_match_mujoco():
    """1 s of standing at dt = 1 ms: implicit and explicit PD give the same joint
    angles (relative RMS difference below 1 %), and MuJoCo (implicitfast, contacts
    made near-rigid as jaxsim's) within 5 %; MuJoCo's default soft contacts, which
    let the robot sink 5 mm, are reported beside it."""
    dt, n = 1e-3, 1000
    angles = {}
    for implicit in (True, False):
        model = scenes.quadruped(dt, implicit_pd=implicit)
        final, traj = _rollout(model, jnp.zeros((n, model.nu), model.dtype))
        assert not bool(final.nonfinite)
        angles[implicit] = _joint_angles(model, traj.q)
    rel = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))  # noqa: E731
    peak = lambda a, b: float(np.abs(a - b).max() / np.abs(b).max())  # noqa: E731
    got = angles[True]
    mm = mujoco.MjModel.from_xml_path(quadruped.ASSET)
    mm.opt.timestep, mm.opt.integrator = dt, int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    ref = {}
    for label, rigid in (("default contacts", False), ("near-rigid contacts", True)):
        if rigid:
            mm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)
            mm.opt.o_solref[:], mm.opt.o_solimp[:] = (0.002, 1.0), (0.99, 0.999, 0.001, 0.5, 2.0)
        d, qs = mujoco.MjData(mm), []
        for _ in range(n):
            mujoco.mj_step(mm, d)
            qs.append(d.qpos.copy())
        ref[label] = _joint_angles(model, jnp.asarray(np.array(qs), model.dtype))
    print(f"\njoint angles over 1 s at 1 ms, relative RMS (peak) difference: implicit vs explicit "
          f"{rel(got, angles[False]):.2%} ({peak(got, angles[False]):.2%}); "
          + "; ".join(f"jaxsim vs MuJoCo with {k} {rel(got, a):.2%} ({peak(got, a):.2%})" for k, a in ref.items()))
    assert rel(got, angles[False]) < 0.01
    assert rel(got, ref["near-rigid contacts"]) < 0.05
