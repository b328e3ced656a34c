"""Analytic narrow phase for planes, spheres and capsules.

Every function handles one geom pair (``vmap`` it over a group) and returns
``(depth (k,), pos_w (k, 3), normal_w (k, 3), feature (k,) int32, valid (k,) bool,
ncand () int32)`` for its ``k`` slots: normals point from geom1 into geom2, depth > 0
is penetration, positions lie midway between the surfaces, ``ncand`` counts the
contacts found (more than ``k`` is overflow). Invalid slots hold finite values.

Planes are infinite half-spaces ``z <= 0`` of their geom frame. A capsule is the set of
points within ``radius`` of the segment ``pos +- half_length * rot[:, 2]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim import math

Array = jax.Array


def _out(depth, pos, normal, feature):
    depth = jnp.atleast_1d(depth)
    valid = depth >= 0
    return (depth, jnp.reshape(pos, (-1, 3)), jnp.reshape(normal, (-1, 3)),
            jnp.asarray(feature, jnp.int32).reshape(-1), valid, jnp.sum(valid).astype(jnp.int32))


def capsule_segment(pos_w: Array, rot_w: Array, half_length: Array) -> tuple[Array, Array]:
    """End points (2 x (3,)) of a capsule's axis segment."""
    axis = rot_w[:, 2] * half_length
    return pos_w - axis, pos_w + axis


def closest_point_on_segment(p: Array, a: Array, b: Array) -> Array:
    """Closest point to ``p`` on the segment [a, b] (degenerate segments allowed)."""
    ab = b - a
    t = jnp.clip(jnp.dot(p - a, ab) / jnp.maximum(jnp.dot(ab, ab), 1e-30), 0.0, 1.0)
    return a + t * ab


def closest_points_segments(a0: Array, a1: Array, b0: Array, b1: Array):
    """Closest points of segments [a0, a1] and [b0, b1].

    Returns:
      (pa, pb, s, t, parallel): the points, their parameters in [0, 1] and whether the
      segments are (nearly) parallel, in which case (s, t) is one of the closest pairs.
    """
    da, db, r = a1 - a0, b1 - b0, a0 - b0
    aa, bb, ab = jnp.dot(da, da), jnp.dot(db, db), jnp.dot(da, db)
    ar, br = jnp.dot(da, r), jnp.dot(db, r)
    denom = aa * bb - ab * ab
    parallel = denom <= 1e-12 * jnp.maximum(aa * bb, 1e-30)
    s = jnp.where(parallel, 0.0, (ab * br - bb * ar) / jnp.where(parallel, 1.0, denom))
    s = jnp.clip(s, 0.0, 1.0)
    t = (ab * s + br) / jnp.maximum(bb, 1e-30)
    t = jnp.clip(t, 0.0, 1.0)
    s = jnp.clip((ab * t - ar) / jnp.maximum(aa, 1e-30), 0.0, 1.0)
    return a0 + s * da, b0 + t * db, s, t, parallel


def sphere_sphere_at(c1, r1, c2, r2, feature=0):
    """Contact of two spheres (also used for capsule cores)."""
    delta = c2 - c1
    dist = math.safe_norm(delta)
    normal = jnp.where(dist > 1e-12, delta / jnp.where(dist > 1e-12, dist, 1.0),
                       jnp.array([0.0, 0.0, 1.0], c1.dtype))
    depth = r1 + r2 - dist
    pos = c1 + normal * (r1 - 0.5 * depth)
    return depth, pos, normal, feature


def plane_sphere(plane_pos, plane_rot, center, radius):
    n = plane_rot[:, 2]
    height = jnp.dot(center - plane_pos, n)
    depth = radius - height
    pos = center - n * (radius - 0.5 * depth)
    return _out(depth, pos, n, 0)


def plane_capsule(plane_pos, plane_rot, cap_pos, cap_rot, radius, half_length):
    n = plane_rot[:, 2]
    ends = jnp.stack(capsule_segment(cap_pos, cap_rot, half_length))
    height = (ends - plane_pos) @ n
    depth = radius - height
    pos = ends - n[None] * (radius - 0.5 * depth)[:, None]
    return _out(depth, pos, jnp.broadcast_to(n, (2, 3)), jnp.arange(2))


def plane_vertices(plane_pos, plane_rot, verts_w, vert_mask, nslot: int, margin=0.0):
    """Vertices of a polyhedron below a plane (or within ``margin`` above it, m); the
    deepest ``nslot`` are kept."""
    n = plane_rot[:, 2]
    depth = -((verts_w - plane_pos) @ n)
    found = (depth >= -margin) & vert_mask
    score = jnp.where(found, depth, -jnp.inf)
    _, idx = jax.lax.top_k(score, nslot)
    d = depth[idx]
    pos = verts_w[idx] + 0.5 * d[:, None] * n
    valid = found[idx]
    return (d, pos, jnp.broadcast_to(n, (nslot, 3)), idx.astype(jnp.int32), valid,
            jnp.sum(found).astype(jnp.int32))


def sphere_sphere(c1, r1, c2, r2):
    return _out(*sphere_sphere_at(c1, r1, c2, r2))


def sphere_capsule(center, radius, cap_pos, cap_rot, cap_radius, half_length):
    a, b = capsule_segment(cap_pos, cap_rot, half_length)
    return _out(*sphere_sphere_at(center, radius, closest_point_on_segment(center, a, b), cap_radius))


def capsule_capsule(pos1, rot1, r1, h1, pos2, rot2, r2, h2):
    a0, a1 = capsule_segment(pos1, rot1, h1)
    b0, b1 = capsule_segment(pos2, rot2, h2)
    pa, pb, _, _, _ = closest_points_segments(a0, a1, b0, b1)
    return _out(*sphere_sphere_at(pa, r1, pb, r2))
