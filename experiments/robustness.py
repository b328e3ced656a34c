"""Randomized-scene robustness of the contact stage (issue: contact that never explodes).

Random scenes of 1 to 4 free bodies (boxes, spheres, capsules, convex hulls; masses
0.01-30 kg with at most 1000:1 in a scene; extents 1-15 cm; dt 0.5, 1, 2 or 5 ms;
initial speeds ~2 m/s and ~2 rad/s) stacked with gaps above a floor
(``jaxsim.scenes.random_drop``), run without control, and checked by
``jaxsim.diagnostics`` (penetration from support functions, independent of the
collision code). A scene fails a category when:

  nonfinite   any NaN / inf;
  energy      total energy rose above its start by more than 1 % of it plus the
              bound on the work of the capped depenetration
              (``diagnostics.energy_bound``);
  deep        a pair stayed more than 1 cm deep for more than 20 ms;
  slot        an active contact slot reported a depth larger than its shapes' size.

Scenes are grouped by their multiset of shapes (one topology, one compile each) and
each group runs as one ``vmap`` over models and states. Prints failure counts per
category and per pair type and writes JSON.

    python experiments/robustness.py --scenes 1000 --steps 10000
    python experiments/robustness.py --contact penalty --out experiments/results/robustness_penalty.json

Each finished group is appended to ``<out>.partial.jsonl``; ``--resume`` skips the
groups found there, so a long run cut off midway goes on where it stopped.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import diagnostics, scenes
from jaxsim.types import GeomType

SHAPES = scenes.SHAPES
KIND = {GeomType.PLANE: "floor", GeomType.SPHERE: "sphere", GeomType.CAPSULE: "capsule",
        GeomType.BOX: "box", GeomType.CONVEX: "hull"}


def scene_shapes(n: int, seed: int) -> list[tuple]:
    """``n`` shape multisets (sorted tuples of 1-4 shapes)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(1, 5))
        out.append(tuple(sorted(rng.choice(SHAPES, k))))
    return out


def run_group(shapes, seeds, steps, dtype, every, options):
    built = [scenes.random_drop(shapes, int(s), dtype=dtype, **options) for s in seeds]
    models = jaxsim.batch_models([m for m, _, _ in built])
    states = jax.vmap(lambda m, q, v: jaxsim.make_state(m, q=q, v=v))(
        models, jnp.stack([q for _, q, _ in built]), jnp.stack([v for _, _, v in built]))
    fn = jax.jit(jax.vmap(lambda m, s: diagnostics.monitor(m, s, steps, every=every)))
    t0 = time.perf_counter()
    compiled = fn.lower(models, states).compile()
    t1 = time.perf_counter()
    final, health = compiled(models, states)
    jax.block_until_ready(health)
    t2 = time.perf_counter()
    return built[0][0], models, health, final, t1 - t0, t2 - t1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenes", type=int, default=1000)
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--every", type=int, default=1, help="check the health every k steps")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--only", default="", help="comma-separated shapes: run only this multiset")
    p.add_argument("--resume", action="store_true", help="skip groups already in <out>.partial.jsonl")
    p.add_argument("--first-group", type=int, default=1, help="start at this group (1-based), wrap around")
    p.add_argument("--contact", default="relaxed", help="contact model (jaxsim.CONTACT_MODELS)")
    p.add_argument("--contact-mode", default="constraint", choices=["constraint", "penalty"],
                   help="every pair's mode (penalty: spring-dampers under the selected model)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "robustness.json"))
    args = p.parse_args(argv)
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float32 if args.dtype == "float32" else jnp.float64
    shapes = scene_shapes(args.scenes, args.seed)
    if args.only:
        shapes = [tuple(sorted(args.only.split(",")))] * args.scenes
    groups = collections.defaultdict(list)
    for i, sh in enumerate(shapes):
        groups[sh].append(1_000_003 * args.seed + i)
    fails = collections.Counter()
    by_pair = collections.defaultdict(collections.Counter)
    records = []
    t_start = time.perf_counter()
    run_key = dict(scenes=args.scenes, steps=args.steps, seed=args.seed, dtype=args.dtype,
                   every=args.every, only=args.only, contact=args.contact, contact_mode=args.contact_mode)
    partial = args.out + ".partial.jsonl"
    done = {}
    if args.resume and os.path.exists(partial):
        with open(partial) as f:
            for line in f:
                g = json.loads(line)
                if g["run"] == run_key:
                    done[tuple(g["shapes"])] = g
    elif os.path.exists(partial):
        os.remove(partial)
    ordered = sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0]))
    order = list(range(len(ordered)))
    order = order[args.first_group - 1:] + order[:args.first_group - 1]
    for gi in order:
        sh, seeds = ordered[gi]
        if tuple(str(x) for x in sh) in done:
            g = done[tuple(str(x) for x in sh)]
            records.extend(g["records"])
            fails.update(g["fails"])
            for pair, cnt in g["by_pair"].items():
                by_pair[pair].update(cnt)
            print(f"[{gi + 1}/{len(groups)}] {','.join(sh):32s} {len(seeds):4d} scenes  (from {partial})", flush=True)
            continue
        n_records = len(records)
        fails_before = collections.Counter(fails)
        pairs_before = {k: collections.Counter(v) for k, v in by_pair.items()}
        model, models, h, final, tc, tr = run_group(sh, seeds, args.steps, dtype, args.every,
                                                         dict(contact=args.contact, contact_mode=args.contact_mode))
        bound = np.asarray(diagnostics.energy_bound(models, h))
        h = jax.tree.map(np.asarray, h)
        g1, g2 = diagnostics.pair_geoms(model)
        gt = np.asarray(model.topo.geom_type)
        names = ["-".join(sorted((KIND[GeomType(gt[a])], KIND[GeomType(gt[b])]))) for a, b in zip(g1, g2)]
        for k, seed in enumerate(seeds):
            cat = {
                "nonfinite": bool(h.nonfinite[k]),
                "energy": bool(h.energy_rise[k] > bound[k]),
                "deep": bool(np.any(h.deep_time[k] > 0.02)),
                "slot": bool(np.any(h.slot_depth_ratio[k] > 1.0)),
            }
            for c, bad in cat.items():
                if bad:
                    fails[c] += 1
                    if c in ("deep", "slot"):
                        field = h.deep_time[k] > 0.02 if c == "deep" else h.slot_depth_ratio[k] > 1.0
                        involved = {names[j] for j in np.flatnonzero(field)}
                    else:
                        involved = {names[j] for j in np.flatnonzero(h.touched[k])}
                    for pair in involved:
                        by_pair[pair][c] += 1
            records.append(dict(seed=int(seed), shapes=[str(x) for x in sh], dt=float(models.opt.timestep[k]), **cat,
                                energy0=float(h.energy0[k]), energy_rise=float(h.energy_rise[k]),
                                energy_bound=float(bound[k]), depth_max=float(np.max(h.depth_max[k], initial=0)),
                                deep_time=float(np.max(h.deep_time[k], initial=0)),
                                slot_ratio=float(np.max(h.slot_depth_ratio[k], initial=0)),
                                speed_max=float(h.speed_max[k]),
                                iterations=int(final.solver.iterations[k])))
        nbad = sum(any(r[c] for c in ("nonfinite", "energy", "deep", "slot")) for r in records[-len(seeds):])
        print(f"[{gi + 1}/{len(groups)}] {','.join(sh):32s} {len(seeds):4d} scenes  compile {tc:5.1f} s  "
              f"run {tr:7.1f} s ({len(seeds) * args.steps / tr:8.0f} env-steps/s)  failed {nbad}", flush=True)
        group_pairs = {k: dict(v - pairs_before.get(k, collections.Counter())) for k, v in by_pair.items()}
        with open(partial, "a") as f:
            f.write(json.dumps(dict(run=run_key, shapes=[str(x) for x in sh], records=records[n_records:],
                                    fails=dict(fails - fails_before),
                                    by_pair={k: v for k, v in group_pairs.items() if v})) + "\n")
    total = len(records)
    print(f"\n{total} scenes x {args.steps} steps, {args.dtype}, {time.perf_counter() - t_start:.0f} s")
    for c in ("nonfinite", "energy", "deep", "slot"):
        print(f"  {c:10s} {fails[c]:5d}")
    print("  any       ", sum(any(r[c] for c in ("nonfinite", "energy", "deep", "slot")) for r in records))
    print("by pair type (scenes failing a category with that pair involved):")
    for pair in sorted(by_pair):
        print(f"  {pair:18s} " + "  ".join(f"{c} {n}" for c, n in sorted(by_pair[pair].items())))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(scenes=total, steps=args.steps, dtype=args.dtype, seed=args.seed,
                       failures=dict(fails), by_pair={k: dict(v) for k, v in by_pair.items()},
                       device=jax.devices()[0].platform, records=records), f, indent=1)
    os.remove(partial)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
