"""Contact regions as contact slots, for pairs of polyhedra (boxes, convex meshes, and
planes as half-spaces).

A contact model declares the geometry its slots hold (``ContactModel.collision``):

* ``"points"``: the point routines of ``driver.py`` (vertices, edge crossings, ...);
* ``"polygon"``: the corners of the contact polygon (``polygon.py``), Springhead's
  constraint points (Springhead impact/resting). Each corner is where two faces' traces cross in
  the contact plane; its feature id is that face pair (``polyhedra.Polygon.corner_id``),
  stable while the same two faces make the corner. Every corner gets the pair's
  overlap depth along the normal;
* ``"volume"``: one slot per pair holding the intersection polyhedron
  (``polyhedra.intersect``) for the contact-volume wrench. The slot's
  normal is the area-weighted mean of geom1's faces that bound the intersection (they
  point from geom1 into geom2), its point the volume's centroid and its depth the
  overlap along the separating axis, as for the polygon.

Sphere and capsule pairs have no polyhedron and keep their point routines in every
geometry. Each function returns what the point routines return, ``(depth (k,), pos_w
(k, 3), normal_w (k, 3), feature (k,), valid (k,), ncand ())``; the volume adds its
``polyhedra.Polyhedron``.

Touching and speculative contacts (shapes overlapping by less than ``SLIVER``, or apart
by a gap ``g <= margin`` along the separating axis): the region is that of the shapes
moved together until they overlap by ``SLIVER``, reported at the original depth with
its points moved back to midway across the gap (``Contacts.volume`` then holds the
intersection of the moved shapes). A polygon or volume needs an overlap to exist, and
one of fixed thickness keeps the computation away from its tolerances in float32.
A half-space's polygon is the exception: below ``SLIVER`` its slots are the polytope's
vertices within the margin, each at its own depth. A tumbling body's far corner can
then be caught before it reaches the surface: from the sliver section alone, a thin
plate spinning at 16 rad/s onto the floor at dt = 5 ms pivoted on its near corner and
drove the far one 12 mm deep (more than its thickness) in one step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.collision import polyhedra, primitives
from jaxsim.collision.convex import Polytope, translate
from jaxsim.collision.polygon import contact_plane, contact_polygon, halfspaces

Array = jax.Array
SLIVER = 1e-4  # m, overlap at which a touching or speculative pair's region is taken
VERTEX_IDS = 1 << 20  # feature ids of a plane pair's speculative vertices, apart from corner ids


def _lowest(plane_pos: Array, plane_rot: Array, b: Polytope):
    """Plane normal (3,), height (m) of b's lowest vertex above the plane, its index."""
    n = plane_rot[:, 2]
    height = jnp.where(b.vert_mask, (b.vert - plane_pos) @ n, jnp.inf)
    lowest = jnp.argmin(height)
    return n, height[lowest], lowest


def plane_polygon(plane_pos: Array, plane_rot: Array, b: Polytope, nslot: int, margin=0.0):
    """Corners of the section of polytope ``b`` by the plane midway between the plane
    geom's surface and ``b``'s lowest point (the contact polygon of a half-space); while
    ``b`` overlaps the half-space by less than ``SLIVER``, its vertices within
    ``margin`` instead, each at its own depth (module docstring)."""
    n, low, _ = _lowest(plane_pos, plane_rot, b)
    depth = -low
    cut = low + 0.5 * jnp.maximum(depth, SLIVER)
    normals, offsets = halfspaces(b)
    point = plane_pos + cut * n
    # offsets about the cutting point keep float32 tolerances small (polyhedra docs)
    poly = polyhedra.section(normals, offsets - normals @ point, jnp.zeros_like(point), n, nslot)
    pos = poly.corners + point + (0.5 * low - cut) * n
    near = depth >= -margin
    count = jnp.sum(poly.corner_mask) + poly.overflow
    section = (jnp.full((nslot,), depth), pos, jnp.broadcast_to(n, (nslot, 3)), poly.corner_id,
               poly.corner_mask & near, jnp.where(near, count, 0).astype(jnp.int32))
    d, p, normal, vertex, valid, found = primitives.plane_vertices(plane_pos, plane_rot, b.vert, b.vert_mask,
                                                                   nslot, margin)
    vertices = (d, p, normal, vertex + VERTEX_IDS, valid, found)
    return jax.tree.map(lambda x, y: jnp.where(depth < SLIVER, x, y), vertices, section)


def polytope_polygon(a: Polytope, b: Polytope, nslot: int, margin=0.0):
    """Corners of the contact polygon of two polytopes (``polygon.contact_polygon``)."""
    normal, depth, _ = contact_plane(a, b)
    shift = jnp.maximum(SLIVER - depth, 0.0)
    normal2, _, poly = contact_polygon(a, translate(b, -shift * normal), nslot)
    near = depth >= -margin
    pos = poly.corners + 0.5 * shift * normal2
    count = jnp.sum(poly.corner_mask) + poly.overflow
    return (jnp.full((nslot,), depth), pos, jnp.broadcast_to(normal2, (nslot, 3)), poly.corner_id,
            poly.corner_mask & near, jnp.where(near, count, 0).astype(jnp.int32))


def _volume_slot(normals_a, offsets_a, normals_b, offsets_b, normal, depth, origin, margin):
    """The one slot of the intersection of A and B (half-spaces) whose separating axis is
    ``normal`` with overlap ``depth``; B is moved towards A first if they overlap by less
    than ``SLIVER``."""
    shift = jnp.maximum(SLIVER - depth, 0.0)
    offsets_b = offsets_b - shift * (normals_b @ normal)
    about = lambda n, d: d - n @ origin  # noqa: E731  planes about a nearby origin (float32)
    poly = polyhedra.intersect(normals_a, about(normals_a, offsets_a), normals_b, about(normals_b, offsets_b))
    poly = _moved(poly, origin)
    owned = (poly.face_owner == 0)[:, None]
    weighted = jnp.sum(jnp.where(owned, poly.face_area[:, None] * poly.face_normal, 0.0), 0)
    projected = jnp.sqrt(jnp.sum(weighted ** 2))
    ok = poly.valid & (projected > 0)
    safe = jnp.where(ok, projected, 1.0)
    n = jnp.where(ok, weighted / safe, normal)
    return _one_slot(depth, poly.centroid + 0.5 * shift * normal, n, margin), poly


def _moved(poly: polyhedra.Polyhedron, t: Array) -> polyhedra.Polyhedron:
    return poly.replace(vert=poly.vert + t, face_centroid=poly.face_centroid + t, centroid=poly.centroid + t,
                        fan_apex=poly.fan_apex + t, fan_start=poly.fan_start + t, fan_stop=poly.fan_stop + t)


def _one_slot(depth, pos, normal, margin):
    near = depth >= -margin
    one = lambda x: x[None]  # noqa: E731
    return one(depth), one(pos), one(normal), jnp.zeros((1,), jnp.int32), one(near), near.astype(jnp.int32)


def plane_volume(plane_pos: Array, plane_rot: Array, b: Polytope, margin=0.0):
    """The intersection of polytope ``b`` with the plane geom's half-space (``b``'s faces
    clipped by the plane: ``polyhedra.clip``)."""
    n, low, lowest = _lowest(plane_pos, plane_rot, b)
    depth = -low
    shift = jnp.maximum(SLIVER - depth, 0.0)
    origin = b.vert[lowest]  # about a nearby origin (float32)
    poly = polyhedra.clip(b.face_vert - origin - shift * n, b.normal, b.face_mask, n, n @ (plane_pos - origin))
    poly = _moved(poly, origin)
    return _one_slot(depth, poly.centroid + 0.5 * shift * n, n, margin), poly


def polytope_volume(a: Polytope, b: Polytope, margin=0.0):
    """The intersection of two polytopes."""
    normal, depth, point = contact_plane(a, b)
    na, da = halfspaces(a)
    nb, db = halfspaces(b)
    return _volume_slot(na, da, nb, db, normal, depth, point, margin)


def pad_polyhedron(poly: polyhedra.Polyhedron, nplane: int, nvert: int, nfan: int) -> polyhedra.Polyhedron:
    """``poly`` (batched over a leading axis) padded to ``nplane`` faces, ``nvert``
    candidate vertices and ``nfan`` fan triangles (masked out, area 0), so that slots
    of several pair kinds share one array."""
    def pad(x, size):
        widths = [(0, 0)] * x.ndim
        widths[1] = (0, size - x.shape[1])
        return jnp.pad(x, widths)

    fan = lambda x: pad(x, nfan)  # noqa: E731
    return poly.replace(vert=pad(poly.vert, nvert), vert_mask=pad(poly.vert_mask, nvert),
                        face_normal=pad(poly.face_normal, nplane), face_owner=pad(poly.face_owner, nplane),
                        face_area=pad(poly.face_area, nplane), face_centroid=pad(poly.face_centroid, nplane),
                        fan_apex=fan(poly.fan_apex), fan_start=fan(poly.fan_start), fan_stop=fan(poly.fan_stop),
                        fan_normal=fan(poly.fan_normal), fan_mask=fan(poly.fan_mask))


def empty_polyhedron(n: int, nplane: int, nvert: int, nfan: int, dtype) -> polyhedra.Polyhedron:
    """``n`` empty polyhedra (slots of pairs without a polyhedron)."""
    z = lambda *shape: jnp.zeros((n,) + shape, dtype)  # noqa: E731
    return polyhedra.Polyhedron(vert=z(nvert, 3), vert_mask=jnp.zeros((n, nvert), bool), face_normal=z(nplane, 3),
                             face_owner=jnp.zeros((n, nplane), jnp.int32), face_area=z(nplane),
                             face_centroid=z(nplane, 3), volume=z(), centroid=z(3),
                             valid=jnp.zeros((n,), bool), fan_apex=z(nfan, 3), fan_start=z(nfan, 3),
                             fan_stop=z(nfan, 3), fan_normal=z(nfan, 3), fan_mask=jnp.zeros((n, nfan), bool))
