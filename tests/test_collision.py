"""Collision: analytic configurations, MuJoCo comparisons, buffers and transformations."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest

import jaxsim
from jaxsim.collision import convex
from jaxsim.collision.driver import collide
from jaxsim.collision.pairs import pair_plan
from jaxsim.io import load_mjcf

mujoco = pytest.importorskip("mujoco")

HALF = 0.05  # the SPEC's 0.1 m cube


def quat_axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis]


def scene(*bodies, floor=True, dtype=jnp.float64):
    """Free bodies given as (name, geom type, size, pos, quat)."""
    b = jaxsim.ModelBuilder()
    if floor:
        b.add_geom("world", "plane", name="floor")
    for name, gtype, size, pos, quat in bodies:
        b.add_body(name, pos=pos, quat=quat, mass=0.5, inertia=(1e-3, 1e-3, 1e-3))
        b.add_joint(name, "free")
        b.add_geom(name, gtype, size, name=name)
    return b.build(dtype)


def contacts_of(model, q=None):
    q = model.qpos0 if q is None else q
    return jax.jit(lambda m, q: collide(m, jaxsim.forward_kinematics(m, q)))(model, q)


def active(c):
    a = np.asarray(c.active)
    return {k: np.asarray(getattr(c, k))[a] for k in ("pos_w", "normal_w", "depth", "feature", "geom1", "geom2")}


def test_box_resting_on_plane():
    m = scene(("box", "box", (HALF,) * 3, (0, 0, HALF - 1e-3), (1, 0, 0, 0)))
    c = active(contacts_of(m))
    assert len(c["depth"]) == 4
    np.testing.assert_allclose(c["depth"], 1e-3, atol=1e-12)
    np.testing.assert_allclose(c["normal_w"], np.tile([0, 0, 1.0], (4, 1)), atol=1e-12)
    np.testing.assert_allclose(np.sort(np.abs(c["pos_w"][:, :2]).ravel()), HALF, atol=1e-12)
    np.testing.assert_allclose(c["pos_w"][:, 2], -0.5e-3, atol=1e-12)  # midway


def test_cube_on_edge_and_on_vertex():
    # edge down: rotate 45 deg about x; the lowest edge is at -HALF*sqrt(2)
    edge_h = HALF * np.sqrt(2)
    m = scene(("box", "box", (HALF,) * 3, (0, 0, edge_h - 2e-3), quat_axis_angle([1, 0, 0], np.pi / 4)))
    c = active(contacts_of(m))
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], 2e-3, atol=1e-12)
    np.testing.assert_allclose(np.sort(c["pos_w"][:, 0]), [-HALF, HALF], atol=1e-12)
    # vertex down: the body diagonal along z
    rot = quat_axis_angle(np.cross([1, 1, 1], [0, 0, -1]), np.arccos(-1 / np.sqrt(3)))
    vert_h = HALF * np.sqrt(3)
    m = scene(("box", "box", (HALF,) * 3, (0, 0, vert_h - 1e-3), rot))
    c = active(contacts_of(m))
    assert len(c["depth"]) == 1
    np.testing.assert_allclose(c["depth"], 1e-3, atol=1e-9)
    np.testing.assert_allclose(c["pos_w"][0, :2], 0, atol=1e-9)


def test_cube_rotated_45_on_cube_gives_octagon():
    m = scene(("low", "box", (HALF,) * 3, (0, 0, 0), (1, 0, 0, 0)),
              ("top", "box", (HALF,) * 3, (0, 0, 2 * HALF - 1e-3), quat_axis_angle([0, 0, 1], np.pi / 4)),
              floor=False)
    c = active(contacts_of(m))
    assert len(c["depth"]) == 8  # edge-edge crossings of the two square faces
    np.testing.assert_allclose(c["depth"], 1e-3, atol=1e-12)
    np.testing.assert_allclose(c["normal_w"], np.tile([0, 0, 1.0], (8, 1)), atol=1e-12)
    radius = np.linalg.norm(c["pos_w"][:, :2], axis=1)
    # corners where the rotated square's edges |x| + |y| = HALF sqrt(2) cross x = +-HALF
    np.testing.assert_allclose(radius, np.hypot(HALF, HALF * (np.sqrt(2) - 1)), atol=1e-9)


def test_cube_edge_on_cube_edge():
    """Crossed edges: no vertex of either cube is inside the other, one edge-edge contact."""
    depth = 1e-3
    gap = 2 * HALF * np.sqrt(2) - depth
    m = scene(("low", "box", (HALF,) * 3, (0, 0, 0), quat_axis_angle([0, 1, 0], np.pi / 4)),
              ("top", "box", (HALF,) * 3, (0, 0, gap), quat_axis_angle([1, 0, 0], np.pi / 4)),
              floor=False)
    c = active(contacts_of(m))
    assert len(c["depth"]) == 1
    np.testing.assert_allclose(c["depth"], depth, atol=1e-12)
    np.testing.assert_allclose(np.abs(c["normal_w"][0]), [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(c["pos_w"][0], [0, 0, HALF * np.sqrt(2) - depth / 2], atol=1e-12)


def test_sphere_and_capsule_primitives():
    r, h = 0.05, 0.2
    m = scene(("ball", "sphere", (r,), (0, 0, r - 1e-3), (1, 0, 0, 0)),
              ("cap", "capsule", (r, h), (1.0, 0, r - 2e-3), quat_axis_angle([0, 1, 0], np.pi / 2)),
              ("ball2", "sphere", (r,), (0, 0.5, 1.0), (1, 0, 0, 0)),
              ("ball3", "sphere", (r,), (0, 0.5, 1.0 + 2 * r - 3e-3), (1, 0, 0, 0)))
    c = active(contacts_of(m))
    names = m.topo.geom_name
    pairs = {(names[a], names[b]): (d, n) for a, b, d, n in zip(c["geom1"], c["geom2"], c["depth"], c["normal_w"])}
    np.testing.assert_allclose(pairs[("floor", "ball")][0], 1e-3, atol=1e-12)
    cap = [d for a, b, d in zip(c["geom1"], c["geom2"], c["depth"]) if names[b] == "cap"]
    np.testing.assert_allclose(cap, [2e-3, 2e-3], atol=1e-12)  # lying flat: both ends
    d, n = pairs[("ball2", "ball3")]
    np.testing.assert_allclose(d, 3e-3, atol=1e-12)
    np.testing.assert_allclose(n, [0, 0, 1], atol=1e-12)  # from ball2 into ball3


def test_capsule_capsule_crossed():
    r = 0.03
    m = scene(("a", "capsule", (r, 0.2), (0, 0, 0), quat_axis_angle([0, 1, 0], np.pi / 2)),
              ("b", "capsule", (r, 0.2), (0, 0, 2 * r - 1e-3), quat_axis_angle([1, 0, 0], np.pi / 2)),
              floor=False)
    c = active(contacts_of(m))
    np.testing.assert_allclose(c["depth"], [1e-3], atol=1e-12)
    np.testing.assert_allclose(c["pos_w"][0], [0, 0, r - 0.5e-3], atol=1e-12)


def test_feature_ids_stable_while_sliding():
    m = scene(("box", "box", (HALF,) * 3, (0, 0, HALF - 1e-3), quat_axis_angle([0, 0, 1], 0.3)))
    f = jax.jit(lambda q: collide(m, jaxsim.forward_kinematics(m, q)))
    ref = None
    for x in np.linspace(0, 0.5, 6):
        c = f(m.qpos0.at[0].add(x))
        slots = {int(k): int(ft) for k, ft in zip(np.flatnonzero(np.asarray(c.active)), np.asarray(c.feature)[np.asarray(c.active)])}
        assert len(slots) == 4
        feats = sorted(slots.values())
        ref = feats if ref is None else ref
        assert feats == ref


def test_overflow_counts_dropped_contacts():
    # a box sunk below the plane: 8 vertices below, 4 slots
    m = scene(("box", "box", (HALF,) * 3, (0, 0, -HALF - 0.01), (1, 0, 0, 0)))
    c = contacts_of(m)
    assert int(np.sum(np.asarray(c.active))) == 4
    assert int(c.overflow) == 4
    np.testing.assert_allclose(np.asarray(c.depth)[np.asarray(c.active)], 2 * HALF + 0.01, atol=1e-12)


def test_pair_table_filters():
    xml = """
    <mujoco><worldbody>
      <geom name="floor" type="plane" size="1 1 .1"/>
      <geom name="static_box" type="box" size=".1 .1 .1" pos="1 0 0"/>
      <body name="torso"><freejoint/>
        <geom name="torso" type="sphere" size=".1"/>
        <geom name="torso2" type="sphere" size=".1" pos="0 .1 0"/>
        <body name="arm"><joint type="hinge"/>
          <geom name="arm" type="capsule" size=".02 .1"/>
          <body name="hand"><joint type="hinge"/><geom name="hand" type="sphere" size=".03"/></body>
        </body>
        <body name="ghost"><joint type="hinge"/><geom name="ghost" type="sphere" size=".03" contype="0" conaffinity="0"/></body>
      </body>
    </worldbody>
    <contact><exclude body1="torso" body2="hand"/></contact></mujoco>"""
    m = load_mjcf(xml, dtype=jnp.float64)
    names = m.topo.geom_name
    got = {tuple(sorted((names[a], names[b]))) for g in pair_plan(m.topo).groups for a, b in zip(g.geom1, g.geom2)}
    assert got == {("floor", "torso"), ("floor", "torso2"), ("arm", "floor"), ("floor", "hand"),
                   ("static_box", "torso"), ("static_box", "torso2"), ("arm", "static_box"),
                   ("hand", "static_box")}
    # the same set MuJoCo would test: its broad phase pairs minus what the filters drop
    assert ("arm", "torso") not in got and ("hand", "torso") not in got and ("floor", "static_box") not in got


def _mujoco_pair(xml, qpos):
    mm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mm)
    d.qpos[:] = qpos
    mujoco.mj_forward(mm, d)
    return mm, d


def _sat_min_overlap(verts_a, verts_b, axes):
    """Independent NumPy SAT: minimum projection overlap over candidate axes."""
    axes = axes[np.linalg.norm(axes, axis=1) > 1e-9]
    axes = axes / np.linalg.norm(axes, axis=1, keepdims=True)
    pa, pb = verts_a @ axes.T, verts_b @ axes.T
    return np.min(np.minimum(pa.max(0) - pb.min(0), pb.max(0) - pa.min(0)))


def _box_verts(pos, rot, size):
    return pos + (convex.BOX_SIGNS * size) @ rot.T


BOXBOX = """<mujoco><worldbody>
<body name="a"><freejoint/><geom type="box" size="{sa}"/></body>
<body name="b"><freejoint/><geom type="box" size="{sb}"/></body></worldbody></mujoco>"""


def random_quat(rng):
    q = rng.standard_normal(4)
    return q / np.linalg.norm(q)


def test_box_box_against_mujoco():
    """500 random overlapping box pairs vs mj_collision (margins zero).

    Where MuJoCo's contact normal is the axis of least overlap, depth and normal agree
    within 1e-5 m / 1e-3 rad. MuJoCo's box-box routine estimates edge-axis overlaps
    conservatively and then sometimes keeps a face axis whose overlap exceeds the
    minimum; in those poses our depth must still equal the exact minimum overlap (an
    independent NumPy SAT over the 15 axes), be smaller than MuJoCo's, and MuJoCo's
    depth may not exceed the overlap along its own normal.
    """
    rng = np.random.default_rng(0)
    f = jax.jit(lambda m, q: collide(m, jaxsim.forward_kinematics(m, q)))
    n_mj = n_agree = 0
    for _ in range(500):
        sa, sb = rng.uniform(0.05, 0.3, 3), rng.uniform(0.05, 0.3, 3)
        xml = BOXBOX.format(sa=" ".join(map(str, sa)), sb=" ".join(map(str, sb)))
        direction = rng.standard_normal(3)
        direction /= np.linalg.norm(direction)
        dist = rng.uniform(0.3, 1.0) * 0.8 * (np.linalg.norm(sa) + np.linalg.norm(sb))
        qpos = np.r_[0, 0, 0, random_quat(rng), direction * dist, random_quat(rng)]
        mm, d = _mujoco_pair(xml, qpos)
        c = f(load_mjcf(xml, dtype=jnp.float64), jnp.asarray(qpos))
        act, dep = np.asarray(c.active), np.asarray(c.depth)
        if d.ncon == 0:
            assert not np.any(act & (dep > 1e-6))
            continue
        n_mj += 1
        assert act.any()
        k = int(np.argmin(d.contact.dist[:d.ncon]))
        mj_depth, mj_normal = -d.contact.dist[k], d.contact.frame[k][:3] * (1 if d.contact.geom1[k] == 0 else -1)
        j = int(np.argmax(np.where(act, dep, -np.inf)))
        ours, normal = dep[j], np.asarray(c.normal_w[j])
        va = _box_verts(d.geom_xpos[0], d.geom_xmat[0].reshape(3, 3), sa)
        vb = _box_verts(d.geom_xpos[1], d.geom_xmat[1].reshape(3, 3), sb)
        ra, rb = d.geom_xmat[0].reshape(3, 3), d.geom_xmat[1].reshape(3, 3)
        axes = np.concatenate([ra.T, rb.T, np.cross(ra.T[:, None], rb.T[None]).reshape(-1, 3)])
        sat = _sat_min_overlap(va, vb, axes)
        # the exact SAT depth, up to the documented preference for face axes (1e-5 x size)
        assert sat - 1e-9 <= ours <= sat + 1e-5
        if abs(ours - mj_depth) <= 1e-5:
            n_agree += 1
            angle = np.arccos(np.clip(normal @ mj_normal, -1, 1))
            # axes whose overlaps tie within the depth tolerance are equally valid
            along_ours = _sat_min_overlap(va, vb, normal[None])
            assert angle < 1e-3 or abs(along_ours - mj_depth) <= 1e-5
        else:
            overlap_mj = _sat_min_overlap(va, vb, mj_normal[None])
            assert ours < mj_depth <= overlap_mj + 1e-6  # MuJoCo's axis is not the least overlap
    assert n_mj > 300 and n_agree >= 0.85 * n_mj


def test_box_plane_against_mujoco():
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
    <body><freejoint/><geom type="box" size=".1 .2 .05"/></body></worldbody></mujoco>"""
    model = load_mjcf(xml, dtype=jnp.float64)
    f = jax.jit(lambda q: collide(model, jaxsim.forward_kinematics(model, q)))
    rng = np.random.default_rng(1)
    compared = 0
    for _ in range(500):
        qpos = np.r_[0, 0, rng.uniform(-0.1, 0.2), random_quat(rng)]
        _, d = _mujoco_pair(xml, qpos)
        c = f(jnp.asarray(qpos))
        act, dep = np.asarray(c.active), np.asarray(c.depth)
        if d.ncon == 0:
            assert not np.any(act & (dep > 1e-9))
            continue
        compared += 1
        np.testing.assert_allclose(dep[act].max(), -d.contact.dist[:d.ncon].min(), atol=1e-9)
        np.testing.assert_allclose(np.asarray(c.normal_w)[act][0], d.contact.frame[0][:3], atol=1e-9)
        assert min(act.sum(), 4) == min(d.ncon, 4)
    assert compared > 200


def stacked_boxes():
    return scene(("low", "box", (HALF,) * 3, (0, 0, HALF - 1e-3), (1, 0, 0, 0)),
                 ("top", "box", (HALF,) * 3, (0.01, 0, 3 * HALF - 2e-3), quat_axis_angle([0, 0, 1], 0.4)))


def _collide_at(m, q):
    return collide(m, jaxsim.forward_kinematics(m, q))


@pytest.mark.benchmark  # op-by-op dispatch compiles each of collide's ~500 operations: 15 s
def test_eager_collide_equals_jitted():
    m = stacked_boxes()
    eager, jitted = _collide_at(m, m.qpos0), jax.jit(_collide_at)(m, m.qpos0)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)


def test_jit_vmap_float32_and_gradients():
    m = stacked_boxes()
    fn = _collide_at
    jitted = jax.jit(fn)(m, m.qpos0)
    qs = m.qpos0 + 0.002 * jax.random.normal(jax.random.PRNGKey(0), (8, m.nq))
    batched = jax.jit(jax.vmap(fn, (None, 0)))(m, qs)
    for i in range(8):
        one = jax.jit(fn)(m, qs[i])
        np.testing.assert_allclose(np.asarray(batched.depth[i]), np.asarray(one.depth), atol=1e-12)
        np.testing.assert_array_equal(np.asarray(batched.active[i]), np.asarray(one.active))
    c32 = jax.jit(fn)(m.astype(jnp.float32), m.qpos0.astype(jnp.float32))
    np.testing.assert_array_equal(np.asarray(c32.active), np.asarray(jitted.active))
    np.testing.assert_allclose(np.asarray(c32.depth)[np.asarray(c32.active)],
                               np.asarray(jitted.depth)[np.asarray(jitted.active)], atol=2e-6)

    def total_depth(q):
        c = fn(m, q)
        return jnp.sum(jnp.where(c.active, c.depth, 0.0))

    # generic pose, a grazing pose (touching, zero depth) and coincident identical boxes
    grad = jax.jit(jax.grad(total_depth))
    for q in (m.qpos0, m.qpos0.at[2].set(HALF), m.qpos0.at[7:10].set(m.qpos0[0:3])):
        assert np.all(np.isfinite(np.asarray(grad(q))))
    g = grad(m.qpos0)
    # lowering the lower box's free joint by dz deepens the 4 floor contacts and
    # shallows the box-box contacts: d(sum)/dz = -4 + (number of box-box contacts)
    nbb = int(np.sum(np.asarray(jitted.active) & (np.asarray(jitted.geom1) != 0)))
    np.testing.assert_allclose(float(g[2]), -4 + nbb, atol=1e-9)


def _mesh_box_xml(body_geom, body_pos, body_quat):
    corners = " ".join(f"{x} {y} {z}" for x in (-.1, .1) for y in (-.15, .15) for z in (-.05, .05))
    return f"""<mujoco><asset><mesh name="m" vertex="{corners}"/></asset><worldbody>
    <body name="block" pos="0 0 0" euler="0.2 -0.1 0.3"><freejoint/><geom type="mesh" mesh="m"/></body>
    <body name="probe" pos="{body_pos}" quat="{body_quat}"><freejoint/>{body_geom}</body>
    </worldbody></mujoco>"""


@pytest.mark.parametrize("geom", ['<geom type="sphere" size=".04"/>',
                                  '<geom type="capsule" size=".03 .08"/>'])
def test_sphere_and_capsule_against_convex_mesh(geom):
    """A box-shaped convex mesh collides like the analytic box: the probe's deepest
    depth equals the exact depth computed from the box's signed distance in NumPy."""
    rng = np.random.default_rng(3)
    rot = None
    f = None
    hits = 0
    for _ in range(60):
        pos = rng.uniform(-0.2, 0.2, 3)
        quat = random_quat(rng)
        model = load_mjcf(_mesh_box_xml(geom, " ".join(map(str, pos)), " ".join(map(str, quat))), dtype=jnp.float64)
        f = f or jax.jit(lambda m, q: (collide(m, jaxsim.forward_kinematics(m, q)), jaxsim.forward_kinematics(m, q)))
        c, kin = f(model, model.qpos0)
        rot = np.asarray(kin.geom_rot_w[0])
        centre = np.asarray(kin.geom_pos_w[0])
        # MuJoCo re-centres a mesh on its principal axes: read the extents back
        half = np.abs(np.asarray(model.mesh_vert[0])).max(0)
        np.testing.assert_allclose(np.sort(half), [0.05, 0.1, 0.15], atol=1e-9)

        def box_sd(p):  # exact signed distance of a point to the box, in NumPy
            local = rot.T @ (p - centre)
            q = np.abs(local) - half
            return np.linalg.norm(np.maximum(q, 0)) + min(q.max(), 0)

        gtype = model.topo.geom_type[1]
        r = float(model.geom_size[1, 0])
        if gtype == jaxsim.GeomType.SPHERE:
            expected = r - box_sd(np.asarray(kin.geom_pos_w[1]))
        else:
            h = float(model.geom_size[1, 1])
            axis = np.asarray(kin.geom_rot_w[1])[:, 2]
            from scipy.optimize import minimize_scalar  # the distance is convex along the axis
            best = minimize_scalar(lambda t: box_sd(np.asarray(kin.geom_pos_w[1]) + t * axis),
                                   bounds=(-h, h), method="bounded", options={"xatol": 1e-12})
            expected = r - min(best.fun, box_sd(np.asarray(kin.geom_pos_w[1]) - h * axis),
                               box_sd(np.asarray(kin.geom_pos_w[1]) + h * axis))
        act = np.asarray(c.active)
        if expected < -1e-6:
            assert not act.any()
            continue
        if expected > 1e-6:
            hits += 1
            assert act.any()
            np.testing.assert_allclose(np.asarray(c.depth)[act].max(), expected, atol=1e-7)
    assert hits > 10


def test_capsule_near_a_cylinder_edge_has_the_contacts_derivative():
    """A capsule 2 cm from a vertical edge of a cylinder (a convex polyhedron): the
    deepest contact's depth, point and normal differentiated with respect to both
    bodies' coordinates match central finite differences. The segment's deepest point
    moves with the capsule; held fixed, the normal turned at 53/m along the capsule's
    axis where the differences give 0.006/m."""
    xml = """<mujoco><worldbody>
    <body name="object"><joint type="slide" axis="1 0 0"/><geom type="cylinder" size="0.05 0.05"/></body>
    <body name="pusher" pos="-0.069 0.01 0.012" euler="0.1 0.05 1.6"><freejoint/>
      <geom type="capsule" fromto="0 -0.1 0 0 0.1 0" size="0.02"/></body>
    </worldbody></mujoco>"""
    model = load_mjcf(xml, dtype=jnp.float64)

    def deepest(q):
        c = collide(model, jaxsim.forward_kinematics(model, q))
        k = jnp.argmax(jnp.where(c.active, c.depth, -jnp.inf))
        return jnp.concatenate([c.depth[k, None], c.pos_w[k], c.normal_w[k]])

    q0 = np.asarray(model.qpos0)
    f = jax.jit(deepest)  # one program: eager dispatch would compile every operation on its own
    assert float(f(q0)[0]) > 0
    jac = np.asarray(jax.jit(jax.jacfwd(deepest))(q0))
    h = 1e-6
    step = h * np.eye(model.nq)
    fd = np.stack([(np.asarray(f(q0 + step[i])) - np.asarray(f(q0 - step[i]))) / (2 * h) for i in range(model.nq)], 1)
    # measured: depth and point within 1e-4, the normal within 1.4e-2 (before: 53)
    np.testing.assert_allclose(jac[:4], fd[:4], atol=2e-3)
    np.testing.assert_allclose(jac[4:], fd[4:], atol=5e-2)


def test_capsule_flat_on_convex_mesh_has_two_contacts():
    corners = " ".join(f"{x} {y} {z}" for x in (-.5, .5) for y in (-.5, .5) for z in (-.1, 0))
    xml = f"""<mujoco><asset><mesh name="slab" vertex="{corners}"/></asset><worldbody>
    <geom type="mesh" mesh="slab"/>
    <body pos="0.1 0 0.028" euler="0 90 0"><freejoint/><geom type="capsule" size=".03 .1"/></body>
    </worldbody></mujoco>"""
    model = load_mjcf(xml, dtype=jnp.float64)
    c = active(contacts_of(model))
    np.testing.assert_allclose(np.sort(c["depth"]), [0.002, 0.002], atol=1e-9)
    np.testing.assert_allclose(np.sort(c["pos_w"][:, 0]), [0.0, 0.2], atol=1e-6)
    np.testing.assert_allclose(c["normal_w"], np.tile([0, 0, -1.0], (2, 1)), atol=1e-9)  # capsule into slab


def test_driver_sphere_and_capsule_on_box():
    b = jaxsim.ModelBuilder()
    b.add_geom("world", "box", (0.5, 0.5, 0.1), pos=(0, 0, -0.1), name="table")
    b.add_body("ball", pos=(0.2, 0, 0.05 - 1e-3), mass=0.1, inertia=(1e-4,) * 3)
    b.add_joint("ball", "free")
    b.add_geom("ball", "sphere", (0.05,), name="ball")
    b.add_body("rod", pos=(-0.2, 0, 0.02 - 2e-3), quat=quat_axis_angle([1, 0, 0], np.pi / 2), mass=0.1,
               inertia=(1e-4,) * 3)
    b.add_joint("rod", "free")
    b.add_geom("rod", "capsule", (0.02, 0.1), name="rod")
    m = b.build(jnp.float64)
    c = active(contacts_of(m))
    names = m.topo.geom_name
    by = {}
    for g1, g2, d, n in zip(c["geom1"], c["geom2"], c["depth"], c["normal_w"]):
        by.setdefault((names[g1], names[g2]), []).append((d, n))
    np.testing.assert_allclose([d for d, _ in by[("ball", "table")]], [1e-3], atol=1e-12)
    np.testing.assert_allclose([d for d, _ in by[("rod", "table")]], [2e-3, 2e-3], atol=1e-12)
    for d, n in by[("ball", "table")] + by[("rod", "table")]:
        np.testing.assert_allclose(n, [0, 0, -1], atol=1e-12)  # from the probe into the table


def test_narrow_pairs_keeps_the_nearest_pairs():
    """``narrow_pairs`` caps how many pairs of a kind run the narrow phase: with the cap
    at the number of touching pairs the contacts equal the uncapped ones; below it the
    nearest pairs keep theirs, and each touching pair left out counts in ``overflow``.
    Five hull blocks: 0-1 overlap 3 mm, 2-3 overlap 1 mm, 4 rests on the floor, the
    others are in the air."""
    corners = " ".join(f"{x} {y} {z}" for x in (-.05, .05) for y in (-.05, .05) for z in (-.05, .05))

    def xml(x3):
        bodies = "".join(f'<body pos="{x} {y} {z}"><freejoint/><geom type="mesh" mesh="m"/></body>'
                         for x, y, z in ((0, 0, 1), (0.097, 0, 1), (0, 1, 1), (x3, 1, 1), (2, 2, 0.049)))
        return f"""<mujoco><asset><mesh name="m" vertex="{corners}"/></asset><worldbody>
        <geom type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>"""

    fn = jax.jit(lambda m: collide(m, jaxsim.forward_kinematics(m, m.qpos0)))
    full, two, one = (fn(load_mjcf(xml(0.099), dtype=jnp.float64, narrow_pairs=k)) for k in (0, 2, 1))
    act = np.asarray(full.active)
    pairs = lambda c: set(zip(np.asarray(c.geom1)[np.asarray(c.active)], np.asarray(c.geom2)[np.asarray(c.active)]))  # noqa: E731
    assert pairs(full) == {(0, 5), (1, 2), (3, 4)}  # the floor and block 4, and the two touching pairs
    for c in (two, one):
        for name in ("pos_w", "depth", "normal_w", "feature", "geom1", "geom2"):
            keep = np.asarray(c.active)
            np.testing.assert_array_equal(np.asarray(getattr(c, name))[keep],
                                          np.asarray(getattr(full, name))[keep])
    np.testing.assert_array_equal(np.asarray(two.active), act)
    assert int(two.overflow) == int(full.overflow)  # face-face blocks: more candidates than slots
    # cap 1: the floor keeps block 4 (the lowest), hull-hull keeps 0-1 (deeper) and drops
    # 2-3, whose own candidate overflow goes with it (measured with 2-3 apart)
    assert pairs(one) == {(0, 5), (1, 2)}
    apart = fn(load_mjcf(xml(0.2), dtype=jnp.float64))
    assert int(one.overflow) == int(apart.overflow) + 1

    def total_depth(m, q):  # through the run-time pair pick: the same gradient
        c = collide(m, jaxsim.forward_kinematics(m, q))
        return jnp.sum(jnp.where(c.active, c.depth, 0.0))

    full_m, capped_m = (load_mjcf(xml(0.099), dtype=jnp.float64, narrow_pairs=k) for k in (0, 2))
    grads = [jax.jit(jax.grad(total_depth, 1))(m, m.qpos0) for m in (full_m, capped_m)]
    assert float(jnp.abs(grads[0]).max()) > 1.0
    np.testing.assert_array_equal(np.asarray(grads[1]), np.asarray(grads[0]))
