"""The least-squares moments ``Q`` and ``c`` of an intersection volume (the
contact-volume wrench), in closed form per face triangle.

The contact-volume model asks every point ``p`` of the contact plane (normal ``n``,
through the volume's centroid ``p_g``) covered by the volume to separate at a speed
proportional to its depth, and fits one relative twist to all of them by least
squares. Integrated over the faces of the volume projected on the plane, as the
method's authors' RoKi-FD (``rkfd_volume.c``) does: every face triangle contributes over
its projection (unsigned area ``S``), with its height ``h`` above the plane taken as a
distance ``|h|``:

    Q = sum_faces int [[1, -[p x]], [[p x], -[p x]^2]] dA           (6, 6), m^2 .. m^4
    c = sum_faces int |h| [-n ; n x p] dA                           (6,), m^3 .. m^4

with ``p`` relative to ``p_g`` (so the wrench is about the centroid). A convex volume's
shadow on the plane is covered by exactly two faces (one each side), so ``Q`` is twice
the shadow's second-moment matrix and, where the plane cuts the volume, the weight of
``c`` is the volume's thickness along ``n``. ``c`` is the wrench (force; torque about
``p_g``) of a load ``|h|`` per unit area pushing along ``-n``.

Per triangle the integrands are polynomials of degree <= 2 on the projected triangle,
so the edge-midpoint rule is exact: ``int f dA = S/3 sum_edges f(midpoint)`` (and the
centroid for the linear terms). A triangle that crosses the plane is integrated with
its signed ``h`` and corrected by twice its part on the minority side: ``int |h| f =
int h f - 2 int_{h<0} h f`` (one vertex below), or ``-int h f + 2 int_{h>0} h f`` (one
above); the part is the sub-triangle cut off by the plane.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim import math
from jaxsim.collision.polyhedra import Polyhedron

Array = jax.Array


def _projected(x: Array, normal: Array, origin: Array):
    """Heights (..., 3) above the plane and projections (..., 3, 3) relative to ``origin``."""
    rel = x - origin
    h = rel @ normal
    return h, rel - h[..., None] * normal


def _area(p: Array) -> Array:
    """Unsigned area of triangles (..., 3 vertices, 3)."""
    return 0.5 * math.safe_norm(jnp.cross(p[..., 1, :] - p[..., 0, :], p[..., 2, :] - p[..., 0, :]))


def _q_terms(p: Array, area: Array) -> Array:
    """Sum over triangles of their Q (6, 6): ``p`` (T, 3, 3) projected vertices."""
    pc = jnp.mean(p, -2)  # (T, 3)
    pm = 0.5 * (p + jnp.roll(p, -1, axis=-2))  # (T, 3 edges, 3)
    sq = math.skew(pm)
    second = jnp.mean(sq @ sq, -3)  # (T, 3, 3)
    eye = jnp.eye(3, dtype=p.dtype)
    block = jnp.concatenate([jnp.concatenate([jnp.broadcast_to(eye, second.shape), -math.skew(pc)], -1),
                             jnp.concatenate([math.skew(pc), -second], -1)], -2)
    return jnp.einsum("t,tij->ij", area, block)


def _c_terms(p: Array, h: Array, area: Array, normal: Array) -> Array:
    """Per triangle (T, 6): int h [-n ; n x p] dA with signed ``h`` (T, 3)."""
    hm = 0.5 * (h + jnp.roll(h, -1, axis=-1))  # (T, 3) at the edge midpoints
    pm = 0.5 * (p + jnp.roll(p, -1, axis=-2))
    force = -(area * jnp.mean(h, -1))[:, None] * normal
    torque = area[:, None] * jnp.mean(hm[..., None] * jnp.cross(normal, pm), -2)
    return jnp.concatenate([force, torque], -1)


def _cut(x: Array, h: Array, corner: Array) -> Array:
    """The sub-triangles (T, 3, 3) that the plane cuts off triangles ``x`` (T, 3, 3) with
    heights ``h`` (T, 3) at vertex ``corner`` (T,) int."""
    t = jnp.arange(x.shape[0])
    a, b = (corner + 1) % 3, (corner + 2) % 3
    xc, hc = x[t, corner], h[t, corner]

    def cross(other):  # where the edge corner -> other meets the plane
        ho = h[t, other]
        den = hc - ho
        w = jnp.where(den != 0, hc / jnp.where(den != 0, den, 1.0), 0.0)
        return xc + w[:, None] * (x[t, other] - xc)

    return jnp.stack([xc, cross(a), cross(b)], 1)


def volume_moments(poly: Polyhedron, normal: Array, origin: Array) -> tuple[Array, Array]:
    """``Q`` (6, 6) and ``c`` (6,) of one intersection volume (module docstring).

    Args:
      poly: the intersection polyhedron (with its face fans), world frame.
      normal: (3,) unit normal of the contact plane.
      origin: (3,) m, the plane's point and the moments' reference (the centroid).
    """
    x = jnp.stack([poly.fan_apex, poly.fan_start, poly.fan_stop], -2)  # (N, 3, 3)
    on = poly.fan_mask
    h, p = _projected(x, normal, origin)
    h, p = jnp.where(on[:, None], h, 0.0), jnp.where(on[:, None, None], p, 0.0)
    area = jnp.where(on, _area(p), 0.0)
    Q = _q_terms(p, area)

    # |h|: signed integral, then twice the minority part's (sub-triangle) correction
    below, above = h < 0, h > 0
    n_below, n_above = jnp.sum(below, -1), jnp.sum(above, -1)
    signed = _c_terms(p, h, area, normal)
    mixed = (n_below > 0) & (n_above > 0)
    one_below = mixed & (n_below == 1)
    corner = jnp.where(one_below, jnp.argmax(below, -1), jnp.argmax(above, -1))
    hs, ps = _projected(_cut(x, h, corner), normal, origin)
    part = _c_terms(ps, hs, jnp.where(mixed, _area(ps), 0.0), normal)
    sign = jnp.where(n_below > n_above, -1.0, 1.0).astype(h.dtype)  # the side holding most of it
    sign = jnp.where(mixed, jnp.where(one_below, 1.0, -1.0), sign)
    c = jnp.sum(sign[:, None] * signed - 2.0 * jnp.where(mixed, sign, 0.0)[:, None] * part, 0)
    return Q, c


def fit_twist(Q: Array, c: Array, reg: Array | float = 0.0) -> Array:
    """``(Q + reg I)^-1 c`` (6,) for a ``Q`` of :func:`volume_moments`, in closed form.

    ``Q = [[S I, -[m x]], [[m x], K]]`` (``S`` twice the shadow's area, ``m`` its first
    moment, ``K`` its polar second moment): eliminate the linear part (``S`` is a
    scalar) and solve the 3x3 Schur complement by its adjugate. Elementwise only: a
    6x6 factorization is dozens of tiny ops, the dominant cost of a batch-1 step.
    """
    S = Q[0, 0] + reg
    ok = S > 0
    S = jnp.where(ok, S, 1.0)  # an empty volume (Q = 0): no fit, zero twist
    m = jnp.stack([Q[5, 1], Q[3, 2], Q[4, 0]])  # [m x] = Q[3:, :3]
    K = Q[3:, 3:] + reg * jnp.eye(3, dtype=Q.dtype)
    mx = math.skew(m)
    schur = K + mx @ mx / S
    rhs = c[3:] - jnp.cross(m, c[:3]) / S
    adj = jnp.stack([jnp.cross(schur[1], schur[2]), jnp.cross(schur[2], schur[0]), jnp.cross(schur[0], schur[1])], 1)
    det = schur[0] @ adj[:, 0]
    ok = ok & (det > 0)
    omega = adj @ rhs / jnp.where(ok, det, 1.0)
    return jnp.where(ok, jnp.concatenate([(c[:3] + jnp.cross(m, omega)) / S, omega]), 0.0)
