"""Height-field contact (``collision/hfield.py``): depths against the plane a ramp
lies in and against a brute-force distance to a bumpy surface, MuJoCo's conventions
through the loader, and bodies sliding and rolling down a ramp against their
closed-form accelerations."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim.collision import hfield
from jaxsim.collision.driver import collide
from jaxsim.io import load_mjcf
from jaxsim.kinematics import forward_kinematics
from jaxsim.types import GeomType

G = 9.81
HSIZE = (1.0, 0.8, 0.4, 0.1)  # half x, half y, top z, base (MuJoCo's hfield size)
NROW, NCOL = 17, 21  # 0.1 m cells
SLOPE = 0.3  # ramp angle about -y, rad: z rises with x


def ramp_heights():
    """(NROW, NCOL) heights in [0, 1] of the plane z = 0.2 + tan(SLOPE) x."""
    x = np.linspace(-HSIZE[0], HSIZE[0], NCOL)
    z = 0.2 + np.tan(SLOPE) * x
    return np.tile(z / HSIZE[2], (NROW, 1))


def bumpy_heights(seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(ramp_heights() + 0.08 * rng.standard_normal((NROW, NCOL)), 0, 1)


TETRA = np.array([[0.06, 0.0, -0.03], [-0.03, 0.05, -0.03], [-0.03, -0.05, -0.03], [0.0, 0.0, 0.07]])
TETRA_FACES = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [2, 0, 3]])
SHAPES = (("sphere", (0.05,)), ("capsule", (0.03, 0.06)), ("box", (0.05, 0.04, 0.03)), ("convex", ()))


def ramp_model(heights, friction=(0.25, 0.2), contact="relaxed", dtype=jnp.float64):
    b = jaxsim.ModelBuilder(timestep=2e-3, contact=contact)
    b.add_geom("world", "hfield", HSIZE, name="terrain", heights=heights, friction=friction, contype=0)
    for i, (shape, size) in enumerate(SHAPES):
        # a solid sphere's inertia for all (the rolling test needs the sphere's)
        b.add_body(shape, pos=(0.4 * i - 0.6, 0.0, 1.0), mass=0.5, inertia=(5e-4, 5e-4, 5e-4))
        b.add_joint(shape, "free")
        extra = dict(vertices=TETRA, faces=TETRA_FACES) if shape == "convex" else {}
        b.add_geom(shape, shape, size, name=shape, friction=friction, conaffinity=0, **extra)  # terrain only
    return b.build(dtype)


def random_poses(model, n, seed):
    """(n, nq) configurations: every body near the ramp, turned at random."""
    rng = np.random.default_rng(seed)
    qs = np.tile(np.asarray(model.qpos0), (n, 1))
    for i in range(len(SHAPES)):
        x, y = rng.uniform(-0.8, 0.8, n), rng.uniform(-0.6, 0.6, n)
        quat = rng.standard_normal((n, 4))
        qs[:, 7 * i:7 * i + 3] = np.c_[x, y, 0.2 + np.tan(SLOPE) * x + rng.uniform(-0.02, 0.08, n)]
        qs[:, 7 * i + 3:7 * i + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return qs


def world_points(model, kin, g):
    """The sample points the routine uses for geom g: (points, radius)."""
    pos, rot = np.asarray(kin.geom_pos_w[g]), np.asarray(kin.geom_rot_w[g])
    kind, size = SHAPES[g - 1]
    if kind == "sphere":
        return pos[None], size[0]
    if kind == "capsule":
        return pos + np.outer([-1, 1], rot[:, 2] * size[1]), size[0]
    local = (TETRA if kind == "convex" else
             np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * np.array(size))
    return pos + local @ rot.T, 0.0


@pytest.fixture(scope="module")
def ramp_contacts():
    model = ramp_model(ramp_heights())
    qs = random_poses(model, 24, seed=1)
    contacts = jax.jit(jax.vmap(lambda m, q: collide(m, forward_kinematics(m, q)), in_axes=(None, 0)))
    return model, qs, contacts


def test_ramp_depths_equal_the_plane_it_lies_in(ramp_contacts):
    """On a planar ramp every shape's deepest contact is the plane's: depth to 1e-12,
    normal (into the terrain) the plane's, for spheres, capsules, boxes and hulls."""
    model, qs, contacts = ramp_contacts
    c = contacts(model, jnp.asarray(qs))
    up = np.array([-np.sin(SLOPE), 0.0, np.cos(SLOPE)])
    kin_of = jax.jit(forward_kinematics)
    checked = 0
    for k, q in enumerate(qs):
        kin = kin_of(model, jnp.asarray(q))
        for g in range(1, 5):
            pts, radius = world_points(model, kin, g)
            inside = np.all(np.abs(pts[:, :2]) <= [HSIZE[0], HSIZE[1]], axis=1)
            # signed distance to the plane z = 0.2 + tan(SLOPE) x, as a depth
            depth = radius - (pts - [0, 0, 0.2]) @ up
            mine = np.asarray(c.active[k]) & (np.asarray(c.geom1[k]) == g)
            if not np.all(inside):
                continue
            if np.max(depth) < 0:
                assert not mine.any()
                continue
            got = np.asarray(c.depth[k])[mine]
            assert mine.any()
            np.testing.assert_allclose(got.max(), depth.max(), atol=1e-12)
            deepest = np.flatnonzero(mine)[np.argmax(got)]
            np.testing.assert_allclose(np.asarray(c.normal_w[k, deepest]), -up, atol=1e-12)
            checked += 1
    assert checked >= 40


def test_sphere_on_bumps_matches_brute_force_distance(ramp_contacts):
    """Over a random bumpy field, the sphere's depth is its radius minus its distance to
    the triangulated surface, found here by sampling every triangle densely."""
    model, qs, contacts = ramp_contacts
    heights = bumpy_heights()
    bumpy = model.replace(hfield_data=jnp.asarray(heights.reshape(1, -1)))
    rng = np.random.default_rng(2)
    qs = qs.copy()
    x, y = rng.uniform(-0.7, 0.7, len(qs)), rng.uniform(-0.5, 0.5, len(qs))
    qs[:, 0], qs[:, 1] = x, y
    # the surface: (NROW, NCOL) vertices split as the routine documents, sampled densely
    xs, ys = np.linspace(-HSIZE[0], HSIZE[0], NCOL), np.linspace(-HSIZE[1], HSIZE[1], NROW)
    V = np.stack([*np.meshgrid(xs, ys), HSIZE[2] * heights], -1)
    # centres above the highest corner of their cell (the cloud's distance is unsigned),
    # mostly within a radius of the surface
    col = ((x + HSIZE[0]) / (2 * HSIZE[0]) * (NCOL - 1)).astype(int)
    row = ((y + HSIZE[1]) / (2 * HSIZE[1]) * (NROW - 1)).astype(int)
    top = np.max([V[row + i, col + j, 2] for i in (0, 1) for j in (0, 1)], axis=0)
    qs[:, 2] = top + rng.uniform(0.0, 0.06, len(qs))
    c = contacts(bumpy, jnp.asarray(qs))
    a, b, cc, d = V[:-1, :-1], V[:-1, 1:], V[1:, 1:], V[1:, :-1]
    tri = np.concatenate([np.stack([a, b, cc], -2), np.stack([a, cc, d], -2)]).reshape(-1, 3, 3)
    s = np.linspace(0, 1, 81)
    u, w = np.meshgrid(s, s)
    keep = u + w <= 1
    bary = np.stack([1 - u[keep] - w[keep], u[keep], w[keep]], -1)
    cloud = np.einsum("kj,tjx->tkx", bary, tri).reshape(-1, 3)
    checked = 0
    for k, q in enumerate(qs):
        depth = 0.05 - np.min(np.linalg.norm(cloud - q[:3], axis=1))
        mine = np.asarray(c.active[k]) & (np.asarray(c.geom1[k]) == 1)
        if depth < -1e-3:
            assert not mine.any()
        elif depth > 1e-3:
            np.testing.assert_allclose(float(np.asarray(c.depth[k])[mine][0]), depth, atol=2e-5)
            checked += 1
    assert checked >= 8


def test_slide_and_roll_down_a_ramp():
    """With the exact cone model (the relaxed model's tangential anchors make a rolling
    sphere creep, about 1 % on a plane too), a box (mu_k 0.2 < tan 0.3) slides down
    the ramp at g (sin - mu_k cos) and a solid sphere (mu 0.8) rolls at 5/7 g sin, both
    to 1e-6 and on the surface, across the triangles' edges."""
    model = ramp_model(ramp_heights(), friction=(0.25, 0.2), contact="cone")
    model = model.replace(geom_friction=model.geom_friction.at[1].set(jnp.array([0.8, 0.8])))
    q = np.asarray(model.qpos0).copy()
    up = np.array([-np.sin(SLOPE), 0.0, np.cos(SLOPE)])
    tilted = np.r_[np.cos(-SLOPE / 2), 0.0, np.sin(-SLOPE / 2), 0.0]  # the box's face on the ramp
    for i, x, lift in ((0, 0.5, 0.05), (2, 0.6, 0.03)):  # sphere, box
        q[7 * i:7 * i + 3] = np.r_[x, 0.3 * (i - 1), 0.2 + np.tan(SLOPE) * x] + lift * up
        q[7 * i + 3:7 * i + 7] = tilted if i == 2 else [1, 0, 0, 0]
    for i in (1, 3):
        q[7 * i:7 * i + 3] = [0.0, 0.0, 5.0 + i]  # far above, falling
    steps = 250
    _, traj = rollout_in_chunks(model, jaxsim.make_state(model, q=jnp.asarray(q)), jnp.zeros((steps, 0)))
    t = np.arange(1, steps + 1) * 2e-3
    down = np.array([-np.cos(SLOPE), 0.0, -np.sin(SLOPE)])
    for i, lift, expected in ((0, 0.05, 5 / 7 * G * np.sin(SLOPE)), (2, 0.03, G * (np.sin(SLOPE) - 0.2 * np.cos(SLOPE)))):
        speed = np.asarray(traj.v[:, 6 * i:6 * i + 3]) @ down
        accel = np.polyfit(t[50:], speed[50:], 1)[0]
        np.testing.assert_allclose(accel, expected, rtol=1e-6)
        height = (np.asarray(traj.q[:, 7 * i:7 * i + 3]) - [0, 0, 0.2]) @ up
        np.testing.assert_allclose(height, lift, atol=1e-3)
    assert float(traj.q[-1, 0]) < 0.3  # it has rolled across two cells (0.1 m)
    assert not np.any(np.asarray(traj.nonfinite))


def test_loaded_surface_is_mujocos():
    """An MJCF height field, turned and moved, has MuJoCo's surface: heights under 200
    random points equal to 1e-9 where MuJoCo's ray cast meets it (grid layout, row
    order and the split of each cell into two triangles)."""
    mujoco = pytest.importorskip("mujoco")
    rng = np.random.default_rng(0)
    nrow, ncol = 5, 7
    xml = f"""<mujoco><asset><hfield name="h" nrow="{nrow}" ncol="{ncol}" size="0.6 0.4 0.3 0.1"
      elevation="{' '.join(map(str, rng.uniform(0, 1, nrow * ncol)))}"/></asset>
      <worldbody><geom name="terrain" type="hfield" hfield="h" pos="0.1 -0.2 0.05" euler="0 0 30"/>
      <body pos="0 0 2"><freejoint/><geom size="0.05"/></body></worldbody></mujoco>"""
    mm = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mm)
    mujoco.mj_forward(mm, d)
    model = load_mjcf(xml, dtype=jnp.float64)
    assert model.topo.geom_type[0] == GeomType.HFIELD
    heights = model.hfield_data[0, :nrow * ncol].reshape(nrow, ncol)
    local = np.c_[rng.uniform(-0.6, 0.6, 200), rng.uniform(-0.4, 0.4, 200), np.zeros(200)]
    grid = hfield.Grid(heights, model.hfield_size[0], jnp.zeros(3), max(nrow, ncol))
    mine = np.asarray(jax.vmap(lambda p: grid.under(p)[0])(jnp.asarray(local)))
    rot, pos = d.geom_xmat[0].reshape(3, 3), d.geom_xpos[0]
    geomid = np.zeros(1, np.int32)
    for p, z in zip(local, mine):
        top = pos + rot @ p + [0, 0, 5]
        dist = mujoco.mj_ray(mm, d, top, np.array([0, 0, -1.0]), None, 1, 1, geomid)  # not the ball
        assert geomid[0] == 0
        np.testing.assert_allclose(top[2] - dist, pos[2] + z, atol=1e-9)


def test_a_pair_without_a_collision_routine_is_refused_at_build():
    """A plane against a height field has no narrow phase: the build names the two geoms
    (before any step runs); excluding the pair with contype/conaffinity builds."""
    def terrain_on_plane(contype):
        b = jaxsim.ModelBuilder()
        b.add_geom("world", "plane", (0, 0, 0), name="ground")
        b.add_body("slab", pos=(0, 0, 0.5), mass=1.0, inertia=(0.1, 0.1, 0.1))
        b.add_joint("slab", "free")
        b.add_geom("slab", "hfield", HSIZE, name="terrain", heights=ramp_heights(), contype=contype,
                   conaffinity=contype)
        return b.build(jnp.float64)

    with pytest.raises(jaxsim.ModelError, match=r"geoms 'ground' and 'terrain': no collision routine"):
        terrain_on_plane(1)
    terrain_on_plane(0)
