"""``step`` and ``rollout``: the simulation loop as a short chain of named stages.

    kinematics -> velocities -> forces (passive, actuators) -> forward dynamics -> integrate

Contact arrives with the contact issue as further stages between forces and
integration; until then the step is contact-free.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxsim import dynamics, integrator
from jaxsim.kinematics import body_velocities, forward_kinematics
from jaxsim.types import Model, State

Array = jax.Array


def make_state(model: Model, q=None, v=None, act=None, ctrl=None) -> State:
    """A State at ``q`` (default ``qpos0``) and ``v`` (default 0) in the model's dtype."""
    dtype = model.dtype
    as_arr = lambda x, default, n: jnp.broadcast_to(  # noqa: E731
        jnp.asarray(default if x is None else x, dtype), (n,))
    return State(
        q=as_arr(q, model.qpos0, model.nq), v=as_arr(v, 0.0, model.nv),
        act=as_arr(act, 0.0, model.topo.na), time=jnp.zeros((), dtype),
        ctrl=as_arr(ctrl, 0.0, model.nu), qacc=jnp.zeros((model.nv,), dtype),
        nonfinite=jnp.zeros((), bool))


def accelerations(model: Model, q: Array, v: Array, act: Array, ctrl: Array,
                  qfrc_applied: Array | None = None, extra_diag: Array | float = 0.0):
    """Smooth dynamics: ``(qacc (nv,), act_dot (na,))`` at one state.

    ``extra_diag`` (nv,) is added to the mass-matrix diagonal (implicit damping).
    """
    kin = forward_kinematics(model, q)
    body_vel, cdot = body_velocities(model, kin, v)
    tau = dynamics.passive_forces(model, q, v, kin, body_vel)
    qfrc_act, act_dot = dynamics.actuator_forces(model, q, v, act, ctrl)
    tau = tau + qfrc_act
    if qfrc_applied is not None:
        tau = tau + qfrc_applied
    if model.opt.forward_dynamics == "crba":
        bias = dynamics.inverse_dynamics(model, kin, v, jnp.zeros_like(v), body_vel, cdot)
        qacc = dynamics.forward_dynamics_crba(model, kin, tau, bias, extra_diag)
    else:
        qacc = dynamics.forward_dynamics_aba(model, kin, v, tau, extra_diag, body_vel, cdot)
    return qacc, act_dot


def step(model: Model, state: State, ctrl: Array | None = None,
         qfrc_applied: Array | None = None) -> State:
    """Advance ``state`` by ``model.opt.timestep`` under control ``ctrl`` (nu,).

    Args:
      model: the Model (may be batched under ``vmap``).
      state: the current State.
      ctrl: (nu,) actuator controls (default: the state's last ``ctrl``).
      qfrc_applied: optional (nv,) generalized forces applied over the step.
    """
    ctrl = state.ctrl if ctrl is None else jnp.asarray(ctrl, state.v.dtype)
    dt = model.opt.timestep
    if model.opt.integrator == "rk4":
        f = lambda q, v, a: accelerations(model, q, v, a, ctrl, qfrc_applied)  # noqa: E731
        qacc, act_dot = f(state.q, state.v, state.act)
        q, v, act = integrator.rk4(model, state.q, state.v, state.act, f, qacc, act_dot)
    else:
        extra = dt * model.dof_damping if model.opt.implicit_damping else 0.0
        qacc, act_dot = accelerations(model, state.q, state.v, state.act, ctrl, qfrc_applied, extra)
        q, v, act = integrator.euler(model, state.q, state.v, state.act, qacc, act_dot)
    finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v)) & jnp.all(jnp.isfinite(act))
    return State(q=q, v=v, act=act, time=state.time + dt, ctrl=ctrl, qacc=qacc,
                 nonfinite=state.nonfinite | ~finite)


def rollout(model: Model, state: State, ctrls: Array) -> tuple[State, State]:
    """Apply ``ctrls`` (T, nu) for T steps with ``lax.scan``.

    Returns:
      (final State, trajectory State with a leading time axis of length T, holding the
      state after each step).
    """
    def body(s, u):
        s = step(model, s, u)
        return s, s

    return jax.lax.scan(body, state, ctrls)


def rollout_policy(model: Model, state: State, policy: Callable[[State], Array],
                   num_steps: int) -> tuple[State, State]:
    """Closed-loop rollout: ``ctrl = policy(state)`` at every step, ``num_steps`` steps."""
    def body(s, _):
        s = step(model, s, policy(s))
        return s, s

    return jax.lax.scan(body, state, None, length=num_steps)
