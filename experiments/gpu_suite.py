"""Every GPU benchmark in one command, beside MJX: one JSON and one markdown table.

    python experiments/gpu_suite.py                  # on a GPU machine (about an hour)
    python experiments/gpu_suite.py --smoke          # tiny sizes, any machine (pytest -m benchmark)

Runs, each in its own process (a failure is recorded and the suite goes on):

- ``bench_step.py``: steps/s of jaxsim and MJX on the cube, 8 boxes, ant and humanoid, and
  on the cube from fresh states, at batches 1,024 to 65,536;
- ``bench_grad.py``: the forward and gradient times of 100-step rollouts of the cube and
  the humanoid at batches 1 and 1,024, jaxsim beside MJX on the cube (MJX's humanoid
  gradient compiles for minutes);
- ``bench_scale.py``: how the cost grows with the batch, the bodies and the contacts;
- ``train.py cartpole --agent ppo``: a short PPO run on jaxsim and on MJX, same settings.

Writes ``gpu_suite.json`` (each stage's command, exit status, time and results) and
``gpu_suite.md`` (the tables) into ``--out`` (default ``results/gpu_suite``), with each
stage's own JSON and log beside them. A stage stopped at ``--stage-timeout`` keeps the
scenes its JSON already holds (marked partial).

``--compile-first N``: most of the suite's time is XLA compiling (MJX's humanoid step
takes about a minute per batch size on a GPU), one program after another. With this
flag the benchmark stages first run once as N concurrent processes, one per scene and
batch, at minimal timing, filling JAX's persistent compilation cache (``--cache-dir``);
their timings are discarded. The timed stages then run one after another as usual and
load their programs from the cache, so the compile times they report are cache loads.
Only the timed runs share the accelerator with nothing else.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PPO_SETTINGS = ["num_timesteps=2000000", "num_envs=2048", "batch_size=1024", "num_evals=5", "episode_length=500"]
PPO_SMOKE = ["num_timesteps=1000", "num_envs=8", "batch_size=8", "num_minibatches=2", "unroll_length=5",
             "num_updates_per_batch=1", "num_evals=2", "num_eval_envs=4", "episode_length=20"]


STEP_SCENES = ["cube", "boxes8", "ant", "humanoid", "cube@fresh"]
STEP_BATCHES = ["1024", "8192", "65536"]
GRAD_SCENES = ["humanoid", "cube"]
GRAD_BATCHES = ["1", "1024"]


def step_args(scenes: list[str], batches: list[str], smoke: bool) -> list[str]:
    if smoke:
        return ["--scenes", *scenes, "--batches", *batches, "--steps", "2", "--min-time", "0.01",
                "--iter-steps", "0", "--settle", "0", "--no-mujoco-c"]
    return ["--scenes", *scenes, "--batches", *batches, "--min-time", "0.2", "--iter-steps", "0", "--no-mujoco-c"]


def grad_args(scenes: list[str], batches: list[str], smoke: bool) -> list[str]:
    # MJX's humanoid gradient compiles for minutes (three on a CPU): MJX is timed on the cube
    mjx = ["--mjx-scenes", "cube"]
    if smoke:
        return ["--scenes", *scenes, "--batches", *batches, "--steps", "3", "--min-time", "0.01", "--settle", "0",
                *mjx]
    return ["--scenes", *scenes, "--batches", *batches, "--min-time", "0.2", *mjx]


def sizes(smoke: bool) -> dict[str, tuple[list[str], list[str]]]:
    """Stage -> (scenes, batches) of the two benchmarks that ``--compile-first`` splits."""
    if smoke:
        return {"bench_step": (["cube"], ["2"]), "bench_grad": (["cube"], ["1"])}
    return {"bench_step": (STEP_SCENES, STEP_BATCHES), "bench_grad": (GRAD_SCENES, GRAD_BATCHES)}


def bench_cmd(stage: str, scenes: list[str], batches: list[str], smoke: bool, out_json: str) -> list[str]:
    args = (step_args if stage == "bench_step" else grad_args)(scenes, batches, smoke)
    return [sys.executable, os.path.join(HERE, f"{stage}.py"), *args, "--out", out_json]


def stages(out: str, smoke: bool) -> dict[str, list[str]]:
    """Stage name -> command line (its JSON written into ``out``)."""
    py = [sys.executable]
    # the processes study pins CPU devices: it belongs to the CPU runs
    scale = ["--quick", "--studies", "batch"] if smoke else [
        "--studies", "batch", "bodies", "contacts", "--batches", "1", "16", "256", "4096", "65536"]
    ppo = PPO_SMOKE if smoke else PPO_SETTINGS
    train = [os.path.join(HERE, "train.py"), "cartpole", "--agent", "ppo", "--eval-episodes", "0", "--out", out,
             "--set", *ppo]
    cmds = {name: bench_cmd(name, *size, smoke, os.path.join(out, RESULT_FILES[name]))
            for name, size in sizes(smoke).items()}
    return {
        **cmds,
        "bench_scale": py + [os.path.join(HERE, "bench_scale.py"), *scale,
                             "--out", os.path.join(out, "bench_scale.json")],
        "ppo_jaxsim": py + train,
        "ppo_mjx": py + train + ["--backend", "mjx"],
    }


def warm_cache(out: str, smoke: bool, only, jobs: int, timeout_s: float, env: dict) -> dict:
    """Run every (benchmark, scene, batch) once, ``jobs`` processes at a time, so that
    their programs land in the persistent compilation cache; the record of each job."""
    warm = os.path.join(out, "warm")
    os.makedirs(warm, exist_ok=True)
    todo = [(stage, scene, batch) for stage, (scenes, batches) in sizes(smoke).items()
            if not only or stage in only for scene in scenes for batch in batches]
    heavy = ["humanoid", "ant", "boxes8"]  # the longest compiles start first
    todo.sort(key=lambda job: (job[0] != "bench_grad", heavy.index(job[1]) if job[1] in heavy else len(heavy)))
    env = {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}  # the jobs share the accelerator's memory
    running, records, deadline = [], {}, time.perf_counter() + timeout_s
    print(f"== compile first: {len(todo)} jobs, {jobs} at a time, at most {timeout_s:.0f} s", flush=True)
    while todo or running:
        if time.perf_counter() >= deadline:
            todo = []  # the timed stages compile whatever is left
        while todo and len(running) < jobs:
            stage, scene, batch = todo.pop(0)
            tag = f"{stage}_{scene.replace('@', '-').replace(':', '-')}_{batch}"
            cmd = bench_cmd(stage, [scene], [batch], smoke, os.path.join(warm, tag + ".json"))
            log = open(os.path.join(warm, tag + "_log.txt"), "w")
            running.append((tag, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=HERE, env=env),
                            log, time.perf_counter()))
        time.sleep(0.5)
        for item in list(running):
            tag, proc, log, t0 = item
            if proc.poll() is None and time.perf_counter() < deadline:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            running.remove(item)
            records[tag] = {"rc": proc.returncode, "wall_s": time.perf_counter() - t0}
            print(f"   {tag}: rc {proc.returncode}, {records[tag]['wall_s']:.0f} s", flush=True)
    return records


RESULT_FILES = {"bench_step": "bench_step.json", "bench_grad": "bench_grad.json", "bench_scale": "bench_scale.json",
                "ppo_jaxsim": "train_cartpole_ppo.json", "ppo_mjx": "train_cartpole_ppo_mjx.json"}


def run_stage(name: str, cmd: list[str], out: str, timeout_s: float, env: dict) -> dict:
    """Run one stage, its output teed into ``out/<name>_log.txt``; its record. A stage
    stopped at ``timeout_s`` keeps what its JSON holds by then (``partial``)."""
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    path = os.path.join(out, RESULT_FILES[name])
    if os.path.exists(path):
        os.remove(path)  # a result of an earlier run is not this run's
    t0 = time.perf_counter()
    with open(os.path.join(out, f"{name}_log.txt"), "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE, env=env)
        watchdog = threading.Timer(timeout_s, proc.kill)
        watchdog.start()
        for line in proc.stdout:
            log.write(line)
            print(f"   {line}", end="", flush=True)
        rc = proc.wait()
        timed_out = not watchdog.is_alive()
        watchdog.cancel()
    record = {"cmd": cmd[1:], "rc": "timeout" if timed_out else rc, "wall_s": time.perf_counter() - t0}
    if os.path.exists(path):
        with open(path) as f:
            record["result"] = json.load(f)
        record["partial"] = record["rc"] != 0
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
    """The suite's tables, one section per stage run, failures named."""
    parts = [f"# jaxsim GPU suite\n\n{machine}\n"]
    tables = {"bench_step": ("Steps per second", step_table), "bench_grad": ("Rollout gradients", grad_table),
              "bench_scale": ("Scaling exponents", scale_table)}
    for name, (title, table) in tables.items():
        if name not in records:
            continue
        rec = records[name]
        body = table(rec["result"]) if "result" in rec else [f"failed: {rec.get('rc')}"]
        if rec.get("partial"):
            body.append(f"\n(partial: the stage ended with {rec['rc']} after these rows)")
        parts.append(f"## {title} ({name}, {rec.get('wall_s', 0):.0f} s)\n\n" + "\n".join(body) + "\n")
    ppo_failed = [n for n in ("ppo_jaxsim", "ppo_mjx") if n in records and "result" not in records[n]]
    if "ppo_jaxsim" in records or "ppo_mjx" in records:
        parts.append("## PPO on the cart-pole, same settings\n\n" + "\n".join(ppo_table(records)) + "\n"
                     + "".join(f"\n{n} failed: {records[n]['rc']}\n" for n in ppo_failed))
    return "\n".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every stage runs")
    p.add_argument("--only", nargs="+", choices=list(RESULT_FILES), default=None, help="run these stages only")
    p.add_argument("--out", default=os.path.join(HERE, "results", "gpu_suite"))
    p.add_argument("--stage-timeout", type=float, default=3 * 3600, help="seconds per stage at most")
    p.add_argument("--compile-first", type=int, default=0, metavar="N",
                   help="fill the compilation cache first with N concurrent processes (0: no)")
    p.add_argument("--compile-timeout", type=float, default=1800, help="seconds for --compile-first at most")
    p.add_argument("--total-timeout", type=float, default=math.inf,
                   help="seconds for the whole suite: a stage gets at most what is left")
    p.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "jaxsim_gpu_suite_cache"))
    a = p.parse_args(argv)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    import jax  # only to describe the machine; the stages start their own JAX

    machine = f"{jax.devices()[0].device_kind} x {jax.device_count()}, jax {jax.__version__}, {os.cpu_count()} CPUs"
    print(f"gpu_suite on {machine}{' (smoke)' if a.smoke else ''}", flush=True)
    env = dict(os.environ)
    records, t0, warm = {}, time.perf_counter(), None
    if a.compile_first:
        shutil.rmtree(a.cache_dir, ignore_errors=True)  # the cache holds this code's programs only
        env.update(JAX_COMPILATION_CACHE_DIR=a.cache_dir, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
        warm = warm_cache(out, a.smoke, a.only, a.compile_first, min(a.compile_timeout, a.total_timeout), env)
    for name, cmd in stages(out, a.smoke).items():
        if a.only and name not in a.only:
            continue
        left = a.total_timeout - (time.perf_counter() - t0)
        records[name] = run_stage(name, cmd, out, max(1.0, min(a.stage_timeout, left)), env)
        with open(os.path.join(out, "gpu_suite.json"), "w") as f:  # after each stage: partial runs are kept
            json.dump({"machine": machine, "smoke": a.smoke, "wall_s": time.perf_counter() - t0,
                       "compile_first": warm, "stages": records}, f, indent=1)
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
