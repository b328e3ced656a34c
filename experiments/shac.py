"""Short-horizon actor-critic (SHAC): a policy learned from jaxsim's analytic gradients.

    python experiments/shac.py TASK [--env KEY=VALUE ...] [--envs 32] [--horizon 32]
        [--iterations 300] [--episode-length 1000] [--actor-lr 2e-3] [--eval-every 20]
        [--select mean|stochastic|speed] [--max-minutes M] [--seed 0] [--tag SUFFIX] [--out DIR]
    python experiments/shac.py TASK --policy results/shac_TASK_policy.pkl [--final-envs 32]
        [--final-steps 400]     # evaluate a saved policy only
    python experiments/shac.py TASK --against results/shac_TASK.json results/train_TASK_ppo.json
                                # the two runs' evaluation returns in one plot

SHAC is the method of Xu, Makoviychuk, Narang, Ramos, Matusik, Garg and Macklin,
"Accelerated Policy Learning with Parallel Differentiable Simulation" (ICLR 2022).
APG differentiates the summed reward of a whole rollout, so its gradient is a product
of as many step Jacobians as the rollout has steps, and it explodes on a chaotic task
(``experiments/apg_gradients.py``). SHAC cuts the rollout into windows of ``horizon``
steps and replaces what comes after a window by a learned value ``V(s)``:

* actor: ``N`` envs step ``horizon`` steps under the stochastic policy
  ``a = tanh(mu(s) + sigma eps)`` (reparameterized), and the actor descends

      L = -1 / (N horizon) sum_envs sum_segments [sum_t gamma^t r_t + gamma^T V'(s_T)],

  the gradient coming through the simulator (jaxsim's implicit contact gradients), the
  reward and ``V'`` (a slowly moving copy of the critic, whose weights are held). A
  segment ends at the window's end, or where the episode ends: a fall bootstraps with
  0, a time limit with the value of the state it reached. Envs carry their state from
  one window to the next (outside the gradient) and restart from a fresh reset where
  their episode ended.
* critic: regressed onto TD(lambda) targets of the window just run, over a few epochs
  of minibatches; ``V' <- alpha V' + (1 - alpha) V`` after each window.

Observations are normalized by running statistics (Brax's ``running_statistics``), the
networks are flax MLPs with layer norm and ELU, the optimizers optax's Adam with a
gradient-norm clip, a linear learning-rate decay and ``apply_if_finite``, which skips an
update whose gradient is not finite. The loop itself (windowed rollout, segment
bootstrapping, the TD(lambda) recursion) is written here: Brax's APG has no critic and
no window, and no maintained JAX library offers SHAC. Defaults are the paper's Ant
settings except the network sizes and the number of envs.

Every ``--eval-every`` iterations the policy runs ``--eval-envs`` fresh episodes of
``--eval-steps`` steps twice: as trained (stochastic) and with its mean action
``tanh(mu)``; for the legged tasks the script reports the trunk's mean forward speed
(x travel over the evaluation time, a fallen robot's travel counted to its fall) and
the share of episodes that fell. The policy of the best evaluation (highest return
of the ``--select`` actions, the mean by default; with ``speed``, the fastest mean
actions among the evaluations with the fewest falls) is evaluated again at the end,
both ways, on ``--final-envs`` other episodes of ``--final-steps`` steps.
``--max-minutes`` ends training at the first iteration past that wall time (the
learning-rate decay still follows ``--iterations``). Writes ``shac_TASK.json``,
``shac_TASK.png`` and the kept policy, ``shac_TASK_policy.pkl`` (the actor's parameters
and the observation statistics, as numpy arrays), into ``--out`` (default
``experiments/results``); ``--policy`` loads such a file and runs the final evaluation.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import os
import pickle
import time
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from brax.training.acme import running_statistics, specs

import jaxsim.envs
from jaxsim.xla_flags import use_fast_cpu_compile

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


@dataclasses.dataclass(frozen=True)
class Config:
    """SHAC's settings (module docstring); defaults from the paper's Ant run."""

    envs: int = 32
    horizon: int = 32
    iterations: int = 300
    gamma: float = 0.99
    lam: float = 0.95  # TD(lambda)
    actor_lr: float = 2e-3
    critic_lr: float = 2e-3
    betas: tuple = (0.7, 0.95)
    grad_norm: float = 1.0
    critic_epochs: int = 16
    critic_minibatches: int = 4
    target_alpha: float = 0.2  # V' <- alpha V' + (1 - alpha) V
    init_log_std: float = -1.0
    actor_sizes: tuple = (256, 128)
    critic_sizes: tuple = (256, 128)
    episode_length: int = 1000


class MLP(nn.Module):
    """Dense -> LayerNorm -> ELU per hidden layer, then a linear output whose initial
    weights are ``out_scale`` times the usual (LeCun) size."""

    sizes: tuple
    out: int
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x):
        for size in self.sizes:
            x = nn.elu(nn.LayerNorm()(nn.Dense(size)(x)))
        init = nn.initializers.variance_scaling(self.out_scale ** 2, "fan_in", "truncated_normal")
        return nn.Dense(self.out, kernel_init=init)(x)


def td_lambda(rewards, next_values, done, gamma: float, lam: float):
    """(T, N) TD(lambda) returns of a window: ``G_t = r_t + gamma ((1 - lam) V_{t+1} +
    lam G_{t+1})``, ``G_t = r_t + gamma V_{t+1}`` where the episode ended at t and at the
    window's last step. ``next_values`` (T, N) is V of the state after each step (0
    after a fall)."""
    def back(g_next, x):
        r, v, d = x
        g = r + gamma * jnp.where(d, v, (1 - lam) * v + lam * g_next)
        return g, g

    return jax.lax.scan(back, next_values[-1], (rewards, next_values, done), reverse=True)[1]


class SHAC:
    """The learner for one environment and ``Config`` (module docstring)."""

    def __init__(self, env, config: Config):
        self.env, self.cfg = env, config
        # a near-zero initial mean: the first policy holds the task's zero action
        # (standing, for the legged tasks) instead of random actions that topple the robot
        self.actor = MLP(config.actor_sizes, env.action_size, out_scale=0.01)
        self.critic = MLP(config.critic_sizes, 1)
        schedule = lambda lr: optax.linear_schedule(lr, 0.0, config.iterations)  # noqa: E731
        self.actor_opt = optax.apply_if_finite(optax.chain(
            optax.clip_by_global_norm(config.grad_norm),
            optax.adam(schedule(config.actor_lr), b1=config.betas[0], b2=config.betas[1])), 10 ** 6)
        self.critic_opt = optax.chain(
            optax.clip_by_global_norm(config.grad_norm),
            optax.adam(schedule(config.critic_lr), b1=config.betas[0], b2=config.betas[1]))
        self.reset = jax.vmap(env.reset)
        self.step_envs = jax.vmap(env.step)

    def init(self, key) -> dict:
        """The training state: parameters, optimizer states, observation statistics,
        the envs' states and their step counts."""
        k_actor, k_critic, k_env = jax.random.split(key, 3)
        obs_size = self.env.observation_size
        dummy = jnp.zeros((obs_size,), jnp.float32)
        actor = {"mlp": self.actor.init(k_actor, dummy),
                 "log_std": jnp.full((self.env.action_size,), self.cfg.init_log_std, jnp.float32)}
        critic = self.critic.init(k_critic, dummy)
        return dict(actor=actor, critic=critic, target=critic, actor_opt=self.actor_opt.init(actor),
                    critic_opt=self.critic_opt.init(critic),
                    norm=running_statistics.init_state(specs.Array((obs_size,), jnp.dtype("float32"))),
                    envs=self.reset(jax.random.split(k_env, self.cfg.envs)),
                    steps=jnp.zeros((self.cfg.envs,), jnp.int32))

    def value(self, critic, norm, obs):
        return self.critic.apply(critic, running_statistics.normalize(obs, norm))[..., 0]

    def policy_mean(self, actor, norm, obs):
        return self.actor.apply(actor["mlp"], running_statistics.normalize(obs, norm))

    def _window(self, actor, ts: dict, key):
        """The actor's loss over one window, and what the critic needs (aux)."""
        cfg, norm = self.cfg, jax.lax.stop_gradient(ts["norm"])
        target = jax.lax.stop_gradient(ts["target"])
        k_reset, k_noise = jax.random.split(key)
        fresh = self.reset(jax.random.split(k_reset, cfg.envs))
        n = cfg.envs
        zeros = jnp.zeros((n,), jnp.float32)

        def body(carry, eps):
            envs, steps, acc, disc, total = carry
            obs = envs.obs
            action = jnp.tanh(self.policy_mean(actor, norm, obs) + jnp.exp(actor["log_std"]) * eps)
            nxt = self.step_envs(envs, action)
            steps = steps + 1
            fell = nxt.done > 0
            done = fell | (steps >= cfg.episode_length)
            v_next = jnp.where(fell, 0.0, self.value(target, norm, nxt.obs))
            acc = acc + disc * nxt.reward
            total = total + jnp.where(done, acc + disc * cfg.gamma * v_next, 0.0)
            disc = jnp.where(done, 1.0, disc * cfg.gamma)
            acc = jnp.where(done, 0.0, acc)
            envs = jax.tree.map(lambda f, s: jnp.where(done.reshape((n,) + (1,) * (s.ndim - 1)), f, s), fresh, nxt)
            steps = jnp.where(done, 0, steps)
            record = (obs, nxt.reward, jax.lax.stop_gradient(v_next), done, fell)
            return (envs, steps, acc, disc, total), record

        eps = jax.random.normal(k_noise, (cfg.horizon, n, self.env.action_size))
        (envs, steps, acc, disc, total), (obs, rewards, v_next, done, fell) = jax.lax.scan(
            body, (ts["envs"], ts["steps"], zeros, jnp.ones((n,)), zeros), eps)
        total = total + jnp.where(done[-1], 0.0, acc + disc * self.value(target, norm, envs.obs))
        loss = -jnp.sum(total) / (cfg.horizon * n)
        aux = dict(obs=obs, rewards=rewards, v_next=v_next, done=done, fell=fell,
                   envs=jax.lax.stop_gradient(envs), steps=steps)
        return loss, aux

    def _fit_critic(self, critic, opt_state, norm, obs, returns, key):
        cfg = self.cfg
        obs = obs.reshape(-1, obs.shape[-1])
        returns = returns.reshape(-1)
        batch = obs.shape[0] // cfg.critic_minibatches

        def loss_fn(params, o, g):
            return jnp.mean((self.value(params, norm, o) - g) ** 2)

        def epoch(carry, k):
            params, opt_state = carry
            order = jax.random.permutation(k, obs.shape[0])[: batch * cfg.critic_minibatches]
            order = order.reshape(cfg.critic_minibatches, batch)

            def minibatch(carry, idx):
                params, opt_state = carry
                loss, grads = jax.value_and_grad(loss_fn)(params, obs[idx], returns[idx])
                updates, opt_state = self.critic_opt.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), loss

            return jax.lax.scan(minibatch, (params, opt_state), order)

        (critic, opt_state), losses = jax.lax.scan(epoch, (critic, opt_state),
                                                   jax.random.split(key, cfg.critic_epochs))
        return critic, opt_state, losses[-1].mean()

    @functools.partial(jax.jit, static_argnums=0)
    def iteration(self, ts: dict, key) -> tuple[dict, dict]:
        """One SHAC iteration: a window, an actor step, the critic's fit, the target's
        update and the observation statistics."""
        cfg = self.cfg
        k_window, k_critic = jax.random.split(key)
        (loss, aux), grads = jax.value_and_grad(self._window, has_aux=True)(ts["actor"], ts, k_window)
        updates, actor_opt = self.actor_opt.update(grads, ts["actor_opt"], ts["actor"])
        actor = optax.apply_updates(ts["actor"], updates)
        returns = td_lambda(aux["rewards"], aux["v_next"], aux["done"], cfg.gamma, cfg.lam)
        critic, critic_opt, critic_loss = self._fit_critic(ts["critic"], ts["critic_opt"], ts["norm"],
                                                           aux["obs"], returns, k_critic)
        target = jax.tree.map(lambda t, c: cfg.target_alpha * t + (1 - cfg.target_alpha) * c, ts["target"], critic)
        norm = running_statistics.update(ts["norm"], aux["obs"].reshape(-1, aux["obs"].shape[-1]))
        grad_norm = optax.global_norm(grads)
        ts = dict(ts, actor=actor, critic=critic, target=target, actor_opt=actor_opt, critic_opt=critic_opt,
                  norm=norm, envs=aux["envs"], steps=aux["steps"])
        stats = dict(actor_loss=loss, critic_loss=critic_loss, grad_norm=grad_norm,
                     grad_finite=jnp.isfinite(grad_norm), reward=jnp.mean(aux["rewards"]),
                     falls=jnp.sum(aux["fell"]), std=jnp.mean(jnp.exp(actor["log_std"])))
        return ts, stats

    @functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
    def evaluate(self, ts: dict, key, envs: int, steps: int, stochastic: bool) -> dict:
        """The policy on ``envs`` fresh episodes of ``steps`` steps, as trained
        (``stochastic``: ``tanh(mu + sigma eps)``) or its mean action ``tanh(mu)``: mean
        return, mean forward speed (x travel over the whole time, counted to a fall)
        and the share of episodes that ended early."""
        k_reset, k_noise = jax.random.split(key)
        state = self.reset(jax.random.split(k_reset, envs))
        x0 = state.pipeline_state.q[:, 0]
        sigma = jnp.exp(ts["actor"]["log_std"]) if stochastic else 0.0

        def body(carry, eps):
            state, alive, ret, x = carry
            action = jnp.tanh(self.policy_mean(ts["actor"], ts["norm"], state.obs) + sigma * eps)
            nxt = self.step_envs(state, action)
            ret = ret + alive * nxt.reward
            x = jnp.where(alive > 0, nxt.pipeline_state.q[:, 0], x)
            alive = alive * (1.0 - nxt.done)
            return (nxt, alive, ret, x), None

        eps = jax.random.normal(k_noise, (steps, envs, self.env.action_size))
        (state, alive, ret, x), _ = jax.lax.scan(body, (state, jnp.ones((envs,)), jnp.zeros((envs,)), x0), eps)
        return dict(episode_return=jnp.mean(ret), speed=jnp.mean(x - x0) / (steps * self.env.dt),
                    min_speed=jnp.min(x - x0) / (steps * self.env.dt), fell=jnp.mean(1.0 - alive))


def _selection_key(evaluation: dict, select: str) -> tuple:
    """What ``--select`` maximizes over the evaluations: the return of the
    stochastic or the mean actions, or (``speed``) the mean actions' forward speed
    among the evaluations with the fewest falls."""
    if select == "speed":
        return -evaluation["mean"]["fell"], evaluation["mean"]["speed"]
    return (evaluation[select]["episode_return"],)


def _parse_env_kwargs(items: list[str]) -> dict[str, Any]:
    kwargs = {}
    for item in items:
        key, _, text = item.partition("=")
        if not key or not _:
            raise SystemExit(f"--env expects KEY=VALUE, got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            kwargs[key] = text
    return kwargs


def train(task: str, env_kwargs: dict, config: Config, seed: int, eval_every: int, eval_envs: int,
          eval_steps: int, final_envs: int, final_steps: int, select: str = "mean", max_minutes: float = 0.0,
          log=print) -> dict:
    """Runs SHAC on ``task``; returns the record written to JSON. The policy of the
    best evaluation by ``select`` (``_selection_key``) is kept and evaluated once
    more at the end, on ``final_envs`` other episodes of ``final_steps`` steps.
    Training stops early once ``max_minutes`` (if positive) have passed; the
    record's ``policy`` is the kept policy."""
    env = jaxsim.envs.get(task, **env_kwargs)
    learner = SHAC(env, config)
    key = jax.random.PRNGKey(seed)
    key, k_init, k_eval = jax.random.split(key, 3)
    ts = learner.init(k_init)
    steps_per_iteration = config.envs * config.horizon
    history, evals = [], []
    start = time.perf_counter()
    compile_s = None
    best = {}

    def run_eval(it):
        e = {}
        for mode in ("stochastic", "mean"):
            figures = learner.evaluate(ts, k_eval, eval_envs, eval_steps, mode == "stochastic")
            e[mode] = {k: float(v) for k, v in figures.items()}
        e.update(iteration=it, env_steps=it * steps_per_iteration, wall_s=time.perf_counter() - start)
        evals.append(e)
        if not best or _selection_key(e, select) > _selection_key(best["eval"], select):
            best.update(eval=e, policy=dict(actor=ts["actor"], norm=ts["norm"]))
        log(f"eval  it {it:4d}  env-steps {e['env_steps']:8d}  {e['wall_s']:7.1f} s  " + "  |  ".join(
            f"{mode}: return {f['episode_return']:7.1f} speed {f['speed']:6.3f} m/s (min {f['min_speed']:6.3f})"
            f" fell {f['fell']:.2f}" for mode, f in ((m, e[m]) for m in ("stochastic", "mean"))))

    run_eval(0)
    for it in range(1, config.iterations + 1):
        key, k = jax.random.split(key)
        ts, stats = learner.iteration(ts, k)
        stats = {k: float(v) for k, v in stats.items()}
        if compile_s is None:
            compile_s = time.perf_counter() - start
        stats.update(iteration=it, env_steps=it * steps_per_iteration, wall_s=time.perf_counter() - start)
        history.append(stats)
        if it % max(1, eval_every // 4) == 0:
            log(f"train it {it:4d}  env-steps {stats['env_steps']:8d}  {stats['wall_s']:7.1f} s  reward/step "
                f"{stats['reward']:7.3f}  |grad| {stats['grad_norm']:9.3g}  falls {stats['falls']:4.0f}"
                f"  critic {stats['critic_loss']:9.3g}  std {stats['std']:.3f}")
        out_of_time = max_minutes > 0 and stats["wall_s"] > 60 * max_minutes
        if it % eval_every == 0 or it == config.iterations or out_of_time:
            run_eval(it)
        if out_of_time:
            log(f"stopped after {it} iterations: --max-minutes {max_minutes}")
            break
    final = final_evaluation(learner, best["policy"], key, final_envs, final_steps, log)
    final.update(iteration=best["eval"]["iteration"], env_steps=best["eval"]["env_steps"])
    return dict(final=final, select=select, task=task, env_kwargs=env_kwargs, config=dataclasses.asdict(config),
                seed=seed, dt=float(env.dt), eval_envs=eval_envs, eval_steps=eval_steps, first_iteration_s=compile_s,
                skipped_updates=sum(1 for h in history if not h["grad_finite"]), history=history, evals=evals,
                machine=dict(cpus=os.cpu_count(), backend=jax.default_backend()),
                policy=jax.tree.map(np.asarray, best["policy"]))


def final_evaluation(learner: SHAC, policy: dict, key, envs: int, steps: int, log=print) -> dict:
    """``policy`` (``actor`` and ``norm``) on ``envs`` new episodes of ``steps`` steps,
    with its stochastic and its mean actions."""
    final = dict(envs=envs, steps=steps)
    for mode in ("stochastic", "mean"):
        figures = learner.evaluate(policy, key, envs, steps, mode == "stochastic")
        f = final[mode] = {k: float(v) for k, v in figures.items()}
        log(f"policy, {mode} actions, on {envs} new episodes of {steps} steps: return {f['episode_return']:.2f}  "
            f"speed {f['speed']:.3f} m/s (min {f['min_speed']:.3f})  fell {f['fell']:.2f}")
    return final


def plot(record: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    evals = record["evals"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, x, label in ((axes[0], "env_steps", "training env-steps"), (axes[1], "wall_s", "wall time (s)")):
        for mode, color in (("stochastic", "C0"), ("mean", "C1")):
            ax.plot([e[x] for e in evals], [e[mode]["speed"] for e in evals], "o-", color=color,
                    label=f"forward speed, {mode} actions")
            ax.plot([e[x] for e in evals], [e[mode]["fell"] for e in evals], "s--", color=color, alpha=0.6,
                    label=f"share fallen, {mode} actions")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("m/s  |  share")
    axes[0].legend()
    fig.suptitle(f"SHAC on {record['task']} ({record['config']['envs']} envs x {record['config']['horizon']} steps)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_against(record: dict, other: dict, path: str) -> None:
    """SHAC's evaluation return (mean actions) beside another agent's (a JSON of
    ``experiments/train.py``: Brax's deterministic evaluations), against env-steps and
    wall time. Like for like when both ran the same task keywords and episode length."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    evals, curve = record["evals"], other["curve"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, x, label in ((axes[0], "env_steps", "training env-steps"), (axes[1], "wall_s", "wall time (s)")):
        ax.plot([e[x] for e in evals], [e["mean"]["episode_return"] for e in evals], "o-",
                label=f"SHAC ({record['config']['envs']} envs)")
        ax.plot(curve[x], curve["reward"], "s-",
                label=f"{other['agent'].upper()} ({other['settings']['num_envs']} envs)")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"evaluation return ({record['eval_steps']}-step episodes)")
    axes[0].legend()
    fig.suptitle(f"{record['task']}: SHAC against {other['agent'].upper()}, deterministic evaluations")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("--env", nargs="*", default=[], help="task keyword arguments, KEY=VALUE")
    for field in dataclasses.fields(Config):
        if field.type in ("int", "float"):
            parser.add_argument("--" + field.name.replace("_", "-"), type=eval(field.type), default=field.default)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--eval-envs", type=int, default=16)
    parser.add_argument("--eval-steps", type=int, default=200)
    parser.add_argument("--final-envs", type=int, default=32)
    parser.add_argument("--final-steps", type=int, default=400)
    parser.add_argument("--select", choices=("mean", "stochastic", "speed"), default="mean",
                        help="what picks the policy evaluated at the end: the return of the stochastic or the mean "
                             "actions, or the mean actions' speed among the evaluations with the fewest falls")
    parser.add_argument("--max-minutes", type=float, default=0.0, help="stop training after this wall time")
    parser.add_argument("--policy", help="a saved policy (.pkl) to evaluate instead of training")
    parser.add_argument("--against", nargs=2, metavar=("SHAC_JSON", "TRAIN_JSON"),
                        help="plot a SHAC run's evaluation returns beside a train.py run's, then exit")
    parser.add_argument("--tag", default="", help="suffix of the output files' names")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    use_fast_cpu_compile()
    config = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config) if hasattr(args, f.name)})
    log = lambda s: print(s, flush=True)  # noqa: E731
    if args.against:
        records = []
        for path in args.against:
            with open(path) as f:
                records.append(json.load(f))
        out = os.path.splitext(args.against[0])[0] + f"_vs_{records[1]['agent']}.png"
        plot_against(records[0], records[1], out)
        print(f"wrote {out}")
        return
    if args.policy:
        with open(args.policy, "rb") as f:
            saved = pickle.load(f)
        config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved["config"].items()})
        learner = SHAC(jaxsim.envs.get(args.task, **saved["env_kwargs"]), config)
        final_evaluation(learner, saved["policy"], jax.random.PRNGKey(args.seed), args.final_envs,
                         args.final_steps, log)
        return
    env_kwargs = _parse_env_kwargs(args.env)
    record = train(args.task, env_kwargs, config, args.seed, args.eval_every, args.eval_envs, args.eval_steps,
                   args.final_envs, args.final_steps, args.select, args.max_minutes, log)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"shac_{args.task}{args.tag}")
    with open(stem + "_policy.pkl", "wb") as f:
        pickle.dump(dict(env_kwargs=env_kwargs, config=record["config"], policy=record.pop("policy")), f)
    with open(stem + ".json", "w") as f:
        json.dump(record, f, indent=1)
    plot(record, stem + ".png")
    print(f"wrote {stem}.json, .png and _policy.pkl")


if __name__ == "__main__":
    main()
