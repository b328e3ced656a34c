"""``jaxsim.parallel``: a batch of envs (and a batch of models) sharded over several
devices gives what one device gives: with one shared model bit for bit (XLA's default
CPU emitter), otherwise to the contact QP's tolerance. The QP's adaptive step is
accepted or rejected by comparisons that rounding can tip, so programs that round
differently (the suite's faster-compiling emitter, a batch of models vectorized
differently, a batch split in two, chunks) may take different paths to the same
solution, in different numbers of iterations; the scene uses ``solver_tol = 1e-12``,
and states agree to 1e-9 (measured 1e-11 to 1.3e-10), contact forces and
accelerations to 1e-8 of their largest magnitude (measured up to 3.6e-10). The
devices are host CPUs forced by ``XLA_FLAGS``, which must be set before JAX starts,
so the check runs in a subprocess."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import box_and_ball_source
from jaxsim import parallel

SCRIPT = textwrap.dedent("""
    import os
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxsim
    from jaxsim import parallel
    from jaxsim.xla_flags import FAST_CPU_COMPILE

    assert jax.local_device_count() == 4, jax.devices()
    {model}
    v = 0.5 * jax.random.normal(jax.random.PRNGKey(0), (8, model.nv))
    states = jax.vmap(lambda v: jaxsim.make_state(model, v=v))(v)
    models = jaxsim.batch_models([model.replace(body_mass=model.body_mass * (1 + 0.1 * i)) for i in range(8)])
    run = jax.jit(jax.vmap(lambda m, s: jaxsim.rollout(m, s, jnp.zeros((60, 0)))[0], (0, 0)))

    def same(a, b):
        return all(bool(jnp.array_equal(x, y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))

    def gap_of(a, b):  # largest |difference| of q and v
        return max(float(jnp.max(jnp.abs(x - y))) for x, y in zip((a.q, a.v), (b.q, b.v)))

    ref = run(models, states)
    mesh = parallel.batch_mesh(8)
    out = run(parallel.shard_batch(models, mesh), parallel.shard_batch(states, mesh))
    assert len(out.q.sharding.device_set) == 4
    # per-env models: the partitioned program vectorizes the model's arrays differently
    # from the one-device one, so the two agree to the QP's tolerance (module docstring)
    assert gap_of(ref, out) < 1e-9, gap_of(ref, out)
    assert float(jnp.max(ref.contact.active.sum(-1))) > 0  # the envs are in contact

    # one shared model: bit for bit under XLA's default CPU emitter, to the QP's
    # tolerance under the suite's faster-compiling one (jaxsim.xla_flags)
    shared = jax.jit(jax.vmap(lambda m, s: jaxsim.rollout(m, s, jnp.zeros((60, 0)))[0], (None, 0)))
    out = shared(parallel.replicate(model, mesh), parallel.shard_batch(states, mesh))
    one = shared(model, states)
    assert len(out.q.sharding.device_set) == 4
    assert same(one, out) if FAST_CPU_COMPILE[0] not in os.environ["XLA_FLAGS"] else gap_of(one, out) < 1e-9

    # chunks (one env at a time per device, inside shard_map) change nothing either
    chunked = jax.jit(parallel.chunked_vmap(lambda m, s: jaxsim.rollout(m, s, jnp.zeros((60, 0)))[0], (None, 0),
                                            1, mesh))
    out = chunked(parallel.replicate(model, mesh), parallel.shard_batch(states, mesh))
    assert len(out.q.sharding.device_set) == 4 and gap_of(one, out) < 1e-9, gap_of(one, out)

    assert parallel.batch_mesh(6).devices.size == 3 and parallel.batch_mesh(7).devices.size == 1
    try:
        parallel.shard_batch(states, mesh := parallel.batch_mesh())
        parallel.shard_batch(jax.tree.map(lambda x: x[:6], states), mesh)
    except ValueError as e:
        assert "multiple of the mesh's 4 devices" in str(e), e
    else:
        raise AssertionError("6 envs over 4 devices were accepted")
    print("sharded == one device")
""").replace("{model}\n", box_and_ball_source())


EXPLICIT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    import jaxsim
    import jaxsim.envs
    from jaxsim import parallel
    from brax.envs.wrappers import training

    {model}
    v = 0.5 * jax.random.normal(jax.random.PRNGKey(0), (4, model.nv))
    models = jaxsim.batch_models([model.replace(body_mass=model.body_mass * (1 + 0.1 * i)) for i in range(4)])

    mesh = jax.make_mesh((2,), ("env",))  # JAX's default: Explicit axes
    assert mesh.axis_types == (AxisType.Explicit,)
    split = lambda tree: jax.device_put(tree, NamedSharding(mesh, P("env")))  # noqa: E731

    def gap(a, b):
        # largest |difference| of a leaf over its largest magnitude (at least 1); the
        # QP's iteration counts and residuals (the path its loop took) are not compared
        leaves = [(x, y) for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b))
                  if "solver" not in jax.tree_util.keystr(path)]
        return max((float(np.max(np.abs(np.asarray(x, float) - np.asarray(y, float)), initial=0.0)
                          / max(float(np.max(np.abs(np.asarray(x, float)), initial=0.0)), 1.0))
                    for x, y in leaves), default=0.0)

    def check(name, f, *args, ref=None, tol=1e-8):
        ref = f(*args) if ref is None else ref
        out = f(*split(args))
        leaf = jax.tree.leaves(out)[0]
        assert jax.typeof(leaf).sharding.spec[0] == "env", (name, jax.typeof(leaf))
        assert gap(ref, out) <= tol, (name, gap(ref, out))
        return out

    # make_state, then step with a batch of models, without and with jax.set_mesh
    states = check("make_state", jax.jit(jax.vmap(lambda v: jaxsim.make_state(model, v=v))), v)
    states = jax.tree.map(np.asarray, states)
    stepped = check("step", jax.jit(jax.vmap(jaxsim.step)), models, states)
    assert float(np.max(np.asarray(stepped.contact.active).sum(-1))) > 0
    with jax.set_mesh(mesh):
        check("step under set_mesh", jax.jit(jax.vmap(jaxsim.step)), models, states, ref=stepped)

    # every public stage at the stepped states, in one program
    def stages(q, v):
        kin = jaxsim.forward_kinematics(model, q)
        return {"kinematics": kin, "velocities": jaxsim.body_velocities(model, kin, v),
                "point_jacobian": jaxsim.point_jacobian(model, kin, 1, jnp.array([0.0, 0.0, 0.1])),
                "body_jacobian": jaxsim.body_jacobian(model, kin, 2), "mass": jaxsim.mass_matrix(model, kin),
                "bias": jaxsim.bias_forces(model, kin, v),
                "inverse": jaxsim.inverse_dynamics(model, kin, v, jnp.ones_like(v)),
                "aba": jaxsim.forward_dynamics_aba(model, kin, v, jnp.ones_like(v)),
                "crba": jaxsim.forward_dynamics_crba(model, kin, jnp.ones_like(v), jaxsim.bias_forces(model, kin, v)),
                "collide": jaxsim.collide(model, kin),
                "accelerations": jaxsim.accelerations(model, q, v, jnp.zeros(0), jnp.zeros(0))[0]}
    check("stages", jax.jit(jax.vmap(stages)), np.asarray(stepped.q), np.asarray(stepped.v))
    check("contact_forces", jax.jit(lambda s: jax.vmap(jaxsim.contact_forces, (None, 0))(model, s)), stepped)

    # a gradient through the contact step, and the per-device vmap (shard_map)
    loss = lambda v, s: jnp.sum(jax.vmap(jaxsim.step, (None, 0))(model, s.replace(v=v)).q ** 2)  # noqa: E731
    check("grad of step", jax.jit(jax.grad(loss)), np.asarray(v), states)
    check("chunked_vmap", jax.jit(parallel.chunked_vmap(jaxsim.step, 0, None, mesh)), models, states, ref=stepped)

    # an environment through Brax's vmap and domain-randomization wrappers
    env = jaxsim.envs.get("cartpole", dtype=jnp.float64)
    ranges = [jaxsim.Range("body_mass", 0.5, 2.0, index="cart")]
    for sharded in (False, True):
        put = split if sharded else (lambda x: x)
        wrapped = training.DomainRandomizationVmapWrapper(
            env, lambda sys: jaxsim.randomize(sys, put(jax.random.split(jax.random.PRNGKey(5), 4)), ranges))
        run = jax.jit(lambda rng, a: jax.lax.fori_loop(0, 3, lambda _, s: wrapped.step(s, a), wrapped.reset(rng)).obs)
        obs = run(put(jax.random.split(jax.random.PRNGKey(6), 4)), put(jnp.ones((4, 1))))
        if sharded:
            assert jax.typeof(obs).sharding.spec[0] == "env" and gap(obs, plain) < 1e-12, gap(obs, plain)
        plain = obs
    print("explicit axes == unsharded")
""").replace("{model}\n", box_and_ball_source(box_z=0.0495, ball_z=0.0395))  # resting: in contact at once


def test_stages_accept_explicit_axes():
    """Batches sharded on a mesh from ``jax.make_mesh`` (Explicit axes, as JAX's docs
    build them), with and without ``jax.set_mesh``: ``make_state``, ``step`` with a
    batch of models, each public stage, a gradient through the step, ``chunked_vmap``
    and an environment under Brax's domain-randomization wrapper give the unsharded
    results (to the QP's tolerance), split along the mesh's axis. (Auto axes: the
    test above.)"""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    env = {**os.environ, "XLA_FLAGS": flags.strip(), "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", EXPLICIT], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "explicit axes == unsharded" in r.stdout


def test_sharded_batches_equal_one_device():
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4"  # keep conftest's
    env = {**os.environ, "XLA_FLAGS": flags.strip(), "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sharded == one device" in r.stdout


def test_bad_batches_are_refused():
    with pytest.raises(ValueError, match="batch must be at least 1"):
        parallel.batch_mesh(0)
    with pytest.raises(ValueError, match="no devices"):
        parallel.batch_mesh(4, devices=[])
    with pytest.raises(ValueError, match="leading .batch. axis"):
        parallel.shard_batch({"scalar": 1.0}, parallel.batch_mesh())


def test_chunked_vmap_equals_vmap_and_default_chunk_follows_the_qp_size():
    """Chunks of 3 over 8 envs (two chunks and a remainder of 2) give the plain vmap's
    states; ``default_chunk`` is None off the CPU and for QPs of up to 84 rows, and
    shrinks as the QP grows."""
    def boxes(count):
        b = jaxsim.ModelBuilder(timestep=2e-3)
        b.add_geom("world", "plane", (5, 5, 0.1))
        for i in range(count):
            b.add_body(f"box{i}", pos=(0.3 * i, 0, 0.06), mass=0.5, inertia=(1e-3,) * 3)
            b.add_joint(f"box{i}", "free")
            b.add_geom(f"box{i}", "box", (0.05, 0.05, 0.05))
        return b.build(jnp.float64)

    small = boxes(1)
    v = 0.5 * jax.random.normal(jax.random.PRNGKey(1), (8, small.nv))
    states = jax.vmap(lambda v: jaxsim.make_state(small, v=v))(v)
    roll = lambda s: jaxsim.rollout(small, s, jnp.zeros((20, 0)))[0]  # noqa: E731
    ref = jax.jit(jax.vmap(roll))(states)
    out = jax.jit(parallel.chunked_vmap(roll, 0, 3))(states)
    assert float(jnp.max(ref.contact.active.sum(-1))) > 0
    # batches of different sizes round the QP's Newton steps differently (measured: 2e-11)
    for x, y in zip(jax.tree.leaves(ref), jax.tree.leaves(out)):
        np.testing.assert_allclose(np.asarray(x, float), np.asarray(y, float), rtol=0, atol=1e-9)

    model = boxes(8)
    one = model.replace(opt=model.opt.replace(max_contacts=4))  # 12 rows
    assert parallel.default_chunk(one, "cpu") is None and parallel.default_chunk(model, "gpu") is None
    sizes = [parallel.default_chunk(model.replace(opt=model.opt.replace(max_contacts=k)), "cpu")
             for k in (28, 64, 128, 256)]  # 84, 192, 384 and 768 rows
    assert sizes == [None, 64, 16, 4], sizes
    with pytest.raises(ValueError, match="in_axes must be 0 or None"):
        parallel.chunked_vmap(roll, 1, 2)


def test_chunked_vmap_runs_one_env_unbatched():
    """A batch of one, and the one env left over by chunks of 2 over 5, reach the
    per-env function without ``vmap``'s batch tracers (so its ``cond`` and
    ``while_loop`` run as written), and the results equal the per-env function's."""
    seen = []

    def fun(x, shared):
        seen.append(type(x).__name__)
        return jax.lax.cond(x[0] > 0, lambda: x * shared, lambda: -x), x.sum()

    x, shared = jnp.arange(10.0).reshape(5, 2) - 3.0, jnp.float64(2.0)
    for batch, chunk in ((1, None), (1, 4), (5, 2)):
        seen.clear()
        out = jax.jit(parallel.chunked_vmap(fun, (0, None), chunk))(x[:batch], shared)
        # traced once per vmap: the chunks' body (batched), then the leftover env
        assert seen == (["DynamicJaxprTracer"] if batch == 1 else ["BatchTracer", "DynamicJaxprTracer"]), seen
        ref = [fun(xi, shared) for xi in x[:batch]]
        for got, want in zip(out, zip(*ref)):
            np.testing.assert_array_equal(np.asarray(got), np.stack(want))
