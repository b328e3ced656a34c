"""Every GPU benchmark in one command, beside MJX: one JSON and one markdown table.

    python experiments/gpu_suite.py                  # on a GPU machine (about an hour)
    python experiments/gpu_suite.py --smoke          # tiny sizes, any machine (pytest -m benchmark)

Runs, each in its own process (a failure is recorded and the suite goes on):

- ``bench_step.py``: steps/s of jaxsim and MJX on the cube, 8 boxes, ant and humanoid at
  batches 1,024 to 65,536;
- ``bench_grad.py``: the forward and gradient times of 100-step rollouts, jaxsim and MJX;
- ``bench_scale.py``: how the cost grows with the batch, the bodies and the contacts;
- ``train.py cartpole --agent ppo``: a short PPO run on jaxsim and on MJX, same settings.

Writes ``gpu_suite.json`` (each stage's command, exit status, time and results) and
``gpu_suite.md`` (the tables) into ``--out`` (default ``results/gpu_suite``), with each
stage's own JSON and log beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PPO_SETTINGS = ["num_timesteps=2000000", "num_envs=2048", "batch_size=1024", "num_evals=5", "episode_length=500"]
PPO_SMOKE = ["num_timesteps=1000", "num_envs=8", "batch_size=8", "num_minibatches=2", "unroll_length=5",
             "num_updates_per_batch=1", "num_evals=2", "num_eval_envs=4", "episode_length=20"]


def stages(out: str, smoke: bool) -> dict[str, list[str]]:
    """Stage name -> command line (its JSON written into ``out``)."""
    py = [sys.executable]
    step = ["--scenes", "cube", "--batches", "2", "--steps", "2", "--min-time", "0.01", "--iter-steps", "0",
            "--settle", "0", "--no-mujoco-c"] if smoke else [
            "--scenes", "cube", "boxes8", "ant", "humanoid", "--batches", "1024", "8192", "65536",
            "--no-mujoco-c"]
    grad = ["--scenes", "cube", "--batches", "1", "--steps", "3", "--min-time", "0.01", "--settle", "0"] if smoke \
        else ["--batches", "1", "64", "1024"]
    # the processes study pins CPU devices: it belongs to the CPU runs
    scale = ["--quick", "--studies", "batch"] if smoke else [
        "--studies", "batch", "bodies", "contacts", "--batches", "1", "16", "256", "4096", "65536"]
    ppo = PPO_SMOKE if smoke else PPO_SETTINGS
    train = [os.path.join(HERE, "train.py"), "cartpole", "--agent", "ppo", "--eval-episodes", "0", "--out", out,
             "--set", *ppo]
    return {
        "bench_step": py + [os.path.join(HERE, "bench_step.py"), *step, "--out", os.path.join(out, "bench_step.json")],
        "bench_grad": py + [os.path.join(HERE, "bench_grad.py"), *grad, "--out", os.path.join(out, "bench_grad.json")],
        "bench_scale": py + [os.path.join(HERE, "bench_scale.py"), *scale,
                             "--out", os.path.join(out, "bench_scale.json")],
        "ppo_jaxsim": py + train,
        "ppo_mjx": py + train + ["--backend", "mjx"],
    }


RESULT_FILES = {"bench_step": "bench_step.json", "bench_grad": "bench_grad.json", "bench_scale": "bench_scale.json",
                "ppo_jaxsim": "train_cartpole_ppo.json", "ppo_mjx": "train_cartpole_ppo_mjx.json"}


def run_stage(name: str, cmd: list[str], out: str, timeout_s: float) -> dict:
    """Run one stage, its output teed into ``out/<name>_log.txt``; its record."""
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    with open(os.path.join(out, f"{name}_log.txt"), "w") as log:
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE)
            for line in proc.stdout:
                log.write(line)
                print(f"   {line}", end="", flush=True)
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "timeout"
    record = {"cmd": cmd[1:], "rc": rc, "wall_s": time.perf_counter() - t0}
    path = os.path.join(out, RESULT_FILES[name])
    if rc == 0 and os.path.exists(path):
        with open(path) as f:
            record["result"] = json.load(f)
    elif rc == 0:
        record["rc"] = f"no {RESULT_FILES[name]} written"
    return record


def _num(x, spec: str = ".4g") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def step_table(result: dict) -> list[str]:
    lines = ["| scene | batch | jaxsim steps/s | MJX steps/s | jaxsim / MJX |", "|---|---|---|---|---|"]
    for r in result.get("results", []):
        mjx = r.get("mjx") or {}
        lines.append(f"| {r['scene']} | {r['batch']} | {_num(r['jaxsim']['steps_per_s'])} | "
                     f"{_num(mjx.get('steps_per_s'))} | {_num(r.get('jaxsim_over_mjx'), '.2f')} |")
    return lines


def grad_table(result: dict) -> list[str]:
    lines = ["| scene | batch | jaxsim forward ms | jaxsim grad ms | MJX grad ms | jaxsim / MJX (grad) |",
             "|---|---|---|---|---|---|"]
    for r in result.get("rows", []):
        j, m = r["jaxsim"], r.get("mjx") or {}
        mjx_grad = m["grad"]["sec_per_call"] * 1e3 if "grad" in m else None
        lines.append(f"| {r['scene']} | {r['batch']} | {_num(j['forward']['sec_per_call'] * 1e3)} | "
                     f"{_num(j['grad']['sec_per_call'] * 1e3)} | {_num(mjx_grad)} | "
                     f"{_num(r.get('jaxsim_grad_over_mjx_grad'), '.2f')} |")
    return lines


def scale_table(result: dict) -> list[str]:
    lines = ["| study | scene | simulator | sizes | exponent (fit range) |", "|---|---|---|---|---|"]
    for row in result.get("summary", []):
        fit = row.get("fit") or {}
        fitted = f"{fit['exponent']:.2f} ({fit['from']:g}-{fit['to']:g})" if fit else "-"
        lines.append(f"| {row['study']} | {row['scene']} | {row['sim']} | "
                     f"{', '.join(str(x) for x in row['sizes'])} | {fitted} |")
    return lines


def ppo_table(records: dict) -> list[str]:
    lines = ["| backend | env-steps/s while training | best reward | wall s |", "|---|---|---|---|"]
    for name in ("ppo_jaxsim", "ppo_mjx"):
        r = records.get(name, {}).get("result")
        if r:
            lines.append(f"| {r['backend']} | {_num(r['env_steps_per_s'], ',.0f')} | "
                         f"{_num(max(r['curve']['reward']), '.1f')} | {_num(r['wall_s'], '.0f')} |")
    return lines


def markdown(records: dict, machine: str) -> str:
    """The suite's tables, one section per stage, failures named."""
    parts = [f"# jaxsim GPU suite\n\n{machine}\n"]
    tables = {"bench_step": ("Steps per second", step_table), "bench_grad": ("Rollout gradients", grad_table),
              "bench_scale": ("Scaling exponents", scale_table)}
    for name, (title, table) in tables.items():
        rec = records.get(name, {})
        body = table(rec["result"]) if "result" in rec else [f"failed: {rec.get('rc')}"]
        parts.append(f"## {title} ({name}, {rec.get('wall_s', 0):.0f} s)\n\n" + "\n".join(body) + "\n")
    ppo_failed = [n for n in ("ppo_jaxsim", "ppo_mjx") if "result" not in records.get(n, {})]
    parts.append("## PPO on the cart-pole, same settings\n\n" + "\n".join(ppo_table(records)) + "\n"
                 + "".join(f"\n{n} failed: {records.get(n, {}).get('rc')}\n" for n in ppo_failed))
    return "\n".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every stage runs")
    p.add_argument("--only", nargs="+", choices=list(RESULT_FILES), default=None, help="run these stages only")
    p.add_argument("--out", default=os.path.join(HERE, "results", "gpu_suite"))
    p.add_argument("--stage-timeout", type=float, default=3 * 3600, help="seconds per stage at most")
    a = p.parse_args(argv)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    import jax  # only to describe the machine; the stages start their own JAX

    machine = f"{jax.devices()[0].device_kind} x {jax.device_count()}, jax {jax.__version__}, {os.cpu_count()} CPUs"
    print(f"gpu_suite on {machine}{' (smoke)' if a.smoke else ''}", flush=True)
    records, t0 = {}, time.perf_counter()
    for name, cmd in stages(out, a.smoke).items():
        if a.only and name not in a.only:
            continue
        records[name] = run_stage(name, cmd, out, a.stage_timeout)
        with open(os.path.join(out, "gpu_suite.json"), "w") as f:  # after each stage: partial runs are kept
            json.dump({"machine": machine, "smoke": a.smoke, "wall_s": time.perf_counter() - t0,
                       "stages": records}, f, indent=1)
    table = markdown(records, machine)
    with open(os.path.join(out, "gpu_suite.md"), "w") as f:
        f.write(table)
    print(table)
    failed = [n for n, r in records.items() if r["rc"] != 0]
    print(f"gpu_suite: {len(records) - len(failed)} of {len(records)} stages ran"
          + (f"; failed: {', '.join(failed)}" if failed else "") + f"; wrote {out}/gpu_suite.json and .md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
