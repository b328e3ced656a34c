"""Several processes on this machine, as on a cluster: JAX's distributed runtime over
localhost (gloo collectives on the CPU), each process with its own host CPU devices,
started by ``python -m jaxsim.launch``.

A float64 rollout of 16 envs split over 2 processes x 2 devices, and 16 cart-poles
reset and stepped as environments, equal the one-process run on 4 devices to 1e-12
(the partitioned programs are the same, so in practice bit for bit), each process
having made only its own envs' random states. A run stops
within a bounded time, with an error naming the cause, when a process dies, when the
coordinator's port is taken, or when no coordinator comes.
"""

import os
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import box_and_ball_source

from jaxsim import launch

ROLLOUT = textwrap.dedent("""
    import sys
    import numpy as np
    from jaxsim import parallel
    parallel.initialize()  # before JAX starts: a no-op without the launcher's variables
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    import jaxsim

    {model}

    batch = 16
    mesh = parallel.global_mesh(batch)
    rows = parallel.process_rows(batch, mesh)  # this process's envs, made here only
    v = jax.vmap(lambda k: 0.5 * jax.random.normal(k, (model.nv,)))(parallel.env_keys(0, batch, rows))
    states = parallel.from_process_rows(jax.vmap(lambda v: jaxsim.make_state(model, v=v))(v), mesh)
    roll = lambda s: jaxsim.rollout(model, s, jnp.zeros((60, 0)))[0]  # noqa: E731
    out = jax.jit(parallel.chunked_vmap(roll, 0, None, mesh))(states)
    q, v, active = parallel.gather((out.q, out.v, out.contact.active))

    # an environment resets and steps on the same mesh
    import jaxsim.envs
    env = jaxsim.envs.get("cartpole", dtype=jnp.float64)
    keys = parallel.from_process_rows(parallel.env_keys(1, batch, rows), mesh)
    actions = parallel.from_process_rows(np.linspace(-1, 1, batch)[rows, None], mesh)
    def episode(key, action):
        return jax.lax.fori_loop(0, 20, lambda _, s: env.step(s, action), env.reset(key)).obs
    obs = parallel.gather(jax.jit(parallel.chunked_vmap(episode, 0, None, mesh))(keys, actions))

    print(f"process {jax.process_index()} of {jax.process_count()}: rows {rows.start}-{rows.stop}", flush=True)
    if jax.process_index() == 0:
        np.savez(sys.argv[1], q=q, v=v, active=active, obs=obs, processes=jax.process_count(),
                 devices=len(jax.devices()))
""").replace("{model}\n", box_and_ball_source(ball_z=None))


def _python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_") or k == "JAX_ENABLE_X64"}
    return {**env, "JAX_PLATFORMS": "cpu", **extra}


def test_two_processes_equal_one(tmp_path):
    two, one = tmp_path / "two.npz", tmp_path / "one.npz"
    r = subprocess.run([sys.executable, "-m", "jaxsim.launch", "-n", "2", "--cpu-devices", "2", "--timeout", "400",
                        "--", *_python(ROLLOUT, str(two))], capture_output=True, text=True, env=_env(), timeout=420)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] process 0 of 2: rows 0-8" in r.stdout and "[1] process 1 of 2: rows 8-16" in r.stdout
    r = subprocess.run(_python(ROLLOUT, str(one)), capture_output=True, text=True,
                       env=_env(JAX_NUM_CPU_DEVICES="4"), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = np.load(two), np.load(one)
    assert (int(a["processes"]), int(b["processes"]), int(a["devices"]), int(b["devices"])) == (2, 1, 4, 4)
    assert a["active"].any(-1).sum() >= 8  # most envs end in contact with the floor
    assert np.ptp(a["obs"][:, 0]) > 0.01  # the carts went their own ways
    for name in ("q", "v", "obs"):
        assert np.max(np.abs(a[name] - b[name])) <= 1e-12, (name, np.max(np.abs(a[name] - b[name])))


DIES = textwrap.dedent("""
    import os
    import numpy as np
    from jaxsim import parallel
    parallel.initialize(heartbeat_timeout_s=5)
    import jax
    mesh = parallel.global_mesh(2)
    x = parallel.from_process_rows(np.ones(1), mesh)
    print("first gather", parallel.gather(x).sum(), flush=True)
    if jax.process_index() == 1:
        os._exit(3)  # dies without a word to the others
    parallel.gather(jax.jit(lambda x: 2 * x)(x))
    print("second gather returned", flush=True)
""")


def test_a_dead_process_stops_the_run():
    """Process 1 dies between two collectives: process 0's next one fails, JAX's
    runtime stops it once process 1 misses its heartbeats (5 s here), and the launcher
    exits with process 1's code, all well within the launcher's grace period (so
    nothing had to be killed)."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "jaxsim.launch", "-n", "2", "--grace", "60", "--",
                        *_python(DIES)], capture_output=True, text=True, env=_env(), timeout=120)
    elapsed = time.monotonic() - t0
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.count("first gather 2.0") == 2
    assert "jaxsim.launch: process 1 exited with code 3; stopping the others" in r.stdout
    assert "second gather returned" not in r.stdout and "killed process" not in r.stdout, r.stdout
    assert elapsed < 50, elapsed


def test_a_taken_port_or_a_missing_coordinator_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        join = "from jaxsim import parallel; parallel.initialize(timeout_s=2)"
        r = subprocess.run(_python(join), capture_output=True, text=True, timeout=60, env=_env(
            JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID="0"))
        assert r.returncode == 1 and f"port {port} is in use" in r.stderr, r.stderr
    t0 = time.monotonic()
    r = subprocess.run(_python(join), capture_output=True, text=True, timeout=60, env=_env(
        JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{launch.free_port()}", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID="1"))
    assert r.returncode == 1 and "found no coordinator" in r.stderr and "within 2 s" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 30


def test_bad_launches_are_refused(capsys):
    for argv, message in ((["-n", "0", "--", "true"], "at least 1"), (["-n", "2"], "no command given"),
                          (["-n", "2", "--cpu-devices", "0", "--", "true"], "cpu_devices must be at least 1")):
        with pytest.raises(SystemExit) as e:
            launch.main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err
    assert launch.main(["-n", "2", "--", sys.executable, "-c", "import os; print(os.environ['JAX_PROCESS_ID'])"]) == 0
    out = capsys.readouterr().out
    assert "[0] 0" in out and "[1] 1" in out
