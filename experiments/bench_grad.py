"""Gradient cost: ``value_and_grad`` of a rollout against the rollout itself, jaxsim
beside MJX in the same run, plus the compile time of one jitted ``step``.

For each scene (bench_step.py's MJCF scenes, optionally ``SCENE:contact`` for another
contact model on the jaxsim side) and batch size, a loss of one env is

    loss(v0, ctrls) = final.q[2] + 0.5 |final.v|^2   after --steps steps

from the scene's resting pose (bench_step.py: the pose each simulator reaches after
--settle s) with initial velocity ``v0`` (nv,) and controls ``ctrls`` (steps, nu).
Timed, each ``jit(vmap(.))`` over the batch (a batch of one unbatched), float32
(bench_step's timing: compile excluded, best of 3 loops of >= --min-time s):

  forward   the loss
  grad      ``value_and_grad`` of the loss with respect to (v0, ctrls)

and ``grad / forward`` is the cost of the gradient in rollouts. jaxsim differentiates
its contact QP implicitly (``adjoint="implicit"``); MJX's reverse mode needs
``opt.iterations = 1`` (its ``while_loop`` solver is not reverse-differentiable, so
with one iteration it runs the Newton body once, as MJX's documentation advises for
gradients); both of its rows use that model, so its forward row is cheaper than
bench_step's. Also per scene: the compile time of ``jax.jit(step)`` for one env
(jaxsim; MJX with the file's iterations), lowering included.

Run from the repository root: ``python experiments/bench_grad.py`` (writes
``experiments/results/bench_grad.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxsim
from jaxsim import parallel
from jaxsim.io import load_mjcf
from bench_collision import load_mjx
from bench_step import LIMITED, SCENES, scene_xml, settle, settle_jaxsim
from benchutil import bench, machine_info

DEFAULT_SCENES = ["cube", "humanoid"]


def _loss(final_q, final_v):
    return final_q[2] + 0.5 * jnp.sum(final_v * final_v)


def jaxsim_loss(model, q0, steps: int):
    """(v0 (nv,), ctrls (steps, nu)) -> scalar loss after ``steps`` jaxsim steps."""
    def loss(v0, ctrls):
        final, _ = jaxsim.rollout(model, jaxsim.make_state(model, q=q0, v=v0), ctrls)
        return _loss(final.q, final.v)
    return loss


def mjx_loss(mx, dx, q0, steps: int):
    """The same loss on MJX (``mx`` with ``opt.iterations = 1``)."""
    def loss(v0, ctrls):
        def body(d, u):
            return mjx.step(mx, d.replace(ctrl=u)), None
        d, _ = jax.lax.scan(body, dx.replace(qpos=q0, qvel=v0), ctrls)
        return _loss(d.qpos, d.qvel)
    return loss


def batched(loss, grad: bool):
    """``vmap`` of the loss (or its ``value_and_grad``) over the batch; a batch of one
    unbatched, for both simulators (``jaxsim.parallel.chunked_vmap``)."""
    f = jax.value_and_grad(loss, argnums=(0, 1)) if grad else loss
    return parallel.chunked_vmap(f, 0)


def step_compile_s(f, *args) -> float:
    jax.clear_caches()
    t0 = time.perf_counter()
    jax.jit(f).lower(*args).compile()
    return time.perf_counter() - t0


def time_pair(loss, args, min_time: float) -> dict:
    """Forward and value_and_grad timings; ``grad_finite``: every gradient entry of the
    timed call is finite."""
    fwd = bench(batched(loss, False), args, min_time)
    grd = bench(batched(loss, True), args, min_time, keep_output=True)
    _, grads = grd.pop("output")
    return {"forward": fwd, "grad": grd, "grad_over_forward": grd["sec_per_call"] / fwd["sec_per_call"],
            "grad_finite": bool(all(jnp.all(jnp.isfinite(g)) for g in grads))}


def run_scene(name: str, a, rows: list) -> None:
    base, _, contact = name.partition(":")
    xml = scene_xml(base)
    opts = {"max_contacts": a.max_contacts} if base in LIMITED else {}
    if base == "boxes8":
        opts = {"max_contacts": a.boxes8_max_contacts}
    if contact:
        opts["contact"] = contact
    model = load_mjcf(xml, dtype=jnp.float32, **opts)
    mm_js = settle_jaxsim(model, xml, a.settle)
    mm, mx_full, dx = load_mjx(xml)
    settle(mm, a.settle)
    print(f"{name}: nv={model.nv} nu={model.nu} dt={float(model.opt.timestep):g} "
          f"{model.opt.integrator}, {a.steps} steps; jaxsim {jaxsim.make_state(model).contact.active.shape[0]} "
          f"contact slots, max_contacts {int(model.opt.max_contacts)}", flush=True)

    s0 = jaxsim.make_state(model, q=jnp.asarray(mm_js.qpos0, jnp.float32))
    js_compile = step_compile_s(jaxsim.step, model, s0)
    with_mjx = a.mjx_scenes is None or name in a.mjx_scenes
    mjx_compile = float("nan")
    if with_mjx:
        d0 = dx.replace(qpos=jnp.asarray(mm.qpos0, jnp.float32))
        mjx_compile = step_compile_s(mjx.step, mx_full, d0)
    print(f"  compile of jit(step), one env: jaxsim {js_compile:.2f} s, MJX {mjx_compile:.2f} s", flush=True)

    mm.opt.iterations = 1  # MJX's reverse mode: the solver's while_loop becomes one body call
    mx1 = mjx.put_model(mm)
    for batch in a.batches:
        rng = np.random.default_rng(batch)
        v0 = jnp.asarray(0.05 * rng.standard_normal((batch, model.nv)), jnp.float32)
        ctrls = jnp.asarray(0.1 * rng.standard_normal((batch, a.steps, model.nu)), jnp.float32)
        row = {"scene": name, "batch": batch, "steps": a.steps, "jaxsim_step_compile_s": js_compile,
               "mjx_step_compile_s": mjx_compile}
        q_js = jnp.asarray(mm_js.qpos0, jnp.float32)
        row["jaxsim"] = time_pair(jaxsim_loss(model, q_js, a.steps), (v0, ctrls), a.min_time)
        if not with_mjx:
            row["mjx"] = {"error": "not run (--mjx-scenes)"}
        else:
            try:
                q_mj = jnp.asarray(mm.qpos0, jnp.float32)
                row["mjx"] = time_pair(mjx_loss(mx1, dx, q_mj, a.steps), (v0, ctrls), a.min_time)
            except Exception as e:  # noqa: BLE001
                row["mjx"] = {"error": f"{type(e).__name__}: {e}"}
        j, m = row["jaxsim"], row["mjx"]
        line = (f"  {name:14s} batch {batch:5d} jaxsim forward {j['forward']['sec_per_call'] * 1e3:9.2f} ms, "
                f"grad {j['grad']['sec_per_call'] * 1e3:9.2f} ms, x{j['grad_over_forward']:.2f} "
                f"(compile {j['forward']['compile_s']:.1f} / {j['grad']['compile_s']:.1f} s)")
        if "error" in m:
            line += f"; MJX failed: {m['error'][:200]}"
        else:
            row["jaxsim_grad_over_mjx_grad"] = j["grad"]["sec_per_call"] / m["grad"]["sec_per_call"]
            line += (f" | MJX (iterations 1) forward {m['forward']['sec_per_call'] * 1e3:9.2f} ms, grad "
                     f"{m['grad']['sec_per_call'] * 1e3:9.2f} ms, x{m['grad_over_forward']:.2f} "
                     f"(compile {m['forward']['compile_s']:.1f} / {m['grad']['compile_s']:.1f} s)")
        print(line, flush=True)
        rows.append(row)


def summary(rows: list) -> None:
    print("\nscene           batch  jaxsim fwd ms  jaxsim grad ms  grad/fwd  MJX(it=1) fwd ms  MJX grad ms  "
          "grad/fwd  jaxsim/MJX grad  step compile s (jx/mjx)")
    print("-" * 150)
    for r in rows:
        j, m = r["jaxsim"], r["mjx"]
        ms = (lambda x: f"{x['sec_per_call'] * 1e3:.2f}")  # noqa: E731
        mj = ("-", "-", "-", "-") if "error" in m else (
            ms(m["forward"]), ms(m["grad"]), f"{m['grad_over_forward']:.2f}", f"{r['jaxsim_grad_over_mjx_grad']:.2f}")
        print(f"{r['scene']:15s} {r['batch']:5d} {ms(j['forward']):>14s} {ms(j['grad']):>15s} "
              f"{j['grad_over_forward']:9.2f} {mj[0]:>17s} {mj[1]:>12s} {mj[2]:>9s} {mj[3]:>16s} "
              f"{r['jaxsim_step_compile_s']:11.2f}/{r['mjx_step_compile_s']:.2f}")
    print("(float32; ms per call of the whole batch; grad = value_and_grad w.r.t. (v0, ctrls); "
          "MJX with opt.iterations = 1, its reverse-mode setting)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenes", nargs="+", default=DEFAULT_SCENES,
                   help=f"{', '.join(SCENES)}, or SCENE:CONTACT (jaxsim's contact model)")
    p.add_argument("--steps", type=int, default=100, help="rollout length")
    p.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--settle", type=float, default=1.0)
    p.add_argument("--max-contacts", type=int, default=16)
    p.add_argument("--boxes8-max-contacts", type=int, default=48)
    p.add_argument("--mjx-scenes", nargs="*", default=None,
                   help="time MJX on these scenes only (default: all; its humanoid gradient compiles for minutes)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_grad.json"))
    a = p.parse_args()
    for s in a.scenes:
        if s.partition(":")[0] not in SCENES:
            p.error(f"unknown scene {s!r}; choose from {', '.join(SCENES)} (optionally SCENE:CONTACT)")
    rows, t0, machine = [], time.perf_counter(), machine_info()
    for name in a.scenes:
        run_scene(name, a, rows)
        with open(a.out, "w") as f:  # after every scene: a long run keeps what it measured
            json.dump({"machine": machine, "args": vars(a), "rows": rows}, f, indent=1)
    summary(rows)
    print(f"total {time.perf_counter() - t0:.0f} s; wrote {a.out}")


if __name__ == "__main__":
    mujoco.set_mju_user_warning(lambda msg: None) if hasattr(mujoco, "set_mju_user_warning") else None
    main()
