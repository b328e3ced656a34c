"""The static pair table: which geom pairs may collide and how many contact slots each
gets. The build fixes the table (``pair_table``: ``candidate_pairs`` plus explicit
pairs, in that order) in the Topology with a ContactMode per pair; ``pair_plan`` groups
it by pair kind once per Topology (cached), so the contact buffer size ``ncon`` is
static. Every pair keeps its slots whatever its mode; a ``NONE`` pair's slots stay
inactive and cost no collision work. A pair kind without a narrow phase is rejected at
the build (``check_supported``).

Filtering follows MuJoCo: geoms on bodies welded together (same ``weld`` body: the
nearest ancestor with a joint, or the world) never collide; a body never collides with
its parent body unless the parent is the world; the contype/conaffinity bit test must
pass; excluded body pairs (MJCF ``<contact><exclude>``) are skipped; static geoms never
collide with each other.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from jaxsim.types import ContactMode, GeomType, ModelError, Topology

G = GeomType
# contact slots per pair kind (geom1 type <= geom2 type)
SLOTS = {
    (G.PLANE, G.SPHERE): 1,
    (G.PLANE, G.CAPSULE): 2,
    (G.PLANE, G.BOX): 4,
    (G.PLANE, G.CONVEX): 8,
    (G.SPHERE, G.SPHERE): 1,
    (G.SPHERE, G.CAPSULE): 1,
    (G.CAPSULE, G.CAPSULE): 1,
    (G.SPHERE, G.BOX): 1,
    (G.CAPSULE, G.BOX): 2,
    (G.SPHERE, G.CONVEX): 1,
    (G.CAPSULE, G.CONVEX): 2,
    (G.BOX, G.BOX): 8,
    (G.BOX, G.CONVEX): 8,
    (G.CONVEX, G.CONVEX): 8,
    (G.SPHERE, G.HFIELD): 1,  # collision/hfield.py
    (G.CAPSULE, G.HFIELD): 3,
    (G.BOX, G.HFIELD): 8,
    (G.CONVEX, G.HFIELD): 8,
}
HFIELD_KINDS = ((G.SPHERE, G.HFIELD), (G.CAPSULE, G.HFIELD), (G.BOX, G.HFIELD), (G.CONVEX, G.HFIELD))
# pairs of polyhedra (a plane as a half-space): their slots hold the contact polygon's
# corners or one intersection volume when the contact model asks (``regions.py``)
POLYHEDRAL = ((G.PLANE, G.BOX), (G.PLANE, G.CONVEX), (G.BOX, G.BOX), (G.BOX, G.CONVEX),
              (G.CONVEX, G.CONVEX))
POLYGON_CORNERS = 8  # slots per polyhedral pair for "polygon": a box cut obliquely has 6
GEOMETRIES = ("points", "polygon", "volume")
# Model arrays of explicit pair parameters, and the attribute of an explicit pair
# (``ModelBuilder.add_pair``'s argument) filling each
PAIR_OVERRIDES = {"pair_friction": "friction", "pair_restitution": "restitution",
                  "pair_penalty_stiffness": "penalty_stiffness", "pair_penalty_damping": "penalty_damping"}


def slots_per_pair(kind: tuple, geometry: str = "points") -> int:
    """Contact slots of a pair of ``kind`` when slots hold ``geometry``."""
    if kind in POLYHEDRAL and geometry != "points":
        return POLYGON_CORNERS if geometry == "polygon" else 1
    return SLOTS[kind]


class PairGroup(NamedTuple):
    """All candidate pairs of one kind."""

    kind: tuple  # (GeomType, GeomType)
    geom1: np.ndarray  # (npair,)
    geom2: np.ndarray  # (npair,)
    slot0: np.ndarray  # (npair,) first contact slot of each pair
    nslot: int  # slots per pair
    pair: np.ndarray  # (npair,) rows of the pair table
    mode: np.ndarray  # (npair,) ContactMode


class PairPlan(NamedTuple):
    groups: tuple  # PairGroup per kind, in SLOTS order
    ncon: int
    unsupported: tuple  # ((geom1, geom2, kind), ...) pairs with no narrow phase yet


def weld_bodies(topo: Topology) -> np.ndarray:
    """(nbody,) the body each body is rigidly welded to (itself if it has a joint)."""
    weld = np.zeros(topo.nbody, int)
    for b in range(1, topo.nbody):
        weld[b] = b if topo.body_jntnum[b] > 0 else weld[topo.body_parent[b]]
    return weld


def may_collide(topo: Topology, g1: int, g2: int, weld: np.ndarray) -> bool:
    b1, b2 = topo.geom_body[g1], topo.geom_body[g2]
    w1, w2 = weld[b1], weld[b2]
    if w1 == w2:
        return False  # same rigid body, or both static
    if not (topo.geom_contype[g1] & topo.geom_conaffinity[g2] or
            topo.geom_contype[g2] & topo.geom_conaffinity[g1]):
        return False
    p1, p2 = weld[topo.body_parent[w1]] if w1 else -1, weld[topo.body_parent[w2]] if w2 else -1
    if (p1 == w2 and w2 != 0) or (p2 == w1 and w1 != 0):
        return False  # parent-child
    if tuple(sorted((b1, b2))) in topo.exclude:
        return False
    return True


def candidate_pairs(topo: Topology) -> list[tuple[int, int]]:
    """Every geom pair (geom1, geom2) that passes the filters above, geom1 the one of
    lower GeomType (MuJoCo's order); plane-plane pairs never collide."""
    weld = weld_bodies(topo)
    out = []
    for g1 in range(topo.ngeom):
        for g2 in range(g1 + 1, topo.ngeom):
            if may_collide(topo, g1, g2, weld):
                a, b = (g1, g2) if topo.geom_type[g1] <= topo.geom_type[g2] else (g2, g1)
                if (topo.geom_type[a], topo.geom_type[b]) != (G.PLANE, G.PLANE):
                    out.append((a, b))
    return out


def pair_kind(topo: Topology, g1: int, g2: int) -> tuple:
    return G(topo.geom_type[g1]), G(topo.geom_type[g2])


@functools.lru_cache(maxsize=64)
def pair_plan(topo: Topology) -> PairPlan:
    by_kind: dict = {k: [] for k in SLOTS}
    unsupported = []
    for p, (a, b, mode) in enumerate(zip(topo.pair_geom1, topo.pair_geom2, topo.pair_mode)):
        kind = pair_kind(topo, a, b)
        if kind in by_kind:
            by_kind[kind].append((a, b, p, mode))
        elif mode != ContactMode.NONE:
            unsupported.append((a, b, kind))
    groups, slot = [], 0
    for kind, pairs in by_kind.items():
        if not pairs:
            continue
        n = slots_per_pair(kind, topo.pair_geometry)
        arr = np.asarray(pairs, dtype=np.int32)
        groups.append(PairGroup(kind, arr[:, 0], arr[:, 1], slot + n * np.arange(len(pairs)), n,
                                arr[:, 2], arr[:, 3]))
        slot += n * len(pairs)
    return PairPlan(tuple(groups), slot, tuple(unsupported))


def check_supported(topo: Topology) -> None:
    """Raise ``ModelError`` if a pair of the table that is not ``NONE`` has no narrow
    phase (a plane or height field against a height field), naming its geoms."""
    unsupported = pair_plan(topo).unsupported
    if unsupported:
        g1, g2, kind = unsupported[0]
        names = topo.geom_name
        raise ModelError(f"geoms {names[g1]!r} and {names[g2]!r}: no collision routine for "
                         f"{kind[0].name.lower()}-{kind[1].name.lower()} pairs yet "
                         f"({len(unsupported)} such pairs); exclude them with contype/conaffinity")


def hfield_window(topo: Topology, a: int, b: int, geom_size: np.ndarray, mesh_vert: np.ndarray,
                  hfield_size: np.ndarray) -> int:
    """Cells per side of the height-field window geom ``a`` sees on geom ``b``
    (``hfield.py``): ``a``'s bounding diameter plus a cell on each side; 0 unless ``b``
    is a height field. ``geom_size`` (ngeom, 3), ``mesh_vert`` (nmesh, V, 3) (padded with
    real vertices) and ``hfield_size`` (nhfield, 4) are the Model's arrays in float64."""
    if topo.geom_type[b] != G.HFIELD:
        return 0
    h = topo.geom_hfield[b]
    hsize, nrow, ncol = hfield_size[h], topo.hfield_nrow[h], topo.hfield_ncol[h]
    cell = min(2 * hsize[0] / (ncol - 1), 2 * hsize[1] / (nrow - 1))
    size, gtype = geom_size[a], topo.geom_type[a]
    if gtype == G.CONVEX:
        radius = float(np.max(np.linalg.norm(mesh_vert[topo.geom_mesh[a]], axis=-1)))
    else:
        radius = {G.SPHERE: size[0], G.CAPSULE: size[0] + size[1]}.get(gtype, float(np.linalg.norm(size)))
    return int(min(np.ceil(2 * radius / cell) + 2, max(nrow, ncol) - 1))


def pair_table(topo: Topology, explicit: dict, mode_rules, geometry: str, geom_size: np.ndarray,
               mesh_vert: np.ndarray, hfield_size: np.ndarray) -> tuple[Topology, dict]:
    """The pair table of ``topo`` (candidates, then explicit pairs), its modes and the
    explicit pairs' parameters (``contact/materials.py`` derives the others in the step).

    Args:
      explicit: (geom1, geom2) -> an explicit pair (geom1 of lower GeomType), whose
        ``mode`` (a ContactMode or None) and the attributes named in ``PAIR_OVERRIDES``
        (None: derived) replace the derived ones.
      mode_rules: (ContactMode, body names, is_group) in the order set, as
        ``ModelBuilder.set_contact_mode`` records them: ``()`` every pair; one body,
        the pairs with a geom on it; two bodies, the pairs between them; a group, the
        pairs whose two bodies are both in it. Later rules override earlier ones.
      geometry: what the slots of polyhedral pairs hold (the contact model's
        ``collision``).
      geom_size, mesh_vert, hfield_size: as for ``hfield_window``.
    Returns:
      (topo with the pair fields set, {Model pair array name: values}).
    """
    table = [pr for pr in candidate_pairs(topo) if pr not in explicit] + list(explicit)
    body_name = topo.body_name
    modes, explicit_values = [], {name: ([], []) for name in PAIR_OVERRIDES}
    for i, (a, b) in enumerate(table):
        p = explicit.get((a, b))
        pair_bodies = {body_name[topo.geom_body[a]], body_name[topo.geom_body[b]]}
        mode = ContactMode.CONSTRAINT
        for m, names, is_group in mode_rules:
            if (not names or (is_group and pair_bodies <= set(names))
                    or (not is_group and set(names) <= pair_bodies and
                        (len(names) == 2 or names[0] in pair_bodies))):
                mode = m
        modes.append(p.mode if p is not None and p.mode is not None else mode)
        for name, attr in PAIR_OVERRIDES.items():  # the rest is derived in the step
            value = None if p is None else getattr(p, attr)
            if value is not None:
                explicit_values[name][0].append(i)
                explicit_values[name][1].append(value)
    window = tuple(hfield_window(topo, a, b, geom_size, mesh_vert, hfield_size) for a, b in table)
    topo = topo.replace(pair_geom1=tuple(int(a) for a, _ in table), pair_geom2=tuple(int(b) for _, b in table),
                        pair_mode=tuple(int(m) for m in modes), pair_window=window, pair_geometry=geometry,
                        **{f"{name}_id": tuple(ids) for name, (ids, _) in explicit_values.items()})
    shapes = dict(pair_friction=(-1, 2))
    return topo, {name: np.reshape(np.asarray(values, np.float64), shapes.get(name, (-1,)))
                  for name, (_, values) in explicit_values.items()}
