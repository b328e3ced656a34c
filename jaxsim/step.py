"""``step`` and ``rollout``: the simulation loop as a short chain of named stages.

    kinematics -> forces (passive, actuators) -> smooth dynamics
      -> constraint stage (collision, rows, penalty forces, the contact model's solve)
      -> integrate

Semi-implicit Euler: ``v+ = v + dt M^-1 (tau - c) + M^-1 J^T df`` with the impulses
``df`` of the constraint stage (``contact/stage.py``, whatever the contact model),
then ``q+`` from ``v+``. With RK4 the smooth dynamics are integrated by RK4 and the
impulses, computed once from the Euler prediction ``v + dt qacc``, are added at the
end of the step: to ``v``, and through ``dv dt`` to ``q``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import dynamics, integrator, linalg
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.precision import full_precision
from jaxsim import math
from jaxsim.contact.stage import constraint_stage, has_constraints, initial_contact
from jaxsim.kinematics import Kinematics, body_velocities, dof_blocks, forward_kinematics
from jaxsim.types import JointType, Model, SolverStats, State

Array = jax.Array


@accepts_explicit_axes
@full_precision
def make_state(model: Model, q=None, v=None, act=None, ctrl=None) -> State:
    """A State at ``q`` (default ``qpos0``) and ``v`` (default 0) in the model's dtype."""
    dtype = model.dtype
    as_arr = lambda x, default, n: jnp.broadcast_to(  # noqa: E731
        jnp.asarray(default if x is None else x, dtype), (n,))
    contact, carry = initial_contact(model)
    return State(
        q=as_arr(q, model.qpos0, model.nq), v=as_arr(v, 0.0, model.nv),
        act=as_arr(act, 0.0, model.topo.na), time=jnp.zeros((), dtype),
        ctrl=as_arr(ctrl, 0.0, model.nu), qacc=jnp.zeros((model.nv,), dtype),
        nonfinite=jnp.zeros((), bool), contact=contact, contact_carry=carry,
        solver=SolverStats(jnp.zeros((), jnp.int32), jnp.zeros((), dtype)),
        overflow=jnp.zeros((), jnp.int32))


@accepts_explicit_axes
@full_precision
def accelerations(model: Model, q: Array, v: Array, act: Array, ctrl: Array,
                  qfrc_applied: Array | None = None, extra_diag: Array | float = 0.0,
                  skip_implicit: bool = False):
    """Smooth dynamics: ``(qacc (nv,), act_dot (na,))`` at one state.

    ``extra_diag`` (nv,) is added to the mass-matrix diagonal (implicit damping);
    ``skip_implicit`` (static) leaves out the implicit-PD actuators (``step``
    solves them with the constraints).
    """
    kin = forward_kinematics(model, q)
    tau, act_dot, body_vel, cdot = _forces(model, kin, q, v, act, ctrl, qfrc_applied, skip_implicit)
    if model.opt.forward_dynamics == "crba":
        bias = dynamics.inverse_dynamics(model, kin, v, jnp.zeros_like(v), body_vel, cdot)
        qacc = dynamics.forward_dynamics_crba(model, kin, tau, bias, extra_diag)
    else:
        qacc = dynamics.forward_dynamics_aba(model, kin, v, tau, extra_diag, body_vel, cdot)
    return qacc, act_dot


def _forces(model: Model, kin: Kinematics, q: Array, v: Array, act: Array, ctrl: Array,
            qfrc_applied: Array | None, skip_implicit: bool = False):
    """Passive + actuator (+ applied) generalized forces, act_dot, body velocities."""
    body_vel, cdot = body_velocities(model, kin, v)
    tau = dynamics.passive_forces(model, q, v, kin, body_vel)
    qfrc_act, act_dot = dynamics.actuator_forces(model, q, v, act, ctrl, skip_implicit)
    tau = tau + qfrc_act
    if qfrc_applied is not None:
        tau = tau + qfrc_applied
    return tau, act_dot, body_vel, cdot


class Smooth(NamedTuple):
    """The step's smooth dynamics at its start."""

    qacc: Array  # (nv,) contact-free accelerations
    act_dot: Array  # (na,)
    mass: Array | None  # (nv, nv) M (+ implicit damping), when the step needs it
    factor: Any  # its Cholesky factor, or None


def _smooth(model: Model, kin: Kinematics, state: State, ctrl: Array, qfrc_applied: Array | None,
            extra_diag, need_mass: bool) -> Smooth:
    """Forces and contact-free accelerations at the step's start; with ``need_mass`` also
    ``M`` and its factor (the constraint stage and the implicit gyroscopic step need
    them). ``opt.forward_dynamics`` picks how ``qacc`` is computed either way."""
    q, v = state.q, state.v
    tau, act_dot, body_vel, cdot = _forces(model, kin, q, v, state.act, ctrl, qfrc_applied, True)
    if not need_mass and model.opt.forward_dynamics == "aba":
        return Smooth(dynamics.forward_dynamics_aba(model, kin, v, tau, extra_diag, body_vel, cdot), act_dot, None, None)
    bias = dynamics.inverse_dynamics(model, kin, v, jnp.zeros_like(v), body_vel, cdot)
    if not need_mass:
        return Smooth(dynamics.forward_dynamics_crba(model, kin, tau, bias, extra_diag), act_dot, None, None)
    m = dynamics.mass_matrix(model, kin) + jnp.diag(jnp.broadcast_to(extra_diag, (model.nv,)).astype(v.dtype))
    factor = linalg.block_cho_factor(m, dof_blocks(model.topo))
    if model.opt.forward_dynamics == "aba":
        qacc = dynamics.forward_dynamics_aba(model, kin, v, tau, extra_diag, body_vel, cdot)
    else:
        qacc = factor.solve(tau - bias)
    return Smooth(qacc, act_dot, m, factor)


@functools.lru_cache(maxsize=64)
def rotation_dofs(topo) -> np.ndarray:
    """(k, 3) dof ids of the angular velocity of every free joint of a body without
    children: the implicit gyroscopic step's joints. The torque ``w x I w`` is a
    single free rigid body's; on a joint that carries a subtree ``M``'s block is the
    subtree's composite inertia, and a ball joint's velocity is relative to its
    parent's: the quadruped of ``jaxsim.quadruped`` at dt = 50 ms is unstable when
    either gets the implicit step."""
    parents = set(int(p) for p in topo.body_parent)
    out = [topo.jnt_dofadr[j] + 3 for j in range(topo.njnt)
           if JointType(topo.jnt_type[j]) == JointType.FREE and int(topo.jnt_body[j]) not in parents]
    return np.asarray(out, int).reshape(-1, 1) + np.arange(3)


def implicit_gyroscopic(model: Model, m: Array, v: Array, dv: Array) -> Array:
    """The velocity change ``dv`` (nv,) of a step, with the gyroscopic torque of the
    free joint of every body without children (``rotation_dofs``; other joints keep
    the explicit term) taken at the end of the step (one Newton step of implicit Euler,
    as Bullet's implicit gyroscopic force): ``(M + dt D) dv' = M dv`` with
    ``D = skew(w) I - skew(I w)``, the derivative of ``w x I w`` for the joint's
    angular velocity ``w`` and its block ``I`` of ``M`` (nv, nv).

    Explicit Euler gains energy on a spinning body (the gyroscopic term turns the
    angular velocity by ``|w| dt`` per step and lengthens it by ``O((|w| dt)^2)``): a
    0.1 kg capsule knocked to 240 rad/s at dt = 2 ms went to NaN in 2000 steps with no
    contact at all. The implicit step is stable and dissipates slightly."""
    rot = rotation_dofs(model.topo)
    if rot.size == 0:
        return dv
    w = v[rot]  # (k, 3)
    block = (rot[:, :, None], rot[:, None, :])
    inertia = m[block]  # (k, 3, 3)
    d = math.skew(w) @ inertia - math.skew(jnp.einsum("kij,kj->ki", inertia, w))
    # the trees do not share inertia, so neither do they share the system's blocks
    return linalg.block_solve(m.at[block].add(model.opt.timestep * d), m @ dv, dof_blocks(model.topo))


@jax.jit
@accepts_explicit_axes
@full_precision
def step(model: Model, state: State, ctrl: Array | None = None,
         qfrc_applied: Array | None = None) -> State:
    """Advance ``state`` by ``model.opt.timestep`` under control ``ctrl`` (nu,).

    Jitted, so that JAX traces a step once per model structure and state shapes and
    every program built on it (rollouts, their gradients, vmapped batches) reuses that
    trace; called outside ``jit`` it runs compiled rather than one operation at a time.

    Args:
      model: the Model (may be batched under ``vmap``).
      state: the current State.
      ctrl: (nu,) actuator controls (default: the state's last ``ctrl``).
      qfrc_applied: optional (nv,) generalized forces applied over the step.
    """
    opt, dt = model.opt, model.opt.timestep
    ctrl = state.ctrl if ctrl is None else jnp.asarray(ctrl, state.v.dtype)
    constrained = has_constraints(model)
    euler = opt.integrator != "rk4"
    gyroscopic = euler and opt.implicit_gyroscopic and rotation_dofs(model.topo).size > 0
    extra = dt * model.dof_damping if euler and opt.implicit_damping else 0.0

    kin = forward_kinematics(model, state.q)
    smooth = _smooth(model, kin, state, ctrl, qfrc_applied, extra, constrained or gyroscopic)
    if euler:
        q, v, act = None, state.v + dt * smooth.qacc, integrator.integrate_activations(
            model, state.act, smooth.act_dot, dt)
    else:
        f = lambda q_, v_, a_: accelerations(model, q_, v_, a_, ctrl, qfrc_applied, skip_implicit=True)  # noqa: E731
        q, v, act = integrator.rk4(model, state.q, state.v, state.act, f, smooth.qacc, smooth.act_dot)
    dv, dv_position = jnp.zeros_like(state.v), None
    contact, carry, stats, overflow = state.contact, state.contact_carry, state.solver, jnp.zeros((), jnp.int32)
    if constrained:
        # the contact targets assume q+ = q + dt v+ (semi-implicit Euler); under RK4 the
        # impulse is applied at the end of the step, to v and through dv dt to q:
        # spread over the stages it let a falling ant sink and bounce
        res = constraint_stage(model, kin, state, smooth.factor, state.v + dt * smooth.qacc, ctrl)
        dv, contact, carry, stats, overflow = res.dv, res.contact, res.carry, res.stats, res.overflow
        dv_position = res.dv_position
    # a velocity change that moves q+ only (zero in value: a contact model's
    # continuous-time impact gradient, Solution.position_impulse)
    moved = (lambda v_: v_) if dv_position is None else (lambda v_: v_ + dv_position)  # noqa: E731
    if euler:
        v = v + dv
        if gyroscopic:
            v = state.v + implicit_gyroscopic(model, smooth.mass, state.v, v - state.v)
        q = integrator.integrate_positions(model, state.q, moved(v), dt)
        qacc = (v - state.v) / dt
    else:
        q, v = integrator.integrate_positions(model, q, moved(dv), dt), v + dv
        qacc = smooth.qacc + dv / dt
    finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v)) & jnp.all(jnp.isfinite(act))
    return State(q=q, v=v, act=act, time=state.time + dt, ctrl=ctrl, qacc=qacc,
                 nonfinite=state.nonfinite | ~finite, contact=contact, contact_carry=carry, solver=stats,
                 overflow=state.overflow + overflow)


@jax.jit
@accepts_explicit_axes
@full_precision
def rollout(model: Model, state: State, ctrls: Array) -> tuple[State, State]:
    """Apply ``ctrls`` (T, nu) for T steps with ``lax.scan``.

    Jitted: called outside ``jit`` it compiles once per model structure and shapes
    and reuses that program on later calls (an eager ``lax.scan`` would compile again
    on every call).

    Returns:
      (final State, trajectory State with a leading time axis of length T, holding the
      state after each step).
    """
    def body(s, u):
        s = step(model, s, u)
        return s, s

    return jax.lax.scan(body, state, ctrls)


@functools.partial(jax.jit, static_argnames=("policy", "num_steps"))
@accepts_explicit_axes
@full_precision
def rollout_policy(model: Model, state: State, policy: Callable[[State], Array],
                   num_steps: int) -> tuple[State, State]:
    """Closed-loop rollout: ``ctrl = policy(state)`` at every step, ``num_steps`` steps.

    Jitted with ``policy`` and ``num_steps`` static: calls with the same policy object
    reuse one compiled program, and a new object (a lambda written anew) compiles
    anew, with the values it closes over as constants. A policy whose parameters
    change between calls (as in training) belongs in the caller's own ``jit``, which
    traces them as arguments."""
    def body(s, _):
        s = step(model, s, policy(s))
        return s, s

    return jax.lax.scan(body, state, None, length=num_steps)
