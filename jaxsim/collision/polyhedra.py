"""Intersection polyhedron of two convex polyhedra, and its cross-section by a plane.

Used by the contact-volume wrench (one wrench per intersection volume) and by
Springhead's contact polygon (Springhead impact/resting: the cross-section of the
intersection by the contact plane).

Representation. A convex polyhedron is a set of half-spaces ``n_i . x <= d_i`` with
unit outward normals ``n_i`` (world frame) and offsets ``d_i`` (m). The intersection
of polyhedra A and B is the set satisfying all ``P = PA + PB`` planes; each plane
remembers its owner (0 for A, 1 for B).

Method (brute-force vertex enumeration, fixed cost, no data-dependent shapes):

1. For every static triple of planes ``i < j < k`` (``T = P choose 3``, precomputed with
   numpy) solve the 3x3 system in closed form,
   ``x = (d_i (n_j x n_k) + d_j (n_k x n_i) + d_k (n_i x n_j)) / (n_i . (n_j x n_k))``,
   plus one step of iterative refinement (same formula on the residual). The triple is
   a vertex when ``|det| > eps_det``, the point lies on its three planes within ``tol``
   and satisfies every plane within ``tol``. Invalid triples get a finite dummy point
   (the division is guarded with ``jnp.where``, so gradients stay finite). This is the
   brute-force fallback of the contact-volume wrench's method: it never misses tiny
   or grazing overlaps.
2. Face polygons, without sorting: the edge of face ``i`` along plane ``j`` joins the
   two extreme valid vertices of the triples ``{i, j, k}`` along ``n_i x n_j`` (every
   vertex on both planes comes from such a triple: the planes meeting there span R^3,
   so ``n_i``, ``n_j`` and one more do). In that order the edge runs counter-clockwise
   about ``n_i``, so the face area is the sum of the signed triangles from a point of
   the face (the mean of the edge end points) to its edges, whatever their order. The
   extremes are picked with ``argmin``/``argmax`` (no gradient through the choice); a
   plane that touches the face at one vertex gives a zero triangle, and an edge found
   again through another plane (same end points within ``4 tol``: more than two planes
   through one line) counts once. Vertices where more than three planes meet appear
   several times; the copies change nothing. (This replaces sorting each face's
   vertices by angle, which made batched calls about 2x slower on CPU.)
3. Coincident planes (coplanar mesh triangles, or faces of A and B in one plane with
   the same outward normal) would count one face twice: of planes with same-side
   normals whose face centroids lie on each other's plane, only the face with the
   largest area (on ties the lowest index, so A before B) is kept; the others get
   area 0.
4. Volume and centroid: pyramids from the reference point ``r`` (mean of the valid
   vertices, inside the polyhedron) to every face: ``V_i = S_i (d_i - n_i . r) / 3``,
   which is exactly the sum of the tetrahedra on the face's fan triangles, with
   centroid ``(r + 3 c_i) / 4`` (``c_i`` the face's area centroid). The intersection
   is ``valid`` when ``V > tol (sum S_i + tol^2)``, i.e. thicker than about ``tol``;
   otherwise (touching, or apart) the volume is reported as 0.

A plane geom's half-space cuts a polytope more cheaply (:func:`clip`, used for
plane-box and plane-mesh volumes): every face polygon of the polytope keeps the part
of its edges under the plane plus one closing edge along it, and the closing edges,
reversed, bound the cut face. Its volume and centroid are the sum of the tetrahedra
from a point inside to every fan triangle.

Both return the boundary as flat lists of fan triangles (apex, edge start and stop,
the face's outward normal), which is all the volume moments need
(``moments.py``), and from which :func:`fan_section` cuts the section through any
plane as a list of boundary segments (no sorting).

The cross-section (:func:`section`) is computed directly from the half-spaces: in an
orthonormal tangent basis of the cutting plane (Duff et al.'s branchless basis) each
half-space becomes a 2-D half-plane (or, parallel to the plane, one that is always
satisfied or empty); the pairwise line intersections (``P choose 2`` static pairs)
that satisfy every half-plane within ``tol`` are the corners, sorted by angle about
their mean (counter-clockwise about the plane normal); copies of a corner (more than
two lines through it) are adjacent after the sort and dropped.

Tolerances. ``tol`` (m) defaults to ``1e-9`` (float64) or ``1e-5`` (other dtypes) times
``max(max_i |d_i|, 1e-6 m)``: offsets carry the rounding error of the positions, so in
float32 express the planes about a nearby origin (e.g. the midpoint of the two
shapes). ``tol`` must exceed the inconsistency of the input (float64 arrays holding
float32-rounded planes need an explicit ``tol``). ``eps_det`` is 1e-12 (float64) or
1e-6 and only guards the division: ill-conditioned triples are judged by their
residuals.

Gradients flow through the vertex positions; masks and the choice of edge end points
carry none. Where the combinatorics change (touching, coincident faces, a vertex
crossing a face) the volume has a kink: the gradient there is finite, near the
one-sided values, but not any particular one of them.

Cost: ``P choose 3`` triples each tested against ``P`` planes, and ``P^3`` edge
candidates. Box-box (``P = 12``) is 220 triples; two 20-triangle meshes (``P = 40``)
are 9,880 triples, 395,200 plane tests and 64,000 edge candidates; two 36-triangle
meshes (``P = 72``) 59,640 triples and 4.3 million plane tests. Fine for boxes and
small hulls, too slow for large meshes (simplify their convex hulls first).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.math import normalize
from jaxsim.types import pytree_dataclass

Array = jax.Array


@pytree_dataclass
class Polyhedron:
    """Intersection of two convex polyhedra (world frame).

    Attributes:
      vert: (T, 3) m, candidate vertices (one per plane triple), finite everywhere.
      vert_mask: (T,) bool, valid vertices (copies appear where > 3 planes meet).
      face_normal: (P, 3) unit outward normal of each face (its plane's normal).
      face_owner: (P,) int32, 0 if the plane came from A, 1 if from B.
      face_area: (P,) m^2, 0 for planes that do not bound the intersection; of
        coincident same-side planes only one carries the face.
      face_centroid: (P, 3) m, area centroid of each face polygon (a point of it if
        its area is 0, zeros if it has no vertex).
      volume: () m^3, 0 unless the polyhedra overlap by more than about ``tol``.
      centroid: (3,) m, volume centroid (the mean of the valid vertices if the volume
        is 0, zeros if there are none).
      valid: () bool, ``volume > 0``.
      fan_apex, fan_start, fan_stop: (N, 3) m, the boundary as triangles: every face
        is a fan from a point of it (apex) to its edges (start -> stop, counter-
        clockwise about the face's outward normal).
      fan_normal: (N, 3) the outward normal of each triangle's face.
      fan_mask: (N,) bool, the triangles of faces that carry area.
    """

    vert: Array
    vert_mask: Array
    face_normal: Array
    face_owner: Array
    face_area: Array
    face_centroid: Array
    volume: Array
    centroid: Array
    valid: Array
    fan_apex: Array
    fan_start: Array
    fan_stop: Array
    fan_normal: Array
    fan_mask: Array


@pytree_dataclass
class Polygon:
    """Convex cross-section polygon (world frame).

    Attributes:
      corners: (K, 3) m, counter-clockwise about the cutting plane's normal, padded by
        repeating the last valid corner (the plane point if there is none).
      corner_mask: (K,) bool, valid corners.
      area: () m^2, area of the whole section (all corners, also those dropped).
      centroid: (3,) m, its area centroid (the plane point if empty).
      overflow: () int32, number of distinct corners dropped because there were more
        than K.
      corner_id: (K,) int32, the corner's pair of planes as an index into the static
        list of plane pairs ``(i < j)`` (stable while the same two faces make it).
    """

    corners: Array
    corner_mask: Array
    area: Array
    centroid: Array
    overflow: Array
    corner_id: Array


# ---------------------------------------------------------------------------- half-spaces


def box_halfspaces(size: Array, pos: Array, rot: Array) -> tuple[Array, Array]:
    """Half-spaces of a box.

    Args:
      size: (3,) m, half-extents along the box axes.
      pos: (3,) m, box centre in the world.
      rot: (3, 3) rotation box -> world (``rot_wb``).

    Returns:
      normals_w (6, 3) and offsets (6,) m: faces +x, -x, +y, -y, +z, -z of the box.
    """
    axes_w = jnp.stack([rot.T, -rot.T], 1).reshape(6, 3)  # +x, -x, +y, -y, +z, -z
    return axes_w, axes_w @ pos + jnp.repeat(size, 2)


def convex_halfspaces(vertices: Array, faces: Array, pos: Array, rot: Array) -> tuple[Array, Array]:
    """Half-spaces of a convex polyhedron given as a triangle mesh.

    Coplanar triangles give duplicate planes and degenerate (padding) triangles a
    zero normal with offset 0 (always satisfied): both are harmless to
    :func:`intersect` and :func:`section`.

    Args:
      vertices: (V, 3) m, in the polyhedron's own frame.
      faces: (F, 3) int, triangle vertex ids, counter-clockwise seen from outside.
      pos: (3,) m, the polyhedron frame's origin in the world.
      rot: (3, 3) rotation polyhedron frame -> world (``rot_wb``).

    Returns:
      normals_w (F, 3) and offsets (F,) m.
    """
    tri_b = vertices[faces]  # (F, 3, 3)
    normals_b = normalize(jnp.cross(tri_b[:, 1] - tri_b[:, 0], tri_b[:, 2] - tri_b[:, 0]))
    offsets_b = jnp.sum(normals_b * jnp.mean(tri_b, 1), -1)
    normals_w = normals_b @ rot.T
    return normals_w, offsets_b + normals_w @ pos


# ---------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=None)
def _triples(p: int) -> tuple[np.ndarray, np.ndarray]:
    """Static plane triples (T, 3), and (P, P, P) the index of triple {i, j, k} (T, a
    dummy slot, where two of i, j, k are equal)."""
    tri = np.array(list(itertools.combinations(range(p), 3)), np.int32).reshape(-1, 3)
    index = np.full((p, p, p), len(tri), np.int32)
    for perm in itertools.permutations(range(3)):
        index[tri[:, perm[0]], tri[:, perm[1]], tri[:, perm[2]]] = np.arange(len(tri))
    return tri, index


@functools.lru_cache(maxsize=None)
def _pairs(p: int) -> np.ndarray:
    """Static plane pairs (Q, 2)."""
    return np.array(list(itertools.combinations(range(p), 2)), np.int32).reshape(-1, 2)


def _tolerances(offsets: Array, tol) -> tuple[Array, float]:
    """(tol in m, eps_det): see the module docstring."""
    f64 = offsets.dtype == jnp.float64
    if tol is None:
        scale = jax.lax.stop_gradient(jnp.max(jnp.abs(offsets)))
        tol = (1e-9 if f64 else 1e-5) * jnp.maximum(scale, 1e-6)
    return jnp.asarray(tol, offsets.dtype), (1e-12 if f64 else 1e-6)


def _tangent_basis(n: Array) -> tuple[Array, Array]:
    """Orthonormal (u, v) with ``u x v = n`` for (..., 3) unit normals.

    Branchless formula of Duff et al. (2017): smooth except where ``n_z`` changes sign.
    """
    nx, ny, nz = n[..., 0], n[..., 1], n[..., 2]
    sign = jnp.where(nz >= 0, 1.0, -1.0).astype(n.dtype)
    a = -1.0 / (sign + nz)
    u = jnp.stack([1.0 + sign * nx * nx * a, sign * nx * ny * a, -sign * nx], -1)
    return u, jnp.cross(n, u)


def _angle_order(q_u: Array, q_v: Array, mask: Array) -> Array:
    """Indices sorting points counter-clockwise by angle, masked-out points last.

    The key is an angle about a centre (2-D offsets ``q_u``, ``q_v``, (..., N)); it
    carries no gradient (the order is piecewise constant).
    """
    angle = jnp.arctan2(jax.lax.stop_gradient(q_v), jax.lax.stop_gradient(q_u))
    return jnp.argsort(jnp.where(mask, angle, 4.0), axis=-1)


def _fan(st: Array, mask: Array, centre: Array) -> tuple[Array, Array]:
    """Area and first moment of a convex 2-D polygon.

    Args:
      st: (N, 2) corners sorted counter-clockwise, valid first.
      mask: (N,) bool, sorted likewise.
      centre: (2,) a point inside the polygon (the mean of its corners).

    Returns:
      area () and the sum of triangle area times triangle centroid (2,).
    """
    # masked points repeat the first one (closing the fan), or the centre if there is
    # none: repeated points give exactly zero-area triangles even with fused multiply-add
    first = jnp.where(mask[0], st[0], centre)
    st = jnp.where(mask[:, None], st, first)
    a, b = st - centre, jnp.roll(st, -1, axis=0) - centre
    tri = 0.5 * (a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    return jnp.sum(tri), tri @ (a + b) / 3.0 + jnp.sum(tri) * centre


def _safe_div(num: Array, den: Array, ok: Array, fallback: Array) -> Array:
    """``num / den`` where ``ok`` (broadcast over num's last axis), else ``fallback``."""
    den = jnp.where(ok, den, 1.0)[..., None]
    return jnp.where(ok[..., None], num / den, fallback)


def _masked_mean(pts: Array, mask: Array) -> Array:
    """Mean of ``pts`` (..., N, D) over ``mask`` (..., N); zeros if none."""
    count = jnp.sum(mask, -1)
    total = jnp.sum(jnp.where(mask[..., None], pts, 0.0), -2)
    return total / jnp.maximum(count, 1)[..., None].astype(pts.dtype)


# ---------------------------------------------------------------------------- polyhedron


def _solve3(normals: Array, offsets: Array, tri: np.ndarray, eps_det: float):
    """Closed-form solution of the plane triples' 3x3 systems, refined once.

    Args:
      normals: (P, 3); offsets: (P,); tri: (T, 3) static plane triples.

    Returns:
      points (T, 3) (0 where singular), ``|det| > eps_det`` (T,), and the residuals
      ``n . x - d`` on the triple's own planes (T, 3).
    """
    n = [normals[tri[:, c]] for c in range(3)]  # elementwise, so XLA fuses it all
    d = [offsets[tri[:, c]][:, None] for c in range(3)]
    adj = [jnp.cross(n[1], n[2]), jnp.cross(n[2], n[0]), jnp.cross(n[0], n[1])]
    det = jnp.sum(n[0] * adj[0], -1)
    ok = jnp.abs(det) > eps_det
    inv_det = jnp.where(ok, 1.0 / jnp.where(ok, det, 1.0), 0.0)[:, None]
    x = (d[0] * adj[0] + d[1] * adj[1] + d[2] * adj[2]) * inv_det
    r = [jnp.sum(n[c] * x, -1, keepdims=True) - d[c] for c in range(3)]
    x = x - (r[0] * adj[0] + r[1] * adj[1] + r[2] * adj[2]) * inv_det
    return x, ok, jnp.stack([jnp.sum(n[c] * x, -1) - d[c][:, 0] for c in range(3)], -1)


def _faces(normals: Array, vert: Array, vert_mask: Array, index: np.ndarray, tol: Array):
    """Area (P,) and area centroid (P, 3) of every face polygon, without sorting, and
    its fan: the face point (P, 3), edge end points (P, P, 3) twice and edge mask (P, P).

    The edge of face i on plane j joins the extreme valid vertices of the triples
    {i, j, k} along ``n_i x n_j`` (counter-clockwise about ``n_i``); the face is the fan
    of triangles from a point of the face (the mean of the edge end points) to its
    edges. Edges repeated by other planes through the same line (same end points)
    count once.
    """
    mask = jnp.concatenate([vert_mask, jnp.zeros((1,), bool)])[index]  # (P, P, P): [face, edge, k]
    vert = jnp.concatenate([vert, jnp.zeros((1, 3), vert.dtype)])  # with the dummy slot
    along = jax.lax.stop_gradient(jnp.cross(normals[:, None], normals[None, :]))  # (P, P, 3)
    key = jnp.einsum("ijkc,ijc->ijk", jax.lax.stop_gradient(vert)[index], along)
    index = jnp.asarray(index)

    def end(k):  # (P, P) slot -> (P, P, 3) vertex
        return vert[jnp.take_along_axis(index, k[..., None], -1)[..., 0]]

    start = end(jnp.argmin(jnp.where(mask, key, jnp.inf), -1))  # (P, P, 3)
    stop = end(jnp.argmax(jnp.where(mask, key, -jnp.inf), -1))
    edge = jnp.any(mask, -1)  # (P, P)
    near = lambda x: jnp.max(jnp.abs(x[:, :, None] - x[:, None]), -1) <= 4 * tol  # noqa: E731
    earlier = np.arange(edge.shape[1])[:, None] > np.arange(edge.shape[1])[None, :]
    edge = edge & ~jnp.any(near(start) & near(stop) & earlier & edge[:, None, :], -1)
    centre = _masked_mean(jnp.concatenate([start, stop], 1), jnp.concatenate([edge, edge], 1))
    a, b = start - centre[:, None], stop - centre[:, None]
    tri = jnp.where(edge, 0.5 * jnp.sum(jnp.cross(a, b) * normals[:, None], -1), 0.0)  # (P, P)
    area = jnp.sum(tri, -1)
    moment = jnp.einsum("ij,ijc->ic", tri, a + b) / 3.0 + area[:, None] * centre
    return area, _safe_div(moment, area, area > tol * tol, centre), (centre, start, stop, edge)


def intersect(normals_a: Array, offsets_a: Array, normals_b: Array, offsets_b: Array,
              tol=None) -> Polyhedron:
    """Intersection polyhedron of two convex polyhedra given as half-spaces.

    Args:
      normals_a: (PA, 3) unit outward normals of A's planes, world frame.
      offsets_a: (PA,) m, A is ``normals_a @ x <= offsets_a``.
      normals_b: (PB, 3) likewise for B.
      offsets_b: (PB,) m.
      tol: m, feasibility / on-plane tolerance; default scale-aware (module docstring).

    Returns:
      The :class:`Polyhedron` (T = (PA + PB) choose 3 candidate vertices).
    """
    normals = jnp.concatenate([normals_a, normals_b])
    offsets = jnp.concatenate([offsets_a, offsets_b]).astype(normals.dtype)
    p = normals.shape[0]
    owner = jnp.asarray(np.repeat([0, 1], [normals_a.shape[0], normals_b.shape[0]]), jnp.int32)
    tol, eps_det = _tolerances(offsets, tol)
    tri, index = _triples(p)

    # 1. vertices: feasible, non-singular plane triples
    vert, ok, resid_own = _solve3(normals, offsets, tri, eps_det)
    resid = vert @ normals.T - offsets  # (T, P) signed distances
    vert_mask = ok & jnp.all(jnp.abs(resid_own) <= tol, -1) & jnp.all(resid <= tol, -1)

    # 2. face polygons
    area, face_centroid, (face_point, start, stop, edge) = _faces(normals, vert, vert_mask, index, tol)

    # 3. coincident same-side planes share one face: the largest (then the first) keeps it
    on = jnp.abs(normals @ face_centroid.T - offsets[:, None]) <= 2 * tol  # [i, j]: c_j on plane i
    coincident = (normals @ normals.T > 0.5) & on & on.T
    first = np.arange(p)[:, None] < np.arange(p)[None, :]
    beats = (area[:, None] > area[None, :]) | ((area[:, None] == area[None, :]) & first)
    duplicate = jnp.any(coincident & beats, 0)
    area = jnp.where(duplicate, 0.0, jnp.maximum(area, 0.0))

    # 4. volume and centroid: pyramids from the mean vertex to every face
    ref = _masked_mean(vert, vert_mask)
    pyramid = area * (offsets - normals @ ref) / 3.0
    volume = jnp.sum(pyramid)
    valid = volume > tol * (jnp.sum(area) + tol * tol)  # thicker than about tol
    centroid = _safe_div(pyramid @ (ref + 3.0 * face_centroid) / 4.0, volume, valid, ref)
    return Polyhedron(
        vert=vert,
        vert_mask=vert_mask,
        face_normal=normals,
        face_owner=owner,
        face_area=area,
        face_centroid=face_centroid,
        volume=jnp.where(valid, volume, 0.0),
        centroid=centroid,
        valid=valid,
        **_flat_fans(normals, face_point, start, stop, edge & (area > 0)[:, None]),
    )


def _flat_fans(normals, apex, start, stop, mask) -> dict:
    """The Polyhedron's fan fields from per-face fans: apex (P, 3), edges (P, E, 3)."""
    shape = start.shape
    flat = lambda x: jnp.broadcast_to(x, shape).reshape(-1, 3)  # noqa: E731
    return dict(fan_apex=flat(apex[:, None]), fan_start=flat(start), fan_stop=flat(stop),
                fan_normal=flat(normals[:, None]), fan_mask=mask.reshape(-1))


def clip(face_vert: Array, face_normal: Array, face_mask: Array, normal: Array, offset: Array,
         tol=None) -> Polyhedron:
    """The part of a convex polytope B in the half-space A ``normal . x <= offset``.

    Cheaper than :func:`intersect` for a plane geom: B's faces are clipped by the plane
    directly. Each edge keeps its part inside A; a face that crosses the plane gets a
    closing edge along it, from where its boundary leaves A to where it comes back, and
    those closing edges, reversed, are the edges of the cutting face.

    Args:
      face_vert: (F, K, 3) m, B's face corners, counter-clockwise seen from outside.
      face_normal: (F, 3) unit outward normals of B's faces.
      face_mask: (F,) bool, B's valid faces.
      normal: (3,) unit outward normal of A; offset: () m.
      tol: m, as for :func:`intersect` (the volume's validity).

    Returns:
      The :class:`Polyhedron`: face 0 is the cut (owner 0), faces 1..F are B's (owner
      1); ``vert`` holds the clipped edges' start points (with copies).
    """
    nface, k = face_vert.shape[:2]
    b_offsets = jnp.sum(face_normal * face_vert[:, 0], -1)
    tol, _ = _tolerances(jnp.concatenate([offset[None], jnp.where(face_mask, b_offsets, 0.0)]), tol)
    h = face_vert @ normal - offset  # (F, K), inside A where <= 0
    nxt, h_nxt = jnp.roll(face_vert, -1, 1), jnp.roll(h, -1, 1)
    ins, ins_nxt = h <= 0, h_nxt <= 0
    crosses = ins != ins_nxt
    t = jnp.where(crosses, h / jnp.where(crosses, h - h_nxt, 1.0), 0.0)
    cut = face_vert + t[..., None] * (nxt - face_vert)
    on = face_mask[:, None]
    start, stop = jnp.where(ins[..., None], face_vert, cut), jnp.where(ins_nxt[..., None], nxt, cut)
    keep = (ins | ins_nxt) & on
    leave, enter = ins & ~ins_nxt, ~ins & ins_nxt  # one of each on a face that crosses A
    close_start = jnp.sum(jnp.where(leave[..., None], cut, 0.0), 1)
    close_stop = jnp.sum(jnp.where(enter[..., None], cut, 0.0), 1)
    closed = jnp.any(leave, 1) & face_mask
    # B's faces: K clipped edges and the closing one; the cut: the closing edges reversed
    b_start = jnp.concatenate([start, close_start[:, None]], 1)
    b_stop = jnp.concatenate([stop, close_stop[:, None]], 1)
    b_edge = jnp.concatenate([keep, closed[:, None]], 1)
    b_apex = _masked_mean(jnp.concatenate([b_start, b_stop], 1), jnp.concatenate([b_edge, b_edge], 1))
    a_apex = _masked_mean(jnp.concatenate([close_stop, close_start]), jnp.concatenate([closed, closed]))

    def fan_area(apex, a, b, n, mask):  # per-triangle signed area and first moment
        tri = jnp.where(mask, 0.5 * jnp.sum(jnp.cross(a - apex, b - apex) * n, -1), 0.0)
        return tri, tri[..., None] * (apex + a + b) / 3.0

    tri_a, mom_a = fan_area(a_apex, close_stop, close_start, normal, closed)
    tri_b, mom_b = fan_area(b_apex[:, None], b_start, b_stop, face_normal[:, None], b_edge)
    area = jnp.maximum(jnp.concatenate([jnp.sum(tri_a)[None], jnp.sum(tri_b, 1)]), 0.0)
    moment = jnp.concatenate([jnp.sum(mom_a, 0)[None], jnp.sum(mom_b, 1)])
    apexes = jnp.concatenate([a_apex[None], b_apex])
    face_centroid = _safe_div(moment, area, area > tol * tol, apexes)
    normals = jnp.concatenate([normal[None], face_normal])
    # flat fans: the cut's F triangles, then B's F (K + 1)
    apex = jnp.concatenate([jnp.broadcast_to(a_apex, (nface, 3)),
                            jnp.broadcast_to(b_apex[:, None], b_start.shape).reshape(-1, 3)])
    fan_start = jnp.concatenate([close_stop, b_start.reshape(-1, 3)])
    fan_stop = jnp.concatenate([close_start, b_stop.reshape(-1, 3)])
    fan_normal = jnp.concatenate([jnp.broadcast_to(normal, (nface, 3)),
                                  jnp.broadcast_to(face_normal[:, None], b_start.shape).reshape(-1, 3)])
    fan_mask = jnp.concatenate([closed & (area[0] > 0), (b_edge & (area[1:] > 0)[:, None]).reshape(-1)])

    # volume and centroid: tetrahedra from a point inside to every triangle
    ref = _masked_mean(fan_start, fan_mask)
    a, b, c = apex - ref, fan_start - ref, fan_stop - ref
    tet = jnp.where(fan_mask, jnp.sum(a * jnp.cross(b, c), -1) / 6.0, 0.0)
    vol = jnp.sum(tet)
    valid = vol > tol * (jnp.sum(area) + tol * tol)
    centroid = _safe_div(tet @ (a + b + c) / 4.0 + vol * ref, vol, valid, ref)
    return Polyhedron(vert=b_start.reshape(-1, 3), vert_mask=b_edge.reshape(-1), face_normal=normals,
                      face_owner=jnp.asarray(np.r_[0, np.ones(nface, np.int32)], jnp.int32),
                      face_area=area, face_centroid=face_centroid, volume=jnp.where(valid, vol, 0.0),
                      centroid=centroid, valid=valid, fan_apex=apex, fan_start=fan_start, fan_stop=fan_stop,
                      fan_normal=fan_normal, fan_mask=fan_mask)


def fan_section(poly: Polyhedron, point: Array, normal: Array) -> tuple[Array, Array, Array]:
    """The polyhedron's cross-section by the plane through ``point`` (3,) with unit
    ``normal`` (3,), as its boundary: one segment per fan triangle that the plane cuts,
    oriented counter-clockwise about ``normal``. No sorting: a convex polygon is the
    intersection of the half-planes left of its (collinear pieces of) edges.

    Returns:
      start (N, 3), stop (N, 3) m, and mask (N,) bool.
    """
    tri = jnp.stack([poly.fan_apex, poly.fan_start, poly.fan_stop], 1)  # (N, 3, 3)
    h = (tri - point) @ normal
    nxt, h_nxt = jnp.roll(tri, -1, 1), jnp.roll(h, -1, 1)
    crosses = (h <= 0) != (h_nxt <= 0)
    t = jnp.where(crosses, h / jnp.where(crosses, h - h_nxt, 1.0), 0.0)
    x = tri + t[..., None] * (nxt - tri)
    first = jnp.argmax(crosses, 1)
    last = 2 - jnp.argmax(crosses[:, ::-1], 1)
    pick = lambda i: jnp.take_along_axis(x, i[:, None, None], 1)[:, 0]  # noqa: E731
    a, b = pick(first), pick(last)
    # the section's outside is along the face's outward normal: to the right of start -> stop
    flip = jnp.sum(jnp.cross(normal, b - a) * poly.fan_normal, -1) > 0
    start, stop = jnp.where(flip[:, None], b, a), jnp.where(flip[:, None], a, b)
    return start, stop, poly.fan_mask & (jnp.sum(crosses, 1) == 2)


# ---------------------------------------------------------------------------- section


def section(normals: Array, offsets: Array, point: Array, normal: Array,
            max_corners: int = 16, tol=None) -> Polygon:
    """Cross-section of a convex polyhedron (given as half-spaces) by a plane.

    For the contact polygon of two shapes pass both shapes' planes concatenated: the
    section of their intersection is where both shapes' cuts overlap.

    If the section has more than ``max_corners`` distinct corners, an index-uniform
    subset of them (every ``n / K``-th in counter-clockwise order) is returned and the
    number dropped is counted in ``overflow``; ``area`` and ``centroid`` are always
    those of the full section.

    Args:
      normals: (P, 3) unit outward normals, world frame.
      offsets: (P,) m, the polyhedron is ``normals @ x <= offsets``.
      point: (3,) m, a point of the cutting plane.
      normal: (3,) unit normal of the cutting plane (the corners turn about it).
      max_corners: K, static number of corner slots.
      tol: m, feasibility tolerance; default as in :func:`intersect`.

    Returns:
      The :class:`Polygon`.
    """
    offsets = offsets.astype(normals.dtype)
    tol, eps_det = _tolerances(offsets, tol)
    pairs = _pairs(normals.shape[0])

    # half-planes a . (s, t) <= b in the plane's basis: x = point + s u + t v
    u, v = _tangent_basis(normal)
    a = jnp.stack([normals @ u, normals @ v], -1)  # (P, 2)
    b = offsets - normals @ point  # (P,)
    ai, aj, bi, bj = a[pairs[:, 0]], a[pairs[:, 1]], b[pairs[:, 0]], b[pairs[:, 1]]
    det = ai[:, 0] * aj[:, 1] - ai[:, 1] * aj[:, 0]
    ok = jnp.abs(det) > eps_det
    inv_det = jnp.where(ok, 1.0 / jnp.where(ok, det, 1.0), 0.0)
    st = jnp.stack([bi * aj[:, 1] - bj * ai[:, 1], ai[:, 0] * bj - aj[:, 0] * bi], -1)
    st = st * inv_det[:, None]  # (Q, 2) line intersections
    resid = st @ a.T - b  # (Q, P): signed 3-D distances of the points to the planes
    on_own = jnp.all(jnp.abs(jnp.take_along_axis(resid, pairs, 1)) <= tol, -1)
    feasible = ok & on_own & jnp.all(resid <= tol, -1)

    # counter-clockwise order about the mean; copies of a corner are adjacent
    mean = _masked_mean(st, feasible)
    order = _angle_order(st[:, 0] - mean[0], st[:, 1] - mean[1], feasible)
    st, feasible, line_pair = st[order], feasible[order], order
    area, moment = _fan(st, feasible, mean)
    centroid_st = _safe_div(moment, area, area > tol * tol, mean)

    gap = jnp.max(jnp.abs(st - jnp.roll(st, 1, 0)), -1)
    gap_first = jnp.max(jnp.abs(st - st[0]), -1)
    copy = (jnp.arange(st.shape[0]) > 0) & (jnp.minimum(gap, gap_first) <= 4 * tol)
    keep = feasible & ~copy
    count = jnp.sum(keep).astype(jnp.int32)
    first = jnp.argsort(jnp.where(keep, 0, 1), stable=True)  # kept corners first, in order
    kept, kept_id = st[first], line_pair[first]

    k = np.arange(max_corners)
    idx = jnp.where(count > max_corners, (k * count) // max_corners, jnp.minimum(k, count - 1))
    corners_st = kept[jnp.maximum(idx, 0)]
    to_world = lambda x: point + x[..., :1] * u + x[..., 1:] * v  # noqa: E731
    return Polygon(
        corners=jnp.where(count > 0, to_world(corners_st), point),
        corner_mask=k < count,
        area=jnp.maximum(area, 0.0),
        centroid=to_world(centroid_st),
        overflow=jnp.maximum(count - max_corners, 0),
        corner_id=kept_id[jnp.maximum(idx, 0)].astype(jnp.int32),
    )
