"""Equality constraints, friction loss, ball-joint and tendon limits against MuJoCo.

One scene holds them all (one compile): a double pendulum whose tip is connected to a
free box, a sphere welded to that box, two slides coupled by a quadratic joint
equality, two vertical hinges with friction loss driven below and above it, a
ball-joint pendulum thrown against its cone limit and a damped double pendulum falling
against a fixed tendon's limit. MuJoCo runs the same MJCF with near-hard constraint
parameters; jaxsim runs 5 s in one ``rollout``.
"""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim import ModelBuilder, ModelError
from jaxsim.contact.equality import equality_rows
from jaxsim.io.mjcf import load_mjcf
from jaxsim.kinematics import forward_kinematics

DT, STEPS, COMPARED = 1e-3, 5000, 1000
HARD = 'solref="0.001 1" solimp="0.9999 0.9999 0.001"'
SCENE = f"""
<mujoco>
  <option timestep="{DT}"/>
  <default><equality {HARD}/><geom contype="0" conaffinity="0"/>
    <joint solreflimit="0.001 1" solimplimit="0.9999 0.9999 0.001" solreffriction="0.001 1"
           solimpfriction="0.9999 0.9999 0.001"/>
    <tendon solreflimit="0.001 1" solimplimit="0.9999 0.9999 0.001"/></default>
  <worldbody>
    <body name="l1" pos="0 0 1.5">
      <joint name="h1" axis="0 1 0"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.4"/>
      <body name="l2" pos="0 0 -0.4">
        <joint name="h2" axis="1 0 0"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.4"/>
      </body>
    </body>
    <body name="box" pos="0 0 0.65"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="0.5"/></body>
    <body name="ball" pos="0.15 0 0.65" quat="0.9 0.3 0.1 0.2"><freejoint/><geom type="sphere" size="0.04" mass="0.3"/></body>
    <body name="s" pos="0.5 0 1"><joint name="sl" type="slide" axis="1 0 0"/><geom type="sphere" size="0.05"/></body>
    <body name="t" pos="0.5 0 0.5"><joint name="sl2" type="slide" axis="1 0 0"/><geom type="sphere" size="0.05"/></body>
    <body name="f" pos="1 0 1"><joint name="stuck" axis="0 0 1" frictionloss="1"/><geom type="box" size="0.2 0.05 0.05"/></body>
    <body name="g" pos="1 1 1"><joint name="slips" axis="0 0 1" frictionloss="1"/><geom type="box" size="0.2 0.05 0.05"/></body>
    <body name="p" pos="-1 0 1"><joint name="cone" type="ball" range="0 20"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.3"/></body>
    <body name="u" pos="2 0 1" euler="0 45 0"><joint name="u1" axis="0 1 0" damping="0.3"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.3"/>
      <body name="u2" pos="0 0 -0.3"><joint name="u2" axis="0 1 0" damping="0.3"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.3"/></body></body>
  </worldbody>
  <tendon><fixed name="coupled" limited="true" range="-0.5 0.5">
    <joint joint="u1" coef="1"/><joint joint="u2" coef="0.5"/></fixed></tendon>
  <actuator><motor joint="stuck"/><motor joint="slips"/></actuator>
  <equality>
    <connect body1="box" body2="l2" anchor="0 0 0.05"/>
    <weld body1="ball" body2="box"/>
    <joint joint1="sl2" joint2="sl" polycoef="0 0.5 1 0 0"/>
  </equality>
</mujoco>"""
CTRL = (0.5, 1.5)  # N m: below and above the friction loss of 1 N m


@pytest.fixture(scope="module")
def runs():
    """(jaxsim model, jaxsim trajectory q (STEPS, nq), MuJoCo q (COMPARED, nq), mjModel)."""
    mm = mujoco.MjModel.from_xml_string(SCENE)
    md = mujoco.MjData(mm)
    md.qvel[:2] = (2.0, -1.0)
    md.qvel[mm.jnt_dofadr[4]] = 0.5  # the driving slide of the joint equality
    cone = mm.jnt_dofadr[8]
    md.qvel[cone:cone + 3] = (5.0, 1.0, 0.0)  # thrown well past its 20 degree limit
    md.ctrl[:] = CTRL
    model = load_mjcf(SCENE, dtype=jnp.float64)
    state = jaxsim.make_state(model).replace(v=jnp.asarray(md.qvel), ctrl=jnp.asarray(md.ctrl))
    _, traj = rollout_in_chunks(model, state, jnp.tile(jnp.asarray(CTRL), (STEPS, 1)))
    q_mj = []
    for _ in range(COMPARED):
        mujoco.mj_step(mm, md)
        q_mj.append(md.qpos.copy())
    return model, np.asarray(traj.q), np.asarray(q_mj), mm


def test_rows_match_mujoco_efc():
    """Every equality kind (body and site semantics, relpose, torquescale, polynomial
    couplings, tendons): Jacobian and error equal MuJoCo's ``efc_J`` / ``efc_pos``."""
    xml = """
    <mujoco><option jacobian="dense"/><worldbody>
      <body name="a" pos="0 0 1"><joint name="h1" axis="0 1 0"/><geom size="0.1"/>
        <body name="b" pos="0 0 -0.5"><joint name="h2" axis="1 0 0"/><geom size="0.1"/>
          <site name="sb" pos="0.02 0.01 -0.4" quat="0.9 0.1 0.3 0.2"/></body></body>
      <body name="c" pos="0.5 0 1"><freejoint/><geom size="0.1"/>
        <site name="sc" pos="0.1 -0.05 0.02" quat="0.8 -0.2 0.1 0.4"/></body>
      <body name="d" pos="-0.5 0 1"><joint name="s1" type="slide" axis="0 0 1"/>
        <joint name="s2" type="slide" axis="1 0 0"/><geom size="0.1"/></body>
      <body name="e" pos="1 1 1"><freejoint/><geom size="0.1"/></body>
    </worldbody>
    <tendon><fixed name="t1"><joint joint="h1" coef="0.5"/><joint joint="s1" coef="2"/></fixed>
            <fixed name="t2"><joint joint="s2" coef="1"/></fixed></tendon>
    <equality>
      <connect body1="c" body2="b" anchor="0.1 0.2 -0.1"/>
      <weld body1="c" body2="a" relpose="0.1 0.2 0.3 0.9 0.1 0.2 0.3" anchor="0.05 0 0.1" torquescale="2"/>
      <weld body1="e"/>
      <weld site1="sc" site2="sb"/>
      <connect site1="sc" site2="sb"/>
      <joint joint1="h2" joint2="h1" polycoef="0.1 0.5 0.3 -0.2 0.1"/>
      <joint joint1="s2"/>
      <tendon tendon1="t1" tendon2="t2" polycoef="0 1.5 0.2 0 0"/>
    </equality></mujoco>"""
    mm, model = mujoco.MjModel.from_xml_string(xml), load_mjcf(xml, dtype=jnp.float64)
    md = mujoco.MjData(mm)
    rows = jax.jit(lambda q: equality_rows(model, forward_kinematics(model, q), q)[:2])
    rng = np.random.default_rng(0)
    for _ in range(3):
        qpos = mm.qpos0 + 0.3 * rng.standard_normal(mm.nq)
        for j in (2, 5):  # the free joints' quaternions
            adr = mm.jnt_qposadr[j] + 3
            qpos[adr:adr + 4] /= np.linalg.norm(qpos[adr:adr + 4])
        md.qpos[:] = qpos
        mujoco.mj_forward(mm, md)
        eq = md.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        J, err = rows(jnp.asarray(qpos))
        np.testing.assert_allclose(J, md.efc_J.reshape(md.nefc, mm.nv)[eq], atol=1e-12)
        np.testing.assert_allclose(err, md.efc_pos[eq], atol=1e-12)


def test_equalities_hold_over_five_seconds(runs):
    """Connect and weld within 1e-4 m (weld within 1e-3 rad), the joint polynomial
    within 1e-5, over 5 s of the pendulum swinging the box and sphere around."""
    model, q, _, _ = runs
    err = np.asarray(jax.jit(jax.vmap(lambda q: equality_rows(model, forward_kinematics(model, q), q)[1]))(q))
    assert np.isfinite(q).all()
    motion = np.ptp(q[:, :2], axis=0)
    assert motion.min() > 0.1, f"the pendulum hardly moved: {motion}"
    connect, weld_pos, weld_rot, joint = (np.abs(err[:, sl]).max() for sl in
                                          (slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 10)))
    print(f"max errors over 5 s: connect {connect:.2e} m, weld {weld_pos:.2e} m / {2 * weld_rot:.2e} rad, "
          f"joint equality {joint:.2e} m")
    assert connect < 1e-4 and weld_pos < 1e-4 and 2 * weld_rot < 1e-3 and joint < 1e-5


def test_trajectory_matches_mujoco(runs):
    """1 s beside MuJoCo (near-hard constraints): the closed chain, the coupled slides
    and the friction-loss joints agree; the ball joint stays inside its cone."""
    model, q, q_mj, mm = runs
    chain = np.abs(q[:COMPARED, :2] - q_mj[:, :2]).max()
    slides = np.abs(q[:COMPARED, 16:18] - q_mj[:, 16:18]).max()
    print(f"max |q - q_mujoco| over 1 s: chain {chain:.2e} rad, coupled slides {slides:.2e} m")
    assert chain < 5e-3 and slides < 1e-5
    stuck, slips = mm.jnt_qposadr[6], mm.jnt_qposadr[7]
    # below the loss the joint does not move; above it accelerates at (u - loss) / I
    inertia = mm.body_inertia[mm.jnt_bodyid[7], 2]
    t = DT * np.arange(1, COMPARED + 1)
    assert np.abs(q[:COMPARED, stuck]).max() < 1e-6
    np.testing.assert_allclose(q[:COMPARED, slips], q_mj[:, slips], atol=1e-6)
    np.testing.assert_allclose(q[-1, slips], 0.5 * (CTRL[1] - 1.0) / inertia * (DT * STEPS) ** 2, rtol=2e-3)
    qadr = mm.jnt_qposadr[8]
    angle = 2 * np.arccos(np.clip(np.abs(q[:, qadr]), 0, 1))
    limit = np.deg2rad(20)  # MJCF angles are in degrees
    print(f"ball joint: largest angle {angle.max():.4f} rad (limit {limit:.4f})")
    assert limit - 0.01 < angle.max() < limit + 2e-3


def test_tendon_limit_holds_and_matches_mujoco(runs):
    """A damped double pendulum falls against a fixed tendon's lower limit (u1 + 0.5 u2
    >= -0.5): the length never passes it, the pendulum comes to rest at the potential
    energy's minimum on the limit (found by a 1-D search over MuJoCo's kinematics), and
    the joints follow MuJoCo's (near-hard tendon limit) over 1 s."""
    from scipy.optimize import minimize_scalar

    model, q, q_mj, mm = runs
    u, links = mm.jnt_qposadr[9], [mm.body("u").id, mm.body("u2").id]
    md = mujoco.MjData(mm)

    def height_of_mass(u1):  # kg m, on the limit u2 = 2 (-0.5 - u1)
        md.qpos[u:u + 2] = u1, 2 * (-0.5 - u1)
        mujoco.mj_kinematics(mm, md)
        return float(mm.body_mass[links] @ md.xipos[links, 2])

    u1 = minimize_scalar(height_of_mass, bounds=(-1.5, 0.5), method="bounded", options={"xatol": 1e-12}).x
    rest = np.array([u1, 2 * (-0.5 - u1)])
    length = q[:, u] + 0.5 * q[:, u + 1]
    apart = np.abs(q[:COMPARED, u:u + 2] - q_mj[:, u:u + 2]).max()
    print(f"tendon length over 5 s: min {length.min():.6f} (limit -0.5); rest {q[-1, u:u + 2]} vs the "
          f"constrained minimum {rest}; joints apart from MuJoCo's over 1 s {apart:.1e} rad")
    assert length.min() > -0.5 - 1e-4
    np.testing.assert_allclose(q[-1, u:u + 2], rest, atol=1e-5)
    assert apart < 2e-2  # MuJoCo's limit is soft (2 ms time constant): the impacts differ slightly


def _one_free_body() -> ModelBuilder:
    b = ModelBuilder()
    b.add_body("a", pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint("a", "free")
    return b


@pytest.mark.parametrize("args,kwargs,at_build,match", [
    (("glue", "a"), {}, False, "type must be"),
    (("weld", "a"), {"timeconst": -1.0}, False, "timeconst"),
    (("weld", "a"), {"torquescale": 0.0}, False, "torquescale"),
    (("weld", "a", "nobody"), {}, True, "'nobody' is not a body"),
    (("connect", "a", "a"), {}, True, "same body"),
    (("joint", "a"), {}, True, "not a hinge/slide joint"),
], ids=["type", "timeconst", "torquescale", "unknown_body", "same_body", "joint_on_body"])
def test_bad_equalities_are_refused(args, kwargs, at_build, match):
    b = _one_free_body()
    with pytest.raises(ModelError, match=match):
        b.add_equality("e", *args, **kwargs)
        if at_build:
            b.build()


def test_fetch_mocap_weld_holds_beside_mujoco():
    """gymnasium-robotics' Fetch (pick and place) after gymnasium's own reset: its arm
    hangs on the mocap weld while the fingers close; 0.4 s in float32 beside MuJoCo on
    the same spec (hulls capped at 16 vertices for both). jaxsim's weld is a hard row
    (within 1e-4 m / 1e-3 rad once the reset's residual is gone); MuJoCo's is soft
    (solref 0.02), so the gripper may differ by MuJoCo's sag."""
    from jaxsim.robots import fetch

    model, mm, qpos, qvel = fetch("pick_and_place")
    steps = 200
    ctrl = np.repeat(np.linspace(0.02, 0.0, 300)[:steps, None], mm.nu, 1)  # fingers open, then close (inside their range)
    state = jaxsim.make_state(model).replace(q=jnp.asarray(qpos, jnp.float32), v=jnp.asarray(qvel, jnp.float32))
    final, traj = rollout_in_chunks(model, state, jnp.asarray(ctrl, jnp.float32))
    q = np.asarray(traj.q)
    grip = model.body_id("robot0:gripper_link")

    def weld_and_gripper(q):  # one compile for both
        kin = forward_kinematics(model, q)
        return equality_rows(model, kin, q)[1], kin.body_pos_w[grip]
    err, grip_w = map(np.asarray, jax.jit(jax.vmap(weld_and_gripper))(traj.q))
    md = mujoco.MjData(mm)
    md.qpos[:], md.qvel[:] = qpos, qvel
    grip_mj, q_mj, err_mj = [], [], []
    for u in ctrl:
        md.ctrl[:] = u
        mujoco.mj_step(mm, md)
        grip_mj.append(md.xpos[grip].copy())
        q_mj.append(md.qpos.copy())
        err_mj.append(md.efc_pos[md.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY].copy())
    grip_mj, q_mj, err_mj = np.asarray(grip_mj), np.asarray(q_mj), np.asarray(err_mj)
    settled = slice(100, None)
    pos_err, rot_err = (np.linalg.norm(e[settled], axis=1).max() for e in (err[:, :3], 2 * err[:, 3:]))
    mj_pos, mj_rot = (np.linalg.norm(e[settled], axis=1).max() for e in (err_mj[:, :3], 2 * err_mj[:, 3:]))
    apart = np.abs(grip_w - grip_mj).max()
    fingers = np.abs(q[:, 13:15] - q_mj[:, 13:15]).max()
    print(f"Fetch weld over the last 0.2 s: jaxsim {pos_err:.1e} m / {rot_err:.1e} rad, MuJoCo {mj_pos:.1e} m / "
          f"{mj_rot:.1e} rad; gripper apart {apart:.1e} m, fingers apart {fingers:.1e} m; "
          f"solver iterations mean {float(np.mean(traj.solver.iterations)):.1f}")
    assert not bool(final.nonfinite) and int(final.overflow) == 0
    assert pos_err < 1e-4 and rot_err < 1e-3
    assert apart < 1e-3 and fingers < 1e-4
    assert np.ptp(q[:, 13]) > 0.01  # the fingers did move
    np.testing.assert_allclose(q[:, 15:18], q_mj[:, 15:18], atol=1e-3)  # the block stays on the table
