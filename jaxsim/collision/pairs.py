"""The static pair table: which geom pairs may collide and how many contact slots each
gets. The builder fixes the table (``candidate_pairs`` plus explicit pairs, in that
order) in the Topology with a ContactMode per pair; ``pair_plan`` groups it by pair
kind once per Topology (cached), so the contact buffer size ``ncon`` is static. Every
pair keeps its slots whatever its mode; a ``NONE`` pair's slots stay inactive and cost
no collision work.

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

from jaxsim.types import ContactMode, GeomType, Topology

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
