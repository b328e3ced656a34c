"""Full physics-step throughput: jaxsim (``jaxsim.step``) vs MuJoCo MJX (``mjx.step``).

For each scene and batch size this times one jitted call that advances a vmapped
batch of environments by N steps (``--steps``, default 10) with ``jax.lax.scan``,
and reports physics steps per second (batch * N * calls / seconds):

  * jaxsim -- ``vmap(scan(jaxsim.step(model, state)))`` on a batch of States; the
              call returns the final States. On a CPU the batch is stepped in chunks
              of ``jaxsim.parallel.default_chunk(model)`` envs (``--chunk``; 128 for
              boxes8, none for the other scenes), as
              ``jaxsim simulate --batch`` does; ``--also-unchunked`` times one vmap
              over the whole batch as well (column "one vmap")
  * MJX    -- ``vmap(scan(mjx.step(mx, d)))`` on a batch of ``mjx.Data`` from
              ``mjx.put_model(mm)`` with the Newton solver (MJX rejects PGS, the
              default and humanoid.xml's choice); returns the final Data
  * at batch 1 neither is vmapped: ``chunked_vmap`` runs one env as it is (a vmap
    of one turns every ``while_loop`` body and ``cond`` into selects), and MJX
    goes through the same function
  * MuJoCo -- batch 1 only: ``mujoco.mj_step`` N times in a Python loop on the same
              (Newton) MjModel, each call restarting from the same initial state

Everything is float32 and ctrl = 0. Each simulator starts from its own resting pose
plus the same tiny noise (0.5 mm on free-joint positions, ~0.01 rad on quaternions and
hinges; ``random_states`` of bench_collision.py), velocities zero: the pose MuJoCo C
reaches after ``--settle`` s (default 1 s) from the file's qpos0 for MJX and MuJoCo C,
the pose jaxsim reaches in the same time for jaxsim, so that every timed step is in
contact on both sides. (One shared pose is not fair: MuJoCo's soft contacts rest
~1 cm deep, and jaxsim, started that deep, spends the timed steps pushing the bodies
out at up to ``max_depenetration_speed``, a different workload from resting.)
Each timed call starts from those states again and is followed by
``jax.block_until_ready``; compilation is timed separately and excluded (best of 3
loops of >= --min-time s, see benchutil.bench). After the jaxsim timing, the number of
active contact slots per env after the N steps is printed. On a shared machine whose
load changes from minute to minute, two best-of-3 timings taken one after the other
can be skewed: ``--rounds R`` then also times jaxsim and MJX in R rounds that alternate
them (``benchutil.alternating_rates``), so that both see the same load, and reports the
median of the per-round ratios (``jaxsim_over_mjx_rounds``, the table's "rounds"
column) beside the best-of-3 ratio.

Scenes (each built from one MJCF text, loaded by both ``jaxsim.io.load_mjcf`` and
MuJoCo, so timestep, integrator, geoms and contact filtering are the same):

  cube      a 0.1 m, 0.5 kg free cube resting on a floor plane, friction 0.5
  boxes8    the 8 free 0.1 m cubes of bench_collision.py, each raised 5 cm, falling
            and tumbling onto the floor (1 kg each)
  ant       gymnasium's ant.xml (RK4, dt 0.01)
  humanoid  gymnasium's humanoid.xml (RK4, dt 0.003)

``cube:volume`` and ``boxes8:volume`` (not in the default list) time jaxsim with the
contact-volume model (``contact="volume"``: one slot per polyhedral pair) on the same
scene; MJX and MuJoCo C are timed again in that row, so every ratio is from one run.
So do ``SCENE:springhead/qp`` (Springhead's model with the shared QP) and
``SCENE:springhead/pgs`` (with its projected Gauss-Seidel, 15 sweeps, the default; the
results of 2026-11-24 were recorded as ``SCENE:springhead`` when the QP was) for cube, boxes8
and humanoid; their iteration column counts QP iterations, or the fixed sweeps.
``NAME@fresh`` (``cube@fresh`` is in the default list) times the same scene from fresh
states instead: the file's pose (the cube just placed on the floor, as after an
environment reset) plus the same tiny noise, velocities and warm start zero, with no
settling on either side; every timed call restarts from those states, so each one
pays for contact being established. ``NAME`` may carry a contact model
(``cube:volume@fresh``).
``SCENE:cone/exact``, ``SCENE:cone/anitescu-tasora`` and ``SCENE:cone/nakaoka`` time
the cone model (Kikuuwe & Brogliato's friction formulations) with each friction model
on the same three scenes; the iteration column counts exact Coulomb's sweeps, the
cone QP's iterations or Nakaoka's fixed sweeps.

boxes8 gets ``max_contacts=--boxes8-max-contacts`` (default 48 of its 256 slots).
For ant and humanoid jaxsim gets ``max_contacts=--max-contacts`` (default 16; 0 = all
slots): it solves for at most that many deepest active contacts per step (the rest
are counted in ``state.overflow``). The number of contact slots is printed.
``--solver-iterations N`` caps jaxsim's contact QP at N iterations (a pass; the
model's ``opt.solver_iterations`` otherwise): with 1 the step runs with almost no
solve, which measures what the rest of the step costs beside MJX (not a setting to
simulate with: the impulses are one iteration's).

Solver iterations: after the timing of a scene, 200 steps (``--iter-steps``) of a
batch of 8 (``--iter-batch``) are run from the same kind of initial states, and the
mean and max over all steps and envs of jaxsim's ``state.solver.iterations`` (contact
QP iterations of the step, summed over the QP passes of ``contact/point.py``, each
capped at ``opt.solver_iterations``) and of MJX's ``solver_niter`` (if this MJX version has it) are
reported. MJX 3.x has the field but ``mjx.step`` never writes it (the count stays in
``solver.solve``'s loop), so an all-zero count is shown as "0 (not written)"; as a
reference, MuJoCo C's ``solver_niter`` (same Newton MjModel, float64, same initial
states, one env at a time) is reported too. Also reported: jaxsim's contact overflow
and non-finite flags, and the final q[2] (height of the first free body) on every
side, a coarse plausibility check.

MJX's Cholesky at batch > 1 (``--mjx-cholesky``, default ``auto``): MJX factors the
mass matrix and the Newton Hessian with ``jax.scipy.linalg.cho_factor``, which on CPU is
jaxlib's batched LAPACK kernel. That kernel splits a vmapped batch over XLA's intra-op
thread pool from inside a pool task and waits; on a 2-core machine both pool threads
block there and the call never returns (seen for MJX on boxes8 at batch 64, and for
jaxsim's own Cholesky before it moved to ``jaxsim.linalg``). So with ``auto`` MJX runs
stock at batch 1 (one matrix per call: no split, no deadlock) and, at batch > 1, with
its ``cho_factor``/``cho_solve`` calls traced as ``jaxsim.linalg``'s plain-JAX ones
(same math, same Newton solver). At batch 1 MJX is then timed both ways, so the cost
or gain of that substitution is printed (``MJX plain-Cholesky``). Off the CPU ``auto``
is stock MJX everywhere (the GPU's batched Cholesky has no such pool). ``lapack``: stock
MJX everywhere (may hang on small CPUs); ``plain``: substituted everywhere.

If MJX rejects a scene (or a call fails), the reason is printed and stored and only
jaxsim is timed; a jaxsim failure is printed and stored and the scene is skipped.

Run (from the repository root):

    python experiments/bench_step.py                   # full run
    python experiments/bench_step.py --quick           # smoke test (batches 1 8)
    python experiments/bench_step.py --scenes ant humanoid --batches 1 256 --steps 20

Results are printed as a table and written as JSON (default
``experiments/results/bench_step.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
import traceback
import warnings

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxsim
from jaxsim import linalg, parallel
from jaxsim.io import load_mjcf
from bench_collision import BOXES8, _box_body, _mjcf, load_mjx, random_states
from benchutil import alternating_rates, bench, machine_info, parse_common

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                           "bench_step.json")
ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
RAISE = 0.05  # boxes8: extra height of every cube, so that they fall and tumble


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


SCENES = {
    "cube": ('<mujoco><worldbody><geom name="floor" type="plane" size="2 2 0.1" friction="0.5"/>'
             '<body name="cube" pos="0 0 0.05"><freejoint/>'
             '<geom type="box" size="0.05 0.05 0.05" mass="0.5" friction="0.5"/></body>'
             '</worldbody></mujoco>'),
    "boxes8": _mjcf("".join(_box_body(f"box{i}", (x, y, z + RAISE), quat)
                            for i, ((x, y, z), quat) in enumerate(BOXES8))),
    "ant": os.path.join(ASSETS, "ant.xml"),
    "humanoid": os.path.join(ASSETS, "humanoid.xml"),
}
LIMITED = ("ant", "humanoid")  # scenes that get --max-contacts
# scene:contact model[/solver] (jaxsim side; MJX timed again)
VARIANTS = ["cube:volume", "boxes8:volume", "cube:springhead/qp", "boxes8:springhead/qp", "humanoid:springhead/qp",
            "cube:springhead/pgs", "boxes8:springhead/pgs", "humanoid:springhead/pgs"] + [
            f"{scene}:cone/{model}" for model in ("exact", "anitescu-tasora", "nakaoka")
            for scene in ("cube", "boxes8", "humanoid")]


def scene_xml(name: str) -> str:
    src = SCENES[name]
    return src if src.lstrip().startswith("<") else _read(src)


# ---------------------------------------------------------------- batched step functions

@contextlib.contextmanager
def mjx_cholesky(plain: bool):
    """While active (and ``plain``), ``jax.scipy.linalg.cho_factor``/``cho_solve`` --
    what MJX calls, looked up at trace time -- are ``jaxsim.linalg``'s plain-JAX ones
    (module docstring: jaxlib's batched LAPACK Cholesky deadlocks on 2 cores)."""
    import jax.scipy.linalg as jsl
    saved = jsl.cho_factor, jsl.cho_solve

    def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
        L = linalg.cho_factor(a)
        return (L if lower else L.T), lower

    def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
        c, lower = c_and_lower
        return linalg.cho_solve(c if lower else c.T, b)

    if plain:
        jsl.cho_factor, jsl.cho_solve = cho_factor, cho_solve
    try:
        yield
    finally:
        jsl.cho_factor, jsl.cho_solve = saved


def mjx_plain(mode: str, batch: int) -> bool:
    return mode == "plain" or (mode == "auto" and batch > 1 and jax.default_backend() == "cpu")


def jaxsim_steps(model, steps: int, chunk: int | None = None, mesh=None):
    """Batched States -> batched States after ``steps`` steps (ctrl = the states' ctrl),
    ``chunk`` envs at a time per device of ``mesh`` (``jaxsim.parallel.chunked_vmap``;
    None: one vmap)."""
    def one(s):
        return jax.lax.scan(lambda s, _: (jaxsim.step(model, s), None), s, None, length=steps)[0]
    return parallel.chunked_vmap(one, 0, chunk, mesh)


def chunk_of(model, option: str) -> int | None:
    """``--chunk``: "auto" is ``parallel.default_chunk(model)``, a number that many envs
    (0: one vmap over the batch)."""
    return parallel.default_chunk(model) if option == "auto" else (int(option) or None)


def mjx_steps(mx, steps: int):
    """Batched mjx.Data -> batched mjx.Data after ``steps`` steps."""
    def one(d):
        return jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=steps)[0]
    return parallel.chunked_vmap(one, 0)  # a plain vmap; one env unbatched, as jaxsim's


def jaxsim_init(model, q):
    return jax.vmap(lambda qi: jaxsim.make_state(model, qi))(q)


def mjx_init(dx, q):
    return jax.vmap(lambda qi: dx.replace(qpos=qi))(q)


def mjx_niter(d):
    """MJX's solver iteration count of the last step, or None (field moved to ``_impl``
    in newer MJX; absent in some versions)."""
    impl = getattr(d, "_impl", None)
    if impl is not None and hasattr(impl, "solver_niter"):
        return impl.solver_niter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return getattr(d, "solver_niter", None)
        except Exception:  # noqa: BLE001 -- some versions raise on removed fields
            return None


def bench_mujoco_c(mm, q0: np.ndarray, steps: int, min_time: float, repeats: int = 3) -> dict:
    """MuJoCo C: one call = reset to (q0, v = 0), then ``steps`` mj_step in Python."""
    md = mujoco.MjData(mm)

    def call():
        md.time = 0.0
        md.qpos[:] = q0
        md.qvel[:] = 0.0
        md.qacc_warmstart[:] = 0.0
        for _ in range(steps):
            mujoco.mj_step(mm, md)

    call()
    best = None
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < min_time:
            call()
            calls += 1
        if best is None or elapsed / calls < best[1] / best[0]:
            best = (calls, elapsed)
    return {"calls": best[0], "seconds": best[1], "sec_per_call": best[1] / best[0],
            "steps_per_s": steps * best[0] / best[1]}


def settle(mm, seconds: float) -> None:
    """Replace ``mm.qpos0`` by the pose MuJoCo C reaches after ``seconds`` from qpos0 at
    rest (ctrl 0): robots that start in the air are then standing or lying on the floor
    and every timed step solves contacts. The state everything starts from."""
    md = mujoco.MjData(mm)
    for _ in range(int(round(seconds / mm.opt.timestep))):
        mujoco.mj_step(mm, md)
    mm.qpos0[:] = md.qpos


def settle_jaxsim(model, xml: str, seconds: float):
    """A copy of the scene's MjModel whose ``qpos0`` is the pose jaxsim reaches after
    ``seconds`` from the file's qpos0 at rest (ctrl 0): jaxsim's own resting pose."""
    steps = int(round(seconds / float(model.opt.timestep)))
    mm = mujoco.MjModel.from_xml_string(xml)
    if steps == 0:  # the file's pose (no rollout to compile)
        return mm
    final, _ = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model),
                                       jnp.zeros((steps, model.nu), model.dtype))
    mm.qpos0[:] = np.asarray(final.q, np.float64)
    return mm


# ---------------------------------------------------------------- solver iterations

def _stats(x) -> dict:
    x = np.asarray(x)
    return {"mean": float(x.mean()), "max": int(x.max())}


def iteration_stats(model, mx, dx, mm, mm_js, batch: int, steps: int,
                    mjx_mode: str = "auto") -> dict:
    """``steps`` steps of ``batch`` envs on each side; per-step solver iterations.
    ``mm``/``mm_js``: MjModels whose qpos0 is MuJoCo's / jaxsim's resting pose."""
    q, q_js = random_states(mm, batch, seed=1), random_states(mm_js, batch, seed=1)
    out = {"batch": batch, "steps": steps}

    def js_one(s):
        def body(s, _):
            s = jaxsim.step(model, s)
            return s, s.solver.iterations
        s, it = jax.lax.scan(body, s, None, length=steps)
        return it, jnp.sum(s.contact.active), s.overflow, s.nonfinite, s.q[2]

    t0 = time.perf_counter()
    it, active, overflow, nonfinite, z = jax.block_until_ready(
        jax.jit(jax.vmap(js_one))(jaxsim_init(model, q_js)))
    out["jaxsim"] = {"iterations": _stats(it), "active_at_end": _stats(active),
                     "overflow_total": _stats(overflow), "nonfinite_envs": int(np.sum(nonfinite)),
                     "q2_at_end_mean": float(np.mean(z)), "wall_s": time.perf_counter() - t0}
    if mx is None:
        return out
    try:
        has_niter = mjx_niter(dx) is not None

        def mx_one(d):
            def body(d, _):
                d = mjx.step(mx, d)
                return d, (mjx_niter(d) if has_niter else jnp.zeros((), jnp.int32))
            d, it = jax.lax.scan(body, d, None, length=steps)
            return it, d.qpos[2], jnp.all(jnp.isfinite(d.qpos))

        t0 = time.perf_counter()
        jax.clear_caches()  # so MJX is traced again under the chosen Cholesky
        with mjx_cholesky(mjx_plain(mjx_mode, batch)):
            it, z, finite = jax.block_until_ready(jax.jit(jax.vmap(mx_one))(mjx_init(dx, q)))
        niter = _stats(it) if has_niter else None
        if niter is not None and niter["max"] == 0:  # MJX 3.x keeps the count inside
            niter["never_written"] = True             # solver.solve: Data's field stays 0
        out["mjx"] = {"solver_niter": niter,
                      "nonfinite_envs": int(np.sum(~np.asarray(finite))),
                      "q2_at_end_mean": float(np.mean(z)), "wall_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001
        out["mjx"] = {"error": f"{type(e).__name__}: {e}"}
    # MuJoCo C on the same (Newton) MjModel: solver_niter is always written there
    md, it, z = mujoco.MjData(mm), np.zeros((batch, steps), np.int64), np.zeros(batch)
    for b in range(batch):
        mujoco.mj_resetData(mm, md)
        md.qpos[:] = np.asarray(q[b], np.float64)
        for t in range(steps):
            mujoco.mj_step(mm, md)
            it[b, t] = md.solver_niter[0]
        z[b] = md.qpos[2]
    out["mujoco_c"] = {"solver_niter": _stats(it), "q2_at_end_mean": float(z.mean())}
    return out


# ---------------------------------------------------------------- output

def _fmt(x, spec: str, width: int) -> str:
    return f"{'n/a':>{width}s}" if x is None else f"{x:{width}{spec}}"


def print_table(rows: list[dict]) -> None:
    head = (f"{'scene':9s} {'batch':>6s} {'jaxsim steps/s':>15s} {'MJX steps/s':>12s} "
            f"{'jaxsim/MJX':>11s} {'C steps/s':>10s} {'compile s (jx/mjx)':>19s} "
            f"{'rounds':>7s} {'active/env':>11s} {'chunk':>6s} {'one vmap':>9s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        j, m, c = r["jaxsim"], r.get("mjx") or {}, r.get("mujoco_c") or {}
        comp = f"{j['compile_s']:.1f}/" + (f"{m['compile_s']:.1f}" if "compile_s" in m else "-")
        print(f"{r['scene']:9s} {r['batch']:6d} {j['steps_per_s']:15.4g} "
              f"{_fmt(m.get('steps_per_s'), '.4g', 12)} {_fmt(r['jaxsim_over_mjx'], '.3f', 11)} "
              f"{_fmt(c.get('steps_per_s'), '.4g', 10)} {comp:>19s} "
              f"{_fmt(r.get('jaxsim_over_mjx_rounds'), '.3f', 7)} {j['active_per_env_mean']:11.2f} {_fmt(j.get('chunk'), 'd', 6)} "
              f"{_fmt(r.get('jaxsim_unchunked_steps_per_s'), '.4g', 9)}")


def _niter_str(n) -> str:
    if not n:
        return "n/a"
    return "0 (not written)" if n.get("never_written") else f"{n['mean']:.2f}/{n['max']}"


def print_iterations(iters: dict) -> None:
    head = (f"{'scene':9s} {'jaxsim iters':>13s} {'MJX niter':>16s} {'MuJoCo C niter':>15s} "
            f"{'jx overflow':>12s} {'nonfinite jx/mjx':>17s} {'q[2] end jx/mjx/C':>24s}")
    print(head + "\n" + f"{'':9s} {'mean/max':>13s} {'mean/max':>16s} {'mean/max':>15s} "
          f"{'mean/max':>12s}")
    print("-" * len(head))
    for name, s in iters.items():
        j, m, c = s["jaxsim"], s.get("mjx") or {}, s["mujoco_c"]
        mit = "error" if "error" in m else _niter_str(m.get("solver_niter"))
        ov = f"{j['overflow_total']['mean']:.1f}/{j['overflow_total']['max']}"
        nf = f"{j['nonfinite_envs']}/" + (str(m["nonfinite_envs"]) if "nonfinite_envs" in m else "-")
        z = "/".join([f"{j['q2_at_end_mean']:.4f}",
                      f"{m['q2_at_end_mean']:.4f}" if "q2_at_end_mean" in m else "-",
                      f"{c['q2_at_end_mean']:.4f}"])
        print(f"{name:9s} {_niter_str(j['iterations']):>13s} {mit:>16s} "
              f"{_niter_str(c['solver_niter']):>15s} {ov:>12s} {nf:>17s} {z:>24s}")


# ---------------------------------------------------------------- main

def scene_name(name: str) -> str:
    """argparse type: a scene or variant, optionally with ``@fresh``."""
    plain, at, start = name.partition("@")
    known = list(SCENES) + VARIANTS
    if plain not in known or (at and start != "fresh"):
        raise argparse.ArgumentTypeError(
            f"unknown scene {name!r}: choose from {', '.join(known)}, each optionally + '@fresh'")
    return name


def run_scene(name: str, a, rows: list, iters: dict, notes: dict) -> None:
    plain, _, start = name.partition("@")  # "cube@fresh": from the file's pose, no settling
    base, _, contact = plain.partition(":")  # "cube:volume": jaxsim with that contact model
    xml = scene_xml(base)
    opts = {"max_contacts": a.max_contacts} if base in LIMITED else {}
    if base == "boxes8":
        opts = {"max_contacts": a.boxes8_max_contacts}
    if a.solver_iterations:
        opts["solver_iterations"] = a.solver_iterations
    contact, _, choice = contact.partition("/")  # "springhead/pgs", "cone/exact": the model's solver
    if contact:
        opts["contact"] = contact
    if choice:
        opts["solver"] = choice
    model = load_mjcf(xml, dtype=jnp.float32, **opts)
    mm0 = mujoco.MjModel.from_xml_string(xml)
    slots = int(jaxsim.make_state(model).contact.active.shape[0])
    print(f"{name}: nq={mm0.nq} nv={mm0.nv} nu={mm0.nu} ngeom={mm0.ngeom} "
          f"dt={float(model.opt.timestep):g} integrator={model.opt.integrator}; jaxsim "
          f"{slots} contact slots, max_contacts={model.opt.max_contacts} (0 = all)", flush=True)
    notes[name] = {"contact_slots": slots, "max_contacts": int(model.opt.max_contacts),
                   "jaxsim_options": opts}

    mjx_reason, mx, dx = None, None, None
    settle_s = 0.0 if start == "fresh" else a.settle
    mm_js = settle_jaxsim(model, xml, settle_s)
    settle(mm0, settle_s)
    notes[name]["rest_q2"] = {"jaxsim": float(mm_js.qpos0[2]), "mujoco": float(mm0.qpos0[2])}
    print(f"  initial q[2] after {settle_s:g} s of settling: jaxsim {mm_js.qpos0[2]:.4f}, MuJoCo C "
          f"{mm0.qpos0[2]:.4f}", flush=True)
    try:
        mm, mx, dx = load_mjx(xml)
        mm.qpos0[:] = mm0.qpos0
        jax.eval_shape(lambda d: mjx.step(mx, d), dx)  # trace once: MJX rejects unsupported features here
    except Exception as e:  # noqa: BLE001
        mjx_reason = f"MJX rejected the scene: {type(e).__name__}: {e}"
        mm, mx, dx = mm0, None, None
        print(f"  !!! {mjx_reason}; timing jaxsim only", flush=True)
    notes[name]["mjx_reason"] = mjx_reason

    chunk = chunk_of(model, a.chunk)
    notes[name]["chunk"] = chunk
    print(f"  jaxsim steps {chunk or 'all'} envs at a time (--chunk {a.chunk})", flush=True)
    mx_f = mjx_steps(mx, a.steps) if mx is not None else None
    for batch in a.batches:
        q = random_states(mm, batch)
        row = {"scene": name, "batch": batch, "steps": a.steps}
        mesh = parallel.batch_mesh(batch)  # every local device that divides the batch
        js_f = jaxsim_steps(model, a.steps, chunk, mesh)
        states = parallel.shard_batch(jaxsim_init(model, random_states(mm_js, batch)), mesh)
        if a.also_unchunked and chunk and batch > chunk:  # the same call as one vmap, for comparison
            u = bench(jaxsim_steps(model, a.steps, None, mesh), (states,), a.min_time)
            row["jaxsim_unchunked_steps_per_s"] = batch * a.steps / u["sec_per_call"]
            print(f"  {name:9s} batch {batch:5d} jaxsim, one vmap: {row['jaxsim_unchunked_steps_per_s']:11.4g} "
                  f"steps/s (compile {u['compile_s']:.1f} s)", flush=True)
        r = bench(js_f, (states,), a.min_time, keep_output=True, keep_compiled=True)
        end, js_compiled = r.pop("output"), r.pop("compiled")
        r["devices"], r["chunk"] = int(mesh.devices.size), chunk
        r["steps_per_s"] = batch * a.steps / r["sec_per_call"]
        active = np.asarray(jnp.sum(end.contact.active, axis=-1))
        r["active_per_env_mean"] = float(active.mean())
        r["active_per_env_max"] = int(active.max())
        r["overflow_mean"] = float(np.mean(end.overflow))
        r["nonfinite_envs"] = int(np.sum(end.nonfinite))
        row["jaxsim"] = r
        line = (f"  {name:9s} batch {batch:5d} jaxsim: {r['steps_per_s']:11.4g} steps/s "
                f"({r['sec_per_call'] * 1e3:8.3f} ms/call, {r['calls']} calls, compile "
                f"{r['compile_s']:.1f} s); active contacts/env after {a.steps} steps: mean "
                f"{r['active_per_env_mean']:.2f} max {r['active_per_env_max']}")
        if r["overflow_mean"] or r["nonfinite_envs"]:
            line += f", overflow mean {r['overflow_mean']:.1f}, non-finite envs {r['nonfinite_envs']}"
        print(line, flush=True)

        row["mjx"], row["jaxsim_over_mjx"] = {"unsupported": mjx_reason}, None
        if mx_f is not None:
            try:
                plain = mjx_plain(a.mjx_cholesky, batch)
                mx_state = parallel.shard_batch(mjx_init(dx, q), mesh)
                with mjx_cholesky(plain):
                    m = bench(mx_f, (mx_state,), a.min_time, keep_compiled=True)
                mx_compiled = m.pop("compiled")
                m["steps_per_s"] = batch * a.steps / m["sec_per_call"]
                m["cholesky"] = "jaxsim.linalg" if plain else "lapack"
                if batch == 1 and a.mjx_cholesky == "auto":  # the substitution's own effect
                    with mjx_cholesky(True):
                        mp = bench(mx_f, (mjx_init(dx, q),), a.min_time)
                    m["plain_cholesky_steps_per_s"] = a.steps / mp["sec_per_call"]
                    print(f"  {name:9s} batch     1 MJX plain-Cholesky: "
                          f"{m['plain_cholesky_steps_per_s']:9.4g} steps/s (stock "
                          f"{m['steps_per_s']:.4g})", flush=True)
                row["mjx"] = m
                row["jaxsim_over_mjx"] = r["steps_per_s"] / m["steps_per_s"]
                print(f"  {name:9s} batch {batch:5d} MJX   : {m['steps_per_s']:11.4g} steps/s "
                      f"[{m['cholesky']} Cholesky] "
                      f"({m['sec_per_call'] * 1e3:8.3f} ms/call, {m['calls']} calls, compile "
                      f"{m['compile_s']:.1f} s); jaxsim/MJX = {row['jaxsim_over_mjx']:.3f}",
                      flush=True)
                if a.rounds:
                    rates = alternating_rates({"jaxsim": (js_compiled, (states,)), "mjx": (mx_compiled, (mx_state,))},
                                              batch * a.steps, a.rounds, a.min_time)
                    ratios = np.asarray(rates["jaxsim"]) / np.asarray(rates["mjx"])
                    row["rounds"] = {k: [float(x) for x in v] for k, v in rates.items()}
                    row["jaxsim_over_mjx_rounds"] = float(np.median(ratios))
                    print(f"  {name:9s} batch {batch:5d} {a.rounds} alternating rounds: jaxsim/MJX median "
                          f"{row['jaxsim_over_mjx_rounds']:.3f} (per round {ratios.min():.3f}-{ratios.max():.3f}; "
                          f"median steps/s jaxsim {np.median(rates['jaxsim']):.4g}, MJX "
                          f"{np.median(rates['mjx']):.4g})", flush=True)
            except Exception as e:  # noqa: BLE001
                row["mjx"] = {"error": f"{type(e).__name__}: {e}"}
                print(f"  !!! MJX failed on {name} batch {batch}: {row['mjx']['error']}", flush=True)
        if batch == 1 and not a.no_mujoco_c:
            c = bench_mujoco_c(mm, np.asarray(q[0], np.float64), a.steps, a.min_time)
            row["mujoco_c"] = c
            print(f"  {name:9s} batch     1 MuJoCo C: {c['steps_per_s']:9.4g} steps/s "
                  f"({c['sec_per_call'] * 1e3:8.3f} ms/call)", flush=True)
        rows.append(row)

    if a.iter_steps == 0:  # --iter-steps 0: timing only
        return
    s = iteration_stats(model, mx, dx, mm, mm_js, a.iter_batch, a.iter_steps, a.mjx_cholesky)
    iters[name] = s
    j, m = s["jaxsim"], s.get("mjx") or {}
    print(f"  {name:9s} {a.iter_steps} steps x {a.iter_batch} envs: jaxsim QP iterations "
          f"{_niter_str(j['iterations'])} (mean/max); MJX solver_niter "
          + (m["error"] if "error" in m else _niter_str(m.get("solver_niter")))
          + f"; MuJoCo C solver_niter {_niter_str(s['mujoco_c']['solver_niter'])}"
          f"; jaxsim active at end {j['active_at_end']['mean']:.1f}, overflow "
          f"{j['overflow_total']['mean']:.1f}, non-finite envs {j['nonfinite_envs']}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenes", nargs="+", default=list(SCENES) + ["cube@fresh"], type=scene_name,
                   metavar="SCENE", help=f"{', '.join(SCENES)} or a variant ({', '.join(VARIANTS)}), "
                                         "each optionally + '@fresh' (module docstring)")
    p.add_argument("--steps", type=int, default=10, help="steps per timed call (lax.scan length)")
    p.add_argument("--max-contacts", type=int, default=16,
                   help="jaxsim max_contacts for ant and humanoid (0: all slots)")
    p.add_argument("--boxes8-max-contacts", type=int, default=48,
                   help="jaxsim max_contacts for boxes8 (256 slots; 0: all)")
    p.add_argument("--solver-iterations", type=int, default=0,
                   help="jaxsim's opt.solver_iterations (0: the model's): a cap of 1 times the "
                        "step with its contact solve cut to one iteration, its share of the step")
    p.add_argument("--iter-steps", type=int, default=200, help="steps of the iteration-stats run (0: none)")
    p.add_argument("--iter-batch", type=int, default=8, help="envs of the iteration-stats run")
    p.add_argument("--no-mujoco-c", action="store_true", help="skip the MuJoCo C column")
    p.add_argument("--mjx-cholesky", choices=("auto", "lapack", "plain"), default="auto",
                   help="MJX's Cholesky: auto = stock LAPACK at batch 1, jaxsim.linalg's "
                        "plain JAX at batch > 1 (module docstring)")
    p.add_argument("--chunk", default="auto",
                   help="envs jaxsim steps at a time (jaxsim.parallel.chunked_vmap): auto = "
                        "parallel.default_chunk(model), 0 = one vmap over the batch")
    p.add_argument("--also-unchunked", action="store_true",
                   help="where jaxsim chunks the batch, also time it as one vmap")
    p.add_argument("--rounds", type=int, default=0,
                   help="also time jaxsim and MJX in this many alternating rounds and report the "
                        "median per-round ratio (module docstring)")
    p.add_argument("--settle", type=float, default=1.0,
                   help="simulated seconds MuJoCo C runs each scene before its pose becomes the "
                        "initial state of every env (so the timed steps are in contact)")
    a = parse_common(p, DEFAULT_OUT)

    info = machine_info()
    print(f"jax {info['jax']} on {info['jax_devices']}, mujoco {info['mujoco']}, "
          f"mjx {info['mujoco_mjx']}, {info['cpu_count']} CPUs, "
          f"load {info['loadavg_at_start'][0]:.2f}; {a.steps} steps per call", flush=True)
    t_start = time.perf_counter()
    rows, iters, notes, failed = [], {}, {}, {}

    def write() -> None:  # after every scene too: a run cut short keeps what it measured
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as fh:
            json.dump({"machine": info, "args": vars(a), "wall_s": time.perf_counter() - t_start,
                       "scenes": {k: SCENES[k.partition("@")[0].partition(":")[0]] for k in a.scenes},
                       "scene_notes": notes, "failed": failed, "results": rows, "iterations": iters},
                      fh, indent=2)

    for name in a.scenes:
        try:
            run_scene(name, a, rows, iters, notes)
        except Exception as e:  # noqa: BLE001 -- report and go on with the other scenes
            failed[name] = f"{type(e).__name__}: {e}"
            print(f"  !!!!! jaxsim run of {name} failed: {failed[name]}")
            traceback.print_exc()
        write()
    wall = time.perf_counter() - t_start

    print()
    print_table(rows)
    print(f"\n(steps/s = batch * {a.steps} steps * calls / s; ratio > 1: jaxsim faster; "
          f"C = MuJoCo mj_step, batch 1; rounds: median jaxsim/MJX of --rounds {a.rounds} alternating "
          f"rounds; active/env: jaxsim active contact slots per env "
          f"after one call; MJX Cholesky: --mjx-cholesky {a.mjx_cholesky}"
          + (" = stock LAPACK at batch 1, jaxsim.linalg plain JAX at batch > 1"
             if a.mjx_cholesky == "auto" and jax.default_backend() == "cpu" else "")
          + ")\n")
    print_iterations(iters)
    print(f"\n(iteration run: {a.iter_steps} steps x {a.iter_batch} envs; jaxsim: contact QP "
          f"iterations per step; MJX: solver_niter per step; overflow: active contacts "
          f"left out by max_contacts, summed over steps; total {wall:.0f} s)")
    for name, n in notes.items():
        if n.get("mjx_reason"):
            print(f"  {name}: MJX not timed: {n['mjx_reason']}")
    for r in rows:
        if "error" in (r.get("mjx") or {}):
            print(f"  {r['scene']} batch {r['batch']}: MJX failed: {r['mjx']['error']}")
    for name, why in failed.items():
        print(f"  {name}: jaxsim FAILED: {why}")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
