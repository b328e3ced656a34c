"""ModelBuilder: validation errors name the offending element and say what is wrong;
built models agree with mass matrices and accelerations derived by hand (float64)."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxsim  # noqa: E402
from jaxsim import ModelBuilder, ModelError  # noqa: E402

G = 9.81


# ------------------------------------------------------------------ helpers

def _rotmat(q):
    """Rotation matrix of a (w, x, y, z) quaternion, via Rodrigues' formula (written
    independently of jaxsim's own conversion)."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q)
    w, u = q[0], q[1:]
    s = np.linalg.norm(u)
    if s < 1e-15:
        return np.eye(3)
    axis, angle = u / s, 2.0 * np.arctan2(s, w)
    k = _skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


# jitted: one XLA program per topology compiles much faster than eager op-by-op dispatch
_fk = jax.jit(jaxsim.forward_kinematics)
_mass = jax.jit(lambda model, q: jaxsim.mass_matrix(model, jaxsim.forward_kinematics(model, q)))
_accel = jax.jit(jaxsim.accelerations)


def _one_body(**body_kwargs):
    b = ModelBuilder()
    b.add_body("a", **body_kwargs)
    return b


def _hinged(mass=1.0):
    b = ModelBuilder()
    b.add_body("a", mass=mass)
    b.add_joint("a", "hinge", name="j")
    return b


# ------------------------------------------------------------- validation

def test_negative_mass():
    with pytest.raises(ModelError, match=r"body 'a'.*mass must be positive"):
        _one_body(mass=-1.0)


def test_inertia_not_positive_definite():
    with pytest.raises(ModelError, match=r"body 'a'.*not positive definite"):
        _one_body(mass=1.0, inertia=(1.0, 1.0, 0.0))


def test_point_mass_only_without_joints_of_its_own():
    """A welded point mass (zero inertia, as gymnasium-robotics' Fetch has) adds its mass
    and its parallel-axis inertia to the parent; on joints of its own it is refused."""
    b = _hinged(mass=1.0)
    b.add_body("tip", "a", pos=(0.5, 0, 0), mass=2.0, inertia=(0.0, 0.0, 0.0))  # 0.5 m off the z hinge
    model = b.build(jnp.float64)
    mass_matrix = jax.jit(lambda q: jaxsim.mass_matrix(model, jaxsim.forward_kinematics(model, q)))  # one program
    inertia_a = 0.4 * 1.0 * 0.05 ** 2  # the default: a 5 cm solid sphere
    np.testing.assert_allclose(float(mass_matrix(model.qpos0)[0, 0]), inertia_a + 2.0 * 0.5 ** 2, rtol=1e-12)
    b = _hinged(mass=1.0)
    b.add_body("tip", "a", mass=2.0, inertia=(0.0, 0.0, 0.0))
    b.add_joint("tip", "slide", name="s")
    with pytest.raises(ModelError, match=r"body 'tip'.*point mass"):
        b.build()


def test_inertia_triangle_inequality():
    with pytest.raises(ModelError, match=r"body 'a'.*triangle inequality"):
        _one_body(mass=1.0, inertia=(1.0, 1.0, 5.0))


def test_inertia_not_symmetric():
    bad = [[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(ModelError, match=r"body 'a'.*symmetric"):
        _one_body(mass=1.0, inertia=bad)


def test_full_inertia_tensor_accepted():
    # a valid symmetric tensor is diagonalized: moments are its eigenvalues
    i3 = np.array([[0.3, 0.05, 0.0], [0.05, 0.2, 0.01], [0.0, 0.01, 0.25]])
    b = _one_body(mass=1.0, inertia=i3)
    b.add_joint("a", "free")
    m = b.build(dtype=jnp.float64)
    r = _rotmat(np.asarray(m.body_iquat[1]))
    rebuilt = r @ np.diag(np.asarray(m.body_inertia[1])) @ r.T
    np.testing.assert_allclose(rebuilt, i3, atol=1e-12)


def test_zero_quaternion():
    with pytest.raises(ModelError, match=r"body 'a' quat.*cannot normalize"):
        _one_body(quat=(0.0, 0.0, 0.0, 0.0))


def test_zero_joint_axis():
    b = _one_body()
    with pytest.raises(ModelError, match=r"joint 'j' axis.*cannot normalize"):
        b.add_joint("a", "hinge", name="j", axis=(0.0, 0.0, 0.0))


def test_unknown_joint_type():
    b = _one_body()
    with pytest.raises(ModelError, match=r"joint on body 'a'.*unknown type 'telescope'"):
        b.add_joint("a", "telescope", name="j")


def test_unknown_geom_type():
    b = _one_body()
    with pytest.raises(ModelError, match=r"geom on body 'a'.*unknown type 'torus'"):
        b.add_geom("a", "torus", (0.1, 0.02), name="g")


@pytest.mark.parametrize("radius", [0.0, -0.1])
def test_sphere_non_positive_radius(radius):
    b = _one_body()
    with pytest.raises(ModelError, match=r"geom 'ball'.*sphere needs 1 positive size"):
        b.add_geom("a", "sphere", (radius,), name="ball")


def test_capsule_missing_half_length():
    b = _one_body()
    with pytest.raises(ModelError, match=r"geom 'cap'.*capsule needs 2 positive size"):
        b.add_geom("a", "capsule", (0.1,), name="cap")


def test_joint_and_geom_on_unknown_body():
    b = _one_body()
    b.add_joint("nobody", "hinge", name="j")
    with pytest.raises(ModelError, match=r"joint 'j'.*unknown body 'nobody'"):
        b.build()
    b = _one_body()
    b.add_geom("nobody", "sphere", (0.1,), name="g")
    with pytest.raises(ModelError, match=r"geom 'g'.*unknown body 'nobody'"):
        b.build()


def test_free_joint_must_be_the_only_joint():
    b = _one_body()
    b.add_joint("a", "free", name="f")
    b.add_joint("a", "hinge", name="h")
    with pytest.raises(ModelError, match=r"body 'a'.*free joint must be the body's only joint"):
        b.build()


def test_unknown_parent():
    b = ModelBuilder()
    b.add_body("orphan", parent="ghost")
    with pytest.raises(ModelError, match=r"body 'orphan'.*unknown parent 'ghost'"):
        b.build()


def test_parent_cycle():
    b = ModelBuilder()
    b.add_body("a", parent="b")
    b.add_body("b", parent="a")
    b.add_joint("a", "hinge", name="ja")
    with pytest.raises(ModelError, match=r"\['a', 'b'\].*cycle"):
        b.build()


def test_self_parent_is_a_cycle():
    b = ModelBuilder()
    b.add_body("a", parent="a")
    with pytest.raises(ModelError, match=r"\['a'\].*cycle"):
        b.build()


@pytest.mark.parametrize("kind", ["body", "joint", "geom", "actuator"])
def test_duplicate_names(kind):
    b = ModelBuilder()
    b.add_body("a")
    b.add_joint("a", "hinge", name="j")
    b.add_geom("a", "sphere", (0.1,), name="g")
    b.add_actuator("m", joint="j")
    dup = {"body": lambda: b.add_body("a"),
           "joint": lambda: b.add_joint("a", "slide", name="j"),
           "geom": lambda: b.add_geom("a", "box", (0.1, 0.1, 0.1), name="g"),
           "actuator": lambda: b.add_actuator("m", joint="j")}[kind]
    name = {"body": "a", "joint": "j", "geom": "g", "actuator": "m"}[kind]
    with pytest.raises(ModelError, match=rf"duplicate {kind} name '{name}'"):
        dup()


def test_body_named_world_is_a_duplicate():
    with pytest.raises(ModelError, match=r"duplicate body name 'world'"):
        ModelBuilder().add_body("world")


def test_free_joint_below_a_body():
    b = ModelBuilder()
    b.add_body("base")
    b.add_body("child", parent="base")
    b.add_joint("child", "free", name="float")
    with pytest.raises(ModelError, match=r"joint 'float'.*free joint.*body 'child'.*parent 'base'"):
        b.build()


def test_actuator_on_unknown_joint():
    b = _hinged()
    b.add_actuator("motor", joint="nope")
    with pytest.raises(ModelError, match=r"actuator 'motor'.*joint 'nope'.*not a hinge, slide or ball"):
        b.build()


def test_actuator_gear_must_fit_its_joint():
    """A ball joint takes a 3-vector gear (tests/test_quadruped.py checks its forces
    against MuJoCo); a free joint takes no actuator, a hinge no 3-vector gear."""
    b = _one_body()
    b.add_joint("a", "free", name="root")
    b.add_actuator("motor", joint="root")
    with pytest.raises(ModelError, match=r"actuator 'motor'.*joint 'root'.*not a hinge, slide or ball"):
        b.build()
    b = _hinged()
    b.add_actuator("motor", joint="j", gear=(1.0, 0.0, 0.0))
    with pytest.raises(ModelError, match=r"gear on hinge/slide joint .* is a number"):
        b.build()


def test_moving_body_with_massless_subtree():
    b = ModelBuilder()
    b.add_body("ghost", mass=0.0)
    b.add_joint("ghost", "hinge", name="j")
    b.add_body("ghost_tip", parent="ghost", mass=0.0)  # welded, also massless
    with pytest.raises(ModelError, match=r"body 'ghost'.*positive mass in its subtree"):
        b.build()


def test_massless_moving_body_with_massive_child_is_fine():
    b = ModelBuilder()
    b.add_body("link", mass=0.0)
    b.add_joint("link", "hinge", name="j")
    b.add_body("tip", parent="link", pos=(0, 0, -1), mass=1.0)
    assert b.build().nv == 1


@pytest.mark.parametrize("rng", [(1.0, 1.0), (2.0, -2.0)])
def test_joint_range_low_not_below_high(rng):
    b = _one_body()
    with pytest.raises(ModelError, match=r"joint 'j'.*range must have low < high"):
        b.add_joint("a", "hinge", name="j", range=rng)


def test_negative_damping():
    b = _one_body()
    with pytest.raises(ModelError, match=r"joint 'j'.*damping must be >= 0"):
        b.add_joint("a", "hinge", name="j", damping=-0.1)


@pytest.mark.parametrize("dt", [-1.0, 0.0, float("nan")])
def test_non_positive_timestep(dt):
    with pytest.raises(ModelError, match=r"timestep must be positive"):
        ModelBuilder(timestep=dt)


# ------------------------------------------------ free body: analytic mass matrix

MASS = 2.5
PRINCIPAL = np.array([0.12, 0.2, 0.25])
IQUAT = np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])
BODY_QUAT = np.array([0.6, -0.2, 0.5, 0.4]) / np.linalg.norm([0.6, -0.2, 0.5, 0.4])


def _free_body(com):
    b = ModelBuilder(gravity=(0, 0, -G))
    b.add_body("box", pos=(1.0, -2.0, 0.5), quat=BODY_QUAT, mass=MASS, com=com,
               inertia=PRINCIPAL, inertia_quat=IQUAT)
    b.add_joint("box", "free", name="root")
    b.add_geom("box", "box", (0.1, 0.2, 0.3))
    return b.build(dtype=jnp.float64)


def _free_body_mass_matrix(body_quat, com):
    """6x6 from T = 1/2 m |v_o + w x c_w|^2 + 1/2 w^T I_c,w w, with v_o the world linear
    velocity of the body origin, w = R w_body, c_w = R c (body-frame com offset)."""
    r = _rotmat(body_quat)
    ic_body = _rotmat(IQUAT) @ np.diag(PRINCIPAL) @ _rotmat(IQUAT).T
    ic_world = r @ ic_body @ r.T
    c_w = r @ np.asarray(com)

    def energy(qd):
        v_o, w = qd[:3], r @ qd[3:]
        v_c = v_o + np.cross(w, c_w)
        return 0.5 * MASS * v_c @ v_c + 0.5 * w @ ic_world @ w

    e = np.eye(6)
    # T(x) = 1/2 x^T M x  =>  M_ij = T(e_i + e_j) - T(e_i) - T(e_j)
    return np.array([[energy(e[i] + e[j]) - energy(e[i]) - energy(e[j]) for j in range(6)]
                     for i in range(6)])


@pytest.mark.parametrize("com", [(0.0, 0.0, 0.0), (0.1, -0.05, 0.2)], ids=["com_at_origin", "com_offset"])
def test_free_body_mass_matrix_at_qpos0(com):
    model = _free_body(com)
    q = model.qpos0
    np.testing.assert_allclose(np.asarray(q[3:]), BODY_QUAT, atol=1e-15)
    m_sim = np.asarray(_mass(model, q))
    expected = _free_body_mass_matrix(BODY_QUAT, com)
    np.testing.assert_allclose(m_sim, expected, rtol=0, atol=1e-12)
    # sanity of the reference itself: blocks of the textbook form
    np.testing.assert_allclose(expected[:3, :3], MASS * np.eye(3), atol=1e-12)
    if not np.any(com):
        ic_body = _rotmat(IQUAT) @ np.diag(PRINCIPAL) @ _rotmat(IQUAT).T
        np.testing.assert_allclose(expected[3:, 3:], ic_body, atol=1e-12)
        np.testing.assert_allclose(expected[:3, 3:], 0.0, atol=1e-12)


def test_free_body_mass_matrix_other_pose():
    com = (0.1, -0.05, 0.2)
    model = _free_body(com)
    quat = np.array([0.3, 0.7, -0.1, 0.5])
    quat /= np.linalg.norm(quat)
    q = jnp.asarray(np.r_[0.3, 0.4, -1.0, quat])
    m_sim = np.asarray(_mass(model, q))
    np.testing.assert_allclose(m_sim, _free_body_mass_matrix(quat, com), rtol=0, atol=1e-12)


# ------------------------------------------------ hinge pendulum: analytic qacc

M_P, L_P, I_P = 1.3, 0.7, 1e-3  # point-like mass, arm length, small isotropic inertia
GEAR = 2.0


def _pendulum(forward_dynamics="aba"):
    b = ModelBuilder(gravity=(0, 0, -G), forward_dynamics=forward_dynamics)
    b.add_body("pend", pos=(0.0, 0.0, 1.0), mass=M_P, com=(0.0, 0.0, -L_P),
               inertia=(I_P, I_P, I_P))
    b.add_joint("pend", "hinge", name="swing", axis=(0.0, 1.0, 0.0))
    b.add_actuator("motor", joint="swing", kind="motor", gear=GEAR)
    return b


@pytest.mark.parametrize("forward_dynamics", ["aba", "crba"])
@pytest.mark.parametrize("theta,omega,u", [(0.0, 0.0, 0.0), (0.4, 0.0, 0.0), (-1.2, 3.0, 0.0),
                                           (2.5, -1.0, 0.0), (0.9, 0.5, 0.35)])
def test_pendulum_acceleration(forward_dynamics, theta, omega, u):
    # Com at r = R_y(theta) (0, 0, -l) = (-l sin, 0, -l cos) from the pivot; gravity
    # torque about +y: (r x (0, 0, -m g))_y = -m g l sin(theta). Inertia about the
    # axis: m l^2 + I. One dof: no velocity-product terms. Motor adds gear * u.
    model = _pendulum(forward_dynamics).build(dtype=jnp.float64)
    qacc, _ = _accel(model, jnp.array([theta]), jnp.array([omega]),
                                   jnp.zeros(0), jnp.array([u]))
    ml2 = M_P * L_P**2
    expected = -G / L_P * np.sin(theta) * ml2 / (ml2 + I_P) + GEAR * u / (ml2 + I_P)
    np.testing.assert_allclose(np.asarray(qacc), [expected], rtol=0, atol=1e-10)


@pytest.mark.parametrize("weld", ["no_joint", "fixed_joint"])
def test_welded_child_adds_rigid_inertia(weld):
    m2, principal2 = 0.8, np.array([0.02, 0.03, 0.04])
    child_pos, child_quat = np.array([0.1, 0.05, -0.3]), np.array([0.8, 0.3, 0.1, -0.5])
    child_com, child_iquat = np.array([0.02, -0.01, 0.03]), np.array([0.7, -0.2, 0.6, 0.1])
    b = _pendulum()
    b.add_body("tip", parent="pend", pos=child_pos, quat=child_quat, mass=m2, com=child_com,
               inertia=principal2, inertia_quat=child_iquat)
    if weld == "fixed_joint":
        assert b.add_joint("tip", "fixed") is None
    model = b.build(dtype=jnp.float64)
    assert model.nv == 1 and model.nq == 1

    # parallel-axis theorem about the hinge (y axis through the pend origin)
    r_child = _rotmat(child_quat)
    c2 = child_pos + r_child @ child_com  # child com in the pendulum frame
    i2 = r_child @ _rotmat(child_iquat) @ np.diag(principal2) @ _rotmat(child_iquat).T @ r_child.T
    y = np.array([0.0, 1.0, 0.0])
    d_perp2 = c2 @ c2 - (c2 @ y) ** 2
    expected = M_P * L_P**2 + I_P + y @ i2 @ y + m2 * d_perp2
    for theta in (0.0, 0.8):
        q = jnp.array([theta])
        m_sim = np.asarray(_mass(model, q))
        np.testing.assert_allclose(m_sim, [[expected]], rtol=0, atol=1e-12)
    # the welded child rides along rigidly with the pendulum
    kin = _fk(model, jnp.array([0.8]))
    np.testing.assert_allclose(np.asarray(kin.body_rot_w[2]),
                               np.asarray(kin.body_rot_w[1]) @ r_child, atol=1e-12)
    np.testing.assert_allclose(np.asarray(kin.body_pos_w[2]),
                               np.asarray(kin.body_pos_w[1] + kin.body_rot_w[1] @ child_pos), atol=1e-12)


# ------------------------------------------------ body ordering

def test_children_added_before_parents():
    b = ModelBuilder()
    b.add_body("hand", parent="forearm", pos=(0.0, 0.0, -0.3))
    b.add_joint("hand", "hinge", name="wrist", axis=(1, 0, 0))
    b.add_geom("hand", "sphere", (0.05,), name="hand_geom")
    b.add_body("forearm", parent="upper", pos=(0.0, 0.0, -0.4))
    b.add_joint("forearm", "hinge", name="elbow", axis=(0, 1, 0))
    b.add_body("upper", pos=(0.0, 0.0, 2.0))
    b.add_joint("upper", "hinge", name="shoulder", axis=(0, 1, 0))
    b.add_geom("upper", "capsule", (0.03, 0.2), name="upper_geom")
    b.add_actuator("elbow_motor", joint="elbow", gear=3.0)
    model = b.build(dtype=jnp.float64)
    topo = model.topo

    assert topo.body_name == ("world", "upper", "forearm", "hand")
    declared = {"upper": "world", "forearm": "upper", "hand": "forearm"}
    for i in range(1, topo.nbody):
        p = topo.body_parent[i]
        assert 0 <= p < i
        assert topo.body_name[p] == declared[topo.body_name[i]]
    # joints follow their bodies, and dofs/actuators point at the right joints
    assert topo.jnt_name == ("shoulder", "elbow", "wrist")
    assert [topo.body_name[b_] for b_ in topo.jnt_body] == ["upper", "forearm", "hand"]
    assert topo.jnt_dofadr == (0, 1, 2)
    np.testing.assert_array_equal(np.asarray(model.actuator_moment), [[0.0, 3.0, 0.0]])
    assert [topo.body_name[b_] for b_ in topo.geom_body] == ["hand", "upper"]
    # kinematics at qpos0: positions chain parent -> child
    kin = _fk(model, model.qpos0)
    np.testing.assert_allclose(np.asarray(kin.body_pos_w),
                               [[0, 0, 0], [0, 0, 2.0], [0, 0, 1.6], [0, 0, 1.3]], atol=1e-12)



@pytest.mark.parametrize("hand_first", [True, False], ids=["depth_first", "tree_in_pieces"])
def test_dof_blocks_hold_the_whole_mass_matrix(hand_first):
    """Each kinematic tree's dofs are one diagonal block of the mass matrix (one block
    of all dofs when a tree's dofs are not contiguous), no inertia couples two
    trees, and the accelerations solved block by block match the dense solve."""
    from jaxsim.kinematics import dof_blocks
    b = ModelBuilder(gravity=(0, 0, -G), forward_dynamics="crba")
    b.add_body("arm", pos=(0.0, 0.0, 1.0), mass=1.2, com=(0.1, 0.0, -0.2), inertia=(0.02, 0.03, 0.01))
    b.add_joint("arm", "hinge", name="shoulder", axis=(0, 1, 0))

    def hand():
        b.add_body("hand", parent="arm", pos=(0.0, 0.0, -0.4), mass=0.5, com=(0.0, 0.05, -0.1),
                   inertia=(0.004, 0.003, 0.002))
        b.add_joint("hand", "hinge", name="wrist", axis=(1, 0, 0))
        b.add_joint("hand", "slide", name="reach", axis=(0, 0, 1))

    if hand_first:
        hand()
    b.add_body("box", pos=(1.0, 0.0, 0.5), mass=0.7, inertia=(0.01, 0.02, 0.015))
    b.add_joint("box", "free", name="box")
    if not hand_first:
        hand()
    model = b.build(dtype=jnp.float64)
    blocks = dof_blocks(model.topo)
    assert blocks == (((0, 3), (3, 6)) if hand_first else ((0, 9),))
    rng = np.random.default_rng(0)
    q = np.asarray(model.qpos0) + 0.3 * rng.normal(size=model.nq)
    quat = model.topo.jnt_qposadr[model.topo.jnt_name.index("box")] + 3
    q[quat:quat + 4] /= np.linalg.norm(q[quat:quat + 4])
    m = np.asarray(_mass(model, jnp.asarray(q)))
    if hand_first:
        np.testing.assert_array_equal(m[:3, 3:], 0.0)
    v = rng.normal(size=model.nv)
    kin = _fk(model, jnp.asarray(q))
    bias = np.asarray(jaxsim.dynamics.bias_forces(model, kin, jnp.asarray(v)))
    qacc, _ = _accel(model, jnp.asarray(q), jnp.asarray(v), jnp.zeros(0), jnp.zeros(0))
    np.testing.assert_allclose(qacc, np.linalg.solve(m, -bias), rtol=1e-10, atol=1e-10)
