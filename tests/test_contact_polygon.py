"""Contact plane and contact polygon of two convex polyhedra (collision/polygon.py):
analytic boxes, random box/hull pairs against an independent SciPy half-plane
intersection, separation, gradients, jit / vmap / float32."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from jax.test_util import check_grads
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection
from scipy.spatial.transform import Rotation

from jaxsim.collision.convex import mesh_edges
from jaxsim.collision import convex
from jaxsim.collision.polygon import contact_polygon

polygon = jax.jit(contact_polygon, static_argnames="max_corners")


def box(size, pos, rot=np.eye(3), dtype=jnp.float64):
    return convex.box_polytope(*(jnp.asarray(x, dtype) for x in (pos, rot, size)))


def hull(points, pos, rot, nvert=24, nface=44, nedge=66):
    """A convex mesh polytope from the hull of points (padded to fixed sizes)."""
    h = ConvexHull(points)
    faces = h.simplices.copy()
    tri = points[faces]
    flip = np.einsum("fi,fi->f", np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]),
                     h.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    edges, _ = mesh_edges(faces)
    pad = lambda x, n: np.concatenate([x, np.zeros((n - len(x),) + x.shape[1:], x.dtype)])  # noqa: E731
    mask = lambda k, n: jnp.asarray(np.arange(n) < k)  # noqa: E731
    return convex.mesh_polytope(jnp.asarray(pos), jnp.asarray(rot), jnp.asarray(pad(points, nvert)),
                                jnp.asarray(pad(faces, nface)), jnp.asarray(pad(edges, nedge)),
                                mask(len(points), nvert), mask(len(faces), nface), mask(len(edges), nedge))


def reference_section(planes, point, normal):
    """Area and corners of {x in plane : normals x <= offsets} by SciPy (independent)."""
    normals, offsets = planes
    u = np.cross(normal, [1.0, 0, 0] if abs(normal[0]) < 0.9 else [0, 1.0, 0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    a = np.stack([normals @ u, normals @ v], 1)
    b = offsets - normals @ point
    # Chebyshev centre: an interior point for HalfspaceIntersection
    res = linprog([0, 0, -1], A_ub=np.c_[a, np.linalg.norm(a, axis=1)], b_ub=b,
                  bounds=[(None, None)] * 2 + [(0, None)])
    if not res.success or res.x[2] < 1e-9:
        return 0.0, np.zeros((0, 3))
    hs = HalfspaceIntersection(np.c_[a, -b], res.x[:2])
    st = hs.intersections
    corners = point + st[:, :1] * u + st[:, 1:] * v
    return ConvexHull(st).volume, corners


def planes_of(p):
    m = np.asarray(p.face_mask)
    return np.asarray(p.normal)[m], np.asarray(p.offset)[m]


def test_box_sunk_into_floor_box():
    """A 0.2 m cube 1 cm deep in a large box: the footprint square, normal +z."""
    floor = box([1.0, 1.0, 0.5], [0.0, 0.0, -0.5])
    cube = box([0.1, 0.1, 0.1], [0.3, -0.2, 0.09])
    normal, depth, poly = polygon(floor, cube)
    np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(depth, 0.01, atol=1e-12)
    assert int(poly.corner_mask.sum()) == 4
    np.testing.assert_allclose(poly.area, 0.04, rtol=1e-10)
    np.testing.assert_allclose(poly.centroid, [0.3, -0.2, -0.005], atol=1e-12)
    c = np.asarray(poly.corners)[np.asarray(poly.corner_mask)]
    np.testing.assert_allclose(np.sort(np.abs(c[:, :2] - [0.3, -0.2]).ravel()), 0.1, atol=1e-12)
    np.testing.assert_allclose(c[:, 2], -0.005, atol=1e-12)  # halfway through the overlap
    # counter-clockwise about the normal
    assert np.all(np.cross(np.roll(c, -1, 0) - c, np.roll(c, -2, 0) - np.roll(c, -1, 0))[:, 2] > 0)


def test_cube_rotated_45_on_cube_octagon():
    """Same cubes, one turned 45 deg about z and 5 mm down into the other: the regular
    octagon of inradius L/2, area 2 (sqrt 2 - 1) L^2."""
    rot = Rotation.from_euler("z", 45, degrees=True).as_matrix()
    low, high = box([0.1] * 3, [0.0, 0.0, 0.0]), box([0.1] * 3, [0.0, 0.0, 0.195], rot)
    normal, depth, poly = polygon(low, high)
    np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(depth, 0.005, atol=1e-12)
    assert int(poly.corner_mask.sum()) == 8 and int(poly.overflow) == 0
    np.testing.assert_allclose(poly.area, 2 * (np.sqrt(2) - 1) * 0.2 ** 2, rtol=1e-10)
    # fewer slots than corners: an even subset is kept, the rest counted, area whole
    _, _, poly4 = polygon(low, high, max_corners=4)
    assert int(poly4.corner_mask.sum()) == 4 and int(poly4.overflow) == 4
    np.testing.assert_allclose(poly4.area, poly.area, rtol=1e-12)


def sat_depth(va, vb, axes):
    axes = axes[np.linalg.norm(axes, axis=1) > 1e-9]
    axes = axes / np.linalg.norm(axes, axis=1, keepdims=True)
    pa, pb = va @ axes.T, vb @ axes.T
    return np.min(np.minimum(pa.max(0) - pb.min(0), pb.max(0) - pa.min(0)))


@pytest.mark.parametrize("kinds", [("box", "box"), ("box", "hull"), ("hull", "hull")])
def test_random_pairs_against_scipy(kinds):
    """40 random overlapping pairs per kind: the depth is the least overlap over all
    face normals and edge cross products (NumPy), the plane lies halfway through the
    overlap, and the polygon's area and corners equal SciPy's half-plane intersection
    of both shapes' planes within the contact plane."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        shapes = []
        for kind in kinds:
            rot, pos = Rotation.random(random_state=rng).as_matrix(), rng.uniform(-0.15, 0.15, 3)
            if kind == "box":
                shapes.append(box(rng.uniform(0.05, 0.3, 3), pos, rot))
            else:
                pts = rng.normal(size=(rng.integers(8, 21), 3)) * rng.uniform(0.05, 0.3, 3)
                shapes.append(hull(pts[ConvexHull(pts).vertices], pos, rot))
        a, b = shapes
        normal, depth, poly = polygon(a, b, max_corners=16)
        normal = np.asarray(normal)
        va, vb = (np.asarray(p.vert)[np.asarray(p.vert_mask)] for p in (a, b))
        ea, eb = ((np.asarray(p.edge1) - np.asarray(p.edge0))[np.asarray(p.edge_mask)] for p in (a, b))
        axes = np.concatenate([planes_of(a)[0], planes_of(b)[0],
                               np.cross(ea[:, None], eb[None]).reshape(-1, 3)])
        ref_depth = sat_depth(va, vb, axes)
        assert ref_depth - 1e-9 <= float(depth) <= ref_depth + 1e-5 * 0.6
        np.testing.assert_allclose((va @ normal).max() - (vb @ normal).min(), depth, atol=1e-12)
        mid = 0.5 * ((va @ normal).max() + (vb @ normal).min())
        na, da = planes_of(a)
        nb, db = planes_of(b)
        area, corners = reference_section((np.concatenate([na, nb]), np.concatenate([da, db])),
                                          mid * normal, normal)
        ours = np.asarray(poly.corners)[np.asarray(poly.corner_mask)]
        np.testing.assert_allclose(poly.area, area, rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(ours @ normal, mid, atol=1e-10)
        if area > 1e-8:
            checked += 1
            # every SciPy corner is one of ours (ours may also hold near-duplicates)
            dist = np.linalg.norm(corners[:, None] - ours[None], axis=-1).min(1)
            assert dist.max() < 1e-7 or int(poly.overflow) > 0
    assert checked >= 35


def test_apart_gives_empty_polygon_with_finite_gradient():
    def area(z):
        a = box([0.1, 0.1, 0.1], [0.0, 0.0, 0.0])
        b = convex.box_polytope(jnp.stack([0.0, 0.0, z]), jnp.eye(3), jnp.full(3, 0.1))
        _, depth, poly = contact_polygon(a, b)
        return poly.area + depth
    grad = jax.jit(jax.grad(area))
    for z in (0.25, 0.2):  # apart, touching
        g = grad(jnp.asarray(z))
        assert np.isfinite(g)
    _, depth, poly = polygon(box([0.1] * 3, [0.0] * 3), box([0.1] * 3, [0.0, 0.0, 0.25]))
    assert float(depth) < 0 and not bool(poly.corner_mask.any()) and float(poly.area) == 0.0


def test_gradients_match_finite_differences():
    rot = jnp.asarray(Rotation.from_euler("xyz", [0.2, -0.3, 0.5]).as_matrix())

    @jax.jit
    def f(pos):
        a = box([0.2, 0.15, 0.1], [0.0, 0.0, 0.0])
        b = convex.box_polytope(pos, rot, jnp.asarray([0.1, 0.12, 0.08]))
        normal, depth, poly = contact_polygon(a, b)
        return jnp.stack([depth, poly.area, *poly.centroid])
    check_grads(f, (jnp.asarray([0.05, -0.03, 0.2]),), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_jit_vmap_float32():
    rng = np.random.default_rng(3)
    n = 6
    rots = Rotation.random(n, random_state=rng).as_matrix()
    pos = rng.uniform(-0.1, 0.1, (n, 3))
    size_b = rng.uniform(0.05, 0.2, (n, 3))

    def one(p, r, s, dtype=jnp.float64):
        a = box([0.2, 0.2, 0.2], [0.0, 0.0, 0.0], dtype=dtype)
        return contact_polygon(a, convex.box_polytope(p.astype(dtype), r.astype(dtype), s.astype(dtype)))

    batched = jax.jit(jax.vmap(one))(*map(jnp.asarray, (pos, rots, size_b)))
    single = jax.jit(one)
    f32 = jax.jit(lambda *a: one(*a, dtype=jnp.float32))
    args0 = tuple(map(jnp.asarray, (pos[0], rots[0], size_b[0])))
    for x, y in zip(jax.tree.leaves(one(*args0)), jax.tree.leaves(single(*args0))):  # no jit vs jit
        np.testing.assert_allclose(np.asarray(x, float), np.asarray(y, float), atol=1e-12)
    for i in range(n):
        eager = single(*map(jnp.asarray, (pos[i], rots[i], size_b[i])))
        for x, y in zip(jax.tree.leaves(eager), jax.tree.leaves(batched)):
            np.testing.assert_allclose(np.asarray(x, float), np.asarray(y[i], float), atol=1e-12)
        lo = f32(*map(jnp.asarray, (pos[i], rots[i], size_b[i])))
        assert lo[2].area.dtype == jnp.float32
        np.testing.assert_allclose(lo[2].area, eager[2].area, rtol=2e-3, atol=1e-6)
        np.testing.assert_allclose(lo[1], eager[1], atol=1e-5)
