"""Intersection polyhedra and cross-sections of convex polyhedra (jaxsim.collision.polyhedra):
analytic box cases, random pairs against qhull, degenerate contacts with finite
gradients, and jit / vmap / float32 consistency."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from jax.test_util import check_grads
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from jaxsim.collision import polyhedra as V

SQ2 = np.sqrt(2.0)
CUBE = np.array(np.meshgrid(*[[-1.0, 1.0]] * 3)).reshape(3, -1).T  # corners of [-1, 1]^3


def rotz(deg):
    return Rotation.from_euler("z", deg, degrees=True).as_matrix()


def box(size, pos=(0.0, 0.0, 0.0), rot=np.eye(3), dtype=jnp.float64):
    return V.box_halfspaces(*(jnp.asarray(x, dtype) for x in (size, pos, rot)))


# jitted once per shape (eager mode would compile every primitive on first use)
intersect = jax.jit(V.intersect)
section = jax.jit(V.section, static_argnames="max_corners")


@jax.jit
def box_pair(size_a, pos_a, rot_a, size_b, pos_b, rot_b):
    """Intersection of box A and box B."""
    planes_a = V.box_halfspaces(size_a, pos_a, rot_a)
    return V.intersect(*planes_a, *V.box_halfspaces(size_b, pos_b, rot_b))


volume_grad_b = jax.jit(jax.grad(lambda *args: box_pair(*args).volume, argnums=4))  # wrt pos_b
centroid_grad_a = jax.jit(jax.grad(lambda *args: box_pair(*args).centroid.sum(), argnums=(0, 1, 2)))


def f64(*xs):
    return tuple(jnp.asarray(x, jnp.float64) for x in xs)


def hull_mesh(points):
    """Vertices and outward counter-clockwise triangles of the convex hull of points."""
    hull = ConvexHull(points)
    faces = hull.simplices.copy()
    tri = points[faces]
    flip = np.einsum("fi,fi->f", np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]),
                     hull.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    return points, faces, hull


def section_planes(*shapes):
    return jnp.concatenate([s[0] for s in shapes]), jnp.concatenate([s[1] for s in shapes])


# ---------------------------------------------------------------------------- analytic cases


@pytest.mark.parametrize(
    "size_b, pos_b",
    [((0.5, 1.0, 2.0), (1.2, 0.5, 0.3)), ((0.3, 0.4, 0.5), (-0.9, 0.8, -0.7)),
     ((2.0, 0.2, 0.6), (0.3, -1.1, 0.9))],
)
def test_axis_aligned_boxes(size_b, pos_b):
    size_a, pos_a = np.array([1.0, 0.8, 1.2]), np.array([0.1, -0.2, 0.0])
    size_b, pos_b = np.array(size_b), np.array(pos_b)
    lo = np.maximum(pos_a - size_a, pos_b - size_b)
    hi = np.minimum(pos_a + size_a, pos_b + size_b)
    ext = hi - lo
    poly = intersect(*box(size_a, pos_a), *box(size_b, pos_b))
    np.testing.assert_allclose(poly.volume, np.prod(ext), rtol=1e-12)
    np.testing.assert_allclose(poly.centroid, (lo + hi) / 2, atol=1e-12)
    assert bool(poly.valid)
    # each overlap-box face: area from the other two extents, owned by the box whose
    # face bounds it (A on ties, as it comes first)
    expect = np.zeros(12)
    for axis in range(3):
        face = np.prod(np.delete(ext, axis))
        for side, bound in ((0, hi[axis]), (1, lo[axis])):
            a_face = np.isclose(bound, pos_a[axis] + (size_a[axis] if side == 0 else -size_a[axis]))
            expect[(0 if a_face else 6) + 2 * axis + side] = face
    np.testing.assert_allclose(poly.face_area, expect, atol=1e-12)
    np.testing.assert_array_equal(poly.face_owner, [0] * 6 + [1] * 6)
    normals_w = np.asarray(poly.face_normal)
    for i in np.flatnonzero(expect):  # face centroid on the overlap box's face
        c = (lo + hi) / 2 + normals_w[i] * ext / 2
        np.testing.assert_allclose(poly.face_centroid[i], c, atol=1e-12)


def test_rotated_cube_45():
    """B is a cube of half-size 1 turned 45 deg about z with centre (c, 0, 0.5); A is the
    cube [-1, 1]^3. In xy, B is the diamond |x - c| + |y| <= sqrt(2); for c in
    (sqrt(2), 1 + sqrt(2)) its corner pokes into A as the triangle with apex
    (c - sqrt(2), 0) and base x = 1 of half-width w = 1 + sqrt(2) - c (w <= 1 keeps it
    inside |y| <= 1): area w^2, centroid x = 1 - w / 3, perimeter 2 w + 2 sqrt(2) w.
    The z overlap is [-0.5, 1] (length 1.5, centre 0.25)."""
    for c in (1.5, 2.0, 2.3):
        w = 1 + SQ2 - c
        poly = intersect(*box([1, 1, 1]), *box([1, 1, 1], [c, 0, 0.5], rotz(45)))
        np.testing.assert_allclose(poly.volume, 1.5 * w * w, rtol=1e-12)
        np.testing.assert_allclose(poly.centroid, [1 - w / 3, 0, 0.25], atol=1e-12)
        np.testing.assert_allclose(jnp.sum(poly.face_area), 2 * w * w + 1.5 * (2 * w + 2 * SQ2 * w),
                                   rtol=1e-12)


# ---------------------------------------------------------------------------- random pairs


def random_rotation(rng):
    return Rotation.random(random_state=rng).as_matrix()


def random_shape(rng, kind, max_faces):
    """A random box or convex hull about the origin: (spec for :func:`halfspaces`, world
    vertices, world planes). The planes (unit normals (F, 3), offsets (F,)) come from the
    box axes or from scipy's hull equations, independently of the code under test."""
    rot_w = random_rotation(rng)
    if kind == "box":
        size = rng.uniform(0.2, 1.0, 3)
        normals_w = np.concatenate([rot_w.T, -rot_w.T])
        return (size, rot_w), (CUBE * size) @ rot_w.T, (normals_w, np.tile(size, 2))
    pts = rng.normal(size=(rng.integers(8, 21), 3)) * rng.uniform(0.3, 1.0, 3)
    vert_b, faces, hull = hull_mesh(pts)
    faces = np.concatenate([faces, np.zeros((max_faces - len(faces), 3), int)])  # padding
    vert_b = np.concatenate([vert_b, np.zeros((20 - len(vert_b), 3))])  # one shape: one compile
    planes_w = (hull.equations[:, :3] @ rot_w.T, -hull.equations[:, 3])
    return (vert_b, faces, rot_w), pts[hull.vertices] @ rot_w.T, planes_w


def halfspaces(kind, spec, pos_w):
    if kind == "box":
        return jax.jit(V.box_halfspaces)(*f64(spec[0], pos_w, spec[1]))
    vert_b, faces, rot_w = spec
    return jax.jit(V.convex_halfspaces)(jnp.asarray(vert_b), jnp.asarray(faces), *f64(pos_w, rot_w))


def qhull_polytope(normals_w, offsets):
    """Volume and centroid of the polyhedron ``normals_w x <= offsets`` by qhull
    (scipy's halfspace intersection from the Chebyshev centre found by linprog, then
    the convex hull of its vertices): independent of jaxsim's clipping."""
    from scipy.optimize import linprog
    from scipy.spatial import HalfspaceIntersection

    norms = np.linalg.norm(normals_w, axis=1)
    # the centre of the largest inscribed ball: max r s.t. n_k x + |n_k| r <= d_k
    lp = linprog(np.r_[0, 0, 0, -1.0], A_ub=np.c_[normals_w, norms], b_ub=offsets,
                 bounds=[(None, None)] * 3 + [(0, None)])
    assert lp.status == 0 and lp.x[3] > 0, lp
    hull = ConvexHull(HalfspaceIntersection(np.c_[normals_w, -offsets], lp.x[:3]).intersections)
    apex = hull.points[hull.vertices].mean(0)  # tetrahedra from an interior point to each facet
    tets = hull.points[hull.simplices] - apex  # (F, 3, 3)
    vols = np.abs(np.linalg.det(tets)) / 6
    centroid = apex + (vols[:, None] * tets.sum(1) / 4).sum(0) / vols.sum()
    return hull.volume, centroid


def test_random_pairs_against_qhull():
    """120 random overlapping pairs (box-box, box-hull, hull-hull; hulls of 8-20 random
    points, padded with degenerate triangles). B's centre is put at a random point of A,
    and pairs whose overlap fills < 30% of the intersection of the two bounding boxes
    (estimated from 4000 points) are redrawn. The volume must match qhull's
    intersection of the same halfspaces (``qhull_polytope``) to 1e-9 relative and the
    centroid to 1e-9 of the bounding box's diagonal (both agree to about 1e-13); the
    face areas must sum to the area of scipy's convex hull of the valid vertices (1e-6
    relative), and the volumes agree."""
    rng = np.random.default_rng(0)
    kinds = [("box", "box"), ("box", "mesh"), ("mesh", "mesh")]
    max_faces = 36
    cases = {k: [] for k in kinds}
    while sum(map(len, cases.values())) < 120:
        kind = kinds[sum(map(len, cases.values())) % 3]
        spec_a, verts_a, planes_a = random_shape(rng, kind[0], max_faces)
        spec_b, verts_b, planes_b = random_shape(rng, kind[1], max_faces)
        pos_a = rng.normal(size=3)
        mean_a = verts_a.mean(0)  # inside A, as is the segment to a vertex of A
        centre_b = mean_a + rng.uniform(0, 0.8) * (verts_a[rng.integers(len(verts_a))] - mean_a)
        pos_b = pos_a + centre_b - verts_b.mean(0)
        normals_w = np.concatenate([planes_a[0], planes_b[0]])
        offsets = np.concatenate([planes_a[1] + planes_a[0] @ pos_a,
                                  planes_b[1] + planes_b[0] @ pos_b])
        lo = np.maximum(verts_a.min(0) + pos_a, verts_b.min(0) + pos_b)
        hi = np.minimum(verts_a.max(0) + pos_a, verts_b.max(0) + pos_b)
        probe = lo + (hi - lo) * rng.random((4000, 3))
        if np.any(hi <= lo) or np.mean(np.all(probe @ normals_w.T <= offsets, -1)) < 0.3:
            continue
        cases[kind].append((spec_a, pos_a, spec_b, pos_b, (normals_w, offsets, lo, hi)))

    for kind, group in cases.items():
        planes = [halfspaces(kind[0], a, pos_a) + halfspaces(kind[1], b, pos_b)
                  for a, pos_a, b, pos_b, _ in group]
        batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *planes)
        polys = jax.jit(lambda b: jax.lax.map(lambda p: V.intersect(*p), b, batch_size=8))(batch)
        polys = jax.tree_util.tree_map(np.asarray, polys)
        for i, (*_, (normals_w, offsets, lo, hi)) in enumerate(group):
            poly = jax.tree_util.tree_map(lambda x: x[i], polys)
            vol, centroid = qhull_polytope(normals_w, offsets)
            np.testing.assert_allclose(poly.volume, vol, rtol=1e-9, err_msg=f"{kind} {i}")
            np.testing.assert_allclose(poly.centroid, centroid, atol=1e-9 * np.linalg.norm(hi - lo))
            hull = ConvexHull(poly.vert[poly.vert_mask])
            np.testing.assert_allclose(poly.face_area.sum(), hull.area, rtol=1e-6)
            np.testing.assert_allclose(poly.volume, hull.volume, rtol=1e-6)


# ---------------------------------------------------------------------------- degenerate


R_EDGE = np.stack([[1, 0, -1] / SQ2, [0.5, -1 / SQ2, 0.5], [-0.5, -1 / SQ2, -0.5]], 1)

DEGENERATE = {
    # name: (size_b, pos_b, rot_b, expected volume) with A = [-1, 1]^3
    "face_to_face": ([1, 1, 1], [2, 0.3, 0.1], np.eye(3), 0.0),
    "coplanar_face": ([0.5, 0.5, 0.5], [0.5, 0.2, 0.1], np.eye(3), 1.0),
    "coplanar_two_faces": ([1, 0.5, 0.5], [0, 1, 0.2], np.eye(3), 1.0),
    "parallel_edges": ([1, 1, 1], [0.5, 0, 1 + SQ2 - 0.3],
                       Rotation.from_euler("x", 45, degrees=True).as_matrix(), 1.5 * 0.09),
    "coincident": ([1, 1, 1], [0, 0, 0], np.eye(3), 8.0),
    "coincident_rotated": ([1, 1, 1], [0, 0, 0], rotz(90), 8.0),
    "inside": ([0.3, 0.4, 0.2], [0.2, -0.1, 0.5], rotz(30), 8 * 0.3 * 0.4 * 0.2),
    "edge_edge_parallel": ([1, 1, 1], [2, 2, 0], np.eye(3), 0.0),
    "edge_edge_crossing": ([1, 1, 1], [2, 0, 2], R_EDGE, 0.0),
    "corner_on_face": ([1, 1, 1], [0.2, 0.1, 1 + np.sqrt(3)],
                       Rotation.align_vectors([[0, 0, -1]], [[1, 1, 1]])[0].as_matrix(), 0.0),
}


@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate(name):
    size_b, pos_b, rot_b, expected = DEGENERATE[name]
    args = f64([1, 1, 1], np.zeros(3), np.eye(3), size_b, pos_b, rot_b)
    poly = box_pair(*args)
    for leaf in jax.tree_util.tree_leaves(poly):
        assert np.all(np.isfinite(leaf))
    np.testing.assert_allclose(poly.volume, expected, rtol=1e-9, atol=1e-12)
    assert bool(poly.valid) == (expected > 0)
    for grad in (volume_grad_b(*args), *centroid_grad_a(*args)):
        assert np.all(np.isfinite(grad))


def test_no_overlap_is_zero_and_finite():
    poly = intersect(*box([1, 1, 1]), *box([1, 1, 1], [3, 0.5, 0]))
    assert float(poly.volume) == 0.0 and not bool(poly.valid) and not np.any(poly.vert_mask)
    np.testing.assert_array_equal(poly.face_area, 0.0)
    grad = volume_grad_b(*f64([1, 1, 1], np.zeros(3), np.eye(3), [1, 1, 1], [3, 0.5, 0], np.eye(3)))
    np.testing.assert_array_equal(grad, 0.0)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
@pytest.mark.parametrize("as_mesh", [False, True], ids=["box", "mesh"])
def test_grid_coincidences(dtype, as_mesh):
    """300 pairs of boxes with sizes and centres on a 0.25 m grid, turned by one common
    random rotation, given as boxes or as 12-triangle meshes (coplanar triangle pairs):
    faces, edges and corners coincide, touch or overlap in most pairs. Volume, total
    face area, centroid, validity and the section at a grid height (the contact face
    itself where boxes touch) match the formulas of the box frame; gradients (mesh
    variants) are finite."""
    rng = np.random.default_rng(3)
    n = 300
    size_a, size_b = rng.integers(1, 5, (2, n, 3)) * 0.25
    pos_a, pos_b = rng.integers(-4, 5, (2, n, 3)) * 0.25
    height = rng.integers(-6, 7, n) * 0.25
    rot = Rotation.random(n, random_state=rng).as_matrix()
    faces = jnp.asarray(hull_mesh(CUBE)[1])

    def planes(size, pos_w, rot_w):
        if as_mesh:
            return V.convex_halfspaces(jnp.asarray(CUBE, dtype) * size, faces, pos_w, rot_w)
        return V.box_halfspaces(size, pos_w, rot_w)

    def pair(s_a, p_a, s_b, p_b, r, z):
        a, b = planes(s_a, r @ p_a, r), planes(s_b, r @ p_b, r)
        cut = V.section(*section_planes(a, b), r[:, 2] * z, r[:, 2], max_corners=8)
        return V.intersect(*a, *b), cut

    def sums(*args):
        poly, cut = pair(*args)
        return poly.volume + poly.centroid.sum() + cut.area + cut.corners.sum()

    args = [jnp.asarray(x, dtype) for x in (size_a, pos_a, size_b, pos_b, rot, height)]
    poly, cut = jax.jit(jax.vmap(pair))(*args)
    if as_mesh:  # (the box variants' gradients are checked in test_degenerate)
        grads = jax.jit(jax.vmap(jax.grad(sums, argnums=tuple(range(6)))))(*args)
        assert all(np.all(np.isfinite(g)) for g in grads)

    lo, hi = np.maximum(pos_a - size_a, pos_b - size_b), np.minimum(pos_a + size_a, pos_b + size_b)
    ext = np.clip(hi - lo, 0, None)
    volume = np.prod(ext, 1)
    atol = 1e-12 if dtype == jnp.float64 else 4e-6
    np.testing.assert_allclose(poly.volume, volume, atol=atol)
    np.testing.assert_array_equal(poly.valid, volume > 0)
    overlap = volume > 0
    area = 2 * (ext[:, 0] * ext[:, 1] + ext[:, 1] * ext[:, 2] + ext[:, 2] * ext[:, 0])
    np.testing.assert_allclose(np.sum(poly.face_area, 1)[overlap], area[overlap], atol=4 * atol)
    centroid_w = np.einsum("nij,nj->ni", rot, (lo + hi) / 2)
    np.testing.assert_allclose(np.asarray(poly.centroid)[overlap], centroid_w[overlap], atol=atol)
    cut_area = ext[:, 0] * ext[:, 1] * ((lo[:, 2] <= height) & (height <= hi[:, 2]))
    np.testing.assert_allclose(cut.area, cut_area, atol=4 * atol)
    assert np.all(np.sum(cut.corner_mask, 1)[cut_area > 0] == 4) and not np.any(cut.overflow)


# ---------------------------------------------------------------------------- gradients


def test_gradient_axis_aligned_analytic():
    size_a, size_b = np.array([1.0, 0.8, 1.2]), np.array([0.5, 1.0, 0.4])
    pos_b = np.array([1.2, 0.5, -0.3])
    grad = volume_grad_b(*f64(size_a, np.zeros(3), np.eye(3), size_b, pos_b, np.eye(3)))
    lo, hi = np.maximum(-size_a, pos_b - size_b), np.minimum(size_a, pos_b + size_b)
    ext = hi - lo
    # d ext / d pos_b = [hi moves with B] - [lo moves with B]
    dext = (np.isclose(hi, pos_b + size_b)).astype(float) - np.isclose(lo, pos_b - size_b)
    expect = [dext[k] * np.prod(np.delete(ext, k)) for k in range(3)]
    np.testing.assert_allclose(grad, expect, rtol=1e-12, atol=1e-12)


def test_check_grads_rotated():
    rot_a = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()
    rot_b = Rotation.from_rotvec([-0.4, 0.7, 0.1]).as_matrix()

    def volume(pos_b):
        planes_a = box([0.6, 0.5, 0.4], [0.05, 0.02, 0.0], rot_a)
        return V.intersect(*planes_a, *box([0.5, 0.3, 0.45], pos_b, rot_b)).volume

    pos_b = jnp.array([0.4, 0.3, -0.2])
    volume = jax.jit(volume)  # one program: eager dispatch would compile every operation on its own
    assert float(volume(pos_b)) > 0.01
    check_grads(volume, (pos_b,), order=1, modes=("fwd", "rev"))


# ---------------------------------------------------------------------------- section


def assert_ccw(poly, normal):
    c = np.asarray(poly.corners)[np.asarray(poly.corner_mask)]
    turn = np.cross(c - np.roll(c, 1, 0), np.roll(c, -1, 0) - c) @ np.asarray(normal)
    assert np.all(turn > 0)


def test_section_boxes_horizontal():
    a, b = box([1, 0.8, 1.2]), box([0.5, 1, 2], [1.2, 0.5, 0.3])
    normal = jnp.array([0.0, 0.0, 1.0])
    poly = section(*section_planes(a, b), jnp.array([0.3, 0.1, 0.4]), normal, max_corners=8)
    c = np.asarray(poly.corners)[np.asarray(poly.corner_mask)]
    assert len(c) == 4 and int(poly.overflow) == 0
    expect = {(0.7, -0.5), (1.0, -0.5), (1.0, 0.8), (0.7, 0.8)}
    assert {tuple(np.round(p[:2], 12)) for p in c} == expect
    np.testing.assert_allclose(c[:, 2], 0.4)
    np.testing.assert_allclose(poly.area, 0.3 * 1.3, rtol=1e-12)
    np.testing.assert_allclose(poly.centroid, [0.85, 0.15, 0.4], atol=1e-12)
    np.testing.assert_array_equal(poly.corners[4:], np.broadcast_to(c[-1], (4, 3)))
    assert_ccw(poly, normal)
    flipped = section(*section_planes(a, b), jnp.array([0.3, 0.1, 0.4]), -normal)
    assert_ccw(flipped, -normal)


def test_section_rotated_monte_carlo():
    """Tilted cut of two rotated boxes. Monte Carlo: 2e6 points in the section's
    bounding rectangle (from a coarse first pass, grown by 5% per side); the area's
    relative standard error is then < 0.1%, so 1% is > 10 sigma."""
    rng = np.random.default_rng(1)
    rot_a, rot_b = random_rotation(rng), random_rotation(rng)
    size_a, size_b = np.array([0.7, 0.5, 0.6]), np.array([0.6, 0.4, 0.5])
    pos_b = np.array([0.3, 0.2, -0.1])
    point, normal = np.array([0.2, 0.1, 0.0]), np.array([0.3, -0.2, 0.9])
    normal /= np.linalg.norm(normal)
    planes = section_planes(box(size_a, np.zeros(3), rot_a), box(size_b, pos_b, rot_b))
    poly = section(*planes, jnp.asarray(point), jnp.asarray(normal))
    u = np.cross(normal, [1.0, 0, 0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)

    def sample(lo, hi, n):
        st = lo + (hi - lo) * rng.random((n, 2))
        x = point + st[:, :1] * u + st[:, 1:] * v
        inside = np.all(np.abs(x @ rot_a) <= size_a, -1)
        inside &= np.all(np.abs((x - pos_b) @ rot_b) <= size_b, -1)
        return st, x, inside

    st, _, inside = sample(np.full(2, -2.0), np.full(2, 2.0), 200_000)  # find the section
    lo, hi = st[inside].min(0), st[inside].max(0)
    lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)
    n = 2_000_000
    _, x, inside = sample(lo, hi, n)
    f = inside.mean()
    area_mc = f * np.prod(hi - lo)
    assert np.sqrt((1 - f) / (f * n)) < 1e-3
    np.testing.assert_allclose(poly.area, area_mc, rtol=0.01)
    np.testing.assert_allclose(poly.centroid, x[inside].mean(0), atol=0.01)
    assert int(poly.overflow) == 0
    assert_ccw(poly, normal)
    c = np.asarray(poly.corners)[np.asarray(poly.corner_mask)]
    np.testing.assert_allclose((c - point) @ normal, 0, atol=1e-12)  # in the plane
    # every corner on the boundary of both boxes' intersection
    local_a, local_b = np.abs(c @ rot_a) / size_a, np.abs((c - pos_b) @ rot_b) / size_b
    assert np.all(np.maximum(local_a.max(1), local_b.max(1)) > 1 - 1e-9)
    assert np.all(np.maximum(local_a.max(1), local_b.max(1)) < 1 + 1e-9)


def test_section_overflow_and_empty():
    angles = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles), np.zeros(24)], 1)
    vert_b, faces, _ = hull_mesh(np.concatenate([ring + [0, 0, -1], ring + [0, 0, 1]]))
    prism = V.convex_halfspaces(jnp.asarray(vert_b), jnp.asarray(faces), jnp.zeros(3), jnp.eye(3))
    normal = jnp.array([0.0, 0.0, 1.0])
    poly = section(*prism, jnp.zeros(3), normal, max_corners=8)
    assert int(poly.overflow) == 16 and bool(np.all(poly.corner_mask))
    np.testing.assert_allclose(poly.area, 12 * np.sin(2 * np.pi / 24), rtol=1e-12)  # full 24-gon
    np.testing.assert_allclose(np.linalg.norm(poly.corners, axis=1), 1.0, rtol=1e-12)
    assert_ccw(poly, normal)
    empty = section(*prism, jnp.array([0.0, 0, 2]), normal)
    assert not np.any(empty.corner_mask) and float(empty.area) == 0.0
    np.testing.assert_allclose(empty.corners, np.broadcast_to([0, 0, 2.0], (16, 3)))
    on_face = jnp.array([0.0, 0, 1])
    grad = jax.jit(jax.grad(lambda p: V.section(*prism, p, normal).area))(on_face)
    assert np.all(np.isfinite(grad))


# ---------------------------------------------------------------------------- transforms


def assert_trees_close(a, b, index=None):
    for leaf_a, leaf_b in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(leaf_a, leaf_b if index is None else leaf_b[index],
                                   rtol=1e-12, atol=1e-12)


def pair_planes(rng, dtype=jnp.float64):
    rot_a, rot_b = random_rotation(rng), random_rotation(rng)
    a = box(rng.uniform(0.3, 1, 3), rng.normal(size=3) * 0.1, rot_a, dtype)
    b = box(rng.uniform(0.3, 1, 3), rng.normal(size=3) * 0.3, rot_b, dtype)
    return a + b


def test_jit_vmap_float32():
    """jit vs eager (intersect only: eager mode compiles every primitive, which is slow),
    vmap over 8 pairs vs a loop, float32 vs float64, for intersect and section."""
    rng = np.random.default_rng(2)
    pairs = [pair_planes(rng) for _ in range(8)]
    looped = [intersect(*p) for p in pairs]
    assert all(float(e.volume) > 0 for e in looped)
    eager = V.intersect(*pairs[0])  # no jit
    assert_trees_close(eager, looped[0])
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *pairs)
    batched = jax.jit(jax.vmap(V.intersect))(*batch)
    for i, e in enumerate(looped):
        assert_trees_close(e, batched, i)

    grad32 = jax.jit(jax.grad(lambda *p: V.intersect(*p).volume, argnums=(0, 1, 2, 3)))
    for p, e in zip(pairs, looped):
        p32 = [x.astype(jnp.float32) for x in p]
        poly32 = intersect(*p32)
        assert poly32.volume.dtype == jnp.float32 and poly32.vert.dtype == jnp.float32
        np.testing.assert_allclose(poly32.volume, e.volume, rtol=1e-4)
        np.testing.assert_allclose(poly32.centroid, e.centroid, atol=1e-5)
        np.testing.assert_allclose(poly32.face_area, e.face_area, rtol=1e-4, atol=1e-5)
        assert all(np.all(np.isfinite(g)) for g in grad32(*p32))

    normal = jnp.array([0.0, 0.6, 0.8])
    sec = jax.jit(lambda p: V.section(*section_planes(p[:2], p[2:]), jnp.zeros(3, p[0].dtype),
                                      normal.astype(p[0].dtype)))
    sec_loop = [sec(p) for p in pairs]
    sec_batch = jax.jit(jax.vmap(sec))(batch)
    for i, e in enumerate(sec_loop):
        assert float(e.area) > 0
        assert_trees_close(e, sec_batch, i)
    sec32 = sec([x.astype(jnp.float32) for x in pairs[0]])
    assert sec32.area.dtype == jnp.float32
    np.testing.assert_allclose(sec32.area, sec_loop[0].area, rtol=1e-4)
