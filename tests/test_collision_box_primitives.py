"""Sphere-box and capsule-box narrow phase (jaxsim.collision.box_primitives) against
MuJoCo's own colliders on random poses, against an independent numerical oracle, on
analytic cases, and under jit / vmap / grad / float32.

MuJoCo's capsule-box contacts are sphere-box contacts at chosen points of the capsule's
segment, the first one being the segment point closest to the box *surface*. While the
segment stays outside the box that point is the deepest one and both codes agree; once
the segment enters the box MuJoCo's choice is no longer the deepest point (and it can miss
a capsule that pierces a box), so those poses are checked against the oracle instead, and
against MuJoCo only for "never shallower than MuJoCo".
"""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from jax.test_util import check_grads
from scipy.optimize import minimize_scalar
from scipy.spatial.transform import Rotation

from jaxsim.collision.box_primitives import capsule_box, sphere_box

mujoco = pytest.importorskip("mujoco")

NPOSE = 500
DEPTH_TOL = 1e-5  # m
NORMAL_TOL = 1e-3  # rad

sphere_jit, capsule_jit = jax.jit(sphere_box), jax.jit(capsule_box)
sphere_vmap, capsule_vmap = jax.jit(jax.vmap(sphere_box)), jax.jit(jax.vmap(capsule_box))

XML = """<mujoco><option><flag gravity="disable"/></option><worldbody>
<body><freejoint/>
  <geom type="{kind}" size="{size1}" margin="0" contype="1" conaffinity="1"/></body>
<body><freejoint/>
  <geom type="box" size="{size2}" margin="0" contype="1" conaffinity="1"/></body>
</worldbody></mujoco>"""


def mujoco_contacts(kind, size1, pos1, rot1, size2, pos2, rot2):
    """MuJoCo's contacts [(depth, pos (3,), normal (3,) from geom 0 into the box)]."""
    fmt = lambda v: " ".join(repr(float(x)) for x in v)
    m = mujoco.MjModel.from_xml_string(XML.format(kind=kind, size1=fmt(size1), size2=fmt(size2)))
    d = mujoco.MjData(m)
    quat = lambda r: np.roll(Rotation.from_matrix(r).as_quat(), 1)  # (w, x, y, z)
    d.qpos[:] = np.concatenate([pos1, quat(rot1), pos2, quat(rot2)])
    mujoco.mj_forward(m, d)
    out = []
    for c in d.contact[: d.ncon]:
        normal = c.frame[:3] * (1.0 if c.geom[0] == 0 else -1.0)
        out.append((-c.dist, c.pos.copy(), normal))
    return out


I3 = np.eye(3)
SIZE = np.array([0.3, 0.2, 0.1])  # the box of the hand-made cases


def axis_rot(axis):
    """A rotation taking local z onto ``axis``."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return Rotation.align_vectors([axis], [[0.0, 0.0, 1.0]])[0].as_matrix()


def box_sdf(p, size):
    q = np.abs(p) - size
    return np.linalg.norm(np.maximum(q, 0.0)) + min(q.max(), 0.0)


def segment_min_sdf(pose):
    """Oracle: min over the capsule's segment of the box's signed distance (convex in t)."""
    c = pose["box_rot"].T @ (pose["pos"] - pose["box_pos"])
    d = pose["box_rot"].T @ pose["rot"][:, 2] * pose["half_length"]
    f = lambda t: box_sdf(c + t * d, pose["box_size"])
    res = minimize_scalar(f, bounds=(-1.0, 1.0), method="bounded", options={"xatol": 1e-12})
    return min(res.fun, f(-1.0), f(1.0))


def random_pose(rng):
    """A box and a sphere/capsule placed near it (most overlap)."""
    box_size = rng.uniform(0.05, 0.5, 3)
    radius = rng.uniform(0.02, 0.3)
    loc = rng.uniform(-1.3, 1.3, 3) * (box_size + 0.5 * radius)
    box_rot = Rotation.random(random_state=rng).as_matrix()
    box_pos = rng.normal(size=3) * 0.3
    return dict(box_size=box_size, box_rot=box_rot, box_pos=box_pos, radius=radius,
                pos=box_pos + box_rot @ loc, rot=Rotation.random(random_state=rng).as_matrix(),
                half_length=rng.uniform(0.02, 0.5))


def stack(poses):
    return {k: jnp.asarray(np.stack([p[k] for p in poses])) for k in poses[0]}


def run_sphere(b):
    return sphere_vmap(b["pos"], b["radius"], b["box_pos"], b["box_rot"], b["box_size"])


def run_capsule(b):
    return capsule_vmap(b["pos"], b["rot"], b["radius"], b["half_length"], b["box_pos"],
                        b["box_rot"], b["box_size"])


def mujoco_for(kind, pose):
    size1 = [pose["radius"]] + ([pose["half_length"]] if kind == "capsule" else [])
    return mujoco_contacts(kind, size1, pose["pos"], pose["rot"], pose["box_size"],
                           pose["box_pos"], pose["box_rot"])


def compare(kind, poses, ours):
    """Max depth / normal / position errors of our deepest valid contact vs MuJoCo's."""
    depth, pos, normal, _, valid, _ = map(np.asarray, ours)
    errs, ncontact = [], 0
    for i, pose in enumerate(poses):
        ref = mujoco_for(kind, pose)
        if not ref:
            assert not np.any(valid[i] & (depth[i] > 1e-6)), (i, depth[i])
            continue
        ncontact += 1
        dref, pref, nref = max(ref, key=lambda c: c[0])
        k = np.argmax(np.where(valid[i], depth[i], -np.inf))
        assert valid[i, k]
        errs.append((abs(depth[i, k] - dref), np.arccos(np.clip(normal[i, k] @ nref, -1, 1)),
                     np.linalg.norm(pos[i, k] - pref)))
    errs = np.max(np.array(errs), 0)
    print(f"{kind}-box vs MuJoCo over {len(poses)} poses ({ncontact} in contact): max depth "
          f"error {errs[0]:.2e} m, normal {errs[1]:.2e} rad, position {errs[2]:.2e} m")
    assert ncontact > len(poses) // 2
    assert errs[0] < DEPTH_TOL and errs[1] < NORMAL_TOL and errs[2] < DEPTH_TOL


# ------------------------------------------------------------------------ vs MuJoCo


def test_sphere_box_matches_mujoco():
    rng = np.random.default_rng(0)
    poses = [random_pose(rng) for _ in range(NPOSE)]
    compare("sphere", poses, run_sphere(stack(poses)))


def test_capsule_box_matches_mujoco():
    """Poses whose segment stays outside the box (penetration < radius)."""
    rng = np.random.default_rng(1)
    poses = []
    while len(poses) < NPOSE:
        pose = random_pose(rng)
        if segment_min_sdf(pose) > 1e-6:
            poses.append(pose)
    compare("capsule", poses, run_capsule(stack(poses)))


def test_capsule_box_deepest_point_oracle():
    """Any pose, segment inside the box included: the deepest slot is the capsule's deepest
    point (oracle), and never shallower than MuJoCo's deepest contact."""
    rng = np.random.default_rng(2)
    poses = [random_pose(rng) for _ in range(NPOSE)]
    depth, _, _, _, valid, _ = map(np.asarray, run_capsule(stack(poses)))
    missed = shallower = 0
    for i, pose in enumerate(poses):
        oracle = pose["radius"] - segment_min_sdf(pose)
        assert abs(depth[i].max() - oracle) < 1e-8, (i, depth[i], oracle)
        assert valid[i].any() == (oracle >= 0) or abs(oracle) < 1e-9
        ref = mujoco_for("capsule", pose)
        if ref:
            dref = max(c[0] for c in ref)
            assert depth[i].max() >= dref - 1e-9
            shallower += dref < depth[i].max() - DEPTH_TOL
        else:
            missed += oracle > DEPTH_TOL
    print(f"MuJoCo shallower than the deepest point in {shallower}, missed {missed} of {NPOSE}")


EDGE = (0.05 - 0.01) / np.sqrt(2)  # radius 0.05 resting on the top +y edge, 0.01 deep
FLAT = {  # name: (half_length, axis, centre), box frame; radius 0.05, 0.01 deep, flat
    "inside_face": (0.1, [1, 0, 0], [0.0, 0.0, 0.14]),
    "overhang_one_side": (0.2, [1, 0, 0], [0.2, 0.0, 0.14]),
    "overhang_both_sides": (0.4, [1, 0, 0], [0.0, 0.05, 0.14]),
    "across_narrow_side": (0.4, [0, 1, 0], [0.1, 0.0, 0.14]),
    "yawed": (0.1, [np.cos(0.7), np.sin(0.7), 0], [0.05, 0.05, 0.14]),
    "yawed_overhang": (0.35, [np.cos(0.5), np.sin(0.5), 0], [0.0, 0.0, 0.14]),
    "along_edge": (0.1, [1, 0, 0], [0.0, 0.2 + EDGE, 0.1 + EDGE]),
    "along_edge_overhang": (0.4, [1, 0, 0], [0.0, 0.2 + EDGE, 0.1 + EDGE]),
}


def flat_pose(name, tilt, rotated):
    half_length, axis, centre = FLAT[name]
    box_rot = Rotation.from_euler("xyz", [0.3, 0.5, 0.2]).as_matrix() if rotated else I3
    box_pos = np.array([0.3, -0.2, 0.5]) if rotated else np.zeros(3)
    pos = box_pos + box_rot @ np.array(centre)
    rot = box_rot @ axis_rot(np.array(axis) + [0.0, 0.0, tilt])
    return pos, rot, 0.05, half_length, box_pos, box_rot, SIZE


@pytest.mark.parametrize("name", sorted(FLAT))
def test_capsule_flat_two_equal_contacts(name):
    """Exactly flat: two contacts of the analytic depth."""
    for rotated in (False, True):
        depth, _, normal, _, valid, _ = map(np.asarray, capsule_jit(*flat_pose(name, 0.0, rotated)))
        assert valid.all()
        np.testing.assert_allclose(depth, [0.01, 0.01], atol=1e-12)
        np.testing.assert_allclose(normal[0], normal[1], atol=1e-12)


@pytest.mark.parametrize("name", sorted(FLAT))
@pytest.mark.parametrize("tilt", [1e-9, -1e-9])
def test_capsule_flat_matches_mujoco(name, tilt):
    """Flat to 1e-10 m: MuJoCo decides on the signs of the capsule axis' components, so
    exactly flat poses make its contact count depend on rounding (1e-17 components)."""
    for rotated in (False, True):
        args = flat_pose(name, tilt, rotated)
        depth, p, n, _, valid, _ = map(np.asarray, capsule_jit(*args))
        pos, rot, radius, half_length, box_pos, box_rot, size = args
        ref = mujoco_contacts("capsule", [radius, half_length], pos, rot, size, box_pos,
                              box_rot)
        assert valid.sum() == len(ref) == 2
        for c in ref:  # the same contacts, in some order
            k = np.argmin(np.linalg.norm(p - c[1], axis=1))
            np.testing.assert_allclose(depth[k], c[0], atol=1e-8)
            np.testing.assert_allclose(p[k], c[1], atol=1e-8)
            np.testing.assert_allclose(n[k], c[2], atol=1e-8)


def test_capsule_near_flat_matches_mujoco():
    """Random capsules lying on a face (yaw, offset, overhang, depth; tilt up to 1e-3 rad):
    the same number of contacts as MuJoCo, of the same depths."""
    rng = np.random.default_rng(4)
    poses = []
    for _ in range(NPOSE):
        pose = random_pose(rng)
        size, radius = pose["box_size"], pose["radius"]
        yaw = rng.uniform(0, 2 * np.pi)
        tilt = rng.choice([0.0, 1.0]) * rng.uniform(-1e-3, 1e-3) + rng.choice([-1e-9, 1e-9])
        local = np.append(rng.uniform(-1, 1, 2) * size[:2],
                          size[2] + radius * rng.uniform(0.5, 0.999))
        pose["pos"] = pose["box_pos"] + pose["box_rot"] @ local
        pose["rot"] = pose["box_rot"] @ axis_rot([np.cos(yaw), np.sin(yaw), tilt])
        poses.append(pose)
    depth, _, _, _, valid, _ = map(np.asarray, run_capsule(stack(poses)))
    for i, pose in enumerate(poses):
        ref = sorted(c[0] for c in mujoco_for("capsule", pose))
        assert valid[i].sum() == len(ref) == 2, i
        np.testing.assert_allclose(np.sort(depth[i]), ref, atol=DEPTH_TOL)


# --------------------------------------------------------------------------- analytic


def test_sphere_resting_on_face():
    depth, pos, normal, feature, valid, _ = sphere_jit(np.array([0.1, -0.05, 0.1 + 0.05 - 0.01]),
                                                    0.05, np.zeros(3), I3, SIZE)
    np.testing.assert_allclose(depth, [0.01], atol=1e-15)
    np.testing.assert_allclose(normal, [[0, 0, -1]], atol=1e-15)
    np.testing.assert_allclose(pos, [[0.1, -0.05, 0.095]], atol=1e-15)
    assert feature[0] == 0 and valid[0]


@pytest.mark.parametrize("center, feature, depth", [
    ([0.31, 0.21, 0.0], 1, 0.05 - 0.01 * np.sqrt(2)),
    ([0.31, 0.21, 0.11], 2, 0.05 - 0.01 * np.sqrt(3)),
    ([0.31, 0.21, 0.2], 2, 0.05 - np.sqrt(0.0102)),
], ids=["edge", "vertex", "vertex_separated"])
def test_sphere_edge_and_vertex_regions(center, feature, depth):
    d, _, n, f, v, _ = sphere_jit(np.array(center), 0.05, np.zeros(3), I3, SIZE)
    np.testing.assert_allclose(d, [depth], atol=1e-15)
    assert f[0] == feature and v[0] == (depth >= 0)
    towards_box = np.clip(center, -SIZE, SIZE) - center
    np.testing.assert_allclose(n[0], towards_box / np.linalg.norm(towards_box), atol=1e-12)


def test_sphere_centre_inside_box():
    """Pushed out through the nearest face (+y, gap 0.05): depth = r + gap."""
    rot = Rotation.from_euler("xyz", [0.3, -0.4, 1.0]).as_matrix()
    box_pos = np.array([1.0, 2.0, -0.5])
    center = box_pos + rot @ np.array([0.1, 0.15, 0.0])
    depth, pos, normal, feature, valid, _ = sphere_jit(center, 0.02, box_pos, rot, SIZE)
    np.testing.assert_allclose(depth, [0.07], atol=1e-14)
    np.testing.assert_allclose(normal[0], -rot[:, 1], atol=1e-14)
    # midway between the face (gap 0.05 along +y) and the sphere point 0.02 along -y
    np.testing.assert_allclose(pos[0], box_pos + rot @ np.array([0.1, 0.165, 0.0]), atol=1e-14)
    assert feature[0] == 3 and valid[0]


def test_capsule_lying_on_top_face():
    rot_box = Rotation.from_euler("z", 0.4).as_matrix()
    radius, half_length, pen = 0.04, 0.15, 0.003
    pos = rot_box @ np.array([0.05, 0.02, 0.1 + radius - pen])
    rot = rot_box @ axis_rot([1, 0, 0])
    depth, p, n, feature, valid, _ = capsule_jit(pos, rot, radius, half_length, np.zeros(3),
                                              rot_box, SIZE)
    np.testing.assert_allclose(depth, [pen, pen], atol=1e-14)
    assert valid.all() and list(feature) == [0, 1]
    ends = [pos + s * half_length * rot[:, 2] - (radius - pen / 2) * rot_box[:, 2]
            for s in (-1, 1)]
    np.testing.assert_allclose(np.sort(p, 0), np.sort(np.array(ends), 0), atol=1e-14)
    np.testing.assert_allclose(n, [-rot_box[:, 2]] * 2, atol=1e-14)


def test_capsule_standing_on_end():
    radius, half_length, pen = 0.04, 0.15, 0.003
    pos = np.array([0.1, 0.1, 0.1 + half_length + radius - pen])
    depth, p, n, _, valid, _ = capsule_jit(pos, I3, radius, half_length, np.zeros(3), I3, SIZE)
    k = np.argmax(depth)
    assert valid.sum() == 1 and valid[k]
    np.testing.assert_allclose(depth[k], pen, atol=1e-14)
    np.testing.assert_allclose(p[k], [0.1, 0.1, 0.1 - pen / 2], atol=1e-14)
    np.testing.assert_allclose(n[k], [0, 0, -1], atol=1e-14)


# ---------------------------------------------------------------- jit / vmap / grad / f32


def poses_64():
    rng = np.random.default_rng(3)
    return stack([random_pose(rng) for _ in range(64)])


def sphere_args(b, i):
    return b["pos"][i], b["radius"][i], b["box_pos"][i], b["box_rot"][i], b["box_size"][i]


def capsule_args(b, i):
    return (b["pos"][i], b["rot"][i], b["radius"][i], b["half_length"][i], b["box_pos"][i],
            b["box_rot"][i], b["box_size"][i])


def assert_same(a, b, tol=1e-12):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def test_jit_and_vmap_match_eager_and_loop():
    b = poses_64()
    for fn, args, run in ((sphere_box, sphere_args, run_sphere),
                          (capsule_box, capsule_args, run_capsule)):
        jitted = jax.jit(fn)
        assert_same(fn(*args(b, 0)), jitted(*args(b, 0)))
        batched = run(b)
        for i in range(64):
            assert_same([x[i] for x in batched], jitted(*args(b, i)))


def sphere_depth(center, box_pos, box_rot, size):
    return sphere_box(center, 0.05, box_pos, box_rot, size)[0][0]


def capsule_deepest(*args):
    return jnp.max(capsule_box(*args)[0])


def capsule_total(*args):
    return jnp.sum(capsule_box(*args)[0])


sphere_grad = jax.jit(jax.grad(sphere_depth, argnums=(0, 1, 2, 3)))
capsule_grads = [jax.jit(jax.grad(f, argnums=tuple(range(7))))
                 for f in (capsule_deepest, capsule_total)]
ROT = Rotation.from_euler("xyz", [0.2, 0.1, -0.3]).as_matrix()
BOX_POS = np.array([0.1, -0.2, 0.3])

DEGENERATE_SPHERE = {  # centre in the box frame
    "on_face": [0.1, 0.05, 0.1], "on_edge": [0.3, 0.2, 0.0], "on_corner": [0.3, 0.2, 0.1],
    "box_centre": [0.0, 0.0, 0.0], "inside_tie": [0.25, 0.15, 0.0], "generic": [0.1, 0.0, 0.13],
}


@pytest.mark.parametrize("name", sorted(DEGENERATE_SPHERE))
def test_sphere_depth_gradient(name):
    args = (BOX_POS + ROT @ np.array(DEGENERATE_SPHERE[name]), BOX_POS, ROT, SIZE)
    grads = sphere_grad(*args)
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    # d depth / d centre is the normal (moving the sphere along it, into the box, deepens
    # the contact) and d depth / d box position is -normal, in every face or inside case
    normal = sphere_jit(args[0], 0.05, *args[1:])[2][0]
    if name in ("generic", "on_face", "box_centre", "inside_tie"):
        np.testing.assert_allclose(grads[0], normal, atol=1e-12)
        np.testing.assert_allclose(grads[1], -normal, atol=1e-12)
    if name == "generic":
        check_grads(jax.jit(lambda c, bp: sphere_depth(c, bp, ROT, SIZE)), args[:2], order=1,
                    modes=["rev"])


DEGENERATE_CAPSULE = {  # (centre, axis) in the box frame; radius 0.05, half-length 0.2
    "parallel_to_face": ([0.0, 0.0, 0.14], [1, 0, 0]),
    "parallel_to_edge": ([0.0, 0.23, 0.13], [1, 0, 0]),
    "through_centre": ([0.0, 0.0, 0.0], [1, 1, 1]),
    "through_centre_along_axis": ([0.0, 0.0, 0.0], [0, 0, 1]),
    "standing": ([0.1, 0.1, 0.34], [0, 0, 1]),
    "end_on_corner": ([0.3, 0.2, 0.3], [0, 0, 1]),
    "generic": ([0.05, 0.1, 0.22], [1, 0.3, 0.6]),
}


@pytest.mark.parametrize("name", sorted(DEGENERATE_CAPSULE))
def test_capsule_depth_gradient(name):
    center, axis = DEGENERATE_CAPSULE[name]
    args = (BOX_POS + ROT @ np.array(center), ROT @ axis_rot(axis), 0.05, 0.2, BOX_POS, ROT,
            SIZE)
    for grad in capsule_grads:
        assert all(np.isfinite(np.asarray(g)).all() for g in grad(*args)), name
    if name == "generic":  # the deepest depth is differentiable (envelope theorem)
        f = jax.jit(lambda p, bp: capsule_deepest(p, args[1], 0.05, 0.2, bp, ROT, SIZE))
        check_grads(f, (args[0], BOX_POS), order=1, modes=["rev"])


def test_float32():
    b = poses_64()
    b32 = {k: v.astype(jnp.float32) for k, v in b.items()}
    for run in (run_sphere, run_capsule):
        (d64, _, n64, _, _, _), (d32, p32, n32, f32, _, _) = run(b), run(b32)
        assert d32.dtype == p32.dtype == n32.dtype == jnp.float32 and f32.dtype == jnp.int32
        # the deepest contact (slot choices may differ where depths tie to rounding)
        k = np.argmax(np.asarray(d64), 1)
        deep = lambda x: np.asarray(x)[np.arange(len(k)), k]
        np.testing.assert_allclose(np.asarray(d32).max(1), deep(d64), atol=2e-6)
        # its normal, unless the deepest point is inside the box, where the deepest point
        # of a segment ties generically between push-out faces (e.g. +z and -z midway)
        outside = deep(d64) < np.asarray(b["radius"])
        np.testing.assert_allclose(deep(n32)[outside], deep(n64)[outside], atol=1e-4)
    grads = capsule_grads[1](*[jnp.asarray(x, jnp.float32) for x in capsule_args(b, 0)])
    assert all(g.dtype == jnp.float32 and np.isfinite(np.asarray(g)).all() for g in grads)
