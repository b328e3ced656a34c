"""Trajectory optimization through contact: open-loop controls found by jaxsim's
gradients, beside a zeroth-order optimizer and MJX's gradients.

    python experiments/trajopt.py {cube_push,bounce,walk,arm_push} [--iterations 100] [--targets N]
        [--smoothing M/S ...] [--out DIR]

Task ``cube_push`` (``jaxsim.trajopt.CubePushProblem``, the ``cube_push``
environment's scene): open-loop servo commands over 2 s (200 steps of 10 ms), 20
piecewise-constant pusher velocities, bring the 0.1 m cube from rest at the origin to
a target pose (x, y, yaw). The loss counts 1 cm of position error and 5 deg of yaw
error as 1 each, so a pose within both has a loss below about 2. Every optimizer
starts from the same guess, a straight push at 0.3 m/s through the cube's centre
towards the target (``straight_push``). Targets (x m, y m, yaw deg): ``PUSH_TARGETS``.

Task ``bounce`` (``jaxsim.trajopt.BounceProblem``): the throw's velocity (3 numbers)
sends a 5 cm ball (Springhead's contact model, restitution 0.6, frictionless, 1 ms
steps) off a wall 0.5 m away and the floor so that its centre is at a target point
0.7 s after the throw; solved within 1 cm, having bounced off both. Targets (x m, y
m, z m): ``BOUNCE_TARGETS``; every optimizer starts from a throw at (3, 0, -2) m/s.
The jaxsim gradient takes the impacts' derivative at the instant of contact
(``impact_gradient="time_of_impact"``); a further Adam run uses the step's own
derivative. MJX is not given this task: MuJoCo has no restitution coefficient, and
with an underdamped ``solref`` that rebounds a dropped ball at 0.60 in MuJoCo C
(time constant 5 ms, damping ratio 0.16), MJX 3.17 returned the thrown ball off the
wall at 0.95 of its speed (2.86 m/s back from 3; MuJoCo C 1.78), a wall as a box or
as a plane alike.

Task ``walk`` (``jaxsim.trajopt.QuadrupedGaitProblem``, ``jaxsim.quadruped``'s
implicit-PD quadruped): an open-loop periodic gait of its 50 position servos over 3 s
(150 steps of 20 ms) carries the trunk forward; solved at 1 m or more without falling
(trunk never below 0.5 m nor tilted past 60 deg). The gait has a 0.5 s period, two
harmonics per servo bounded by tanh to 0.3 rad, right servos following their left
twins half a period later (122 coefficients); every optimizer starts standing still
(all coefficients 0). Gaits of a 1 s period tipped over: along them the gradient of
the trunk's travel grew about tenfold per 0.5 s of horizon (0.5 to 400 from 0.5 s to
3 s), against 0.3 to 5.6 along a solved 0.5 s gait. MJX is not given this task:
MuJoCo C itself (``quadruped.mjcf(timestep=0.02)``, implicitfast) does not hold the
robot standing at zero ctrl at 20 ms, its velocities growing about 2.2x per step from
0.14 s to 5e7 rad/s at 0.4 s, when it flags the acceleration as unstable and resets
(at 10 ms it stands).

Task ``arm_push`` (``jaxsim.trajopt.ArmPushProblem``, gymnasium's ``pusher_v5.xml`` with
the object at 300 kg/m^3): the arm follows inverse-kinematics waypoints through a PD
controller for 4.2 s (420 steps of 10 ms); ``theta`` moves its four push waypoints in
the table plane (8 numbers); solved with the object within 1 cm of a target (x m, y
m): ``ARM_PUSH_TARGETS``. Every optimizer starts from the straight push (all zeros).
MJX runs the same MJCF text and controller (``MJXArmPush``).

Optimizers (the same loss, the same start, float32):

* ``jaxsim gradient``: Adam (optax, step ``--lr``) on ``value_and_grad`` of the loss;
  jaxsim differentiates the contact solves implicitly, not through their loops.
* ``jaxsim Jacobian (Levenberg-Marquardt)``: where the loss is a sum of squares (the
  problem has ``residuals``: the bounce), optimistix's Levenberg-Marquardt on them,
  one step per iteration, each on the residuals' Jacobian through the rollout.
* ``jaxsim CMA-ES``: evosax's CMA-ES on the same jaxsim rollouts, a population of 32
  per generation (vmapped), run until its best candidate solves the task or for
  ``--zo-budget`` (10) times the wall time the gradient run took (compile excluded on
  both sides): the curves compare the two at equal wall time, and the time each needs
  to solve the task.
* ``jaxsim gradient, gradient_smoothing S``: with ``--smoothing``, the same Adam on
  the gradient with the model's ``gradient_smoothing`` at S m/s (the rollouts are the
  same; their derivatives blend contact switches over S).
* ``MJX gradient``: the same Adam on MuJoCo MJX's gradient of the same scene
  (``mjx_cube_push_xml``: softer servos, which MuJoCo can integrate), in forward mode
  through MJX's solver loop (``MJXCubePush``: why); ``--no-mjx`` skips it.

Per instance and optimizer the script records the loss and the problem's metrics
(``metrics``: for the push position error (cm) and yaw error (deg)) against
iterations and wall time, and writes ``trajopt_TASK.json`` and a PNG of the curves
into ``--out`` (default ``experiments/results``). Needs the ``control`` extra
(evosax, optimistix).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsim.trajopt import ArmPushProblem, BounceProblem, CubePushProblem, QuadrupedGaitProblem
from jaxsim.xla_flags import use_fast_cpu_compile

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
# (x m, y m, yaw deg): a straight push, a push that also turns the cube, one to the side
PUSH_TARGETS = ((0.20, 0.00, 0.0), (0.20, 0.05, 20.0), (0.12, -0.10, -25.0))
# (x m, y m, z m) at 0.7 s, in front of the thrower (the wall is at x = 0.5 m)
BOUNCE_TARGETS = ((-0.40, 0.10, 0.45), (-0.65, -0.15, 0.52), (-0.20, 0.20, 0.42))
MJX_SERVO_KV = 30.0  # N s/m (mjx_cube_push_xml)
# (x m, y m) of the pusher's object at the end; the straight push takes it from (0.45, -0.05) to about (0.515, 0.053)
ARM_PUSH_TARGETS = ((0.55, 0.02), (0.47, 0.07), (0.53, 0.09))


def mjx_cube_push_xml(problem: CubePushProblem) -> str:
    """The ``cube_push`` scene as MJCF for MuJoCo MJX: the same bodies, masses,
    inertias, contact filtering, timestep and friction coefficient (0.5), velocity
    servos with the same +-10 N limit. Their gain is 30 N s/m instead of jaxsim's
    1000: MuJoCo integrates a servo at its force limit explicitly (the clamp has no
    velocity derivative), where 1000 N s/m on the 0.3 kg pusher at 10 ms swings
    between +10 and -10 N every step; 30 N s/m reaches the commanded velocity in one
    unclamped step."""
    from jaxsim.envs import cube_push as cp

    r, m = cp.PUSHER_RADIUS, cp.PUSHER_MASS
    pusher_inertia = 0.4 * m * r ** 2
    half, cube_mass = cp.CUBE_SIZE / 2, cp.CUBE_MASS
    cube_inertia = cube_mass * cp.CUBE_SIZE ** 2 / 6
    dt = float(problem.model.opt.timestep)
    servo = (f'kv="{MJX_SERVO_KV}" ctrllimited="true" ctrlrange="-{problem.max_speed} {problem.max_speed}" '
             f'forcelimited="true" forcerange="-{cp.SERVO_FORCE} {cp.SERVO_FORCE}"')
    return f"""<mujoco>
  <option timestep="{dt}" integrator="implicitfast" solver="Newton"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.5" contype="1" conaffinity="1"/>
    <body name="stage" pos="0 0 {cp.PUSHER_HEIGHT}">
      <inertial pos="0 0 0" mass="{cp.STAGE_MASS}" diaginertia="1e-6 1e-6 1e-6"/>
      <joint name="pusher_x" type="slide" axis="1 0 0" range="-0.6 0.6" limited="true"/>
      <body name="pusher">
        <inertial pos="0 0 0" mass="{m}" diaginertia="{pusher_inertia} {pusher_inertia} {pusher_inertia}"/>
        <joint name="pusher_y" type="slide" axis="0 1 0" range="-0.6 0.6" limited="true"/>
        <geom name="pusher" type="sphere" size="{r}" friction="0.5" contype="2" conaffinity="0"/>
      </body>
    </body>
    <body name="cube" pos="0 0 {half}">
      <inertial pos="0 0 0" mass="{cube_mass}" diaginertia="{cube_inertia} {cube_inertia} {cube_inertia}"/>
      <freejoint name="cube"/>
      <geom name="cube" type="box" size="{half} {half} {half}" friction="0.5" contype="1" conaffinity="3"/>
    </body>
  </worldbody>
  <actuator>
    <velocity joint="pusher_x" {servo}/>
    <velocity joint="pusher_y" {servo}/>
  </actuator>
</mujoco>"""


class _MJXProblem:
    """A ``jaxsim.trajopt`` problem rolled out by MJX on the MJCF text ``xml``: the
    problem's parametrization, loss, metrics and tolerance on MJX's final ``qpos``
    (``final_q``, the subclass's rollout)."""

    def __init__(self, problem, xml: str):
        import mujoco
        from mujoco import mjx

        self.problem, self._mjx = problem, mjx
        self.mx = mjx.put_model(mujoco.MjModel.from_xml_string(xml))
        self.d0 = mjx.make_data(self.mx)

    def initial_guess(self):
        return self.problem.initial_guess()

    def loss(self, theta):
        return self.problem.pose_loss(self.final_q(theta), theta)

    def metrics(self, theta):
        return self.problem.pose_metrics(self.final_q(theta))

    def solved(self, metrics):
        return self.problem.solved(metrics)


class MJXCubePush(_MJXProblem):
    """The same problem rolled out by MJX: ``problem``'s parametrization and loss, the
    scene of ``mjx_cube_push_xml`` with MuJoCo's default solver (Newton, 100
    iterations). MJX's solver loop is a ``while_loop``, which JAX's reverse mode
    rejects, and the usual way round it, one solver iteration (``opt.iterations =
    1``), sends this scene's cube flying (7 m away after the straight push in MuJoCo C
    itself). So the gradient is forward mode (``jax.jacfwd``: one tangent per entry
    of ``theta``, vmapped), which runs through the loop."""

    def __init__(self, problem: CubePushProblem):
        super().__init__(problem, mjx_cube_push_xml(problem))
        self.d0 = self.d0.replace(qpos=jnp.asarray(np.asarray(problem.state0.q), self.d0.qpos.dtype))

    def final_q(self, theta):
        def body(d, u):
            return self._mjx.step(self.mx, d.replace(ctrl=u)), None
        return jax.lax.scan(body, self.d0, self.problem.controls(theta))[0].qpos

    def value_and_grad(self, theta):
        return self.loss(theta), jax.jacfwd(self.loss)(theta)


class MJXArmPush(_MJXProblem):
    """``ArmPushProblem`` rolled out by MJX: the same MJCF text (``pusher_xml``), the
    same PD controller on MJX's ``qpos`` and ``qvel``, the same loss. As for the push,
    the gradient is forward mode, which runs through MJX's solver loop: one JVP per
    entry of ``theta`` in sequence (``lax.map``; vmapping them, as ``jax.jacfwd``
    does, took over 16 GB to compile on this scene)."""

    def __init__(self, problem: ArmPushProblem):
        super().__init__(problem, problem.xml)

    def final_q(self, theta):
        def body(d, target):
            ctrl = self.problem.control(d.qpos, d.qvel, target).astype(d.ctrl.dtype)
            return self._mjx.step(self.mx, d.replace(ctrl=ctrl)), None
        return jax.lax.scan(body, self.d0, self.problem.joint_targets(theta))[0].qpos

    def value_and_grad(self, theta):
        basis = jnp.eye(theta.size, dtype=theta.dtype).reshape((theta.size,) + theta.shape)
        slopes = jax.lax.map(lambda t: jax.jvp(self.loss, (theta,), (t,))[1], basis)
        return self.loss(theta), slopes.reshape(theta.shape)


def _record(curve: list, iteration: int, wall: float, metrics, theta, loss) -> None:
    """Append one point of a curve; ``metrics``: the task's jitted ``metrics``."""
    point = {"iteration": iteration, "wall_s": wall, "loss": float(loss)}
    point.update({k: float(v) for k, v in metrics(theta).items()})
    curve.append(point)


def optimize_gradient(task, iterations: int, lr: float, name: str = "jaxsim gradient (Adam)") -> dict:
    """Adam on the gradient of ``task.loss`` (a problem of ``jaxsim.trajopt`` or an
    MJX counterpart with its own ``value_and_grad``); ``wall_s`` excludes the first
    call's compile."""
    opt = optax.adam(lr)
    value_and_grad = jax.jit(getattr(task, "value_and_grad", None) or jax.value_and_grad(task.loss))
    metrics = jax.jit(task.metrics)
    theta = task.initial_guess()
    state = opt.init(theta)

    @jax.jit
    def update(theta, state, grad):
        updates, state = opt.update(grad, state, theta)
        return optax.apply_updates(theta, updates), state

    t0 = time.perf_counter()
    jax.block_until_ready(value_and_grad(theta))
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(metrics(theta))
    curve, wall = [], 0.0
    for i in range(iterations + 1):
        t0 = time.perf_counter()
        loss, grad = jax.block_until_ready(value_and_grad(theta))
        wall += time.perf_counter() - t0
        _record(curve, i, wall, metrics, theta, loss)
        if i == iterations or not np.all(np.isfinite(np.asarray(grad))):
            break
        t0 = time.perf_counter()
        theta, state = jax.block_until_ready(update(theta, state, grad))
        wall += time.perf_counter() - t0
    return {"optimizer": name, "lr": lr, "compile_s": compile_s, "curve": curve}


def optimize_cma_es(task, wall_budget: float, population: int, sigma: float, seed: int = 0) -> dict:
    """evosax's CMA-ES until the best candidate so far solves ``task`` (a problem of
    ``jaxsim.trajopt``), for at most ``wall_budget`` seconds (compile excluded)."""
    from evosax.algorithms import CMA_ES

    guess = task.initial_guess()
    strategy = CMA_ES(population_size=population, solution=guess)
    params = strategy.default_params.replace(std_init=sigma)
    losses = jax.jit(jax.vmap(task.loss))
    metrics = jax.jit(task.metrics)
    key = jax.random.PRNGKey(seed)
    state = strategy.init(key, guess, params)

    @jax.jit
    def generation(key, state):
        k_ask, k_tell = jax.random.split(key)
        population_, state = strategy.ask(k_ask, state, params)
        fitness = losses(population_)
        state, _ = strategy.tell(k_tell, population_, fitness, state, params)
        best = jnp.argmin(fitness)
        return state, population_[best], fitness[best]

    t0 = time.perf_counter()
    jax.block_until_ready(generation(key, state))
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(metrics(guess))
    best_theta, best_loss = guess, float(jax.jit(task.loss)(guess))
    curve, wall = [], 0.0
    _record(curve, 0, 0.0, metrics, best_theta, best_loss)
    g = 0
    while wall < wall_budget and not task.solved(curve[-1]):
        key, k = jax.random.split(key)
        t0 = time.perf_counter()
        state, theta, loss = jax.block_until_ready(generation(k, state))
        wall += time.perf_counter() - t0
        g += 1
        if float(loss) < best_loss:
            best_theta, best_loss = theta, float(loss)
        _record(curve, g, wall, metrics, best_theta, best_loss)
    return {"optimizer": f"jaxsim CMA-ES (population {population})", "sigma": sigma, "compile_s": compile_s,
            "curve": curve}


def with_gradient_smoothing(problem, smoothing: float):
    """A copy of ``problem`` whose model has ``gradient_smoothing`` = ``smoothing``
    m/s: the same rollouts and loss, a smoothed gradient."""
    variant = copy.copy(problem)
    opt = problem.model.opt
    variant.model = problem.model.replace(opt=opt.replace(
        gradient_smoothing=jnp.asarray(smoothing, opt.gradient_smoothing.dtype)))
    return variant


def optimize_least_squares(task, iterations: int, name: str = "jaxsim Jacobian (Levenberg-Marquardt)") -> dict:
    """optimistix's Levenberg-Marquardt on ``task.residuals`` (whose sum of squares is
    ``task.loss``), one solver step per iteration: each step takes the residuals'
    Jacobian through the rollout (forward mode, one tangent per entry of ``theta``)
    and a damped Gauss-Newton step. ``wall_s`` excludes the first call's compile."""
    import equinox as eqx  # optimistix's state holds non-array leaves: eqx.filter_jit traces only the arrays
    import optimistix as optx

    solver = optx.LevenbergMarquardt(rtol=1e-8, atol=1e-8)
    fn = lambda theta, _: (task.residuals(theta), None)  # noqa: E731
    theta = task.initial_guess()
    out_struct = jax.eval_shape(lambda t: fn(t, None), theta)
    state = solver.init(fn, theta, None, {}, out_struct[0], None, frozenset())
    step = eqx.filter_jit(lambda theta, state: solver.step(fn, theta, None, {}, state, frozenset())[:2])
    metrics, loss = jax.jit(task.metrics), jax.jit(task.loss)
    t0 = time.perf_counter()
    jax.block_until_ready(step(theta, state))
    compile_s = time.perf_counter() - t0
    jax.block_until_ready((metrics(theta), loss(theta)))
    curve, wall = [], 0.0
    _record(curve, 0, 0.0, metrics, theta, loss(theta))
    for i in range(1, iterations + 1):
        t0 = time.perf_counter()
        theta, state = jax.block_until_ready(step(theta, state))
        wall += time.perf_counter() - t0
        _record(curve, i, wall, metrics, theta, loss(theta))
        if task.solved(curve[-1]) or not np.all(np.isfinite(np.asarray(theta))):
            break
    return {"optimizer": name, "compile_s": compile_s, "curve": curve}


def first_solved(solved, curve: list) -> dict | None:
    """The first point of ``curve`` that ``solved`` (a problem's) accepts."""
    return next((p for p in curve if solved(p)), None)


def plot(results: list, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.6), squeeze=False)
    for ax, r in zip(axes[0], results):
        for run, style in zip(r["runs"], ("-", "--", "-.", ":")):
            c = run["curve"]
            line, = ax.plot([p["wall_s"] for p in c], [p["loss"] for p in c], style, label=run["optimizer"])
            hit = run["solved_at"]
            if hit:
                ax.plot([hit["wall_s"]], [hit["loss"]], "o", color=line.get_color())
        if min(p["loss"] for run in r["runs"] for p in run["curve"]) > 0:
            ax.set_yscale("log")
        ax.set_title(r["instance"], fontsize=9)
        ax.set_xlabel("wall time (s, compile excluded)")
        ax.set_ylabel("loss (dot: first solved)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


class Task(NamedTuple):
    """An experiment: ``instances(n)`` the first ``n`` of ``count`` (label, problem)
    pairs; Adam's step ``lr`` and CMA-ES' ``sigma`` (theta units); ``mjx``: the
    problem's MJX counterpart, or None where it is not run; ``variants``: problem ->
    [(name, problem)], the same task with other gradient settings, each also run by
    Adam."""
    instances: Callable[[int], list]
    count: int
    lr: float
    sigma: float
    mjx: Callable | None
    variants: Callable | None = None


def _push_instances(n: int) -> list:
    return [(f"target ({x:.2f} m, {y:.2f} m, {yaw:.0f} deg)", CubePushProblem((x, y, yaw)))
            for x, y, yaw in PUSH_TARGETS[:n]]


def _walk_instances(n: int) -> list:
    return [("3 s at dt = 20 ms", QuadrupedGaitProblem())][:n]


def _bounce_instances(n: int) -> list:
    return [(f"target ({x:.2f} m, {y:.2f} m, {z:.2f} m) at 0.7 s", BounceProblem((x, y, z)))
            for x, y, z in BOUNCE_TARGETS[:n]]


def _arm_push_instances(n: int) -> list:
    return [(f"target ({x:.2f} m, {y:.2f} m)", ArmPushProblem((x, y))) for x, y in ARM_PUSH_TARGETS[:n]]


def _bounce_step_derivative(problem: BounceProblem) -> list:
    return [("jaxsim gradient, impacts' step derivative (Adam)",
             BounceProblem(tuple(np.asarray(problem.target).tolist()), impact_gradient="step"))]


TASKS = {
    "cube_push": Task(_push_instances, len(PUSH_TARGETS), lr=0.2, sigma=0.3, mjx=MJXCubePush),
    "bounce": Task(_bounce_instances, len(BOUNCE_TARGETS), lr=0.03, sigma=0.3, mjx=None,
                   variants=_bounce_step_derivative),
    "walk": Task(_walk_instances, 1, lr=0.03, sigma=0.1, mjx=None),
    "arm_push": Task(_arm_push_instances, len(ARM_PUSH_TARGETS), lr=0.1, sigma=0.3, mjx=MJXArmPush),
}


def summary(run: dict) -> str:
    last, hit = run["curve"][-1], run["solved_at"]
    errors = ", ".join(f"{k} {v:.3g}" for k, v in last.items() if k not in ("iteration", "wall_s", "loss"))
    return (f"{run['optimizer']:34s} final loss {last['loss']:9.3g} ({errors}) after {last['iteration']} "
            f"iterations, {last['wall_s']:6.1f} s; solved: "
            + (f"iteration {hit['iteration']}, {hit['wall_s']:.1f} s" if hit else "never"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("--iterations", type=int, default=100, help="gradient iterations")
    p.add_argument("--lr", type=float, help="Adam's step size (theta units; default: the task's)")
    p.add_argument("--targets", type=int, help="how many of the task's built-in instances (default: all)")
    p.add_argument("--population", type=int, default=32, help="CMA-ES population")
    p.add_argument("--sigma", type=float, help="CMA-ES initial step size (theta units; default: the task's)")
    p.add_argument("--zo-budget", type=float, default=10.0,
                   help="CMA-ES' wall-time budget in units of the gradient run's")
    p.add_argument("--no-mjx", action="store_true", help="skip the MJX gradient run")
    p.add_argument("--smoothing", type=float, nargs="*", default=[],
                   help="further Adam runs with the model's gradient_smoothing at these speeds (m/s)")
    p.add_argument("--out", default=RESULTS)
    a = p.parse_args()
    if any(s <= 0 for s in a.smoothing):
        p.error(f"--smoothing takes speeds above 0 m/s, got {a.smoothing}")
    task = TASKS[a.task]
    n = task.count if a.targets is None else a.targets
    if not 1 <= n <= task.count:
        p.error(f"--targets must be 1 to {task.count} for {a.task}, got {a.targets}")
    lr = task.lr if a.lr is None else a.lr
    sigma = task.sigma if a.sigma is None else a.sigma
    use_fast_cpu_compile()
    results = []
    for label, problem in task.instances(n):
        grad_run = optimize_gradient(problem, a.iterations, lr)
        budget = a.zo_budget * grad_run["curve"][-1]["wall_s"]
        runs = [grad_run, optimize_cma_es(problem, budget, a.population, sigma)]
        for name, variant in (task.variants(problem) if task.variants else []):
            runs.append(optimize_gradient(variant, a.iterations, lr, name))
        if hasattr(problem, "residuals"):
            runs.append(optimize_least_squares(problem, a.iterations))
        for s in a.smoothing:
            runs.append(optimize_gradient(with_gradient_smoothing(problem, s), a.iterations, lr,
                                          f"jaxsim gradient, gradient_smoothing {s:g} m/s (Adam)"))
        if task.mjx is not None and not a.no_mjx:
            runs.append(optimize_gradient(task.mjx(problem), a.iterations, lr, "MJX gradient (Adam)"))
        for run in runs:
            run["solved_at"] = first_solved(problem.solved, run["curve"])
            print(f"{label}: {summary(run)}", flush=True)
        results.append({"instance": label, "runs": runs})
    os.makedirs(a.out, exist_ok=True)
    machine = {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
               "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    stem = os.path.join(a.out, f"trajopt_{a.task}")
    with open(stem + ".json", "w") as f:
        json.dump({"machine": machine, "args": vars(a), "lr": lr, "sigma": sigma, "results": results}, f, indent=1)
    plot(results, stem + ".png")
    print(f"wrote {stem}.json and .png")


if __name__ == "__main__":
    main()
