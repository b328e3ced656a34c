"""Environments for learning, behind Brax's ``Env`` interface.

``jaxsim.envs.get(name, **kwargs)`` builds a registered task; Brax's training wrappers
and agents take it unchanged::

    import functools
    from brax.training.agents.ppo import train as ppo
    import jaxsim.envs

    env = jaxsim.envs.get("cartpole")
    make_policy, params, metrics = ppo.train(environment=env, num_timesteps=2_000_000,
                                             episode_length=1000, num_envs=256, ...)

Domain randomization goes through ``jaxsim.randomize``:
``randomization_fn=functools.partial(jaxsim.randomize, ranges=[...])``.

Built-in tasks (``names()``): ``cartpole``, ``cube_push``, ``ant``, ``humanoid``,
``quadruped_walk``, ``go2_terrain``. Their model files come with the ``rl`` extra
(``pip install 'jaxsim[rl]'``, which also installs Brax).
"""

from __future__ import annotations

import importlib
from typing import Callable, Union

from jaxsim.envs.base import Env, PipelineEnv, State

# name -> the task's class, or "module:Class" imported on first use (a task's module
# may need its model file's package)
_REGISTRY: dict[str, Union[Callable[..., Env], str]] = {
    "cartpole": "jaxsim.envs.cartpole:Cartpole",
    "cube_push": "jaxsim.envs.cube_push:CubePush",
    "ant": "jaxsim.envs.ant:Ant",
    "humanoid": "jaxsim.envs.humanoid:Humanoid",
    "quadruped_walk": "jaxsim.envs.quadruped_walk:QuadrupedWalk",
    "go2_terrain": "jaxsim.envs.go2_terrain:Go2Terrain",
}


def register(name: str, env_class: Callable[..., Env]) -> None:
    """Register ``env_class`` (an Env subclass or any callable returning an Env) as
    ``name`` for ``get``; a registered name is replaced."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register: name must be a non-empty string, got {name!r}")
    if not callable(env_class):
        raise ValueError(f"register: {name!r}: env_class must be callable, got {env_class!r}")
    _REGISTRY[name] = env_class


def names() -> tuple[str, ...]:
    """The registered task names, sorted."""
    return tuple(sorted(_REGISTRY))


def get(name: str, **kwargs) -> Env:
    """A new instance of the task registered as ``name``, built with ``kwargs``."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown environment {name!r}; registered: {', '.join(names())}")
    entry = _REGISTRY[name]
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
    return entry(**kwargs)


__all__ = ["Env", "PipelineEnv", "State", "register", "get", "names"]
