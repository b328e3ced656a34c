"""Contact slots that hold regions (``collision/regions.py``): contact-polygon corners
against the crossings of the box's edges with the cutting plane, intersection volumes
against closed forms, stable corner features, speculative regions, and the stage
refusing a contact model whose slot layout the Model was not built with."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import ModelBuilder, contact, math
from jaxsim.collision.driver import collide
from jaxsim.collision.regions import SLIVER
from jaxsim.contact.space import slot_info
from jaxsim.kinematics import forward_kinematics

A = 0.05  # box half size, m


def scene(geometry, ball=False):
    """A box over the floor, a second box (and a ball) over it; slots hold ``geometry``."""
    b = ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (5, 5, 0.1), name="floor")
    for name in ("box", "top"):
        b.add_body(name, pos=(0, 0, 1.0 if name == "box" else 2.0), mass=1.0, inertia=(1 / 600,) * 3)
        b.add_joint(name, "free")
        b.add_geom(name, "box", (A, A, A), name=name)
    if ball:
        b.add_body("ball", pos=(1.0, 0, 0.5), mass=1.0, inertia=(1e-3,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (A,), name="ball")
    model = b.build(jnp.float64)
    return model.replace(topo=model.topo.replace(pair_geometry=geometry))


def _q(pos_box, quat_box, pos_top=(0, 0, 2.0), quat_top=(1, 0, 0, 0), nq=14):
    q = np.zeros(nq)
    q[:7] = np.r_[pos_box, quat_box]
    q[7:14] = np.r_[pos_top, quat_top]
    if nq > 14:
        q[14:21] = (1.0, 0, A - 0.01, 1, 0, 0, 0)  # the ball sunk 1 cm
    return jnp.asarray(q)


def _collide(model, qs, margin=0.0):
    return jax.jit(jax.vmap(lambda q: collide(model, forward_kinematics(model, q), margin)))(jnp.stack(qs))


def _floor_slots(model):
    info = slot_info(model.topo)
    return np.flatnonzero((info.geom1 == model.geom_id("floor")) & (info.geom2 == model.geom_id("box")))


def _box_vertices(pos, rot):
    signs = np.array(list(itertools.product((-1, 1), repeat=3)), float)
    return pos + (signs * A) @ rot.T, signs


def test_plane_box_polygon_is_the_box_cut_at_mid_depth():
    """40 random orientations and depths (-0.5 mm .. 10 mm): the corner slots are the
    crossings of the 12 box edges with the plane halfway through the overlap, moved to
    the midplane, every slot at the pair's depth; overlapping by less than the sliver,
    the box vertices within the margin, each at its own depth."""
    rng = np.random.default_rng(0)
    model = scene("polygon")
    cases = []
    for _ in range(40):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        rot = np.asarray(math.quat_to_mat(jnp.asarray(quat)))
        depth = rng.uniform(-5e-4, 1e-2)
        low = np.min((np.array(list(itertools.product((-1, 1), repeat=3))) * A) @ rot.T, 0)[2]
        cases.append((np.array([0.0, 0.0, -low - depth]), quat, rot, depth))
    out = _collide(model, [_q(p, qt) for p, qt, _, _ in cases], margin=1e-3)
    slots = _floor_slots(model)
    assert len(slots) == 8
    for i, (pos, _, rot, depth) in enumerate(cases):
        vert, signs = _box_vertices(pos, rot)
        cut = -depth + 0.5 * max(depth, SLIVER)
        expected, depths = [], np.full(8, depth)
        if depth < SLIVER:
            depths = -vert[:, 2][vert[:, 2] <= 1e-3]
            expected = list(vert[vert[:, 2] <= 1e-3] + 0.5 * depths[:, None] * np.array([0, 0, 1.0]))
        for j, k in itertools.combinations(range(8 if depth >= SLIVER else 0), 2):
            if np.sum(signs[j] != signs[k]) != 1:
                continue  # not an edge
            hj, hk = vert[j, 2] - cut, vert[k, 2] - cut
            if hj * hk < 0:
                x = vert[j] + (vert[k] - vert[j]) * hj / (hj - hk)
                expected.append(x + (0.5 * -depth - cut) * np.array([0, 0, 1.0]))
        active = np.asarray(out.active[i, slots])
        got = np.asarray(out.pos_w[i, slots])[active]
        assert active.sum() == len(expected), (i, depth)
        dist = np.linalg.norm(got[:, None] - np.asarray(expected)[None], axis=-1)
        assert dist.min(1).max() < 1e-9 and dist.min(0).max() < 1e-9
        np.testing.assert_allclose(np.sort(np.asarray(out.depth[i, slots])[active]), np.sort(depths[:len(got)]),
                                   atol=1e-12)
        np.testing.assert_allclose(np.asarray(out.normal_w[i, slots])[active], [[0, 0, 1.0]] * len(got))
        assert len(set(np.asarray(out.feature[i, slots])[active].tolist())) == len(got)


def test_polygon_corner_features_follow_the_corners():
    """Box-on-box: after a small move each corner keeps its feature id (the same two
    faces make it), although its slot may change."""
    model = scene("polygon")
    c, s = np.cos(0.2), np.sin(0.2)
    before = _q((0, 0, 0.05), (1, 0, 0, 0), (0.02, 0.01, 0.1495), (c, 0, 0, s))
    after = _q((0, 0, 0.05), (1, 0, 0, 0), (0.021, 0.011, 0.1494), (np.cos(0.205), 0, 0, np.sin(0.205)))
    out = _collide(model, [before, after])
    info = slot_info(model.topo)
    boxes = np.flatnonzero((info.geom1 == model.geom_id("box")) & (info.geom2 == model.geom_id("top")))
    corners = []
    for i in range(2):
        on = np.asarray(out.active[i, boxes])
        corners.append(dict(zip(np.asarray(out.feature[i, boxes])[on].tolist(), np.asarray(out.pos_w[i, boxes])[on])))
    # the offset, rotated square over the square: a hexagon, 4 corners where edges cross
    assert len(corners[0]) == 6 and corners[0].keys() == corners[1].keys()
    for f, x in corners[0].items():
        assert np.linalg.norm(corners[1][f] - x) < 3e-3
    # all on the midplane of the 0.5 mm overlap
    z = np.stack(list(corners[0].values()))[:, 2]
    np.testing.assert_allclose(z, 0.09975, atol=1e-9)


def test_volume_slots_against_closed_forms():
    """One slot per polyhedral pair: a flat box sunk d (V = 4 a^2 d, centroid d / 2 deep,
    depth d), a box on an edge (45 degrees, sunk d: a triangular prism, V = 2 a d^2,
    centroid d / 3 deep, depth d), two overlapping boxes (V a product of
    overlaps, normal the area-weighted mean of geom1's bounding faces), a box 0.5 mm above the floor (speculative: depth
    -0.5 mm, point midway), and a ball that keeps its point slot with an empty volume."""
    model = scene("volume", ball=True)
    d = 4e-3
    c45 = np.cos(np.pi / 8)
    qs = [_q((0, 0, A - d), (1, 0, 0, 0), (0.03, 0.02, A - d + 0.09), (1, 0, 0, 0), nq=21),
          _q((0, 0, A * np.sqrt(2) - d), (c45, np.sin(np.pi / 8), 0, 0), nq=21),
          _q((0, 0, A + 5e-4), (1, 0, 0, 0), nq=21)]
    out = _collide(model, qs, margin=1e-3)
    info = slot_info(model.topo)
    geom = model.geom_id
    floor_box = np.flatnonzero((info.geom1 == geom("floor")) & (info.geom2 == geom("box")))
    box_top = np.flatnonzero((info.geom1 == geom("box")) & (info.geom2 == geom("top")))
    ball = np.flatnonzero((info.geom1 == geom("floor")) & (info.geom2 == geom("ball")))
    assert len(floor_box) == len(box_top) == 1 and len(ball) == 1
    vol = out.volume
    (i,), (j,), (k,) = floor_box, box_top, ball
    # flat box
    np.testing.assert_allclose(float(vol.volume[0, i]), 4 * A * A * d, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(out.pos_w[0, i]), [0, 0, -d / 2], atol=1e-12)
    np.testing.assert_allclose(float(out.depth[0, i]), d, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(out.normal_w[0, i]), [0, 0, 1], atol=1e-12)
    # overlapping boxes: x in [-0.02, 0.05], y in [-0.03, 0.05], z 0.01 thick
    np.testing.assert_allclose(float(vol.volume[0, j]), 0.07 * 0.08 * 0.01, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(out.pos_w[0, j]), [0.015, 0.01, A - d + 0.045], atol=1e-12)
    # the bottom box's faces bounding it: its top (0.07 x 0.08), +x (0.08 x 0.01), +y (0.07 x 0.01)
    weighted = np.array([0.08 * 0.01, 0.07 * 0.01, 0.07 * 0.08])
    np.testing.assert_allclose(np.asarray(out.normal_w[0, j]), weighted / np.linalg.norm(weighted), atol=1e-12)
    np.testing.assert_allclose(float(out.depth[0, j]), 0.01, rtol=1e-9)  # least overlap, along z
    # edge down
    np.testing.assert_allclose(float(vol.volume[1, i]), 2 * A * d * d, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(out.pos_w[1, i]), [0, 0, -d / 3], atol=1e-12)
    np.testing.assert_allclose(float(out.depth[1, i]), d, rtol=1e-9)
    # speculative
    assert bool(out.active[2, i])
    np.testing.assert_allclose(float(out.depth[2, i]), -5e-4, rtol=1e-9)
    np.testing.assert_allclose(float(out.pos_w[2, i, 2]), 2.5e-4, atol=1e-12)
    # the ball: a point slot (sunk 1 cm), no volume
    assert bool(out.active[0, k]) and not bool(vol.valid[0, k]) and float(vol.volume[0, k]) == 0.0
    np.testing.assert_allclose(float(out.depth[0, k]), 0.01, rtol=1e-9)


def test_stage_refuses_a_model_built_for_other_slots(monkeypatch):
    monkeypatch.setitem(contact.MODELS, "volume_probe",
                        contact.ContactModel("volume_probe", contact.point.RigidParams, contact.point.init,
                                             contact.point.solve, collision="volume"))
    model = scene("points")
    assert model.topo.pair_geometry == "points"
    bad = model.replace(opt=model.opt.replace(contact="volume_probe"))
    with pytest.raises(ValueError, match="built with 'points' slots"):
        jaxsim.make_state(bad)
    with pytest.raises(ValueError, match="collision must be"):
        contact.ContactModel("x", contact.point.RigidParams, contact.point.init, contact.point.solve,
                             collision="mesh")
