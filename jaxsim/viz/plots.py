"""What a rollout did, as time series and matplotlib figures: contact normal force
and centre of pressure (of the pendulum and cube scenes), energy, and contact-QP
iterations.

Each ``plot_*`` has a data twin returning plain NumPy arrays, so the numbers can be
checked or plotted elsewhere. All take a trajectory ``State`` with a leading time axis
(T, ...) as ``rollout`` returns; for a batch (B, T, ...) pick one with ``env``.

Normal force of a contact slot: its normal impulse over the step, divided by the time
step (N). A body's normal force sums its slots, whichever side of the pair it is on.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxsim.contact import query
from jaxsim.contact.space import slot_info
from jaxsim.dynamics import energy as _energy
from jaxsim.kinematics import forward_kinematics
from jaxsim.types import Model, State
from jaxsim.viz.viewer import _model_of


def _select(traj: State, env: int | None, who: str) -> State:
    """One environment's trajectory, time axis first."""
    if not isinstance(traj, State):
        raise TypeError(f"{who}: traj must be a jaxsim State with a time axis, got {type(traj).__name__}")
    ndim = np.ndim(traj.time)
    if ndim == 0:
        raise ValueError(f"{who}: traj is a single State; pass the trajectory rollout returns (time axis first)")
    if ndim == 1:
        if env is not None:
            raise ValueError(f"{who}: env={env} given but traj holds a single environment")
        return traj
    n = np.shape(traj.time)[0]
    if env is None:
        raise ValueError(f"{who}: traj holds {n} environments; choose one with env=")
    if not -n <= env < n:
        raise ValueError(f"{who}: env={env} out of range for a batch of {n}")
    return jax.tree.map(lambda x: x[env], traj)


def _one_env(model: Model, traj: State, env: int | None, who: str) -> tuple[Model, State]:
    """``(model, traj)`` of one environment (``model`` may be a batch of models)."""
    traj = _select(traj, env, who)
    if np.ndim(model.body_mass) == 2 and env is None:
        raise ValueError(f"{who}: model is a batch of models; choose one with env=")
    return _model_of(model, env), traj


def _slot_normal_force(model: Model, traj: State) -> np.ndarray:
    """(T, ncon) N, each slot's normal force (from ``jaxsim.contact_forces``), 0 where
    inactive."""
    f = query.contact_forces(model, traj)
    return np.sum(np.asarray(f.force2_w) * np.asarray(f.normal_w), -1)


def _body_index(model: Model, body) -> int:
    if isinstance(body, str):
        return model.body_id(body)
    b = int(body)
    if not 0 <= b < model.topo.nbody:
        raise ValueError(f"body {b} out of range: the model has {model.topo.nbody} bodies")
    return b


def contact_forces(model: Model, traj: State, by: str = "body", env: int | None = None):
    """Contact normal force over time, per body or per contact slot.

    Args:
      model: the Model the rollout ran.
      traj: trajectory State (T, ...) or batch (B, T, ...).
      by: ``"body"``: one column per body that carried contact force at some step
        (world excluded); ``"contact"``: one column per contact slot that did.
      env: which environment of a batch.

    Returns:
      ``(time, labels, force)``: time (T,) s, a list of K column names, force (T, K) N.
    """
    if by not in ("body", "contact"):
        raise ValueError(f"contact_forces: by must be 'body' or 'contact', got {by!r}")
    model, traj = _one_env(model, traj, env, "contact_forces")
    time = np.asarray(traj.time)
    if np.shape(traj.contact.active)[-1] == 0:
        return time, [], np.zeros((len(time), 0))
    fn = _slot_normal_force(model, traj)
    info, topo = slot_info(model.topo), model.topo
    if by == "contact":
        cols = np.flatnonzero(np.abs(fn).max(0) > 0)
        labels = [f"{topo.geom_name[info.geom1[c]] or f'geom{info.geom1[c]}'} / "
                  f"{topo.geom_name[info.geom2[c]] or f'geom{info.geom2[c]}'} #{c}" for c in cols]
        return time, labels, fn[:, cols]
    per_body = np.zeros((len(time), topo.nbody))
    np.add.at(per_body.T, info.body1, fn.T)  # each body feels the slot's normal force
    np.add.at(per_body.T, info.body2, fn.T)
    cols = [b for b in range(1, topo.nbody) if np.abs(per_body[:, b]).max() > 0]
    return time, [topo.body_name[b] or f"body{b}" for b in cols], per_body[:, cols]


def center_of_pressure(model: Model, traj: State, body, env: int | None = None):
    """Centre of pressure of ``body``'s contacts over time: the normal-force-weighted
    mean of its contact points.

    Args:
      body: body name or index.

    Returns:
      ``(time, cop, normal_force)``: time (T,) s, cop (T, 3) m in the world frame (NaN
      at steps without contact force), and the body's total normal force (T,) N.
    """
    model, traj = _one_env(model, traj, env, "center_of_pressure")
    b = _body_index(model, body)
    time = np.asarray(traj.time)
    if np.shape(traj.contact.active)[-1] == 0:
        return time, np.full((len(time), 3), np.nan), np.zeros(len(time))
    info = slot_info(model.topo)
    fn = _slot_normal_force(model, traj) * ((info.body1 == b) | (info.body2 == b))
    total = fn.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cop = np.einsum("tc,tci->ti", fn, np.asarray(traj.contact.pos_w)) / total[:, None]
    return time, np.where(total[:, None] > 0, cop, np.nan), total


@jax.jit
def _energies(model: Model, q, v):
    return jax.vmap(lambda q, v: _energy(model, forward_kinematics(model, q), v))(q, v)


def energy(model: Model, traj: State, env: int | None = None):
    """Kinetic and gravitational potential energy over time (springs not included).

    Returns:
      ``(time, kinetic, potential)``, each (T,), s and J.
    """
    model, traj = _one_env(model, traj, env, "energy")
    kinetic, potential = _energies(model, traj.q, traj.v)
    return np.asarray(traj.time), np.asarray(kinetic), np.asarray(potential)


def solver_iterations(traj: State, env: int | None = None):
    """Contact-QP iterations of each step: ``(time, iterations)``, each (T,)."""
    traj = _select(traj, env, "solver_iterations")
    return np.asarray(traj.time), np.asarray(traj.solver.iterations)


# ---------------------------------------------------------------- figures


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the plots need matplotlib: pip install -e '.[viz]' in the jaxsim checkout") from e
    return plt


def _axes(ax):
    if ax is not None:
        return ax.figure, ax
    fig, ax = _plt().subplots(figsize=(6.4, 3.6), layout="constrained")
    return fig, ax


def plot_contact_forces(model: Model, traj: State, by: str = "body", env: int | None = None, ax=None):
    """Contact normal force over time, one line per body (or contact slot); returns
    the matplotlib Figure (drawn into ``ax`` when given)."""
    time, labels, force = contact_forces(model, traj, by, env)
    model, traj = _one_env(model, traj, env, "plot_contact_forces")
    fig, ax = _axes(ax)
    for k, name in enumerate(labels):
        ax.plot(time, force[:, k], lw=1.2, label=name)
    if labels:
        total = _slot_normal_force(model, traj).sum(1)  # every contact once
        weight = float(np.sum(model.body_mass)) * -float(model.opt.gravity[2])
        ax.plot(time, total, color="k", lw=0.8, ls="--", label="all contacts")
        ax.axhline(weight, color="0.5", lw=0.8, ls=":", label="total weight")
        ax.legend(fontsize=7, ncols=2 if len(labels) > 4 else 1)
    ax.set(xlabel="time (s)", ylabel="normal force (N)", title=f"contact normal force per {by}")
    return fig


def plot_center_of_pressure(model: Model, traj: State, body, env: int | None = None, ax=None):
    """x and y of ``body``'s centre of pressure over time; returns the Figure."""
    time, cop, _ = center_of_pressure(model, traj, body, env)
    fig, ax = _axes(ax)
    ax.plot(time, 1e3 * cop[:, 0], label="x")
    ax.plot(time, 1e3 * cop[:, 1], label="y")
    model = _one_env(model, traj, env, "plot_center_of_pressure")[0]
    name = model.topo.body_name[_body_index(model, body)]
    ax.set(xlabel="time (s)", ylabel="position (mm)", title=f"centre of pressure of {name}")
    ax.legend(fontsize=8)
    return fig


def plot_energy(model: Model, traj: State, env: int | None = None, ax=None):
    """Kinetic, potential and total energy over time; returns the Figure."""
    time, kinetic, potential = energy(model, traj, env)
    fig, ax = _axes(ax)
    ax.plot(time, kinetic, label="kinetic")
    ax.plot(time, potential - potential[0], label="potential (from start)")
    ax.plot(time, kinetic + potential - potential[0], color="k", label="total")
    ax.set(xlabel="time (s)", ylabel="energy (J)", title="energy")
    ax.legend(fontsize=8)
    return fig


def plot_solver_iterations(traj: State, env: int | None = None, ax=None):
    """Contact-QP iterations per step; returns the Figure."""
    time, iters = solver_iterations(traj, env)
    fig, ax = _axes(ax)
    ax.plot(time, iters, lw=0.8, drawstyle="steps-post")
    ax.set(xlabel="time (s)", ylabel="iterations", title=f"contact QP iterations (mean {iters.mean():.1f})")
    return fig


def plot_summary(model: Model, traj: State, env: int | None = None, body=None):
    """2 x 2 overview: normal force per body, the centre of pressure of ``body``
    (default: the body that carried the most contact impulse), energy and QP
    iterations. Returns the Figure."""
    fig, axes = _plt().subplots(2, 2, figsize=(11, 6.5), layout="constrained")
    plot_contact_forces(model, traj, "body", env, ax=axes[0, 0])
    if body is None:
        _, labels, force = contact_forces(model, traj, "body", env)
        body = labels[int(np.argmax(force.sum(0)))] if labels else 0
    plot_center_of_pressure(model, traj, body, env, ax=axes[0, 1])
    plot_energy(model, traj, env, ax=axes[1, 0])
    plot_solver_iterations(traj, env, ax=axes[1, 1])
    return fig
