"""Contact plane and contact polygon of two convex polyhedra (Springhead impact/resting).

Springhead puts its contact constraints at the corners of the polygon where two
penetrating convex shapes overlap in the contact plane. Here:

* normal: the separating-axis test of :func:`convex.separating_axis` (axis of least
  overlap over both shapes' face normals and their edge cross products; exact for
  polyhedra, with a tiny preference for face axes), pointing from shape a to shape b;
* plane: perpendicular to the normal, halfway through the overlap along it, i.e.
  halfway between a's deepest point into b (``max_a n . x``) and b's deepest point
  into a (``min_b n . x``); ``depth`` is the overlap along the normal;
* polygon: the cross-section of the intersection of a and b by that plane, which is
  exactly where the two shapes' own cuts overlap (:func:`polyhedra.section` applied to
  both shapes' half-spaces at once).

Boxes and convex meshes only: a sphere or capsule touching a polyhedron has a point or
segment of contact, produced by the point-contact routines.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.collision import polyhedra
from jaxsim.collision.convex import Polytope, separating_axis

Array = jax.Array


def halfspaces(p: Polytope) -> tuple[Array, Array]:
    """(F, 3) normals and (F,) offsets; padded faces repeat the first face, which
    constrains nothing new."""
    normal = jnp.where(p.face_mask[:, None], p.normal, p.normal[0])
    offset = jnp.where(p.face_mask, p.offset, p.offset[0])
    return normal, offset


def _masked_mean(x: Array, mask: Array) -> Array:
    return jnp.sum(jnp.where(mask[:, None], x, 0.0), 0) / jnp.maximum(jnp.sum(mask), 1)


def contact_plane(a: Polytope, b: Polytope) -> tuple[Array, Array, Array]:
    """Contact plane of two convex polyhedra.

    Args:
      a, b: the two shapes, world frame.

    Returns:
      normal_w (3,) unit, from a to b; depth () m, overlap along the normal (< 0:
      apart by that much); point_w (3,) m, a point of the plane (the two shapes' mean
      vertex, moved onto the plane).
    """
    normal, depth = separating_axis(a, b)
    big = jnp.asarray(jnp.inf, a.vert.dtype)
    top_a = jnp.max(jnp.where(a.vert_mask, a.vert @ normal, -big))
    low_b = jnp.min(jnp.where(b.vert_mask, b.vert @ normal, big))
    centre = 0.5 * (_masked_mean(a.vert, a.vert_mask) + _masked_mean(b.vert, b.vert_mask))
    point = centre + (0.5 * (top_a + low_b) - centre @ normal) * normal
    return normal, depth, point


def contact_polygon(a: Polytope, b: Polytope, max_corners: int = 8, tol=None):
    """Contact plane and the polygon where a and b overlap in it.

    Args:
      a, b: the two shapes, world frame.
      max_corners: K, static number of corner slots (the rest is counted in the
        polygon's ``overflow``; area and centroid always cover the whole polygon).
      tol: m, feasibility tolerance of :func:`polyhedra.section` (default scale-aware).

    Returns:
      (normal_w (3,), depth () m, polygon :class:`polyhedra.Polygon`), the polygon's
      corners counter-clockwise about the normal. Shapes that do not overlap give an
      empty polygon (no valid corner, area 0).
    """
    normal, depth, point = contact_plane(a, b)
    na, da = halfspaces(a)
    nb, db = halfspaces(b)
    # offsets relative to the plane point keep float32 tolerances small (polyhedra docs)
    normals = jnp.concatenate([na, nb])
    offsets = jnp.concatenate([da, db]) - normals @ point
    poly = polyhedra.section(normals, offsets, jnp.zeros_like(point), normal, max_corners, tol)
    apart = depth < 0
    poly = polyhedra.Polygon(
        corners=poly.corners + point,
        corner_mask=poly.corner_mask & ~apart,
        area=jnp.where(apart, 0.0, poly.area),
        centroid=poly.centroid + point,
        overflow=jnp.where(apart, 0, poly.overflow),
        corner_id=poly.corner_id,
    )
    return normal, depth, poly
