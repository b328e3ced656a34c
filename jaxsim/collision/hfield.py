"""Height-field contacts: spheres, capsules, boxes and convex hulls on static terrain.

A height field (MuJoCo's ``hfield``) is a grid of ``nrow x ncol`` heights ``top * h``
over ``[-hx, hx] x [-hy, hy]`` in its geom frame (x along the columns, y along the
rows, row 0 at ``-hy``), each cell split into the triangles ``(r, c), (r, c+1), (r+1,
c+1)`` and ``(r, c), (r+1, c+1), (r+1, c)`` (as the viewer draws it). A geom only sees
a ``window x window`` block of cells around its centre (static, sized at build from
the geom's bounding radius: ``Topology.pair_window``), so the work per pair is fixed.

Candidates, each with a depth along its normal (positive: overlapping):
  * geom samples against the surface: a sphere's centre, a capsule's two ends and
    middle (each with the radius: the closest point over every triangle of the window,
    exact for a sphere on a triangle mesh), a box's corners or a hull's vertices
    (radius 0: the height of the triangle under it, along that triangle's normal);
  * for boxes and hulls, the window's grid vertices inside the polyhedron (a bump
    smaller than a face pokes into it), along the nearest face turned towards the
    terrain.
The ``nslot`` deepest within the margin become the pair's slots; a height field keeps
its deepest candidates by design, so candidates beyond the slots are not counted as
overflow. Normals point from the geom (geom1) into the terrain (geom2); a sample
outside the grid's extent has no contact. Feature ids: the sample index, then
``nsample +`` the grid vertex index (both stable while the geom moves).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim import math

Array = jax.Array


def _closest_on_triangles(p: Array, a: Array, b: Array, c: Array) -> Array:
    """(T, 3) closest points to ``p`` (3,) on triangles ``a, b, c`` (T, 3) each
    (Voronoi regions of the vertices, edges and face)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = jnp.sum(ab * ap, -1), jnp.sum(ac * ap, -1)
    bp, cp = p - b, p - c
    d3, d4 = jnp.sum(ab * bp, -1), jnp.sum(ac * bp, -1)
    d5, d6 = jnp.sum(ab * cp, -1), jnp.sum(ac * cp, -1)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    safe = lambda x: jnp.where(jnp.abs(x) > 0, x, 1.0)  # noqa: E731
    on_ab = (d1 / safe(d1 - d3))[:, None]
    on_ac = (d2 / safe(d2 - d6))[:, None]
    on_bc = ((d4 - d3) / safe((d4 - d3) + (d5 - d6)))[:, None]
    denom = safe(va + vb + vc)
    face = a + ab * (vb / denom)[:, None] + ac * (vc / denom)[:, None]
    out = face
    out = jnp.where(((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0))[:, None], b + on_bc * (c - b), out)
    out = jnp.where(((vb <= 0) & (d2 >= 0) & (d6 <= 0))[:, None], a + on_ac * ac, out)
    out = jnp.where(((vc <= 0) & (d1 >= 0) & (d3 <= 0))[:, None], a + on_ab * ab, out)
    out = jnp.where(((d6 >= 0) & (d5 <= d6))[:, None], c, out)
    out = jnp.where(((d3 >= 0) & (d4 <= d3))[:, None], b, out)
    return jnp.where(((d1 <= 0) & (d2 <= 0))[:, None], a, out)


class Grid:
    """The window of a height field around a point, in the field's frame."""

    def __init__(self, heights: Array, size: Array, centre: Array, window: int):
        nrow, ncol = heights.shape
        wy, wx = min(window, nrow - 1), min(window, ncol - 1)
        self.dx, self.dy = 2 * size[0] / (ncol - 1), 2 * size[1] / (nrow - 1)
        self.size, self.ncol = size, ncol
        col = jnp.clip(jnp.floor((centre[0] + size[0]) / self.dx).astype(jnp.int32) - (wx - 1) // 2, 0, ncol - 1 - wx)
        row = jnp.clip(jnp.floor((centre[1] + size[1]) / self.dy).astype(jnp.int32) - (wy - 1) // 2, 0, nrow - 1 - wy)
        self.row, self.col = row, col
        z = size[2] * jax.lax.dynamic_slice(heights, (row, col), (wy + 1, wx + 1))
        x = -size[0] + (col + jnp.arange(wx + 1)) * self.dx
        y = -size[1] + (row + jnp.arange(wy + 1)) * self.dy
        X, Y = jnp.meshgrid(x, y)
        self.vert = jnp.stack([X, Y, z], -1)  # (wy + 1, wx + 1, 3)
        self.vert_id = (row + jnp.arange(wy + 1))[:, None] * ncol + (col + jnp.arange(wx + 1))[None, :]
        v = self.vert
        a, b, c, d = v[:-1, :-1], v[:-1, 1:], v[1:, 1:], v[1:, :-1]
        flat = lambda t: t.reshape(-1, 3)  # noqa: E731
        self.tri = (jnp.concatenate([flat(a), flat(a)]), jnp.concatenate([flat(b), flat(c)]),
                    jnp.concatenate([flat(c), flat(d)]))

    def under(self, p: Array) -> tuple[Array, Array, Array]:
        """(surface height, unit upward normal (3,), inside the grid's extent) at the xy
        of ``p`` (3,), from the triangle under it (anywhere on the grid, not only the
        window: a corner may lie outside it)."""
        size = self.size
        inside = (jnp.abs(p[0]) <= size[0]) & (jnp.abs(p[1]) <= size[1])
        u = jnp.clip((p[0] + size[0]) / self.dx - self.col, 0.0, self.vert.shape[1] - 1 - 1e-6)
        w = jnp.clip((p[1] + size[1]) / self.dy - self.row, 0.0, self.vert.shape[0] - 1 - 1e-6)
        i, j = jnp.floor(w).astype(jnp.int32), jnp.floor(u).astype(jnp.int32)
        fu, fw = u - j, w - i
        z = self.vert[..., 2]
        za, zb, zc, zd = z[i, j], z[i, j + 1], z[i + 1, j + 1], z[i + 1, j]
        lower = fu >= fw  # triangle (a, b, c) below the diagonal
        height = jnp.where(lower, za + fu * (zb - za) + fw * (zc - zb), za + fw * (zd - za) + fu * (zc - zd))
        gx = jnp.where(lower, (zb - za) / self.dx, (zc - zd) / self.dx)
        gy = jnp.where(lower, (zc - zb) / self.dy, (zd - za) / self.dy)
        return height, math.normalize(jnp.stack([-gx, -gy, jnp.ones_like(gx)])), inside


def _round_samples(grid: Grid, centres: Array, radius) -> tuple[Array, Array, Array, Array]:
    """Spheres ``centres`` (S, 3) of ``radius`` on the surface: (depth, pos, normal into
    the terrain, valid) per sphere."""
    a, b, c = grid.tri

    def one(s):
        cp = _closest_on_triangles(s, a, b, c)
        dist = math.safe_norm(s - cp)
        k = jnp.argmin(dist)
        height, up, inside = grid.under(s)
        below = s[2] < height
        away = (s - cp[k]) / jnp.maximum(dist[k], 1e-12)
        m = jnp.where(below | (dist[k] < 1e-9), up, away)  # out of the terrain, towards the geom
        signed = jnp.where(below, -(height - s[2]) * up[2], dist[k])
        depth = radius - signed
        return depth, s - 0.5 * (radius + signed) * m, -m, inside
    return jax.vmap(one)(centres)


def _corner_samples(grid: Grid, points: Array) -> tuple[Array, Array, Array, Array]:
    """Points (S, 3) below the surface: (depth, pos, normal into the terrain, valid)."""
    def one(p):
        height, up, inside = grid.under(p)
        signed = (p[2] - height) * up[2]
        return -signed, p - 0.5 * signed * up, -up, inside
    return jax.vmap(one)(points)


def _grid_in_polytope(grid: Grid, normal: Array, offset: Array, face_mask: Array):
    """Grid vertices inside a polyhedron (faces ``normal . x <= offset``): (depth, pos,
    normal from the polyhedron into the terrain, ids, inside) per window vertex. Only
    the faces turned towards the terrain (downward in its frame) count for the depth
    and normal: terrain pushes up into a body, and a vertex near a side face of a box
    sunk into flat ground would otherwise push it sideways."""
    pts = grid.vert.reshape(-1, 3)
    dist = jnp.where(face_mask[None], pts @ normal.T - offset[None], -jnp.inf)  # (P, F)
    down = face_mask & (normal[:, 2] < 0)
    dist_down = jnp.where(down[None], dist, -jnp.inf)
    k = jnp.argmax(dist_down, -1)
    depth = -jnp.max(dist_down, -1)
    n = normal[k]
    inside = jnp.any(down) & (jnp.max(dist, -1) <= 0)
    return depth, pts + 0.5 * depth[:, None] * n, n, grid.vert_id.reshape(-1), inside


def hfield_contacts(kind: str, pos_h: Array, rot_h: Array, heights: Array, size: Array, window: int,
                    nslot: int, margin, pos_g: Array, rot_g: Array, geom_size: Array = None, polytope=None):
    """The ``nslot`` deepest contacts of one geom on one height field.

    Args:
      kind: "sphere", "capsule", "box" or "convex" (static).
      pos_h, rot_h: the height field's world pose; heights: (nrow, ncol) in [0, 1];
        size: (4,) MuJoCo's hfield size (half x, half y, top z, base depth), m.
      window: cells per side the geom sees (static); margin: m.
      pos_g, rot_g: the geom's world pose; geom_size: its size (sphere, capsule);
        polytope: its world ``convex.Polytope`` (box, convex).

    Returns:
      (depth, pos, normal, feature, valid, ncand) with leading size nslot, world frame.
    """
    centre = rot_h.T @ (pos_g - pos_h)
    grid = Grid(heights, size, centre, window)
    if kind in ("sphere", "capsule"):
        if kind == "sphere":
            samples = centre[None]
        else:
            axis = rot_h.T @ rot_g[:, 2] * geom_size[1]
            samples = centre + jnp.stack([-axis, jnp.zeros_like(axis), axis])
        depth, pos, normal, valid = _round_samples(grid, samples, geom_size[0])
        feature = jnp.arange(samples.shape[0], dtype=jnp.int32)
    else:
        verts = (polytope.vert - pos_h) @ rot_h
        depth, pos, normal, valid = _corner_samples(grid, verts)
        valid = valid & polytope.vert_mask
        face_n = polytope.normal @ rot_h
        face_d = polytope.offset - polytope.normal @ pos_h
        g_depth, g_pos, g_normal, g_id, g_in = _grid_in_polytope(grid, face_n, face_d, polytope.face_mask)
        feature = jnp.concatenate([jnp.arange(verts.shape[0], dtype=jnp.int32), verts.shape[0] + g_id])
        depth, pos = jnp.concatenate([depth, g_depth]), jnp.concatenate([pos, g_pos])
        normal = jnp.concatenate([normal, g_normal])
        valid = jnp.concatenate([valid, g_in])
    valid = valid & (depth >= -margin)
    score = jnp.where(valid, depth, -jnp.inf)
    if score.shape[0] < nslot:  # fewer candidates than slots: pad
        pad = nslot - score.shape[0]
        score = jnp.concatenate([score, jnp.full((pad,), -jnp.inf, score.dtype)])
        depth, pos, normal = (jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)])
                              for x in (depth, pos, normal))
        feature = jnp.concatenate([feature, jnp.full((pad,), -1, jnp.int32)])
        valid = jnp.concatenate([valid, jnp.zeros((pad,), bool)])
    _, pick = jax.lax.top_k(score, nslot)
    ok = valid[pick]
    ncand = jnp.minimum(jnp.sum(valid), nslot).astype(jnp.int32)
    return (depth[pick], pos_h + pos[pick] @ rot_h.T, normal[pick] @ rot_h.T, feature[pick], ok, ncand)
