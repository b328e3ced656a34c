"""``Q`` and ``c`` of an intersection volume (``collision/moments.py``) against an
independent numerical integration: scipy's half-space intersection and convex hull
(its own triangulation), each triangle clipped by the contact plane, and a degree-5
quadrature of the integrands with ``|h|`` taken pointwise. 50 random box-box and 50
random hull-plane intersections, float64, 1e-6 relative."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import ConvexHull, HalfspaceIntersection

from jaxsim.collision import moments
from jaxsim.collision import polyhedra

# Dunavant's 7-point rule, exact to degree 5: (barycentric, weight)
_A1, _B1, _W1 = 0.059715871789770, 0.470142064105115, 0.132394152788506
_A2, _B2, _W2 = 0.797426985353087, 0.101286507323456, 0.125939180544827
RULE = [((1 / 3, 1 / 3, 1 / 3), 0.225)]
for a, b, w in ((_A1, _B1, _W1), (_A2, _B2, _W2)):
    RULE += [((a, b, b), w), ((b, a, b), w), ((b, b, a), w)]


def _skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def _clip(tri, h):
    """Pieces (triangles) of a triangle on each side of the plane h = 0."""
    pieces = []
    for side in (1.0, -1.0):
        poly = []
        for i in range(3):
            j = (i + 1) % 3
            hi, hj = side * h[i], side * h[j]
            if hi >= 0:
                poly.append(tri[i])
            if (hi > 0 > hj) or (hi < 0 < hj):
                poly.append(tri[i] + (tri[j] - tri[i]) * hi / (hi - hj))
        for k in range(1, len(poly) - 1):
            pieces.append(np.array([poly[0], poly[k], poly[k + 1]]))
    return pieces


def reference(normals, offsets, normal, origin):
    """Q (6, 6) and c (6,) by clipping and quadrature (module docstring)."""
    hs = HalfspaceIntersection(np.c_[normals, -offsets], origin)
    hull = ConvexHull(hs.intersections)
    Q, c = np.zeros((6, 6)), np.zeros(6)
    for simplex in hull.simplices:
        tri = hull.points[simplex]
        for piece in _clip(tri, (tri - origin) @ normal):
            rel = piece - origin
            proj = rel - np.outer(rel @ normal, normal)
            area = 0.5 * np.linalg.norm(np.cross(proj[1] - proj[0], proj[2] - proj[0]))
            for bary, w in RULE:
                x = np.asarray(bary) @ rel
                h = abs(x @ normal)
                p = x - (x @ normal) * normal
                sp = _skew(p)
                Q += w * area * np.block([[np.eye(3), -sp], [sp, -sp @ sp]])
                c += w * area * h * np.r_[-normal, np.cross(normal, p)]
    return Q, c


def _rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


def _box(rng, centre):
    size = rng.uniform(0.02, 0.1, 3)
    return polyhedra.box_halfspaces(jnp.asarray(size), jnp.asarray(centre), jnp.asarray(_rotation(rng)))


def _hull(rng, triangles=False):
    """A randomly stretched and rotated icosahedron (always 20 faces), as half-spaces
    (and, with ``triangles``, its faces' corners (20, 3, 3), counter-clockwise from
    outside)."""
    t = (1 + 5 ** 0.5) / 2
    ico = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t],
                    [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], float)
    pts = (ico * rng.uniform(0.02, 0.06, 3)) @ _rotation(rng).T + np.array([0, 0, rng.uniform(-0.03, 0.0)])
    hull = ConvexHull(pts)
    eq = hull.equations  # n . x + e <= 0
    if not triangles:
        return jnp.asarray(eq[:, :3]), jnp.asarray(-eq[:, 3])
    tri = pts[hull.simplices]
    outward = np.einsum("ij,ij->i", np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), eq[:, :3]) > 0
    tri = np.where(outward[:, None, None], tri, tri[:, ::-1])
    return jnp.asarray(eq[:, :3]), jnp.asarray(-eq[:, 3]), jnp.asarray(tri)


def _plane_normal(poly):
    owned = (poly.face_owner == 0)[:, None]
    w = jnp.sum(jnp.where(owned, poly.face_area[:, None] * poly.face_normal, 0.0), 0)
    return w / jnp.linalg.norm(w)


@jax.jit
@jax.vmap
def _ours(na, da, nb, db):
    poly = polyhedra.intersect(na, da, nb, db)
    n = _plane_normal(poly)
    Q, c = moments.volume_moments(poly, n, poly.centroid)
    return Q, c, n, poly.centroid, poly.valid


def _check(cases):
    Q, c, n, centroid, valid = _ours(*(jnp.stack(x) for x in zip(*cases)))
    assert np.all(np.asarray(valid))
    for i, (na, da, nb, db) in enumerate(cases):
        Qr, cr = reference(np.r_[na, nb], np.r_[da, db], np.asarray(n[i]), np.asarray(centroid[i]))
        np.testing.assert_allclose(np.asarray(Q[i]), Qr, rtol=1e-6, atol=1e-6 * np.abs(Qr).max(), err_msg=str(i))
        np.testing.assert_allclose(np.asarray(c[i]), cr, rtol=1e-6, atol=1e-6 * np.abs(cr).max(), err_msg=str(i))
        twist = np.linalg.solve(Qr, cr)  # the closed-form fit the volume model uses
        np.testing.assert_allclose(np.asarray(moments.fit_twist(Q[i], c[i])), twist, atol=1e-6 * np.abs(twist).max())


def test_box_box_against_quadrature():
    rng = np.random.default_rng(1)
    overlap = jax.jit(lambda *boxes: polyhedra.intersect(*boxes).valid)  # eager: one compile per operation
    cases = []
    while len(cases) < 50:
        na, da = _box(rng, np.zeros(3))
        nb, db = _box(rng, rng.uniform(-0.05, 0.05, 3))
        if bool(overlap(na, da, nb, db)):
            cases.append((na, da, nb, db))
    _check(cases)


def test_hull_plane_against_quadrature():
    """The general intersection and the plane clip (``polyhedra.clip``, what plane geoms
    use) on the same hulls."""
    rng = np.random.default_rng(2)
    floor = (jnp.asarray([[0.0, 0.0, 1.0]]), jnp.asarray([0.0]))
    hulls = [_hull(rng, triangles=True) for _ in range(50)]
    _check([floor + h[:2] for h in hulls])

    @jax.jit
    @jax.vmap
    def clipped(na, da, tri):
        poly = polyhedra.clip(tri, na, jnp.ones(tri.shape[0], bool), floor[0][0], floor[1][0])
        Q, c = moments.volume_moments(poly, floor[0][0], poly.centroid)
        full = polyhedra.intersect(*floor, na, da)
        return Q, c, poly.centroid, poly.valid, poly.volume - full.volume, poly.centroid - full.centroid

    Q, c, centroid, valid, dvol, dcen = clipped(*(jnp.stack([h[k] for h in hulls]) for k in range(3)))
    assert np.all(np.asarray(valid))
    assert np.abs(np.asarray(dvol)).max() < 1e-15 and np.abs(np.asarray(dcen)).max() < 1e-12
    for i, (na, da, _) in enumerate(hulls):
        Qr, cr = reference(np.r_[floor[0], na], np.r_[floor[1], da], np.array([0.0, 0, 1]), np.asarray(centroid[i]))
        np.testing.assert_allclose(np.asarray(Q[i]), Qr, rtol=1e-6, atol=1e-6 * np.abs(Qr).max(), err_msg=str(i))
        np.testing.assert_allclose(np.asarray(c[i]), cr, rtol=1e-6, atol=1e-6 * np.abs(cr).max(), err_msg=str(i))


def test_gradients_match_finite_differences():
    """d(Q, c)/d(position of box b) by jax.grad against central differences (float64,
    a generic pose: no face crossing the plane at a vertex)."""
    rng = np.random.default_rng(3)
    na, da = _box(rng, np.zeros(3))
    nb, db = _box(rng, np.array([0.01, -0.01, 0.03]))

    def f(t):
        poly = polyhedra.intersect(na, da, nb, db + nb @ t)
        n = _plane_normal(poly)
        Q, c = moments.volume_moments(poly, n, poly.centroid)
        return jnp.concatenate([Q.reshape(-1), c])

    t0 = jnp.asarray([0.002, 0.001, -0.003])
    jac = jax.jit(jax.jacfwd(f))(t0)
    jac_rev = jax.jit(jax.jacrev(f))(t0)
    eps = 1e-6
    value = jax.jit(f)  # eager dispatch would compile every operation on its own
    fd = jnp.stack([(value(t0 + eps * e) - value(t0 - eps * e)) / (2 * eps) for e in jnp.eye(3)], -1)
    scale = np.abs(np.asarray(fd)).max()
    np.testing.assert_allclose(np.asarray(jac), np.asarray(fd), atol=1e-6 * scale)
    np.testing.assert_allclose(np.asarray(jac_rev), np.asarray(jac), atol=1e-9 * scale)


def test_fan_section_bounds_the_sorted_section():
    """``polyhedra.fan_section`` (segments, no sorting) against ``polyhedra.section`` (sorted
    corners) on 40 random clipped boxes cut through their centroid by tilted planes:
    every corner lies on or left of every segment, and the segments' total length is
    the polygon's perimeter."""
    from jaxsim.collision import convex

    rng = np.random.default_rng(4)
    floor = jnp.asarray([0.0, 0.0, 1.0])
    cases = []
    for _ in range(40):
        rot, size = _rotation(rng), rng.uniform(0.02, 0.1, 3)
        rot = rot * np.sign(np.linalg.det(rot))  # a proper rotation (the faces' corner order)
        pos = np.r_[rng.uniform(-0.02, 0.02, 2), rng.uniform(-0.5, 0.5) * size.min()]
        cut = rng.normal(size=3) * 0.2 + np.r_[0, 0, 1]
        cases.append((pos, rot, size, cut / np.linalg.norm(cut)))

    @jax.jit
    @jax.vmap
    def both(pos, rot, size, cut):
        b = convex.box_polytope(pos, rot, size)
        poly = polyhedra.clip(b.face_vert, b.normal, b.face_mask, floor, jnp.asarray(0.0))
        nb, db = polyhedra.box_halfspaces(size, pos, rot)
        sec = polyhedra.section(jnp.concatenate([floor[None], nb]), jnp.concatenate([jnp.zeros(1), db]),
                             poly.centroid, cut, 16)
        return polyhedra.fan_section(poly, poly.centroid, cut), sec.corners, sec.corner_mask, poly.valid

    (start, stop, mask), corners, cmask, valid = both(*(jnp.asarray(np.stack(x)) for x in zip(*cases)))
    assert np.all(np.asarray(valid))
    for i, (*_, cut) in enumerate(cases):
        st, sp, m = (np.asarray(x[i])[np.asarray(mask[i])] for x in (start, stop, mask))
        cr = np.asarray(corners[i])[np.asarray(cmask[i])]
        edge = sp - st
        side = np.einsum("kci,i->kc", np.cross(edge[:, None], cr[None] - st[:, None]), cut)
        assert side.min() > -1e-12, i
        perimeter = np.linalg.norm(np.roll(cr, -1, 0) - cr, axis=1).sum()
        np.testing.assert_allclose(np.linalg.norm(edge, axis=1).sum(), perimeter, rtol=1e-9, err_msg=str(i))
