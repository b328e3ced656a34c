"""Brax's training wrappers with the batch stepped in chunks on a CPU.

``wrap(env, episode_length, action_repeat, randomization_fn)`` is Brax's
``brax.envs.wrappers.training.wrap`` (vmap, or domain randomization's vmap over envs
and models; then episode length and auto-reset), with one change: ``step`` runs the
batch ``parallel.default_chunk(env.sys)`` envs at a time (``lax.map`` over vmapped
chunks) instead of one ``vmap`` over all of it. A vmapped contact solve iterates as
long as the slowest env of its vmap, so a chunk stops when its own envs have
converged (``jaxsim.parallel``'s module docstring). States are those of the plain
``vmap`` (to the contact QP's tolerance), and the chunks' ``lax.map`` is
differentiable, so APG runs on it too. Off the CPU, and for models
whose solve is small enough (the cart-pole, the cube push), there are no chunks and
the wrappers are Brax's.

Brax's agents take it as their ``wrap_env_fn``, and so does
``jaxsim.envs.training.train`` (its keywords go to the agent)::

    from brax.training.agents.ppo import train as ppo
    from jaxsim.envs import wrappers
    ppo.train(environment=env, wrap_env_fn=wrappers.wrap, ...)

Measured on a 2-core CPU (float32), in env-steps/s, Brax's wrap against this one,
stepping 256 envs under uniformly random actions (``experiments/bench_wrappers.py``):
the ant on Brax's ``ant.xml`` 3,571 against 4,239, ``quadruped_walk`` 515 against
998 (``results/bench_wrappers.json``); in earlier runs of the same measurement the
ant 3,863-4,064 against 5,080-5,789 and ``humanoid`` 56 against 165. Through
Brax's ``acting.generate_unroll`` (PPO's rollout: 8 unrolls of 5 steps), the ant ran
4,793 against 5,876 env-steps/s with tanh-squashed Gaussian actions. Whole PPO runs
on the ant (Brax's ant settings at 256 envs, 290 k env-steps, the same session)
could not show it: two runs trained at 2,926 and 3,248 env-steps/s against 3,391,
2,841 and 2,964 with Brax's wrap, a spread larger than the gain the rollout figures
predict for an epoch (about 13 %). It is therefore not the default.

Those figures predate the solver's compacting loops (``jaxsim.solver.compaction``),
which took from chunks their main gain, the batch no longer iterating as long as its
slowest env. Since then ``default_chunk`` chunks only QPs of more than about 90 rows:
the ant runs as one ``vmap`` under both wrappers (Brax's wrap: 3,571 -> 7,064
env-steps/s), and ``quadruped_walk`` (188 rows, chunks of 64) ran 629 against 1,006
(``results/bench_wrappers_compaction.json``).

Imports Brax (the ``rl`` extra).
"""

from __future__ import annotations

from typing import Callable

import jax
from brax.envs.wrappers import training as brax_training

from jaxsim import parallel


def _chunk(env) -> int | None:
    return parallel.default_chunk(env.unwrapped.sys)


def _batched(tree, flag: bool):
    return jax.tree.map(lambda _: flag, tree)


class ChunkedVmapWrapper(brax_training.VmapWrapper):
    """Brax's ``VmapWrapper`` whose ``step`` runs ``default_chunk`` envs at a time."""

    def step(self, state, action):
        return parallel.chunked_vmap(self.env.step, 0, _chunk(self.env))(state, action)


class ChunkedDomainRandomizationVmapWrapper(brax_training.DomainRandomizationVmapWrapper):
    """Brax's ``DomainRandomizationVmapWrapper`` whose ``step`` runs ``default_chunk``
    envs (and their models) at a time; the model's leaves that ``randomization_fn``
    leaves unbatched (``in_axes`` None) are shared by every chunk."""

    def step(self, state, action):
        def step(sys, s, a):
            with self.v_env_fn(sys) as v_env:
                return v_env.step(s, a)

        # in_axes is a prefix of the model's pytree: one flag per leaf of the model
        sys_batched = jax.tree.map(lambda ax, sub: _batched(sub, ax is not None), self._in_axes, self._sys_v,
                                   is_leaf=lambda x: x is None)
        flags = (sys_batched, _batched(state, True), _batched(action, True))
        return parallel.chunked_vmap_leaves(step, flags, _chunk(self.env))(self._sys_v, state, action)


def wrap(env, episode_length: int = 1000, action_repeat: int = 1,
         randomization_fn: Callable | None = None):
    """Brax's ``training.wrap`` with the batch stepped in chunks (module docstring)."""
    if randomization_fn is None:
        env = ChunkedVmapWrapper(env)
    else:
        env = ChunkedDomainRandomizationVmapWrapper(env, randomization_fn)
    env = brax_training.EpisodeWrapper(env, episode_length, action_repeat)
    return brax_training.AutoResetWrapper(env)
