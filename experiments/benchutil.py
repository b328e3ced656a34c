"""Timing helpers shared by the benchmark scripts (run them from the repository root:
``python experiments/bench_*.py``; this folder is then on ``sys.path``)."""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import time

import jax
import mujoco

from jaxsim.xla_flags import use_fast_cpu_compile

use_fast_cpu_compile()  # jaxsim and MJX alike, before either starts JAX's backend


def bench(f, args, min_time: float, repeats: int = 3, keep_output: bool = False,
          keep_compiled: bool = False) -> dict:
    """Compile ``jit(f)``, then time synchronous calls: best of ``repeats`` loops of >= min_time s.
    ``keep_output``: the warm-up call's result is returned under ``"output"``, so a caller
    that inspects it does not compile ``f`` a second time; ``keep_compiled``: the compiled
    call under ``"compiled"``, for timing it again (``alternating_rates``)."""
    jax.clear_caches()  # so compile_s is not hidden by an earlier jit of the same f
    t0 = time.perf_counter()
    compiled = jax.jit(f).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    output = jax.block_until_ready(compiled(*args))  # warm-up (first-run allocations)
    best = None
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < min_time:
            jax.block_until_ready(compiled(*args))
            calls += 1
        if best is None or elapsed / calls < best[1] / best[0]:
            best = (calls, elapsed)
    result = {"compile_s": compile_s, "calls": best[0], "seconds": best[1],
              "sec_per_call": best[1] / best[0]}
    if keep_output:
        result["output"] = output
    if keep_compiled:
        result["compiled"] = compiled
    return result


def alternating_rates(calls: dict, steps_per_call: int, rounds: int, min_time: float) -> dict:
    """Steps per second of each compiled call in ``calls`` (key -> (f, args tuple)),
    timed in ``rounds`` rounds that alternate the order (forward, then backward), each
    call at least ``min_time`` s and twice a round: on a noisy machine neighbours then
    see the same load. Returns key -> list of per-round rates."""
    rates = {k: [] for k in calls}
    for r in range(rounds):
        for key in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
            f, args = calls[key]
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < min_time or n < 2:
                jax.block_until_ready(f(*args))
                n += 1
            rates[key].append(steps_per_call * n / (time.perf_counter() - t0))
    return rates


def machine_info() -> dict:
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
        "mujoco": mujoco.__version__,
        "mujoco_mjx": importlib.metadata.version("mujoco-mjx"),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),  # other processes sharing the CPUs
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def parse_common(p: argparse.ArgumentParser, default_out: str) -> argparse.Namespace:
    """Add the flags every benchmark shares (--batches, --min-time, --out, --quick) and
    parse; --quick means batches (1, 8) and 0.1 s timing loops."""
    p.add_argument("--batches", nargs="+", type=int, default=[1, 64, 1024])
    p.add_argument("--min-time", type=float, default=1.0,
                   help="seconds per timing loop (best of 3 loops is kept)")
    p.add_argument("--out", default=default_out, help="JSON output path")
    p.add_argument("--quick", action="store_true", help="smoke test: batches 1 8, min-time 0.1")
    a = p.parse_args()
    if a.quick:
        a.batches, a.min_time = [1, 8], 0.1
    return a
