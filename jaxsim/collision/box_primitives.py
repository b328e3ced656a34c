"""Narrow phase of a sphere or a capsule (geom1) against a box (geom2).

Conventions are MuJoCo's: the unit contact normal points from geom1 into geom2, ``depth``
> 0 is penetration (MuJoCo's ``-dist``) and the contact position lies midway between the
two surfaces along the normal. A box is given by its half-extents ``size`` (3,) [m], its
world position and its rotation ``rot_w`` (box frame -> world). A capsule is the set of
points within ``radius`` of the segment ``pos_w +- half_length * rot_w[:, 2]``.

Every function returns fixed-size slots ``(depth (k,), pos_w (k, 3), normal_w (k, 3),
feature (k,) int32, valid (k,) bool, ncand () int32)``; ``valid`` means
``depth >= -margin``, ``ncand`` counts the valid slots (these pairs never overflow) and
invalid slots still hold finite values. Everything is branch-free, so it works under ``jit``,
``vmap`` and ``grad`` (gradients stay finite in degenerate poses) in float32 and float64.

Sphere-box: the box point closest to the centre (clamp in the box frame); a centre inside
the box is pushed out through the nearest face.

Capsule-box (two slots, like MuJoCo): every contact is the sphere-box contact of a sphere
of the capsule's radius centred at a point ``c + t d`` (``t`` in [-1, 1]) of the capsule's
segment.

1. The deepest point ``t*`` minimises the box's signed distance along the segment. That
   distance is convex in ``t`` and piecewise simple, so its minimiser is one of a closed
   set of candidates, all evaluated: the segment ends, the crossings of the six face
   planes, the closest approaches to the 12 edge lines and the 8 corners, and the
   crossings of the six inside pieces ``+-p_i - s_i``. Exact to rounding.
2. Stretches of the segment around ``t*`` along the box: over the face, of those touched at
   ``t*`` (the push-out face if ``t*`` is inside), that the capsule is most parallel to,
   i.e. in the slabs ``|p_j| <= s_j`` of the two other axes; and, when ``t*`` touches the
   two faces of the edge along the capsule's main axis, along that edge (in its slab). A
   stretch ends, either way, where the segment leaves one of its slabs, or is outside it
   and moving away.
3. Slot 0 is the first stretch end as deep as ``t*`` (else ``t*``). Slot 1 is another
   stretch end: preferably one in contact, then one of the face stretch, then the
   deepest. A capsule flat on a face (or along an edge) thus gets two equal-depth
   contacts at its ends, or where it leaves the face, as in MuJoCo; a slightly tilted one
   gets its lower end and the far end of the stretch.

The slots are ordered along the capsule's axis, which keeps their identity stable over
time; slot 1 is invalid when it coincides with slot 0. The parameters ``t`` carry no
gradient: by the envelope theorem the deepest depth's gradient is still exact, and each
slot otherwise moves with the capsule's material point. Where the segment enters the box
MuJoCo's heuristic reports shallower contacts (or none for a capsule piercing a box with
both ends outside); here the deepest slot is always the capsule's deepest point.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp

from jaxsim.math import normalize, safe_norm

Array = jax.Array

# sphere-box feature codes (capsule-box: slot + 2 * code)
FACE, EDGE, VERTEX, INSIDE = 0, 1, 2, 3

_CORNERS = tuple(itertools.product((-1.0, 1.0), repeat=3))  # (8, 3) corner signs


def _nearest_face(center: Array, size: Array, key: Array | None = None, tol=0.0) -> Array:
    """Index (...) in 0..5 (+x, +y, +z, -x, -y, -z) of the face nearest to an inside point.

    Faces within ``tol`` [m] of the nearest one tie, and ties go to the smallest ``key``
    (..., 3) (by default the distance itself, i.e. a plain argmin).
    """
    gaps = jnp.concatenate([size - center, size + center], -1)
    key = gaps if key is None else jnp.concatenate([key, key], -1)
    near = gaps <= jnp.min(gaps, -1, keepdims=True) + tol
    return jnp.argmin(jnp.where(near, key, jnp.inf), -1)


@jax.jit
def _sphere_box_local(center: Array, radius: Array, size: Array, key: Array | None = None,
                      tol=0.0):
    """Sphere-box contact in the box frame.

    Args:
      center: (..., 3) sphere centre in the box frame [m].
      radius: () sphere radius [m].
      size: (3,) box half-extents [m].
      key, tol: tie-break of the push-out face of a centre inside the box, see
        ``_nearest_face``; ``tol`` [m] also widens the box for ``feature``.

    Returns:
      depth (...) [m], pos (..., 3) [m], normal (..., 3) (unit, sphere -> box) and
      feature (...) int32 (FACE, EDGE, VERTEX or INSIDE).
    """
    clamped = jnp.clip(center, -size, size)
    dist = safe_norm(clamped - center)
    outside = dist > 0
    k = _nearest_face(center, size, key, tol)
    inward = jax.nn.one_hot(k % 3, 3, dtype=center.dtype) * jnp.where(k < 3, -1, 1)[..., None]
    gap = jnp.sum(inward * center, -1) + jnp.take(size, k % 3)  # centre to that face
    normal = jnp.where(outside[..., None], normalize(clamped - center), inward)
    surface = jnp.where(outside, dist, -gap)  # signed distance of the centre to the box
    pos = center + (0.5 * (surface + radius))[..., None] * normal
    nclamped = jnp.sum(jnp.abs(center) > size + tol, -1)  # within tol of a face: on it
    feature = jnp.where(nclamped == 0, INSIDE, nclamped - 1).astype(jnp.int32)
    return radius - surface, pos, normal, feature


def sphere_box(center_w: Array, radius: Array, box_pos_w: Array, box_rot_w: Array,
               box_size: Array, margin: float = 0.0):
    """Contact of a sphere (geom1) with a box (geom2).

    Args:
      center_w: (3,) sphere centre in world [m].
      radius: () sphere radius [m].
      box_pos_w: (3,) box centre in world [m].
      box_rot_w: (3, 3) box rotation, box frame -> world.
      box_size: (3,) box half-extents [m].
      margin: contacts with depth >= -margin are valid [m].

    Returns:
      depth (1,) [m], pos_w (1, 3) [m], normal_w (1, 3), feature (1,) int32 (0 face region,
      1 edge region, 2 vertex region, 3 centre inside the box), valid (1,) bool.
    """
    center = (center_w - box_pos_w) @ box_rot_w
    depth, pos, normal, feature = _sphere_box_local(center, radius, box_size)
    pos_w = box_rot_w @ pos + box_pos_w
    valid = (depth >= -margin)[None]
    return (depth[None], pos_w[None], (box_rot_w @ normal)[None], feature[None], valid,
            jnp.sum(valid).astype(jnp.int32))


def _box_sdf(p: Array, size: Array) -> Array:
    """Signed distance (..., ) [m] of points p (..., 3) (box frame) to the box."""
    q = jnp.abs(p) - size
    return safe_norm(jnp.maximum(q, 0.0)) + jnp.minimum(jnp.max(q, -1), 0.0)


def _div(num: Array, den: Array) -> Array:
    """num / den, and 0 where den == 0 (callers clip the result to [-1, 1])."""
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def _deepest_t(c: Array, d: Array, size: Array) -> Array:
    """argmin over t in [-1, 1] of the box's signed distance at c + t d (box frame)."""
    corners = size * jnp.asarray(_CORNERS, c.dtype)  # (8, 3)
    mask = 1.0 - jnp.eye(3, dtype=c.dtype)  # row i drops axis i (edges along axis i)
    rel = (c - corners)[None] * mask[:, None, :]  # (3, 8, 3)
    dm = d * mask  # (3, 3)
    sign = jnp.concatenate([jnp.ones(3, c.dtype), -jnp.ones(3, c.dtype)])
    off = sign * jnp.tile(c, 2) - jnp.tile(size, 2)  # inside pieces off + t * slope
    slope = sign * jnp.tile(d, 2)
    cand = jnp.concatenate([
        jnp.array([-1.0, 1.0], c.dtype),
        _div(sign * jnp.tile(size, 2) - jnp.tile(c, 2), jnp.tile(d, 2)),  # face planes
        _div(-(c - corners) @ d, d @ d),  # corners
        _div(-jnp.einsum("iej,ij->ie", rel, dm), jnp.sum(dm * dm, -1)[:, None]).ravel(),
        _div(off[None, :] - off[:, None], slope[:, None] - slope[None, :]).ravel(),
    ])
    cand = jnp.clip(cand, -1.0, 1.0)
    return cand[jnp.argmin(_box_sdf(c + cand[:, None] * d, size))]


def _stretch(c: Array, d: Array, size: Array, t_deep: Array, axes: Array):
    """Segment parameters (ta <= t_deep <= tb) where, going either way from t_deep, the
    segment c + t d first leaves the slab |p_j| <= s_j of one of ``axes`` (3,) bool, or is
    outside it and moving away."""
    e0, e1 = _div(-size - c, d), _div(size - c, d)
    lo, hi = jnp.minimum(e0, e1), jnp.maximum(e0, e1)
    axes = axes & (d != 0)
    ta = jnp.max(jnp.where(axes, jnp.minimum(lo, t_deep), -1.0))
    tb = jnp.min(jnp.where(axes, jnp.maximum(hi, t_deep), 1.0))
    return jnp.clip(ta, -1.0, t_deep), jnp.clip(tb, t_deep, 1.0)


@jax.jit
def _slot_params(c: Array, d: Array, size: Array, reach: Array,
                 scale: Array) -> tuple[Array, Array, Array]:
    """Segment parameters (t0 <= t1) of the two capsule-box slots (steps 1-3 of the module
    docstring) and whether they are distinct. Points with signed distance <= ``reach`` [m]
    are in contact; ``scale`` [m] is the size of the problem, for rounding tolerances."""
    c, d, size, reach, scale = jax.lax.stop_gradient((c, d, size, reach, scale))
    tol = 64 * jnp.finfo(c.dtype).eps * scale  # rounding tolerance of distances
    t_deep = _deepest_t(c, d, size)
    # step 2: faces touched at t_deep (within tol of a face plane counts as on the face;
    # inside, near-tied push-out faces go to the face most parallel to the segment)
    p = c + t_deep * d
    clamped = jnp.abs(p) > size + tol
    inside_axis = jax.nn.one_hot(_nearest_face(p, size, jnp.abs(d), tol) % 3, 3, dtype=bool)
    touched = jnp.where(jnp.any(clamped), clamped, inside_axis)
    face = jnp.arange(3) == jnp.argmin(jnp.where(touched, jnp.abs(d), jnp.inf))
    main = jnp.arange(3) == jnp.argmax(jnp.abs(d))
    along_edge = jnp.all(touched | main)  # t_deep by the edge along the main axis
    t = jnp.stack([*_stretch(c, d, size, t_deep, ~face), *_stretch(c, d, size, t_deep, main)])
    sdf = _box_sdf(c + t[:, None] * d, size)
    sdf = jnp.where(jnp.arange(4) < 2, sdf, jnp.where(along_edge, sdf, jnp.inf))
    # step 3
    snap = sdf <= _box_sdf(c + t_deep * d, size) + tol
    t0 = jnp.where(jnp.any(snap), t[jnp.argmax(snap)], t_deep)
    distinct = jnp.abs(t - t0) * safe_norm(d) > 1e-6 * scale
    rank = jnp.where(distinct, 2 * (sdf <= reach) + (jnp.arange(4) < 2), -1)
    k = jnp.argmin(jnp.where(rank == jnp.max(rank), sdf, jnp.inf))
    return jnp.minimum(t0, t[k]), jnp.maximum(t0, t[k]), distinct[k]


def capsule_box(cap_pos_w: Array, cap_rot_w: Array, radius: Array, half_length: Array,
                box_pos_w: Array, box_rot_w: Array, box_size: Array, margin: float = 0.0):
    """Up to two contacts of a capsule (geom1) with a box (geom2).

    Args:
      cap_pos_w: (3,) capsule centre in world [m].
      cap_rot_w: (3, 3) capsule rotation, capsule frame -> world (axis = local z).
      radius: () capsule radius [m].
      half_length: () half-length of the capsule's segment [m].
      box_pos_w: (3,) box centre in world [m].
      box_rot_w: (3, 3) box rotation, box frame -> world.
      box_size: (3,) box half-extents [m].
      margin: contacts with depth >= -margin are valid [m].

    Returns:
      depth (2,) [m], pos_w (2, 3) [m], normal_w (2, 3), feature (2,) int32 (slot index +
      2 * the sphere-box feature code), valid (2,) bool. Slots are ordered along the
      capsule's axis; slot 1 is invalid when it coincides with slot 0.
    """
    c = (cap_pos_w - box_pos_w) @ box_rot_w
    d = (cap_rot_w[:, 2] @ box_rot_w) * half_length
    scale = jax.lax.stop_gradient(jnp.sum(box_size) + jnp.max(jnp.abs(c)) + half_length
                                  + radius)
    t0, t1, distinct = _slot_params(c, d, box_size, radius + margin, scale)
    t = jnp.stack([t0, t1])
    # inside the box, push-out faces within rounding tie as in _slot_params
    key = jnp.broadcast_to(jnp.abs(jax.lax.stop_gradient(d)), (2, 3))
    tol = 64 * jnp.finfo(c.dtype).eps * scale
    depth, pos, normal, feature = _sphere_box_local(c + t[:, None] * d, radius, box_size, key,
                                                    tol)
    valid = (depth >= -margin) & jnp.stack([True, distinct])
    return (depth, pos @ box_rot_w.T + box_pos_w, normal @ box_rot_w.T,
            feature * 2 + jnp.arange(2, dtype=jnp.int32), valid, jnp.sum(valid).astype(jnp.int32))
