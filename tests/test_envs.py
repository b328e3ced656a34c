"""``jaxsim.envs``: every built-in task behind Brax's interface, driven by Brax's own
training wrappers (vmap, episode length, auto-reset, domain randomization).

Per task, one compiled program checks the contract: observation and action shapes and
dtypes, ``jit(vmap(step))`` through ``brax.envs.wrappers.training.wrap``, and an
episode end that resets only the env that reached it. The gradient of the reward in
the actions is finite and non-zero (the larger robots' behind the ``benchmark``
marker); on the cart-pole it matches central finite differences in float64, per-env
models from ``jaxsim.randomize`` through Brax's ``randomization_fn`` change the
trajectory as the drawn masses say, and Brax's APG learns to balance the pole. PPO
trains the cart-pole in ``notebooks/04_training.ipynb``, which the notebook test runs
and which checks that the evaluation reward rose.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("brax")
from brax.envs.wrappers import training  # noqa: E402

import jaxsim  # noqa: E402
import jaxsim.envs  # noqa: E402
from jaxsim.envs.quadruped_walk import MIN_HEIGHT  # noqa: E402
from conftest import check_grads_rev  # noqa: E402

BATCH = 3
EPISODE = 4  # env steps; env 0 is put one step before its episode's end
# the gradient through a whole env step with contact takes 20 s (cube_push) to 100 s
# to compile on two cores: the default suite checks it on the cart-pole, against finite
# differences (contact rollouts' gradients: test_parameter_gradients.py)
HEAVY = ("cube_push", "ant", "humanoid", "quadruped_walk", "go2_terrain")
# the legged walk's optional observation and reward terms, checked in its contract run
# (fall_margin puts the hinges' knees at 0.84 m and 1 deg, so that they act at the reset;
# the speed cap is below the reset's speeds, so that it saturates)
LEGGED_OPTIONS = dict(gait_period=0.8, heading_observation=True, height_reward_weight=2.0, upright_reward_weight=0.5,
                      rock_cost_weight=100.0, forward_speed_cap=0.01, fall_margin_weight=30.0,
                      fall_margin=(0.34, 59.0))


def _hinge(x):
    return 0.02 * np.logaddexp(0.0, x / 0.02)  # 0.02 softplus(x / 0.02)


def _check_legged_options(env, s0, s1):
    """The gait clock and the world x axis in the trunk frame end the observation; the
    forward term is the capped ``c tanh(vx / c)`` of the trunk's x travel; the reward
    adds the posture terms of the trunk's height above the fall height, its up axis' z
    (from its quaternion), its squared roll and pitch rates and the fall-margin hinges
    (envs 1: only, env 0 was reset after its step)."""
    ps = s1.pipeline_state
    phase = 2 * np.pi * np.asarray(ps.time) / LEGGED_OPTIONS["gait_period"]
    obs = np.asarray(s1.obs)
    np.testing.assert_allclose(obs[:, -5:-3], np.stack([np.cos(phase), np.sin(phase)], -1), atol=1e-6)
    w, x, y, z = np.asarray(ps.q, np.float64)[:, 3:7].T
    heading = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1)  # R^T e_x
    np.testing.assert_allclose(obs[:, -3:], heading, atol=1e-5)
    q = np.asarray(ps.q, np.float64)[1:]
    up_z = q[:, 3] ** 2 - q[:, 4] ** 2 - q[:, 5] ** 2 + q[:, 6] ** 2  # R[2, 2] of a unit (w, x, y, z)
    rock = np.sum(np.asarray(ps.v, np.float64)[1:, 3:5] ** 2, axis=-1)
    assert np.all(rock > 1e-4)  # the reset's velocity noise rocks the trunk: the term is seen
    margin_height, margin_deg = LEGGED_OPTIONS["fall_margin"]
    margin_up = np.cos(np.radians(60.0 - margin_deg))
    hinges = _hinge(MIN_HEIGHT + margin_height - q[:, 2]) + _hinge(margin_up - up_z)
    assert np.all(hinges > 1e-3)
    posture = (LEGGED_OPTIONS["height_reward_weight"] * (q[:, 2] - MIN_HEIGHT)
               + LEGGED_OPTIONS["upright_reward_weight"] * up_z - LEGGED_OPTIONS["rock_cost_weight"] * rock
               - LEGGED_OPTIONS["fall_margin_weight"] * hinges)
    m = {k: np.asarray(v)[1:] for k, v in s1.metrics.items()}
    np.testing.assert_allclose(m["reward_posture"], posture, rtol=1e-5, atol=1e-5)
    cap = LEGGED_OPTIONS["forward_speed_cap"]
    vx = (q[:, 0] - np.asarray(s0.pipeline_state.q, np.float64)[1:, 0]) / float(env.dt)
    assert np.max(np.abs(vx)) > 3 * cap  # saturated there: the linear term would differ
    np.testing.assert_allclose(m["reward_forward"], cap * np.tanh(vx / cap), rtol=1e-4, atol=1e-6)
    total = m["reward_forward"] + m["reward_ctrl"] + m["reward_survive"] + m["reward_posture"]
    np.testing.assert_allclose(np.asarray(s1.reward)[1:], total, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", jaxsim.envs.names())
def test_task_contract_through_brax_wrappers(name):
    """Shapes and dtypes, and one ``jit(vmap(step))`` through Brax's training wrappers
    in which env 0 reaches its episode's end: it alone is done and is put back at its
    first state by the auto-reset, the others go on. The quadruped walk runs with its
    optional gait clock and posture rewards (``_check_legged_options``)."""
    legged = name == "quadruped_walk"
    env = jaxsim.envs.get(name, **(LEGGED_OPTIONS if legged else {}))
    assert env.backend == "jaxsim" and env.unwrapped is env
    assert float(env.dt) == pytest.approx(float(env.sys.opt.timestep) * env.n_frames)
    wrapped = training.wrap(env, episode_length=EPISODE)
    dtype = env.sys.dtype

    @jax.jit
    def run(keys, action):
        s0 = wrapped.reset(keys)
        s0.info["steps"] = s0.info["steps"].at[0].set(EPISODE - 1)  # env 0's episode ends next step
        return s0, wrapped.step(s0, action)

    keys = jax.random.split(jax.random.PRNGKey(0), BATCH)
    action = jax.random.uniform(jax.random.PRNGKey(1), (BATCH, env.action_size), dtype, -0.5, 0.5)
    s0, s1 = run(keys, action)
    assert s0.obs.shape == (BATCH, env.observation_size) and s0.obs.dtype == dtype
    assert s1.reward.shape == (BATCH,) and s1.reward.dtype == dtype and s1.done.shape == (BATCH,)
    assert set(s0.metrics) == set(s1.metrics)
    for s in (s0, s1):
        assert np.isfinite(np.asarray(s.obs)).all() and np.isfinite(np.asarray(s.reward)).all()
    assert float(s1.done[0]) == 1.0 and float(s1.info["truncation"][0]) == 1.0
    assert not np.asarray(s1.done[1:]).any()
    np.testing.assert_array_equal(np.asarray(s1.pipeline_state.q[0]), np.asarray(s0.pipeline_state.q[0]))
    np.testing.assert_array_equal(np.asarray(s1.obs[0]), np.asarray(s0.obs[0]))
    assert not np.array_equal(np.asarray(s1.pipeline_state.q[1:]), np.asarray(s0.pipeline_state.q[1:]))
    np.testing.assert_array_equal(np.asarray(s1.info["steps"]), [EPISODE, 1, 1])
    if legged:
        assert env.observation_size == jaxsim.envs.get(name).observation_size + 5
        _check_legged_options(env, s0, s1)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.benchmark) if n in HEAVY else n
                                  for n in jaxsim.envs.names() if n != "cartpole"])  # cartpole: below
def test_reward_gradient_in_the_actions(name):
    """The gradient of two env steps' summed reward with respect to the actions is
    finite and not zero (the reward depends on the action, through the physics too)."""
    env = jaxsim.envs.get(name)

    @jax.jit
    def grad(rng, actions):
        def reward_sum(actions):
            def body(s, a):
                s = env.step(s, a)
                return s, s.reward
            return jnp.sum(jax.lax.scan(body, env.reset(rng), actions)[1])
        return jax.grad(reward_sum)(actions)

    actions = jax.random.uniform(jax.random.PRNGKey(1), (2, env.action_size), env.sys.dtype, -0.5, 0.5)
    g = np.asarray(grad(jax.random.PRNGKey(0), actions))
    assert g.shape == (2, env.action_size) and np.isfinite(g).all() and np.abs(g).max() > 0


def test_registry():
    assert {"cartpole", "cube_push", "ant", "humanoid", "quadruped_walk", "go2_terrain"} <= set(jaxsim.envs.names())
    with pytest.raises(ValueError, match="unknown environment 'nope'.*cartpole"):
        jaxsim.envs.get("nope")
    from jaxsim.envs.cartpole import Cartpole
    jaxsim.envs.register("cartpole_slow_reset", functools.partial(Cartpole, reset_noise=0.1))
    try:
        assert isinstance(jaxsim.envs.get("cartpole_slow_reset"), Cartpole)
    finally:
        jaxsim.envs._REGISTRY.pop("cartpole_slow_reset")
    with pytest.raises(ValueError, match="must be callable"):
        jaxsim.envs.register("x", 3)


class _CountdownEnv(jaxsim.envs.Env):
    """Counts its steps; an episode ends after a length drawn at reset (1-5 steps)."""

    def reset(self, rng):
        length = jax.random.randint(rng, (), 1, 6).astype(jnp.float32)
        zero = jnp.zeros(())
        return jaxsim.envs.State(zero, jnp.stack([zero, length]), zero, zero,
                                 metrics={"count": zero, "length": length}, info={})

    def step(self, state, action):
        count = state.obs[0] + 1.0 + 0.0 * action[0]
        done = (count >= state.obs[1]).astype(jnp.float32)
        state.metrics.update(count=count)
        return state.replace(obs=jnp.stack([count, state.obs[1]]), done=done)

    observation_size, action_size, backend = 2, 1, "test"


def test_final_metrics_hold_each_episode_at_its_end():
    """``training.final_metrics`` reports each episode's metrics at its last step: an
    episode that ends early is held there, one that never ends runs to the length."""
    from jaxsim.envs.training import final_metrics
    ends = final_metrics(_CountdownEnv(), lambda obs, key: (jnp.zeros((obs.shape[0], 1)), {}), episodes=16,
                         episode_length=3)
    expected = np.minimum(ends["length"], 3)
    assert np.unique(ends["length"]).size > 2  # the episodes' lengths differ
    np.testing.assert_array_equal(ends["count"], expected)
    np.testing.assert_array_equal(ends["steps"], expected)


def test_cartpole_reward_gradient_matches_finite_differences():
    env = jaxsim.envs.get("cartpole", dtype=jnp.float64)
    state = env.reset(jax.random.PRNGKey(3))

    def reward_sum(actions):
        def body(s, a):
            s = env.step(s, a)
            return s, s.reward
        return jnp.sum(jax.lax.scan(body, state, actions)[1])

    actions = 0.3 * jax.random.normal(jax.random.PRNGKey(4), (5, 1), jnp.float64)
    check_grads_rev(reward_sum, (actions,), atol=1e-6, rtol=1e-5)


def test_chunked_wrappers_equal_brax_s(monkeypatch):
    """``jaxsim.envs.wrappers.wrap`` steps the batch in chunks (here 2 envs at a time
    over 5: two chunks and a remainder), with and without domain randomization (the
    model's randomized leaves chunked with the envs, the others shared), and gives
    the states of Brax's ``training.wrap``."""
    from jaxsim import parallel
    from jaxsim.envs import wrappers

    monkeypatch.setattr(parallel, "default_chunk", lambda model, platform=None: 2)
    env = jaxsim.envs.get("cartpole", dtype=jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(7), 5)
    randomization = functools.partial(jaxsim.randomize, rng=keys,
                                      ranges=[jaxsim.Range("body_mass", 0.5, 2.0, index="cart")])
    actions = 0.5 * jax.random.normal(jax.random.PRNGKey(8), (3, 5, 1), jnp.float64)

    def run(wrap, randomization_fn):
        wrapped = wrap(env, episode_length=100, randomization_fn=randomization_fn)

        def final_q(actions):
            return jax.lax.scan(lambda s, a: (wrapped.step(s, a), None), wrapped.reset(keys), actions)[0]
        program = jax.jit(final_q)
        return program(actions).pipeline_state.q, str(jax.make_jaxpr(program)(actions)).count("scan[")

    q_plain = None
    for randomization_fn in (None, randomization):
        q_brax, scans_brax = run(training.wrap, randomization_fn)
        q_chunked, scans_chunked = run(wrappers.wrap, randomization_fn)
        assert scans_chunked > scans_brax  # the chunks' lax.map is in the program
        assert np.ptp(np.asarray(q_brax[:, 0])) > 1e-3
        np.testing.assert_allclose(np.asarray(q_chunked), np.asarray(q_brax), rtol=0, atol=1e-12)
        if q_plain is None:
            q_plain = q_brax
    assert np.abs(np.asarray(q_brax) - np.asarray(q_plain)).max() > 1e-4  # the masses were drawn


def test_cartpole_randomization_fn_draws_per_env_models():
    """Brax's domain-randomization wrapper with ``functools.partial(jaxsim.randomize,
    ...)``: each env steps its own cart mass, so under the same push the lighter
    carts move further. (In float64: under the suite's x64 mode Brax's wrappers keep
    their episode counters in float64, which a float32 env's loop carry would not
    match.)"""
    env = jaxsim.envs.get("cartpole", dtype=jnp.float64)
    ranges = [jaxsim.Range("body_mass", 0.5, 2.0, index="cart")]
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    wrapped = training.wrap(env, episode_length=100,
                            randomization_fn=functools.partial(jaxsim.randomize, rng=keys, ranges=ranges))
    masses = np.asarray(wrapped._sys_v.body_mass[:, 1])
    assert len(set(masses.round(6))) == 4 and masses.min() >= 0.5 and masses.max() <= 2.0

    @jax.jit
    def push(rng):
        s = wrapped.reset(rng)
        s = jax.lax.fori_loop(0, 10, lambda _, s: wrapped.step(s, jnp.ones((4, 1), s.obs.dtype)), s)
        return s.obs[:, 3]  # cart velocity
    speed = np.asarray(push(jax.random.split(jax.random.PRNGKey(6), 4)))
    assert np.all(np.diff(speed[np.argsort(masses)]) < 0), (masses, speed)


def test_apg_learns_to_balance_the_cartpole():
    """``brax.training.agents.apg.train`` (gradients through the simulator) on the
    cart-pole started near upright: the deterministic policy's evaluation reward rises
    from the untrained policy's (the pole falls: 129-143 of 200 measured) to a balanced
    pole's (198 of 200 after 24 updates with seeds 0-2 measured; 185 required). In
    float64: under the suite's x64 mode Brax's wrappers count steps in float64, which a
    float32 env's scan carry would not match. Eight training and evaluation envs
    instead of the tuned 16 and 32: below ``compaction.MIN_BATCH`` the vmapped solver
    loops compile as one stage, not five or six (the test's 55 s fall to 44 s)."""
    from jaxsim.envs import training as env_training

    env = jaxsim.envs.get("cartpole", swingup=False, dtype=jnp.float64)
    _, _, curve = env_training.train(env, "cartpole", "apg", policy_updates=24, num_evals=2, num_envs=8,
                                     num_eval_envs=8)
    assert curve.reward[0] < 160, curve.reward
    assert curve.reward[-1] > 185, curve.reward


@pytest.mark.parametrize("option, message", [
    (dict(gait_period=0.0), "gait_period must be positive"),
    (dict(forward_speed_cap=-0.5), "forward_speed_cap must be positive"),
    (dict(fall_margin=(0.1, 60.0)), r"fall_margin must be .* max_tilt_deg = 60"),
    (dict(fall_margin=(0.0, 30.0)), "fall_margin must be"),
])
def test_legged_walk_refuses_bad_shaping_options(option, message):
    with pytest.raises(ValueError, match=message):
        jaxsim.envs.get("quadruped_walk", **option)
