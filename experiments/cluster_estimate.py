"""What a 1,000-GPU run would need: memory per environment and bytes exchanged per step.

    python experiments/cluster_estimate.py [--gpus 1000] [--gpu-memory-gb 80]

Computed, not guessed, from what this machine can measure without a GPU:

- **memory per env**: the bytes of one environment's ``State``, and the bytes per env of
  a compiled 10-step call on the whole batch at once (a GPU's way: no chunks), from
  XLA's compile-time memory analysis at two batch sizes (the slope; compiling runs
  nothing). The envs one GPU holds is its memory (less a fifth for the runtime and the
  learner) over that slope.
- **bytes exchanged per step**: none for independent rollouts (each GPU steps its own
  envs). PPO (Brax's, with the tuned hyper-parameters) averages its gradients over every
  GPU at each minibatch update, one all-reduce of the policy and value networks'
  parameters, plus the observation normalizer's statistics once per epoch. A ring
  all-reduce sends and receives ``2 (N - 1) / N`` times the buffer per GPU. Divided by
  the env-steps a GPU takes per epoch, that is the traffic per env-step.

Writes ``results/cluster_estimate.json`` and prints the table the docs show.
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
import jaxsim.envs
from jaxsim.envs import training
from jaxsim.io import load_mjcf
from bench_step import jaxsim_init, jaxsim_steps, scene_xml

HERE = os.path.dirname(os.path.abspath(__file__))
SCENES = {"cube": {}, "ant": {"max_contacts": 16}, "humanoid": {"max_contacts": 16}}
TASKS = ("ant", "humanoid", "quadruped_walk")
RUNTIME_SHARE = 0.2  # of a GPU's memory kept for XLA's runtime, the learner and the networks


def state_bytes(model) -> int:
    """Bytes of one environment's State."""
    return int(sum(x.nbytes for x in jax.tree.leaves(jaxsim.make_state(model))))


def call_bytes_per_env(model, batches=(64, 256), steps: int = 10) -> float:
    """Slope of a compiled ``steps``-step call's memory (arguments, outputs and
    temporaries) against the batch, the batch stepped as one vmap."""
    totals = []
    for batch in batches:
        states = jaxsim_init(model, jnp.broadcast_to(model.qpos0, (batch, model.nq)))
        ma = jax.jit(jaxsim_steps(model, steps)).lower(states).compile().memory_analysis()
        totals.append(ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes)
    return float(np.polyfit(batches, totals, 1)[0])


def ppo_traffic(task: str, gpus: int) -> dict:
    """Parameters, all-reduces per epoch and bytes per env-step of Brax's PPO on ``task``."""
    from brax.training.agents.ppo import networks

    kw, (policy_sizes, value_sizes) = training.hyperparameters(task, "ppo")
    env = jaxsim.envs.get(task)
    nets = networks.make_ppo_networks(env.observation_size, env.action_size,
                                      policy_hidden_layer_sizes=policy_sizes, value_hidden_layer_sizes=value_sizes)
    params = sum(x.size for net in (nets.policy_network, nets.value_network)
                 for x in jax.tree.leaves(jax.eval_shape(net.init, jax.random.PRNGKey(0))))
    updates = kw["num_minibatches"] * kw["num_updates_per_batch"]
    normalizer = 2 * env.observation_size + 1  # mean, variance and count, once per epoch
    buffer_bytes = 4 * (updates * params + normalizer)  # float32
    ring = 2 * (gpus - 1) / gpus
    steps_per_epoch = kw["batch_size"] * kw["num_minibatches"] * kw["unroll_length"]  # on each GPU
    return {"task": task, "parameters": int(params), "all_reduces_per_epoch": updates,
            "bytes_per_epoch_per_gpu": ring * buffer_bytes, "env_steps_per_epoch_per_gpu": steps_per_epoch,
            "bytes_per_env_step": ring * buffer_bytes / steps_per_epoch}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpus", type=int, default=1000)
    p.add_argument("--gpu-memory-gb", type=float, default=80.0)
    p.add_argument("--out", default=os.path.join(HERE, "results", "cluster_estimate.json"))
    a = p.parse_args()
    usable = (1 - RUNTIME_SHARE) * a.gpu_memory_gb * 1e9
    memory = []
    for name, options in SCENES.items():
        model = load_mjcf(scene_xml(name), dtype=jnp.float32, **options)
        row = {"scene": name, "nv": int(model.nv), "state_bytes": state_bytes(model),
               "call_bytes_per_env": call_bytes_per_env(model)}
        row["envs_per_gpu"] = int(usable // row["call_bytes_per_env"])
        row["envs_in_run"] = row["envs_per_gpu"] * a.gpus
        memory.append(row)
    traffic = [ppo_traffic(task, a.gpus) for task in TASKS]

    print(f"{a.gpus} GPUs of {a.gpu_memory_gb:g} GB, {100 * (1 - RUNTIME_SHARE):.0f} % of it for environments\n")
    print("| scene | nv | State per env | 10-step call per env (no chunks) | envs per GPU | envs in the run |")
    print("|---|---|---|---|---|---|")
    for r in memory:
        print(f"| {r['scene']} | {r['nv']} | {r['state_bytes'] / 1e3:.2f} kB | {r['call_bytes_per_env'] / 1e3:.1f} kB "
              f"| {r['envs_per_gpu']:,} | {r['envs_in_run'] / 1e9:.2f} billion |")
    print("\n| PPO task | parameters | all-reduces per epoch | MB per GPU per epoch | env-steps per GPU per epoch "
          "| bytes per env-step |")
    print("|---|---|---|---|---|---|")
    for t in traffic:
        print(f"| {t['task']} | {t['parameters']:,} | {t['all_reduces_per_epoch']} | "
              f"{t['bytes_per_epoch_per_gpu'] / 1e6:.1f} | {t['env_steps_per_epoch_per_gpu']:,} | "
              f"{t['bytes_per_env_step']:,.0f} |")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"gpus": a.gpus, "gpu_memory_gb": a.gpu_memory_gb, "runtime_share": RUNTIME_SHARE,
                   "memory": memory, "ppo": traffic, "jax": jax.__version__}, f, indent=1)
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
