"""Forward-dynamics throughput: jaxsim (ABA and CRBA+Cholesky) vs MuJoCo MJX.

For each model and batch size this times one jitted, vmapped evaluation of the
smooth forward dynamics (no contacts or constraints) on a batch of random states
and reports forward-dynamics evaluations per second (batch * calls / seconds):

  * jaxsim ABA   -- ``jaxsim.accelerations`` with ``forward_dynamics="aba"``
  * jaxsim CRBA  -- ``jaxsim.accelerations`` with ``forward_dynamics="crba"``
                    (mass matrix + Cholesky)
  * MJX          -- ``mjx.forward`` with constraints disabled

Every method returns only ``qacc`` (nv,) per state, so XLA may drop whatever a
method computes that ``qacc`` does not need. Each timed call is followed by
``jax.block_until_ready``, i.e. this is the throughput of back-to-back
synchronous calls. Compilation is timed separately and excluded. Before timing,
jaxsim's qacc is checked against MJX's on the same states.

Run (from the repository root):

    python experiments/bench_dynamics.py                 # full run
    python experiments/bench_dynamics.py --quick         # smoke test
    python experiments/bench_dynamics.py --models ant --batches 1 256 --min-time 2

Results are printed as a table and written as JSON (default
``experiments/results/bench_dynamics.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxsim
from jaxsim.io import load_mjcf
from benchutil import bench, machine_info, parse_common

ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
METHODS = ("aba", "crba", "mjx")
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                           "bench_dynamics.json")


def model_path(name: str) -> str:
    """A gymnasium MuJoCo asset name (``humanoid``) or a path to an MJCF file."""
    return name if name.endswith(".xml") else os.path.join(ASSETS, f"{name}.xml")


def load_mjx(path: str):
    """MjModel -> (mjx.Model, mjx.Data) computing smooth dynamics only."""
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    # MJX rejects the PGS solver (humanoid.xml asks for it); with constraints
    # disabled the solver is never used, so any supported one will do.
    mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    mx = mjx.put_model(mm)
    return mm, mx, mjx.make_data(mx)


def random_states(mm, batch: int, seed: int = 0):
    """(q, v) float32 arrays of shape (batch, nq) and (batch, nv) near ``qpos0``.

    Positions are ``qpos0`` plus small noise, with the quaternions of free and
    ball joints renormalized; velocities are standard normal scaled by 0.5.
    """
    rng = np.random.default_rng(seed)
    q = mm.qpos0 + 0.1 * rng.standard_normal((batch, mm.nq))
    for j in range(mm.njnt):
        adr = mm.jnt_qposadr[j]
        if mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            adr += 3
        elif mm.jnt_type[j] != mujoco.mjtJoint.mjJNT_BALL:
            continue
        quat = q[:, adr:adr + 4]
        q[:, adr:adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    v = 0.5 * rng.standard_normal((batch, mm.nv))
    return jnp.asarray(q, jnp.float32), jnp.asarray(v, jnp.float32)


def batched_fns(path: str):
    """{method: f(q, v, ctrl) -> qacc}, each vmapped over the leading axis (not jitted)."""
    fns = {}
    for fd in ("aba", "crba"):
        model = load_mjcf(path, dtype=jnp.float32, forward_dynamics=fd)
        act = jnp.zeros((model.topo.na,), jnp.float32)

        def one(q, v, u, model=model, act=act):
            return jaxsim.accelerations(model, q, v, act, u)[0]

        fns[fd] = jax.vmap(one)
    mm, mx, dx = load_mjx(path)
    fns["mjx"] = jax.vmap(lambda q, v, u: mjx.forward(mx, dx.replace(qpos=q, qvel=v, ctrl=u)).qacc)
    return mm, fns


def sanity_check(name: str, mm, fns, batch: int = 8) -> dict:
    """Compare jaxsim's qacc with MJX's on random states with ctrl = 0."""
    q, v = random_states(mm, batch, seed=1)
    u = jnp.zeros((batch, mm.nu), jnp.float32)
    ref = np.asarray(jax.jit(fns["mjx"])(q, v, u))
    scale = max(1.0, float(np.abs(ref).max()))
    out = {}
    for fd in ("aba", "crba"):
        err = float(np.abs(np.asarray(jax.jit(fns[fd])(q, v, u)) - ref).max())
        ok = err <= 1e-3 * scale
        out[fd] = {"max_abs_err": err, "max_abs_qacc": scale, "ok": ok}
        print(f"  check {name:9s} {fd:4s}: max|qacc - qacc_mjx| = {err:.2e}"
              f"  (max|qacc_mjx| = {scale:.3g})  {'ok' if ok else 'FAILED'}")
        if not ok:
            print(f"  !!!!! WARNING: jaxsim {fd} disagrees with MJX on {name} "
                  f"(relative error {err / scale:.2e} > 1e-3); timing anyway !!!!!")
    return out


def print_table(rows: list[dict]) -> None:
    head = (f"{'model':10s} {'batch':>6s} {'ABA evals/s':>13s} {'CRBA evals/s':>13s} "
            f"{'MJX evals/s':>13s} {'ABA/MJX':>8s} {'CRBA/MJX':>9s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        e = {m: r[m]["evals_per_s"] for m in METHODS}
        print(f"{r['model']:10s} {r['batch']:6d} {e['aba']:13.4g} {e['crba']:13.4g} "
              f"{e['mjx']:13.4g} {r['aba_over_mjx']:8.2f} {r['crba_over_mjx']:9.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=["humanoid", "ant"],
                   help="gymnasium asset names or paths to MJCF files")
    a = parse_common(p, DEFAULT_OUT)

    info = machine_info()
    print(f"jax {info['jax']} on {info['jax_devices']}, mujoco {info['mujoco']}, "
          f"mjx {info['mujoco_mjx']}, {info['cpu_count']} CPUs")
    t_start = time.perf_counter()
    rows, checks = [], {}
    for name in a.models:
        mm, fns = batched_fns(model_path(name))
        print(f"{name}: nq={mm.nq} nv={mm.nv} nu={mm.nu} nbody={mm.nbody}")
        checks[name] = sanity_check(name, mm, fns)
        for batch in a.batches:
            q, v = random_states(mm, batch)
            u = jnp.zeros((batch, mm.nu), jnp.float32)
            row = {"model": name, "batch": batch}
            for m in METHODS:
                r = bench(fns[m], (q, v, u), a.min_time)
                r["evals_per_s"] = batch / r["sec_per_call"]
                row[m] = r
                print(f"  {name:9s} batch {batch:5d} {m:4s}: {r['evals_per_s']:11.4g} evals/s"
                      f"  ({r['sec_per_call'] * 1e3:8.3f} ms/call, {r['calls']} calls,"
                      f" compile {r['compile_s']:.1f} s)", flush=True)
            row["aba_over_mjx"] = row["aba"]["evals_per_s"] / row["mjx"]["evals_per_s"]
            row["crba_over_mjx"] = row["crba"]["evals_per_s"] / row["mjx"]["evals_per_s"]
            rows.append(row)
    wall = time.perf_counter() - t_start

    print()
    print_table(rows)
    print(f"\n(ratio > 1: jaxsim faster; total {wall:.0f} s)")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": info, "args": vars(a), "wall_s": wall, "checks": checks,
                   "results": rows}, fh, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
