"""Shared fixtures: float64 everywhere (reference tests need it), XLA's faster CPU
compile (``jaxsim.xla_flags``), a less eager garbage collector, model file lists, and
compiled code released before a worker runs out of memory mappings."""

import contextlib
import functools
import gc
import os
import weakref

import jax
import pytest

from jaxsim.xla_flags import FAST_CPU_COMPILE, use_fast_cpu_compile

# before any test starts JAX's backend: XLA's compiles are most of the suite's time.
# The suite's rollouts are short, so it also compiles at XLA's backend optimization
# level 0 without LLVM's expensive passes (a 100-step cube rollout gradient: 8.5 s
# instead of 11.6 s at level 1, running 7 % slower); programs that users run long keep
# XLA's default level
use_fast_cpu_compile(flags=FAST_CPU_COMPILE + ("--xla_backend_optimization_level=0",
                                                "--xla_llvm_disable_expensive_passes=true"))
# per-program options (``jax.jit(..., compiler_options=RUNS_LONG)``) for the few tests
# whose program runs many times: XLA's default level, which runs them 2-5x faster
RUNS_LONG = {"xla_backend_optimization_level": 2, "xla_llvm_disable_expensive_passes": False}
jax.config.update("jax_enable_x64", True)

# Tracing and lowering allocate millions of short-lived Python objects. At Python's
# default thresholds (700 allocations) the collector runs constantly, and its full
# passes walk every object the imports and JAX's caches hold. Imported modules are
# frozen out of the collector and the young generation collected 70x less often:
# 7 % less CPU on the parameter-gradient, dynamics and MuJoCo-reference modules.
gc.collect()
gc.freeze()
gc.set_threshold(50_000, 20, 100)

# Linux caps a process at vm.max_map_count (65,530) memory mappings. Each test leaves
# its compiled programs in JAX's caches, about 1,600 mappings for a rollout gradient,
# and one compile can need 14,000 more while it runs; an xdist worker that has run a
# few hundred tests then aborts inside XLA ("Fatal Python error: Aborted", no other
# message), as two fresh-clone CI runs did in test_volume_model's gradient test. Past
# this count the caches are cleared after the test (a later test recompiles what it
# shares with earlier ones, which is rare).
MAPPINGS_BEFORE_CLEARING = 25_000


def _mappings() -> int:
    try:
        with open(f"/proc/{os.getpid()}/maps") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such cap to watch
        return 0


@pytest.fixture(autouse=True)
def _release_compiled_code():
    yield
    if _mappings() > MAPPINGS_BEFORE_CLEARING:
        jax.clear_caches()
        gc.collect()


# the modules holding the longest tests (float32 subprocess runs, notebooks, training,
# gradients), longest first (about 220 s down to 40 s on 2 cores), run before the
# others: pytest-xdist hands out modules (``--dist loadfile``) in collection order, and
# a long one started last would keep a worker busy while the other has nothing left
LONGEST_FIRST = ("test_robustness.py", "test_notebooks.py", "test_envs.py", "test_parameter_gradients.py",
                 "test_mujoco_reference.py", "test_contact.py", "test_parallel.py", "test_contact_models.py",
                 "test_transforms.py", "test_springhead.py", "test_trajopt_arm_push.py", "test_volume_model.py",
                 "test_trajopt_bounce.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept otherwise


@contextlib.contextmanager
def count_compiles():
    """Yields a list that collects one entry per XLA backend compile while the block
    runs (JAX's own compile events, whatever compiled)."""
    compiled = []

    def listen(event, seconds, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield compiled
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


_VJP_PROGRAMS = weakref.WeakKeyDictionary()  # f -> its jitted (value, VJP)


def check_grads_rev(f, args, atol=None, rtol=None, eps=None):
    """``jax.test_util.check_grads(f, args, order=1, modes=("rev",), ...)`` with one
    compile instead of three: the same check (``check_vjp``: the VJP of a random
    cotangent against a central finite difference along a random tangent, with the same
    random draws, tolerances and step), but ``f``'s value and its VJP come out of one
    jitted program. ``check_grads`` on ``jax.jit(f)`` compiles ``f``, its JVP and the
    JVP's transpose separately, and on a simulation step each compile takes seconds.

    ``f`` takes and returns arrays (no jit of its own needed); calls with the same ``f``
    share the compiled program."""
    from jax.test_util import check_vjp

    if f not in _VJP_PROGRAMS:
        @jax.jit
        def value_and_vjp(args, cotangent):
            out, pullback = jax.vjp(f, *args)
            return out, pullback(cotangent)
        _VJP_PROGRAMS[f] = value_and_vjp
    value_and_vjp = _VJP_PROGRAMS[f]
    args = tuple(args)
    zeros = jax.tree.map(lambda a: jax.numpy.zeros(a.shape, a.dtype), jax.eval_shape(f, *args))

    def value(*a):
        return value_and_vjp(a, zeros)[0]

    def f_vjp(*a):
        return value(*a), lambda cotangent: value_and_vjp(a, cotangent)[1]

    step = {} if eps is None else {"eps": eps}  # check_vjp's default step is check_grads' too
    check_vjp(value, f_vjp, args, atol=atol, rtol=rtol, **step)


def gymnasium_dir():
    gymnasium = pytest.importorskip("gymnasium")
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def dm_control_dir():
    dm_control = pytest.importorskip("dm_control")
    return os.path.join(os.path.dirname(dm_control.__file__), "suite")


def reference_model_files():
    """(id, path) of every MJCF model shipped with gymnasium and dm_control's suite."""
    out = []
    for prefix, folder in (("gym", gymnasium_dir()), ("dmc", dm_control_dir())):
        for f in sorted(os.listdir(folder)):
            if f.endswith(".xml"):
                out.append((f"{prefix}/{f[:-4]}", os.path.join(folder, f)))
    return out


def example_robot_data_dir():
    """example-robot-data's ``robots`` folder (its URDFs use ``package://`` URIs)."""
    from jaxsim.robots import robot_file

    return robot_file("").rstrip(os.sep)


URDF_ROBOTS = {  # id: (path under example_robot_data_dir(), compile_urdf options)
    "urdf/solo12": ("solo_description/robots/solo12.urdf", {"floating_base": True}),
    "urdf/go2": ("go2_description/urdf/go2.urdf", {"floating_base": True}),
    "urdf/panda": ("panda_description/urdf/panda.urdf", {}),
}


ROLLOUT_CHUNK = 100  # steps per compiled rollout piece


@functools.cache
def _jitted_rollout():
    import jaxsim

    return jax.jit(jaxsim.rollout)


def rollout_in_chunks(model, state, ctrls, chunk=ROLLOUT_CHUNK):
    """``jax.jit(jaxsim.rollout)(model, state, ctrls)`` run as consecutive pieces of
    ``chunk`` steps (when the length is a multiple of it): the same states, but one
    compiled program per model structure instead of one per rollout length, shared by
    every test of a worker that rolls out a Model of that structure."""
    roll, steps = _jitted_rollout(), ctrls.shape[0]
    if steps % chunk or steps == chunk:
        return roll(model, state, ctrls)
    pieces = []
    for k in range(0, steps, chunk):
        state, traj = roll(model, state, ctrls[k:k + chunk])
        pieces.append(traj)
    return state, jax.tree.map(lambda *a: jax.numpy.concatenate(a), *pieces)


def adam_descent(value_and_grad, theta, lr: float, steps: int):
    """``steps`` Adam updates (optax, step ``lr``) on a jitted ``value_and_grad``:
    ``(losses, theta)`` with the loss before each update and after the last
    (``steps + 1`` values) and the final ``theta``."""
    import optax

    opt = optax.adam(lr)
    state, losses = opt.init(theta), []
    for _ in range(steps):
        loss, grad = value_and_grad(theta)
        losses.append(float(loss))
        updates, state = opt.update(grad, state, theta)
        theta = optax.apply_updates(theta, updates)
    losses.append(float(value_and_grad(theta)[0]))
    return losses, theta


def check_directional_derivatives(value_and_grad, theta, directions, h: float, rtol: float, atol: float,
                                  min_change: float):
    """The gradient of a jitted ``value_and_grad`` at ``theta`` against central
    differences of step ``h`` along each of ``directions`` (k, *theta.shape); each
    difference must exceed ``min_change`` in magnitude (the loss depends on theta)."""
    import jax.numpy as jnp
    import numpy as np

    loss, grad = value_and_grad(theta)
    assert np.isfinite(float(loss)) and np.all(np.isfinite(np.asarray(grad)))
    for k, direction in enumerate(directions):
        fd = (value_and_grad(theta + h * direction)[0] - value_and_grad(theta - h * direction)[0]) / (2 * h)
        np.testing.assert_allclose(float(jnp.sum(direction * grad)), float(fd), rtol=rtol, atol=atol,
                                   err_msg=f"direction {k}")
        assert abs(float(fd)) > min_change


def box_and_ball_source(box_z: float = 0.06, ball_z: float | None = 0.05) -> str:
    """Python source that builds ``model``: a 0.1 m, 0.5 kg box (and, unless ``ball_z``
    is None, a 4 cm, 0.2 kg ball 0.2 m beside it) above a floor, float64, for the
    scripts the device and process tests run in subprocesses (JAX's device count is
    fixed when a process starts)."""
    lines = ["b = jaxsim.ModelBuilder(timestep=2e-3, solver_tol=1e-12)",
             'b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.6, 0.6))',
             f'b.add_body("box", pos=(0, 0, {box_z}), mass=0.5, inertia=(1e-3,) * 3)',
             'b.add_joint("box", "free")',
             'b.add_geom("box", "box", (0.05, 0.05, 0.05))']
    if ball_z is not None:
        lines += [f'b.add_body("ball", pos=(0.2, 0, {ball_z}), mass=0.2, inertia=(2e-4,) * 3)',
                  'b.add_joint("ball", "free")',
                  'b.add_geom("ball", "sphere", (0.04,))']
    return "\n".join(lines + ["model = b.build(jnp.float64)"]) + "\n"
