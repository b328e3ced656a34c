"""Kinematics and contact-free dynamics against MuJoCo on every gymnasium and
dm_control model the loader accepts (float64, 20 random states each).

Compared with MuJoCo's own quantities at the same (q, v, ctrl, act, applied force):
body positions and orientations (``xpos``, ``xmat``), the mass matrix (``mj_fullM``),
bias forces (``qfrc_bias``), passive forces (``qfrc_passive``), actuator forces
(``qfrc_actuator``), activation derivatives and forward accelerations (``qacc`` from
``mj_forward``) by both ABA and CRBA + Cholesky. MuJoCo runs with all constraints
disabled (contacts, limits, equality couplings, friction loss), since jaxsim's
contact-free dynamics has none. Models the loader rejects are skipped with the reason
(shown by ``pytest -rs``).
"""

import numpy as np
import jax
import jax.numpy as jnp
import pytest

import jaxsim
from jaxsim import dynamics
from jaxsim.builder import ModelError
from jaxsim.io import compile_urdf, from_mjmodel, load_urdf
from jaxsim.kinematics import body_velocities

from conftest import URDF_ROBOTS, example_robot_data_dir, reference_model_files

mujoco = pytest.importorskip("mujoco")

MODELS = reference_model_files()
NSAMPLES = 20
RTOL = 1e-8
REQUIRED = ["gym/ant", "gym/humanoid", "gym/half_cheetah", "gym/hopper", "gym/walker2d",
            "dmc/quadruped"]


def _load(path):
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return mm, from_mjmodel(mm, dtype=jnp.float64)


def random_states(mm, n, seed=0):
    """Random (q, v, ctrl, act, qfrc_applied) around qpos0, quaternions normalized."""
    rng = np.random.default_rng(seed)
    q = mm.qpos0 + 0.5 * rng.standard_normal((n, mm.nq))
    for j in range(mm.njnt):
        a = mm.jnt_qposadr[j]
        if mm.jnt_type[j] in (0, 1):
            s = a + (3 if mm.jnt_type[j] == 0 else 0)
            quat = rng.standard_normal((n, 4))
            q[:, s:s + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return (q, rng.standard_normal((n, mm.nv)), rng.standard_normal((n, mm.nu)),
            rng.standard_normal((n, mm.na)), rng.standard_normal((n, mm.nv)))


def mujoco_reference(mm, states):
    d = mujoco.MjData(mm)
    out = {k: [] for k in ("xpos", "xmat", "M", "bias", "passive", "actuator", "act_dot", "qacc")}
    for q, v, u, a, f in zip(*states):
        d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:], d.qfrc_applied[:] = q, v, u, a, f
        mujoco.mj_forward(mm, d)
        m_full = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, d, m_full)
        out["xpos"].append(d.xpos.copy()), out["xmat"].append(d.xmat.reshape(-1, 3, 3).copy())
        out["M"].append(m_full), out["bias"].append(d.qfrc_bias.copy())
        out["passive"].append(d.qfrc_passive.copy()), out["actuator"].append(d.qfrc_actuator.copy())
        out["act_dot"].append(d.act_dot.copy()), out["qacc"].append(d.qacc.copy())
    return {k: np.asarray(v) for k, v in out.items()}


def jaxsim_quantities(model, states):
    aba = model.replace(opt=model.opt.replace(forward_dynamics="aba"))
    crba = model.replace(opt=model.opt.replace(forward_dynamics="crba"))

    def one(q, v, u, a, f):
        kin = jaxsim.forward_kinematics(model, q)
        body_vel, _ = body_velocities(model, kin, v)
        qfrc_act, act_dot = dynamics.actuator_forces(model, q, v, a, u)
        return dict(
            xpos=kin.body_pos_w, xmat=kin.body_rot_w, M=jaxsim.mass_matrix(model, kin),
            bias=jaxsim.bias_forces(model, kin, v),
            passive=dynamics.passive_forces(model, q, v, kin, body_vel),
            actuator=qfrc_act, act_dot=act_dot,
            qacc=jaxsim.accelerations(aba, q, v, a, u, f)[0],
            qacc_crba=jaxsim.accelerations(crba, q, v, a, u, f)[0])

    return jax.jit(jax.vmap(one))(*[jnp.asarray(s) for s in states])


def assert_close(name, got, want):
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=RTOL * scale, err_msg=name)


@pytest.fixture(scope="module", params=[p for _, p in MODELS], ids=[i for i, _ in MODELS])
def loaded(request):
    try:
        mm, model = _load(request.param)
    except ModelError as e:
        pytest.skip(f"loader rejects it: {e}")
    if mm.nv == 0:
        pytest.skip("no degrees of freedom")
    return mm, model


def test_matches_mujoco(loaded):
    mm, model = loaded
    states = random_states(mm, NSAMPLES)
    ref = mujoco_reference(mm, states)
    got = jaxsim_quantities(model, states)
    for key in ("xpos", "xmat", "M", "bias", "passive", "actuator", "act_dot", "qacc"):
        assert_close(key, got[key], ref[key])
    assert_close("qacc (CRBA)", got["qacc_crba"], ref["qacc"])


@pytest.mark.parametrize("name", list(URDF_ROBOTS))
def test_urdf_robot_matches_mujoco(name):
    """example-robot-data's URDFs, ``package://`` meshes resolved by ``load_urdf``,
    against MuJoCo compiling the same resolved file."""
    rel, options = URDF_ROBOTS[name]
    path = f"{example_robot_data_dir()}/{rel}"
    mm = compile_urdf(path, **options)
    assert mm.nmesh > 0 and mm.nv == (18 if options.get("floating_base") else mm.njnt)
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    model = load_urdf(path, dtype=jnp.float64, **options)
    states = random_states(mm, 4)
    ref, got = mujoco_reference(mm, states), jaxsim_quantities(model, states)
    for key in ("xpos", "xmat", "M", "bias", "passive", "qacc"):
        assert_close(key, got[key], ref[key])


@pytest.mark.parametrize("name", REQUIRED)
def test_required_models_are_accepted(name):
    path = dict(MODELS)[name]
    model = _load(path)[1]
    assert model.nv > 0


def mujoco_rk4_step(mm, d):
    """One classic RK4 step built from MuJoCo's own mj_forward and mj_integratePos
    (the tableau of MuJoCo's mj_RungeKutta). MuJoCo 4.0's mj_step departs from this
    published scheme by ~2e-7 per step in free-joint quaternions, so the RK4 reference
    is this composition of MuJoCo primitives."""
    h = mm.opt.timestep
    q0, v0, a0 = d.qpos.copy(), d.qvel.copy(), d.act.copy()

    def f(q, v, a):
        d.qpos[:], d.qvel[:], d.act[:] = q, v, a
        mujoco.mj_forward(mm, d)
        return d.qacc.copy(), d.act_dot.copy()

    vs, fs = [v0], [f(q0, v0, a0)]
    for w in (0.5, 0.5, 1.0):
        qi = q0.copy()
        mujoco.mj_integratePos(mm, qi, w * vs[-1], h)
        vi = v0 + w * h * fs[-1][0]
        vs.append(vi), fs.append(f(qi, vi, a0 + w * h * fs[-1][1]))
    b = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    q1 = q0.copy()
    mujoco.mj_integratePos(mm, q1, sum(w * x for w, x in zip(b, vs)), h)
    d.qpos[:] = q1
    d.qvel[:] = v0 + h * sum(w * x[0] for w, x in zip(b, fs))
    d.act[:] = a0 + h * sum(w * x[1] for w, x in zip(b, fs))
    d.time += h


@pytest.mark.parametrize("name,integrator", [
    ("gym/half_cheetah", "euler"), ("dmc/quadruped", "euler"), ("gym/humanoid", "euler"),
    ("gym/ant", "rk4"), ("gym/humanoid", "rk4")])
def test_step_matches_mujoco(name, integrator):
    """Ten contact-free steps agree with MuJoCo: semi-implicit Euler with implicit joint
    damping (and, as MuJoCo, an explicit gyroscopic torque) against mj_step, RK4 against MuJoCo's RK4 tableau (filter activations
    included in the quadruped)."""
    mm, _ = _load(dict(MODELS)[name])
    mm.opt.integrator = int(mujoco.mjtIntegrator.mjINT_RK4 if integrator == "rk4"
                            else mujoco.mjtIntegrator.mjINT_EULER)
    # MuJoCo's Euler takes the gyroscopic torque explicitly; jaxsim's default does not
    model = from_mjmodel(mm, dtype=jnp.float64, implicit_gyroscopic=False)
    assert model.opt.integrator == integrator
    q, v, u, a, _ = random_states(mm, 1, seed=1)
    d = mujoco.MjData(mm)
    d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q[0], 0.3 * v[0], u[0], a[0]
    state = jaxsim.make_state(model, q=q[0], v=0.3 * v[0], act=a[0], ctrl=u[0])
    step = jax.jit(jaxsim.step)
    for _ in range(10):
        mujoco.mj_step(mm, d) if integrator == "euler" else mujoco_rk4_step(mm, d)
        state = step(model, state, jnp.asarray(u[0]))
    assert_close("q", state.q, d.qpos)
    assert_close("v", state.v, d.qvel)
    assert_close("act", state.act, d.act)
    np.testing.assert_allclose(float(state.time), d.time, rtol=1e-12)
