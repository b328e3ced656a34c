"""Triangle meshes of geoms in their own frame, for drawing.

Every shape is ``(verts (n, 3) m, faces (m, 3) int)``. Spheres and capsules are
tessellated coarsely (``SEGMENTS`` around, ``RINGS`` per hemisphere): the viewer
animates every vertex, so the file grows with the vertex count.
"""

from __future__ import annotations

import numpy as np

from jaxsim.types import GeomType, Model

SEGMENTS = 14
RINGS = 4


def _rounded(radius: float, half: float, segments: int = SEGMENTS, rings: int = RINGS):
    """A capsule of ``radius`` and cylinder half-length ``half`` along z (a sphere when
    ``half`` = 0): two poles and ``2 * rings`` latitude circles."""
    lat = np.linspace(0.0, np.pi / 2, rings + 1)[1:]  # from the pole down to the equator
    circles = [(half + radius * np.cos(a), radius * np.sin(a)) for a in lat]
    circles += [(-z, r) for z, r in reversed(circles)]  # mirror image for the lower half
    phi = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    ring_verts = [np.stack([r * np.cos(phi), r * np.sin(phi), np.full_like(phi, z)], -1) for z, r in circles]
    verts = np.concatenate([[[0.0, 0.0, half + radius]], *ring_verts, [[0.0, 0.0, -half - radius]]])
    faces, n = [], segments
    nxt = lambda i: (i + 1) % n  # noqa: E731
    for i in range(n):  # top cap
        faces.append((0, 1 + i, 1 + nxt(i)))
    for k in range(len(circles) - 1):
        a, b = 1 + k * n, 1 + (k + 1) * n
        for i in range(n):
            faces += [(a + i, b + i, b + nxt(i)), (a + i, b + nxt(i), a + nxt(i))]
    last, bottom = 1 + (len(circles) - 1) * n, len(verts) - 1
    for i in range(n):
        faces.append((bottom, last + nxt(i), last + i))
    return verts, np.asarray(faces)


def _box(half):
    sx, sy, sz = half
    verts = np.array([[x, y, z] for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
    return verts, np.asarray(faces)


def _grid(heights, half_x: float, half_y: float):
    """A height grid (nrow, ncol) of z values over [-half_x, half_x] x [-half_y, half_y]."""
    nrow, ncol = heights.shape
    x, y = np.meshgrid(np.linspace(-half_x, half_x, ncol), np.linspace(-half_y, half_y, nrow))
    verts = np.stack([x.ravel(), y.ravel(), heights.ravel()], -1)
    idx = np.arange(nrow * ncol).reshape(nrow, ncol)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    faces = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)])
    return verts, faces


def plane(half_extent: float, size=(0.0, 0.0)):
    """A plane's visible square: MuJoCo's half sizes where given (> 0) up to
    ``half_extent``, else ``half_extent``; an 8 x 8 grid (the floor's checker tiles)."""
    hx = min(size[0], half_extent) if size[0] > 0 else half_extent
    hy = min(size[1], half_extent) if size[1] > 0 else half_extent
    return _grid(np.zeros((9, 9)), hx, hy)


def geom_mesh(model: Model, g: int, plane_half_extent: float = 2.0):
    """Triangles of geom ``g`` in its own frame (numpy, ``model`` unbatched)."""
    kind = GeomType(model.topo.geom_type[g])
    size = np.asarray(model.geom_size[g], np.float64)
    if kind == GeomType.PLANE:
        return plane(plane_half_extent, size[:2])
    if kind == GeomType.SPHERE:
        return _rounded(size[0], 0.0)
    if kind == GeomType.CAPSULE:
        return _rounded(size[0], size[1])
    if kind == GeomType.BOX:
        return _box(size)
    if kind == GeomType.CONVEX:
        mesh = model.topo.geom_mesh[g]
        nvert, nface = model.topo.mesh_nvert[mesh], model.topo.mesh_nface[mesh]
        return (np.asarray(model.mesh_vert[mesh, :nvert], np.float64),
                np.asarray(model.mesh_face[mesh, :nface]))
    if kind == GeomType.HFIELD:
        h = model.topo.geom_hfield[g]
        nrow, ncol = model.topo.hfield_nrow[h], model.topo.hfield_ncol[h]
        hx, hy, top, _ = np.asarray(model.hfield_size[h], np.float64)
        heights = top * np.asarray(model.hfield_data[h, :nrow * ncol], np.float64).reshape(nrow, ncol)
        return _grid(heights, hx, hy)
    raise ValueError(f"geom {g}: no drawing for geom type {kind!r}")
