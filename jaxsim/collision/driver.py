"""``collide(model, kin) -> Contacts``: the collision stage.

Pairs are grouped by kind (pair table in ``pairs.py``); each group runs one vmapped
narrow-phase function and writes its fixed block of contact slots, so the buffer has a
static size and every slot keeps its pair from step to step. A bounding-sphere test
masks pairs that cannot touch; it does not skip their computation (shapes are
static), unless ``opt.narrow_pairs`` caps how many pairs of a kind run the narrow
phase: then the nearest ones by bounding sphere are picked each step (``_broad_phase``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.collision import box_primitives, convex, hfield, primitives, regions
from jaxsim.collision.pairs import HFIELD_KINDS, POLYHEDRAL, pair_plan
from jaxsim.kinematics import Kinematics
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.precision import full_precision
from jaxsim.types import ContactMode, Contacts, GeomType, Model

G = GeomType
Array = jax.Array


def contact_frame(normal: Array) -> Array:
    """(..., 3, 3) rows (normal, tangent1, tangent2), right-handed."""
    ax = jnp.abs(normal)
    ex = jnp.asarray([1.0, 0.0, 0.0], normal.dtype)
    ey = jnp.asarray([0.0, 1.0, 0.0], normal.dtype)
    ez = jnp.asarray([0.0, 0.0, 1.0], normal.dtype)
    # the world axis least aligned with the normal gives a well-conditioned tangent
    ref = jnp.where((ax[..., :1] <= ax[..., 1:2]) & (ax[..., :1] <= ax[..., 2:]), ex,
                    jnp.where(ax[..., 1:2] <= ax[..., 2:], ey, ez))
    t1 = math.normalize(jnp.cross(normal, ref))
    t2 = jnp.cross(normal, t1)
    return jnp.stack([normal, t1, t2], -2)


def _take(table, geoms):
    """``table[geoms]`` of a static per-geom table: numpy for static ids, jnp for ids
    picked at run time (``narrow_pairs``)."""
    table = np.asarray(table)
    return table[geoms] if isinstance(geoms, np.ndarray) else jnp.asarray(table)[geoms]


def _mesh_inputs(model: Model, geoms):
    topo = model.topo
    mids = _take(topo.geom_mesh, geoms)
    nv, nf, ne, na = (_take(c, mids) for c in (topo.mesh_nvert, topo.mesh_nface, topo.mesh_nedge,
                                                topo.mesh_naxis))
    mask = lambda counts, size: jnp.asarray(np.arange(size)[None] < counts[:, None])  # noqa: E731
    # static: the largest axis count among these meshes (among all meshes for run-time ids)
    naxis = int(na.max()) if isinstance(geoms, np.ndarray) else int(np.max(topo.mesh_naxis))
    return (model.mesh_vert[mids], model.mesh_face[mids], model.mesh_edge[mids],
            mask(nv, model.mesh_vert.shape[1]), mask(nf, model.mesh_face.shape[1]),
            mask(ne, model.mesh_edge.shape[1]), naxis, mask(na, naxis))


def _polytopes(model: Model, kin: Kinematics, geoms, gtype: GeomType):
    """Batched world polytopes of box or convex geoms (all of type ``gtype``)."""
    pos, rot = kin.geom_pos_w[geoms], kin.geom_rot_w[geoms]
    if gtype == G.BOX:
        return jax.vmap(convex.box_polytope)(pos, rot, model.geom_size[geoms])
    *arrays, naxis, axis_mask = _mesh_inputs(model, geoms)
    place = lambda *x: convex.mesh_polytope(*x[:-1], naxis=naxis, axis_mask=x[-1])  # noqa: E731
    return jax.vmap(place)(pos, rot, *arrays, axis_mask)


def bound_radius(model: Model) -> Array:
    """(ngeom,) radius of a sphere about each geom origin containing it (inf: plane)."""
    topo, size = model.topo, model.geom_size
    gtype = np.asarray(topo.geom_type)
    r = jnp.full((topo.ngeom,), jnp.inf, size.dtype)
    r = jnp.where(jnp.asarray(gtype == G.SPHERE), size[:, 0], r)
    r = jnp.where(jnp.asarray(gtype == G.CAPSULE), size[:, 0] + size[:, 1], r)
    r = jnp.where(jnp.asarray(gtype == G.BOX), math.safe_norm(size), r)
    if topo.nmesh:
        mesh_r = jnp.max(math.safe_norm(model.mesh_vert), -1)
        r = jnp.where(jnp.asarray(gtype == G.CONVEX), mesh_r[np.maximum(np.asarray(topo.geom_mesh), 0)], r)
    return r


# pairs whose routines return the signed distance of separated shapes too, so a contact
# margin only widens their validity test
_SIGNED = ((G.PLANE, G.SPHERE), (G.PLANE, G.CAPSULE), (G.SPHERE, G.SPHERE), (G.SPHERE, G.CAPSULE),
           (G.CAPSULE, G.CAPSULE))


def _regions(model: Model, kin: Kinematics, kind, g1: np.ndarray, g2: np.ndarray, nslot: int, margin):
    """Polygon corners or volumes of polyhedral pairs (``regions.py``): (slots, Polyhedron
    or None)."""
    polygon = model.topo.pair_geometry == "polygon"
    b, v = _polytopes(model, kin, g2, kind[1]), jax.vmap
    if kind[0] == G.PLANE:
        p1, r1 = kin.geom_pos_w[g1], kin.geom_rot_w[g1]
        if polygon:
            return v(regions.plane_polygon, (0, 0, 0, None, 0))(p1, r1, b, nslot, margin), None
        return v(regions.plane_volume)(p1, r1, b, margin)
    a = _polytopes(model, kin, g1, kind[0])
    if polygon:
        return v(regions.polytope_polygon, (0, 0, None, 0))(a, b, nslot, margin), None
    return v(regions.polytope_volume)(a, b, margin)


def _narrow_phase(model: Model, kin: Kinematics, kind, g1: np.ndarray, g2: np.ndarray, nslot: int,
                  margin=0.0):
    """Slots of the pairs (g1, g2) of one kind: ((depth, pos, normal, feature, valid,
    ncand), the pairs' intersection Polyhedron or None)."""
    if kind in POLYHEDRAL and model.topo.pair_geometry != "points":
        return _regions(model, kin, kind, g1, g2, nslot, margin)
    out = _narrow_phase_exact(model, kin, kind, g1, g2, nslot, margin)
    if kind in _SIGNED:
        depth, pos, normal, feature, _, _ = out
        valid = depth >= -margin[:, None]
        return (depth, pos, normal, feature, valid, jnp.sum(valid, -1).astype(jnp.int32)), None
    return out, None


def _narrow_phase_exact(model: Model, kin: Kinematics, kind, g1: np.ndarray, g2: np.ndarray, nslot: int,
                        margin):
    if kind in HFIELD_KINDS:
        return _hfield_pairs(model, kin, kind, g1, g2, nslot, margin)
    p1, r1, s1 = kin.geom_pos_w[g1], kin.geom_rot_w[g1], model.geom_size[g1]
    p2, r2, s2 = kin.geom_pos_w[g2], kin.geom_rot_w[g2], model.geom_size[g2]
    v = jax.vmap
    if kind == (G.PLANE, G.SPHERE):
        return v(primitives.plane_sphere)(p1, r1, p2, s2[:, 0])
    if kind == (G.PLANE, G.CAPSULE):
        return v(primitives.plane_capsule)(p1, r1, p2, r2, s2[:, 0], s2[:, 1])
    if kind in ((G.PLANE, G.BOX), (G.PLANE, G.CONVEX)):
        poly = _polytopes(model, kin, g2, kind[1])
        return v(primitives.plane_vertices, (0, 0, 0, 0, None, 0))(p1, r1, poly.vert, poly.vert_mask,
                                                                   nslot, margin)
    if kind == (G.SPHERE, G.SPHERE):
        return v(primitives.sphere_sphere)(p1, s1[:, 0], p2, s2[:, 0])
    if kind == (G.SPHERE, G.CAPSULE):
        return v(primitives.sphere_capsule)(p1, s1[:, 0], p2, r2, s2[:, 0], s2[:, 1])
    if kind == (G.CAPSULE, G.CAPSULE):
        return v(primitives.capsule_capsule)(p1, r1, s1[:, 0], s1[:, 1], p2, r2, s2[:, 0], s2[:, 1])
    if kind == (G.SPHERE, G.BOX):
        return v(box_primitives.sphere_box)(p1, s1[:, 0], p2, r2, s2, margin)
    if kind == (G.CAPSULE, G.BOX):
        return v(box_primitives.capsule_box)(p1, r1, s1[:, 0], s1[:, 1], p2, r2, s2, margin)
    if kind in ((G.SPHERE, G.CONVEX), (G.CAPSULE, G.CONVEX)):
        poly, face = _polytopes(model, kin, g2, kind[1]), model.mesh_face[_take(model.topo.geom_mesh, g2)]
        if kind[0] == G.SPHERE:
            return v(convex.sphere_convex)(p1, s1[:, 0], poly, face, margin)
        return v(convex.capsule_convex)(p1, r1, s1[:, 0], s1[:, 1], poly, face, margin)
    a, b = _polytopes(model, kin, g1, kind[0]), _polytopes(model, kin, g2, kind[1])
    edges = model.opt.edge_contacts
    return v(lambda a, b, m: convex.polytope_contacts(a, b, nslot, m, edges))(a, b, margin)


def _hfield_pairs(model: Model, kin: Kinematics, kind, g1: np.ndarray, g2: np.ndarray, nslot: int, margin):
    """Geoms on height fields (``hfield.py``), batched per height field (each has its
    own grid shape) and put back in pair order."""
    topo = model.topo
    window = dict(zip(zip(topo.pair_geom1, topo.pair_geom2), topo.pair_window))
    field = np.asarray(topo.geom_hfield)[g2]
    polyhedral = kind[0] in (GeomType.BOX, GeomType.CONVEX)
    outs, order = [], []
    for h in np.unique(field):
        sel = np.flatnonzero(field == h)
        a, b = g1[sel], g2[sel]
        nrow, ncol = topo.hfield_nrow[h], topo.hfield_ncol[h]
        heights = model.hfield_data[h, :nrow * ncol].reshape(nrow, ncol)
        w = max(window[(int(x), int(y))] for x, y in zip(a, b))
        poly = _polytopes(model, kin, a, kind[0]) if polyhedral else None
        one = functools.partial(hfield.hfield_contacts, kind[0].name.lower(), heights=heights,
                                size=model.hfield_size[h], window=w, nslot=nslot)
        outs.append(jax.vmap(lambda ph, rh, m, pg, rg, gs, poly: one(pos_h=ph, rot_h=rh, margin=m, pos_g=pg, rot_g=rg,
                                                                       geom_size=gs, polytope=poly))(
            kin.geom_pos_w[b], kin.geom_rot_w[b], margin[sel], kin.geom_pos_w[a], kin.geom_rot_w[a],
            model.geom_size[a], poly))
        order.append(sel)
    back = np.argsort(np.concatenate(order))
    return tuple(jnp.concatenate(x)[back] for x in zip(*outs))


def _broad_phase(model: Model, kin: Kinematics, grp, live: np.ndarray, bound: Array, pair_margin):
    """The pairs of a group that reach the narrow phase: (rows in the group, geom1,
    geom2, pairs left out whose bounding spheres touch). Every live pair, static,
    unless ``opt.narrow_pairs`` caps the group: then the ``narrow_pairs`` pairs of
    smallest bounding-sphere gap (for a plane: the sphere's height above it), picked at
    run time (a fixed count, so shapes stay static). Height fields are never capped
    (their pairs are batched per field)."""
    g1, g2 = grp.geom1[live], grp.geom2[live]
    cap = model.opt.narrow_pairs
    if not 0 < cap < live.size or grp.kind in HFIELD_KINDS:
        return live, g1, g2, 0
    if grp.kind[0] == G.PLANE:  # the plane's infinite bound: height of geom2's sphere above it
        up = kin.geom_rot_w[g1][:, :, 2]
        gap = jnp.sum(up * (kin.geom_pos_w[g2] - kin.geom_pos_w[g1]), -1) - bound[g2] - pair_margin(g1, g2)
    else:
        gap = (math.safe_norm(kin.geom_pos_w[g1] - kin.geom_pos_w[g2]) - bound[g1] - bound[g2]
               - pair_margin(g1, g2))
    pick = jax.lax.top_k(-gap, cap)[1]
    skipped = jnp.sum(gap <= 0) - jnp.sum(gap[pick] <= 0)
    return (jnp.asarray(live)[pick], jnp.asarray(g1)[pick], jnp.asarray(g2)[pick],
            skipped.astype(jnp.int32))


@accepts_explicit_axes
@full_precision
def collide(model: Model, kin: Kinematics, margin=0.0) -> Contacts:
    """Contacts of every collidable geom pair at the configuration of ``kin``.

    ``margin`` (m, may be traced; a scalar, or (ngeom,) per geom, a pair taking the sum
    of its two): also report contacts whose shapes are apart by up to this distance
    (negative depth), for every pair kind. The contact solver uses them as speculative
    contacts. Pairs of a kind without a narrow phase get no slots (a Model with contacts
    on is not built with them: ``pairs.check_supported``)."""
    plan = pair_plan(model.topo)
    dtype = kin.geom_pos_w.dtype
    bound = bound_radius(model)
    margin = jnp.asarray(margin, dtype)
    if margin.ndim == 0:
        def pair_margin(g1, g2):
            return jnp.full((len(g1),), margin)
    else:
        def pair_margin(g1, g2):
            return margin[g1] + margin[g2]
    parts, polyhedra = [], []
    for grp in plan.groups:
        live = np.flatnonzero(grp.mode != ContactMode.NONE)  # static: NONE pairs cost nothing
        npair, nslot = len(grp.geom1), grp.nslot
        ids = lambda g: jnp.asarray(np.repeat(g, nslot), jnp.int32)  # noqa: E731
        valid = jnp.zeros((npair, nslot), bool)
        pos, normal = jnp.zeros((npair, nslot, 3), dtype), jnp.zeros((npair, nslot, 3), dtype).at[..., 2].set(1.0)
        depth, feature, overflow = jnp.zeros((npair, nslot), dtype), jnp.zeros((npair, nslot), jnp.int32), 0
        poly = None
        if live.size:
            rows, g1, g2, skipped = _broad_phase(model, kin, grp, live, bound, pair_margin)
            reach = pair_margin(g1, g2)
            (d, p, n, f, ok, ncand), part_poly = _narrow_phase(model, kin, grp.kind, g1, g2, nslot, reach)
            near = (math.safe_norm(kin.geom_pos_w[g1] - kin.geom_pos_w[g2])
                    <= bound[g1] + bound[g2] + reach)
            every = isinstance(rows, np.ndarray) and rows.size == npair  # rows is then arange(npair)

            def put(full, part):  # a scatter is a loop on the CPU: skipped when every pair runs
                return part.astype(full.dtype) if every else full.at[rows].set(part.astype(full.dtype))
            valid, pos, normal = put(valid, ok & near[:, None]), put(pos, p), put(normal, n)
            depth, feature = put(depth, d), put(feature, f)
            overflow = jnp.sum(jnp.where(near, jnp.maximum(ncand - nslot, 0), 0)) + skipped
            if part_poly is not None:  # one volume slot per pair
                poly = jax.tree.map(lambda x: put(jnp.zeros((npair,) + x.shape[1:], x.dtype), x), part_poly)
        polyhedra.append((npair * nslot, poly))
        parts.append((valid.reshape(-1), pos.reshape(-1, 3), normal.reshape(-1, 3),
                      depth.reshape(-1), ids(grp.geom1), ids(grp.geom2),
                      feature.reshape(-1), overflow))
    if not parts:
        z = jnp.zeros((0,), dtype)
        return Contacts(active=jnp.zeros((0,), bool), pos_w=jnp.zeros((0, 3), dtype),
                        normal_w=jnp.zeros((0, 3), dtype), depth=z, frame_w=jnp.zeros((0, 3, 3), dtype),
                        geom1=jnp.zeros((0,), jnp.int32), geom2=jnp.zeros((0,), jnp.int32),
                        feature=jnp.zeros((0,), jnp.int32), overflow=jnp.zeros((), jnp.int32))
    cat = lambda i: jnp.concatenate([p[i] for p in parts])  # noqa: E731
    normal = cat(2)
    return Contacts(active=cat(0), pos_w=cat(1), normal_w=normal, depth=cat(3),
                    frame_w=contact_frame(normal), geom1=cat(4), geom2=cat(5), feature=cat(6),
                    overflow=jnp.asarray(sum(p[7] for p in parts), jnp.int32),
                    volume=_slot_volumes(model, polyhedra, dtype))


def _slot_volumes(model: Model, polyhedra: list, dtype):
    """Contacts.volume: the groups' polyhedra padded to common sizes and concatenated
    (empty ones for groups without), or None unless slots hold volumes."""
    if model.topo.pair_geometry != "volume":
        return None
    sizes = [(p.face_area.shape[1], p.vert_mask.shape[1], p.fan_mask.shape[1]) for _, p in polyhedra
             if p is not None]
    most = tuple(max(s[i] for s in sizes) for i in range(3)) if sizes else (0, 0, 0)
    blocks = [regions.empty_polyhedron(n, *most, dtype) if p is None else regions.pad_polyhedron(p, *most)
              for n, p in polyhedra]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *blocks)
