"""The environment interface: ``Env``, its ``State`` and ``PipelineEnv``.

The interface is Brax's (``brax.envs.base``), field for field, so Brax's wrappers
(``brax.envs.wrappers.training.wrap``: vmap, episode length, auto-reset, domain
randomization) and agents (``brax.training.agents.ppo.train``, ``apg.train``) run on a
jaxsim environment unchanged. Brax itself is not imported here: the training loop only
calls ``reset``, ``step`` and the size properties, reads and writes the ``State``'s
fields and, for domain randomization, swaps the environment's ``sys`` (a jaxsim
``Model``) for a batch of models while it traces.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import functools
from typing import Any, Union

import jax
import jax.numpy as jnp

import jaxsim
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.types import Model, pytree_dataclass

Array = jax.Array
Observation = Union[Array, dict]


@pytree_dataclass
class State:
    """One environment's state (a batch of them under ``vmap``).

    Attributes:
      pipeline_state: the simulator's ``jaxsim.State``.
      obs: (observation_size,) the observation.
      reward: () the reward of the last step.
      done: () 1.0 once the episode ended (a float, as Brax's wrappers expect).
      metrics: name -> () values summed over an episode by Brax's episode wrapper.
      info: name -> anything the task or the wrappers carry between steps.
    """

    pipeline_state: Any
    obs: Observation
    reward: Array
    done: Array
    metrics: dict = dataclasses.field(default_factory=dict)
    info: dict = dataclasses.field(default_factory=dict)


def _accepting_explicit_axes(method):
    """``method`` of an Env, through ``accepts_explicit_axes``. The env's ``sys`` goes in
    as an argument, not read from ``self``: Brax's domain randomization sets it to a
    batch of traced models, which must enter the Auto-axes body with its arguments."""
    @functools.wraps(method)
    def wrapped(self, *args):
        def call(sys, *args):
            env = self
            if sys is not None:
                env = copy.copy(self)
                env.sys = sys
            return method(env, *args)
        return accepts_explicit_axes(call)(getattr(self, "sys", None), *args)
    return wrapped


class Env(abc.ABC):
    """An environment: ``reset(rng) -> State``, ``step(state, action) -> State``.

    A subclass's ``reset`` and ``step`` accept batches sharded on a mesh with Explicit
    axes (``jaxsim.parallel.accepts_explicit_axes``), as the simulator's stages do."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("reset", "step"):
            if name in vars(cls):
                setattr(cls, name, _accepting_explicit_axes(vars(cls)[name]))


    @abc.abstractmethod
    def reset(self, rng: Array) -> State:
        """The state at the start of an episode drawn with ``rng`` (a PRNG key)."""

    @abc.abstractmethod
    def step(self, state: State, action: Array) -> State:
        """The state one environment step (``dt`` seconds) after ``state``."""

    @property
    @abc.abstractmethod
    def observation_size(self) -> int:
        """Length of the observation vector."""

    @property
    @abc.abstractmethod
    def action_size(self) -> int:
        """Length of the action vector ``step`` takes."""

    @property
    @abc.abstractmethod
    def backend(self) -> str:
        """Name of the physics backend."""

    @property
    def unwrapped(self) -> Env:
        return self


class PipelineEnv(Env):
    """An Env stepping one jaxsim ``Model`` ``n_frames`` times per environment step.

    ``sys`` is the Model the step reads, so replacing it (as Brax's domain-randomization
    wrapper does, with a batch of models from ``jaxsim.randomize`` inside its vmap)
    changes the physics of every later ``reset`` and ``step``. Subclasses implement
    ``reset`` and ``step`` with ``pipeline_init`` and ``pipeline_step``.
    """

    def __init__(self, sys: Model, n_frames: int = 1):
        if n_frames < 1:
            raise ValueError(f"{type(self).__name__}: n_frames must be at least 1, got {n_frames}")
        if jnp.ndim(sys.body_mass) != 1:
            raise ValueError(f"{type(self).__name__}: sys must be a single Model, its body_mass has shape "
                             f"{jnp.shape(sys.body_mass)}")
        self.sys = sys
        self._n_frames = int(n_frames)

    def pipeline_init(self, q: Array, v: Array) -> jaxsim.State:
        """The simulator state at positions ``q`` (nq,) and velocities ``v`` (nv,)."""
        return jaxsim.make_state(self.sys, q=q, v=v)

    def pipeline_step(self, pipeline_state: jaxsim.State, ctrl: Array) -> jaxsim.State:
        """``n_frames`` simulator steps holding the actuator controls ``ctrl`` (nu,)."""
        def frame(s, _):
            return jaxsim.step(self.sys, s, ctrl), None
        return jax.lax.scan(frame, pipeline_state, None, self._n_frames)[0]

    @property
    def dt(self) -> Array:
        """() s, the time one environment step advances."""
        return self.sys.opt.timestep * self._n_frames

    @property
    def n_frames(self) -> int:
        return self._n_frames

    @property
    def observation_size(self) -> int:
        # shapes only: nothing is compiled or run
        return int(jax.eval_shape(self.reset, jax.random.PRNGKey(0)).obs.shape[-1])

    @property
    def action_size(self) -> int:
        return int(self.sys.nu)

    @property
    def backend(self) -> str:
        return "jaxsim"


def finite_or(x: Array, fallback: Array | float = 0.0) -> Array:
    """``x`` where finite, else ``fallback``: a diverged simulation must not feed NaN
    into a learner's observation normalizer or return."""
    return jnp.where(jnp.isfinite(x), x, fallback)
