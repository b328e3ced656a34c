"""Time integration: positions on the configuration manifold, semi-implicit Euler and
classic RK4 (MuJoCo's ``mj_Euler`` / ``mj_RungeKutta`` with constraints off)."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.kinematics import plan
from jaxsim.types import DynType, JointType, Model

Array = jax.Array


def integrate_positions(model: Model, q: Array, v: Array, dt: Array) -> Array:
    """Advance generalized positions ``q`` (nq,) by velocities ``v`` (nv,) over ``dt``.

    Hinge and slide coordinates add ``v dt``; ball and free quaternions rotate by the
    body-frame angular velocity (right multiplication) and stay unit length.
    """
    topo, p = model.topo, plan(model.topo)
    qadr, dadr = np.asarray(topo.jnt_qposadr, int), np.asarray(topo.jnt_dofadr, int)
    out = q
    js = np.concatenate([p.jnt_of_type[JointType.HINGE], p.jnt_of_type[JointType.SLIDE]])
    if js.size:
        out = out.at[qadr[js]].add(v[dadr[js]] * dt)
    js = p.jnt_of_type[JointType.FREE]
    if js.size:
        lin = qadr[js][:, None] + np.arange(3)
        out = out.at[lin].add(v[dadr[js][:, None] + np.arange(3)] * dt)
    for jt, off in ((JointType.FREE, 3), (JointType.BALL, 0)):
        js = p.jnt_of_type[jt]
        if js.size:
            qi = qadr[js][:, None] + off + np.arange(4)
            w = v[dadr[js][:, None] + off + np.arange(3)]
            out = out.at[qi].set(math.quat_integrate(q[qi], w, dt))
    return out


def integrate_activations(model: Model, act: Array, act_dot: Array, dt: Array) -> Array:
    """Advance activations (explicit Euler; exact for ``filterexact``), clamped to
    ``actrange`` where limited."""
    topo = model.topo
    if topo.na == 0:
        return act
    actadr = np.asarray(topo.actuator_actadr)
    idx = np.flatnonzero(actadr >= 0)
    exact = jnp.asarray(np.asarray(topo.actuator_dyntype)[idx] == DynType.FILTEREXACT)
    tau = model.actuator_tau[idx]
    h = jnp.where(exact, tau * (1.0 - jnp.exp(-dt / jnp.where(exact, tau, 1.0))), dt)
    new = act.at[actadr[idx]].add(act_dot[actadr[idx]] * h)
    lim = jnp.asarray(np.asarray(topo.actuator_actlimited)[idx])
    rng = model.actuator_actrange[idx]
    clamped = jnp.where(lim, jnp.clip(new[actadr[idx]], rng[:, 0], rng[:, 1]), new[actadr[idx]])
    return new.at[actadr[idx]].set(clamped)


Derivative = Callable[[Array, Array, Array], tuple[Array, Array]]


def euler(model: Model, q: Array, v: Array, act: Array, qacc: Array, act_dot: Array):
    """Semi-implicit Euler: ``v+ = v + dt a``, then ``q+`` from ``v+``."""
    dt = model.opt.timestep
    v_new = v + dt * qacc
    return integrate_positions(model, q, v_new, dt), v_new, integrate_activations(model, act, act_dot, dt)


def rk4(model: Model, q: Array, v: Array, act: Array, f: Derivative, qacc0: Array, act_dot0: Array):
    """Classic 4th-order Runge-Kutta on (q, v, act), control held over the step.

    ``f(q, v, act) -> (qacc, act_dot)``; ``qacc0, act_dot0`` are its value at the start.
    The three inner stages run in a ``lax.scan`` so ``f`` is traced once, not three times.
    """
    dt = model.opt.timestep
    dtype = v.dtype

    def stage(carry, weights):
        v_prev, acc_prev, adot_prev, v_sum, acc_sum, adot_sum = carry
        a, b = weights  # tableau row (A_i) and final weight (B_i)
        qi = integrate_positions(model, q, v_prev, a * dt)
        vi = v + a * dt * acc_prev
        acc_i, adot_i = f(qi, vi, act + a * dt * adot_prev)
        return (vi, acc_i, adot_i, v_sum + b * vi, acc_sum + b * acc_i, adot_sum + b * adot_i), None

    first = 1.0 / 6.0
    init = (v, qacc0, act_dot0, first * v, first * qacc0, first * act_dot0)
    weights = (jnp.array([0.5, 0.5, 1.0], dtype), jnp.array([1 / 3, 1 / 3, 1 / 6], dtype))
    (_, _, _, v_avg, acc_avg, adot_avg), _ = jax.lax.scan(stage, init, weights)
    return (integrate_positions(model, q, v_avg, dt), v + dt * acc_avg,
            integrate_activations(model, act, adot_avg, dt))
