"""Where the time of one ``vmap`` over a large batch goes, beside the same batch in chunks.

    python experiments/chunk_gap_ops.py [--scene boxes8] [--batch 1024] [--chunk 128] [--out results/chunk_gap_ops.json]

``chunk_gap.py`` shows that on a CPU boxes8 at 1,024 envs steps faster in chunks of
128 than in one ``vmap``, and that the gap stays with the contact QP cut to one
iteration. This script says which of XLA's operations take the difference: it runs
one step of each layout (float32, bench_step's settled states, the model's solver
settings) under ``jax.profiler`` with XLA's per-operation trace events on
(``--xla_cpu_enable_xprof_traceme``), and sums each operation's own time (its
events' durations less those of the events nested in them) by kind: the
operation's name without its numeric suffix (``dot``, ``ynn_fusion``, a fusion's
name). It prints the kinds that take the most time in either layout, with the
ratio of the two, then the same for groups of kinds (``GROUPS``: matrix products,
transposes, select and dynamic-update-slice fusions, the rest), and writes every
kind to the JSON file.

The trace events add their own cost to every operation, so the totals are larger
than an untraced step's and weigh the many small operations more than an untraced
step does: compare the two layouts with each other, not with ``chunk_gap.py``'s
rates, and time a change that the table suggests without the trace before keeping it.
"""

from __future__ import annotations

import os

# XLA reads its flags once, when JAX starts the CPU backend: before jax is imported
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_xprof_traceme=true").strip()

import argparse  # noqa: E402
import collections  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxsim  # noqa: E402
from bench_step import LIMITED, jaxsim_init, jaxsim_steps, random_states, scene_xml, settle_jaxsim  # noqa: E402
from benchutil import machine_info  # noqa: E402
from jaxsim.io import load_mjcf  # noqa: E402

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "chunk_gap_ops.json")
HOST_EVENTS = ("block_until_ready", "wait for completion", "stop_trace", "ThunkExecutor::Execute")
# the groups of operation kinds in the summary, in order (a kind goes to the first it matches)
GROUPS = (("matrix products", lambda k: k in ("dot", "dot_general", "ynn_fusion")),
          ("transposes", lambda k: "ranspose" in k),
          ("select and dynamic-update-slice fusions", lambda k: "select" in k or "dynamic-update-slice" in k),
          ("everything else", lambda k: True))


def self_times(events: list[dict]) -> collections.Counter:
    """Microseconds of each operation kind's own time in complete trace events
    (``ph == "X"``): per thread, an event's duration less its nested events'."""
    per_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            per_thread[e["pid"], e["tid"]].append(e)
    out = collections.Counter()
    for evs in per_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack, nested = [], collections.Counter()
        for i, e in enumerate(evs):
            while stack and evs[stack[-1]]["ts"] + evs[stack[-1]]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                nested[stack[-1]] += e["dur"]
            stack.append(i)
        for i, e in enumerate(evs):
            if not any(h in e["name"] for h in HOST_EVENTS):
                out[re.sub(r"[.\d]+$", "", e["name"])] += e["dur"] - nested[i]
    return out


def profile_step(model, states, chunk: int | None) -> collections.Counter:
    """Per-kind own time (us) of one traced, already compiled step of the batch."""
    f = jax.jit(jaxsim_steps(model, 1, chunk, jaxsim.parallel.batch_mesh(states.q.shape[0])))
    s = jax.block_until_ready(f(jax.block_until_ready(f(states))))
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            jax.block_until_ready(f(s))
        path = glob.glob(os.path.join(d, "**", "*.trace.json.gz"), recursive=True)[0]
        with gzip.open(path) as fh:
            return self_times(json.load(fh)["traceEvents"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default="boxes8", help="a bench_step.py scene")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--chunk", type=int, default=128)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    xml = scene_xml(a.scene)
    opts = {"max_contacts": 48} if a.scene == "boxes8" else ({"max_contacts": 16} if a.scene in LIMITED else {})
    model = load_mjcf(xml, dtype=jnp.float32, **opts)
    states = jaxsim_init(model, random_states(settle_jaxsim(model, xml, 1.0), a.batch))
    whole, chunked = profile_step(model, states, None), profile_step(model, states, a.chunk)
    total_w, total_c = sum(whole.values()), sum(chunked.values())
    print(f"{a.scene}, batch {a.batch}, one traced step: one vmap {total_w / 1e3:.0f} ms, "
          f"chunks of {a.chunk} {total_c / 1e3:.0f} ms, ratio {total_w / total_c:.2f}")
    print(f"{'operation kind':40s} {'one vmap ms':>12s} {'chunked ms':>11s} {'ratio':>6s} {'share of gap':>13s}")
    kinds = sorted(set(whole) | set(chunked), key=lambda k: -max(whole[k], chunked[k]))
    for k in kinds[:a.top]:
        ratio = whole[k] / chunked[k] if chunked[k] else float("inf")
        share = (whole[k] - chunked[k]) / (total_w - total_c) if total_w != total_c else 0.0
        print(f"{k[:40]:40s} {whole[k] / 1e3:12.1f} {chunked[k] / 1e3:11.1f} {ratio:6.2f} {share:13.0%}")
    print(f"{'group':40s} {'one vmap ms':>12s} {'chunked ms':>11s} {'ratio':>6s} {'share of gap':>13s}")
    left = set(kinds)
    for label, member in GROUPS:
        group = {k for k in left if member(k)}
        left -= group
        w, c = sum(whole[k] for k in group), sum(chunked[k] for k in group)
        share = (w - c) / (total_w - total_c) if total_w != total_c else 0.0
        print(f"{label:40s} {w / 1e3:12.1f} {c / 1e3:11.1f} {w / c if c else float('inf'):6.2f} {share:13.0%}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": machine_info(), "args": vars(a), "one_vmap_us": dict(whole),
                   "chunked_us": dict(chunked)}, fh, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
