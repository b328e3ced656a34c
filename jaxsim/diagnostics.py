"""Health checks of a rollout, independent of the collision stage.

``penetration(model, kin)`` measures how deep every collidable geom pair overlaps from
the shapes' support functions alone (no narrow-phase code): for convex ``A`` and ``B``

    depth = min over unit u of  h_A(u) + h_B(-u),    h_X(u) = max_{x in X} u . x,

the overlap of their projections on ``u`` (negative: separated along ``u``). The
minimum is taken over a fixed Fibonacci sphere of directions, the exact candidates
of polytope pairs (face normals and cross products of edge directions: the
separating-axis set) and the line between the centres, then refined by a shrinking
pattern search around the best one. A minimum over a subset can only be larger than
the true one, so the measured depth is an upper bound: conservative for a test that
bounds penetration. A plane (half-space ``z <= 0`` of its frame, normal ``n``) gives
the exact ``depth = n . p0 + h_B(-n)``.

``monitor`` accumulates, step by step inside a ``lax.scan``, what the robustness tests
bound: the total energy's largest rise above its start, the deepest penetration and
the longest stretch of time spent deeper than a threshold, the deepest active contact
slot relative to its shapes' size, and the non-finite flag.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.collision.pairs import pair_plan
from jaxsim.contact.space import slot_info
from jaxsim.dynamics import energy
from jaxsim.kinematics import Kinematics, forward_kinematics
from jaxsim.types import GeomType, Model, State

G = GeomType
Array = jax.Array


def fibonacci_sphere(n: int) -> np.ndarray:
    """(n, 3) nearly uniform unit vectors."""
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(1.0 - z * z)
    phi = np.pi * (3.0 - np.sqrt(5.0)) * i
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], -1)


class Shape(NamedTuple):
    """A convex shape in world coordinates, for its support function."""

    kind: int  # static GeomType
    center: Array  # (3,)
    rot: Array  # (3, 3)
    size: Array  # (3,)
    vert: Array | None  # (V, 3) world vertices of a mesh
    vert_mask: Array | None


def support(s: Shape, u: Array) -> Array:
    """h(u) = max over the shape of u . x for directions u (..., 3)."""
    c = u @ s.center
    if s.kind == G.SPHERE:
        return c + s.size[0] * math.safe_norm(u)
    if s.kind == G.CAPSULE:
        return c + s.size[1] * jnp.abs(u @ s.rot[:, 2]) + s.size[0] * math.safe_norm(u)
    if s.kind == G.BOX:
        return c + jnp.sum(s.size * jnp.abs(u @ s.rot), -1)
    proj = u @ s.vert.T
    return jnp.max(jnp.where(s.vert_mask, proj, -jnp.inf), -1)


def _axes(s: Shape) -> tuple[Array, Array]:
    """(face normals (F, 3), edge / axis directions (D, 3)) of a box, capsule or sphere
    for the separating-axis candidates (meshes: ``_mesh_axes``)."""
    z = jnp.zeros((0, 3), s.center.dtype)
    if s.kind == G.BOX:
        return jnp.concatenate([s.rot.T, -s.rot.T]), s.rot.T
    if s.kind == G.CAPSULE:
        return z, s.rot[:, 2][None]
    return z, z


class _Kind(NamedTuple):
    """What a geom's support function and candidate axes need to know statically: its
    type and, for a mesh, its vertex, face and edge counts."""

    kind: int
    nvert: int = 0
    nface: int = 0
    nedge: int = 0


def _kind(model: Model, g: int) -> _Kind:
    kind = int(model.topo.geom_type[g])
    if kind != G.CONVEX:
        return _Kind(kind)
    m = model.topo.geom_mesh[g]
    return _Kind(kind, model.topo.mesh_nvert[m], model.topo.mesh_nface[m], model.topo.mesh_nedge[m])


def _shape(model: Model, kin: Kinematics, g: Array, k: _Kind) -> Shape:
    """Geom ``g`` (a traced index, of static kind ``k``) in world coordinates."""
    vert = mask = None
    if k.kind == G.CONVEX:
        m = jnp.asarray(model.topo.geom_mesh)[g]
        vert = kin.geom_pos_w[g] + model.mesh_vert[m, :k.nvert] @ kin.geom_rot_w[g].T
        mask = jnp.ones((k.nvert,), bool)
    return Shape(k.kind, kin.geom_pos_w[g], kin.geom_rot_w[g], model.geom_size[g], vert, mask)


def _mesh_axes(model: Model, kin: Kinematics, g: Array, k: _Kind) -> tuple[Array, Array]:
    m = jnp.asarray(model.topo.geom_mesh)[g]
    vert = model.mesh_vert[m, :k.nvert] @ kin.geom_rot_w[g].T
    face, edge = model.mesh_face[m, :k.nface], model.mesh_edge[m, :k.nedge]
    normal = math.normalize(jnp.cross(vert[face[:, 1]] - vert[face[:, 0]], vert[face[:, 2]] - vert[face[:, 0]]))
    return normal, math.normalize(vert[edge[:, 1]] - vert[edge[:, 0]])


def _candidates(model, kin, g1, g2, k1: _Kind, k2: _Kind, a: Shape, b: Shape, sphere: Array) -> Array:
    def axes(g, k, s):
        if k.kind == G.CONVEX:
            return _mesh_axes(model, kin, g, k)
        return _axes(s)
    fa, ea = axes(g1, k1, a)
    fb, eb = axes(g2, k2, b)
    cross = jnp.cross(ea[:, None], eb[None]).reshape(-1, 3)
    d = b.center - a.center
    # the centre line, and its parts normal to each shape's edge / axis directions
    centre = jnp.concatenate([d[None], d - (ea @ d)[:, None] * ea, d - (eb @ d)[:, None] * eb])
    dirs = jnp.concatenate([sphere, fa, -fa, fb, -fb, cross, -cross, centre, -centre])
    n = math.safe_norm(dirs)
    return dirs / jnp.maximum(n, 1e-12)[:, None], n > 1e-9


def _overlap(a: Shape, b: Shape, u: Array) -> Array:
    return support(a, u) + support(b, -u)


def _refine(a: Shape, b: Shape, u: Array, rounds: int = 24, samples: int = 24) -> Array:
    """Pattern search on the unit sphere around ``u`` with a shrinking step."""
    dirs = jnp.asarray(fibonacci_sphere(2 * samples)[:samples], u.dtype)  # one hemisphere's worth

    def body(k, carry):
        u, best = carry
        step = 0.2 * 0.75 ** k.astype(u.dtype)
        t = dirs - (dirs @ u)[:, None] * u  # tangent offsets
        cand = math.normalize(u + step * t)
        val = _overlap(a, b, cand)
        i = jnp.argmin(val)
        better = val[i] < best
        return jnp.where(better, cand[i], u), jnp.where(better, val[i], best)

    u, best = jax.lax.fori_loop(0, rounds, body, (u, _overlap(a, b, u)))
    return best


def _pair_depth(model: Model, kin: Kinematics, g1: Array, g2: Array, k1: _Kind, k2: _Kind,
                sphere: Array) -> Array:
    a, b = _shape(model, kin, g1, k1), _shape(model, kin, g2, k2)
    if k1.kind == G.PLANE:
        n = kin.geom_rot_w[g1][:, 2]
        return n @ kin.geom_pos_w[g1] + support(b, -n)
    dirs, ok = _candidates(model, kin, g1, g2, k1, k2, a, b, sphere)
    val = jnp.where(ok, _overlap(a, b, dirs), jnp.inf)
    i = jnp.argmin(val)
    return jnp.minimum(val[i], _refine(a, b, dirs[i]))


def pair_geoms(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(geom1, geom2) of every collidable pair, in pair-table order."""
    groups = pair_plan(model.topo).groups
    g1 = np.concatenate([g.geom1 for g in groups] or [np.zeros(0, int)])
    g2 = np.concatenate([g.geom2 for g in groups] or [np.zeros(0, int)])
    return g1, g2


@functools.lru_cache(maxsize=8)
def _sphere_dirs(n: int) -> np.ndarray:
    return fibonacci_sphere(n)


def penetration(model: Model, kin: Kinematics, ndir: int = 256) -> Array:
    """(npair,) m, how deep each collidable pair (``pair_geoms`` order) overlaps; < 0:
    apart (then only a bound on the gap). Height fields are not measured (0).

    Pairs of the same kinds are measured together under one ``vmap``, so the program
    grows with the number of pair kinds, not of pairs."""
    sphere = jnp.asarray(_sphere_dirs(ndir), kin.geom_pos_w.dtype)
    geom1, geom2 = pair_geoms(model)
    out = jnp.zeros((len(geom1),), kin.geom_pos_w.dtype)
    by_kind: dict[tuple[_Kind, _Kind], list[int]] = {}
    for i, (g1, g2) in enumerate(zip(geom1, geom2)):
        by_kind.setdefault((_kind(model, int(g1)), _kind(model, int(g2))), []).append(i)
    for (k1, k2), idx in by_kind.items():
        if G.HFIELD in (k1.kind, k2.kind):
            continue
        idx = np.asarray(idx)
        depth = jax.vmap(lambda g1, g2: _pair_depth(model, kin, g1, g2, k1, k2, sphere))(
            jnp.asarray(geom1[idx]), jnp.asarray(geom2[idx]))
        out = out.at[idx].set(depth)
    return out


def shape_size(model: Model) -> Array:
    """(ngeom,) m, the smallest extent of each geom (diameter, box side, mesh width
    along its thinnest vertex axis); inf for planes and height fields."""
    gtype = np.asarray(model.topo.geom_type)
    size = model.geom_size
    out = jnp.full((model.topo.ngeom,), jnp.inf, size.dtype)
    out = jnp.where(jnp.asarray(gtype == G.SPHERE) | jnp.asarray(gtype == G.CAPSULE), 2 * size[:, 0], out)
    out = jnp.where(jnp.asarray(gtype == G.BOX), 2 * jnp.min(size, -1), out)
    if model.topo.nmesh:
        ext = jnp.max(model.mesh_vert, 1) - jnp.min(model.mesh_vert, 1)  # (nmesh, 3), padded with 0
        mesh = jnp.min(ext, -1)[np.maximum(np.asarray(model.topo.geom_mesh), 0)]
        out = jnp.where(jnp.asarray(gtype == G.CONVEX), mesh, out)
    return out


class Health(NamedTuple):
    """What ``monitor`` accumulated over a rollout (per env under ``vmap``); per-pair
    fields follow ``pair_geoms``.

    Attributes:
      energy0: () J, total (kinetic + gravitational) energy at the start.
      energy_rise: () J, largest ``E(t) - energy0``.
      depth_max: (npair,) m, deepest penetration (``penetration``) of each pair.
      deep_time: (npair,) s, longest continuous time each pair spent deeper than the
        threshold.
      deep_now: (npair,) s, the current such stretch.
      slot_depth_ratio: (npair,) largest active slot depth of the pair over the
        smaller of its two shapes' sizes (``shape_size``).
      touched: (npair,) bool, the pair had an active contact slot.
      speed_max: () largest generalized speed ``max |v|`` (m/s or rad/s).
      nonfinite: () bool.
    """

    energy0: Array
    energy_rise: Array
    depth_max: Array
    deep_time: Array
    deep_now: Array
    slot_depth_ratio: Array
    touched: Array
    speed_max: Array
    nonfinite: Array


def energy_bound(model: Model, health: Health) -> Array:
    """() J (per env under vmap or for a batched Model), the energy rise a contact
    model may show: 1 % of the start energy, plus the kinetic energy the capped
    depenetration can give every body once, ``1/2 m max_depenetration_speed^2``
    (the position correction is the only part of a contact impulse that may do
    positive work, ``contact/point.py``)."""
    mass = jnp.sum(model.body_mass, -1)
    cap = getattr(model.contact_params, "max_depenetration_speed", 0.0)  # 0: no correction (rigid)
    return 0.01 * jnp.abs(health.energy0) + 0.5 * mass * cap ** 2


def total_energy(model: Model, state: State) -> Array:
    """() J, kinetic plus gravitational energy."""
    kinetic, potential = energy(model, forward_kinematics(model, state.q), state.v)
    return kinetic + potential


@functools.lru_cache(maxsize=64)
def _slot_pair(topo) -> np.ndarray:
    """(ncon,) pair index (``pair_geoms`` order) of every contact slot."""
    return np.concatenate([np.repeat(np.arange(len(g.geom1)), g.nslot) + sum(len(h.geom1) for h in
                           pair_plan(topo).groups[:i]) for i, g in enumerate(pair_plan(topo).groups)]
                          or [np.zeros(0, int)])


def health_init(model: Model, state: State) -> Health:
    dtype = state.v.dtype
    npair = len(pair_geoms(model)[0])
    z, zp = jnp.zeros((), dtype), jnp.zeros((npair,), dtype)
    return Health(total_energy(model, state), z, zp, zp, zp, zp, jnp.zeros((npair,), bool), z,
                  jnp.zeros((), bool))


def health_update(model: Model, h: Health, state: State, threshold: float = 0.01) -> Health:
    """Fold one state (after a step) into ``h``; ``threshold`` m for ``deep_time``."""
    kin = forward_kinematics(model, state.q)
    kinetic, potential = energy(model, kin, state.v)
    finite = jnp.isfinite(kinetic + potential) & ~state.nonfinite
    depth = jnp.where(finite, penetration(model, kin), jnp.inf)
    deep_now = jnp.where(depth > threshold, h.deep_now + model.opt.timestep, 0.0)
    info = slot_info(model.topo)
    size = shape_size(model)
    ratio = jnp.where(state.contact.active, state.contact.depth / jnp.minimum(size[info.geom1], size[info.geom2]), 0.0)
    npair = h.depth_max.shape[0]
    pair = jnp.asarray(_slot_pair(model.topo))
    ratio = jax.ops.segment_max(ratio, pair, npair) if npair else ratio[:0]
    touched = jax.ops.segment_max(state.contact.active.astype(jnp.int32), pair, npair) > 0 if npair else h.touched
    return Health(h.energy0, jnp.maximum(h.energy_rise, jnp.where(finite, kinetic + potential - h.energy0, jnp.inf)),
                  jnp.maximum(h.depth_max, depth), jnp.maximum(h.deep_time, deep_now), deep_now,
                  jnp.maximum(h.slot_depth_ratio, ratio), h.touched | touched,
                  jnp.maximum(h.speed_max, jnp.where(finite, jnp.max(jnp.abs(state.v), initial=0.0), jnp.inf)),
                  h.nonfinite | ~finite)


def monitor(model: Model, state: State, num_steps: int, step_fn=None, threshold: float = 0.01,
            every: int = 1) -> tuple[State, Health]:
    """Run ``num_steps`` steps without control and return (final state, Health),
    checking the health every ``every`` steps (``deep_time`` then grows by
    ``every`` steps at a time)."""
    if num_steps % every:
        raise ValueError(f"monitor: num_steps ({num_steps}) must be a multiple of every ({every})")
    return _monitor(model, state, num_steps, step_fn, threshold, every)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _monitor(model: Model, state: State, num_steps: int, step_fn, threshold: float, every: int):
    """``monitor``'s loop, jitted: called outside ``jit`` it compiles once per model
    structure and settings (an eager ``lax.scan`` would compile on every call)."""
    from jaxsim.step import step as default_step
    step_fn = default_step if step_fn is None else step_fn

    def body(carry, _):
        s, h = carry
        s = jax.lax.fori_loop(0, every, lambda _, x: step_fn(model, x), s) if every > 1 else step_fn(model, s)
        h = health_update(model, h, s, threshold)
        return (s, h._replace(deep_now=h.deep_now + (every - 1) * model.opt.timestep * (h.deep_now > 0),
                              deep_time=jnp.maximum(h.deep_time, h.deep_now + (every - 1) * model.opt.timestep * (h.deep_now > 0)))), None

    (state, h), _ = jax.lax.scan(body, (state, health_init(model, state)), None, length=num_steps // every)
    return state, h
