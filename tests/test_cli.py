"""The ``jaxsim`` command line: the README's main command (bare ``python -m jaxsim``),
``demo``, ``simulate`` on gymnasium's ant under two processes (its 2 envs split over
them), a floor added under a model
without one, ``--contact`` / ``--set`` reaching the Model, and bad input (options,
values, numbers out of range) rejected with a one-line error and exit status 2."""

import os
import re
import subprocess
import sys

import gymnasium
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim import GeomType
from jaxsim.cli import build_model, contact_label, load_with_floor, main

ANT = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/ant.xml")
TILTED_BOX = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="box" pos="0.3 0 1.5" euler="0 25 0"><freejoint/><geom type="box" size="0.1 0.08 0.05"/></body>
</worldbody></mujoco>"""


def test_bare_command_is_the_cube_demo(capsys):
    assert main(["--duration", "0.4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("jaxsim demo: 0.1 m, 0.5 kg cube")
    for line in ("steps/s", "contact model      relaxed\n", "max penetration", "contact QP",
                 "non-finite values: none"):
        assert line in out


def test_demo_runs_every_scene_and_writes_viewers(tmp_path, capsys):
    assert main(["demo", "--duration", "0.4", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("jaxsim demo:") == 2 and "pendulum" in out
    for scene in ("cube", "pendulum"):
        html = (tmp_path / f"{scene}.html").read_text()
        assert "<script" in html and "Plotly" in html


def run_cli(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "jaxsim", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=None if env is None else {**os.environ, **env})


def test_simulate_ant_writes_the_viewer(tmp_path):
    """Under two processes (``python -m jaxsim.launch``, one CPU device each), as on a
    cluster: the 2 envs are split over both, and process 0 alone prints and writes."""
    out = tmp_path / "ant.html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_") or k == "JAX_ENABLE_X64"}
    r = subprocess.run([sys.executable, "-m", "jaxsim.launch", "-n", "2", "--", sys.executable, "-m", "jaxsim",
                        "simulate", ANT, "--duration", "0.2", "--batch", "2", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=300, env={**env, "JAX_PLATFORMS": "cpu"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] jaxsim simulate ant.xml: 13 bodies, nv = 14" in r.stdout and "added a plane" not in r.stdout
    assert "cpu x 2 device(s) in 2 processes" in r.stdout and "contact model relaxed," in r.stdout
    for line in ("env-steps/s", "max penetration", "contact QP", "overflow", "non-finite         0 of 2"):
        assert re.search(rf"^\[0\] .*{line}", r.stdout, re.M), line
    assert "[1] jaxsim" not in r.stdout and "[1]   " not in r.stdout  # the other process prints nothing
    html = out.read_text()
    assert html.lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert re.search(r"<script[^>]*\bsrc=", html) is None  # plotly.js embedded: opens offline
    assert html.count('"type":"mesh3d"') >= 3  # floor + one per env shown


def one_line_error(r):
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jaxsim: error: "), r.stderr
    return lines[0]


def test_fast_cpu_compile_flag_is_added_once_and_never_overrides():
    """The CLI's (and the suite's) XLA option: appended to XLA_FLAGS once, and not when
    XLA_FLAGS already sets it either way; the suite's own process has it."""
    from jaxsim.xla_flags import FAST_CPU_COMPILE, use_fast_cpu_compile

    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
    assert use_fast_cpu_compile(env) == list(FAST_CPU_COMPILE)
    assert env["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=3", *FAST_CPU_COMPILE]
    assert use_fast_cpu_compile(env) == []
    mine = {"XLA_FLAGS": FAST_CPU_COMPILE[0].replace("false", "true")}
    assert use_fast_cpu_compile(mine) == [] and mine["XLA_FLAGS"].endswith("true")
    assert FAST_CPU_COMPILE[0] in os.environ["XLA_FLAGS"].split()


def test_flags_xla_does_not_define_are_left_out():
    """XLA aborts on an unknown flag: the one XLA refuses is left out, the others stay.
    The refused name is in XLA's library as text (its source file's name), as a flag
    that a newer XLA dropped can be."""
    from jaxsim.xla_flags import use_fast_cpu_compile

    env, known = {}, "--xla_force_host_platform_device_count=2"
    assert use_fast_cpu_compile(env, flags=("--parse_flags_from_env=1", known)) == [known]
    assert env["XLA_FLAGS"] == known


def test_bad_model_files_get_one_line_errors(tmp_path):
    assert "model file not found" in one_line_error(run_cli("simulate", str(tmp_path / "missing.xml")))
    gravcomp = tmp_path / "gravcomp.xml"
    gravcomp.write_text('<mujoco><worldbody><body name="b" gravcomp="1"><freejoint/>'
                        '<geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    msg = one_line_error(run_cli("simulate", str(gravcomp)))
    assert "body 'b'" in msg and "gravity compensation" in msg
    typo = tmp_path / "typo.xml"
    typo.write_text("<mujoco><worldbody><bodyy/></worldbody></mujoco>")
    assert "unrecognized element" in one_line_error(run_cli("simulate", str(typo)))


def test_contact_and_set_reach_the_model(tmp_path):
    """``--contact`` and ``--set`` become the loader's and the scenes' keyword options:
    scene options (a vector, a boolean, an integer) and contact-model parameters."""
    path = tmp_path / "box.xml"
    path.write_text(TILTED_BOX)
    model = build_model(["simulate", str(path), "--contact", "springhead", "--set", "solver=qp",
                         "--set", "contact_tolerance=0.001", "--set", "solver_iterations=7",
                         "--set", "gravity=0,0,-1", "--set", "edge_contacts=false", "--dt", "0.004"])
    assert (model.opt.contact, model.contact_params.solver) == ("springhead", "qp")
    assert float(model.contact_params.contact_tolerance) == pytest.approx(0.001)
    assert model.opt.solver_iterations == 7 and not model.opt.edge_contacts
    assert float(model.opt.timestep) == pytest.approx(0.004)
    np.testing.assert_allclose(np.asarray(model.opt.gravity), [0, 0, -1])
    demo = build_model(["demo", "--scene", "pendulum", "--set", "contact_relaxation=0.02", "--integrator", "rk4"])
    assert demo.opt.integrator == "rk4" and float(demo.contact_params.contact_relaxation) == pytest.approx(0.02)
    assert contact_label(demo) == "relaxed (contact_relaxation 0.02)"
    assert build_model(["demo", "--set", "contact=rigid"]).opt.contact == "rigid"


@pytest.mark.parametrize("args, message", [
    (["--duration", "-1"], "--duration must be positive"),
    (["--duration", "inf"], "--duration must be positive and finite"),
    (["--duration", "1e9"], "at most 2147483647 steps"),  # 5e11 steps of 2 ms: no int32 step counter
    (["--dt", "0"], "--dt must be positive"),
    (["--fps", "nan"], "--fps must be positive and finite"),
    (["--noise", "nan"], "--noise must be >= 0 and finite"),
    (["--batch", "0"], "--batch must be at least 1"),
    (["--batch", "3000000000"], "--batch must be at least 1 and at most 2147483647"),
    (["--seed", "-1"], "--seed must be at least 0 and at most 4294967295"),
    (["--show", "0"], "--show must be at least 1 and at most 64"),
    (["--out", "/nonexistent/dir/x.html"], "does not exist"),
    (["--floating-base"], "apply to URDF files only"),
    (["--max-hull-vertices", "3"], "--max-hull-vertices must be at least 4"),
    (["--narrow-pairs", "-1"], "--narrow-pairs must be at least 0"),
    (["--max-contacts", "-1"], "--max-contacts must be at least 0"),
    (["--contact", "bogus"], "invalid choice: 'bogus' (choose from 'cone'"),
    (["--set", "nope"], "--set expects KEY=VALUE, got 'nope'"),
    (["--set", "foo=1"], "--set foo=1: unknown option 'foo'; scene options: timestep, gravity"),
    (["--set", "zeta=0.5"], "unknown option 'zeta'; scene options: timestep"),  # a parameter of cone
    (["--set", "zeta=0.5"], "parameters of contact model 'relaxed': "),
    (["--contact", "springhead", "--set", "solver=bogus"], "solver must be one of ['qp', 'pgs'], got 'bogus'"),
    (["--set", "solver_iterations=1.5"], "--set solver_iterations=1.5: solver_iterations must be an integer"),
    (["--set", "gravity=0,-9.81"], "gravity must be 3 numbers"),
    (["--set", "edge_contacts=maybe"], "edge_contacts must be true or false"),
    (["--set", "contact_relaxation=-1"], "contact_relaxation must be >= 0"),
    (["--set", "integrator=implicit"], "integrator must be 'euler' or 'rk4'"),
    (["--set", "timestep=0.001", "--dt", "0.002"], "timestep is set by both --dt and --set"),
])
def test_bad_options_exit_2(args, message, tmp_path, capsys):
    model = tmp_path / "box.xml"
    model.write_text(TILTED_BOX)
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(model), *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsim: error:") and message in err[0]


@pytest.mark.parametrize("missing, args, message", [
    ("mujoco", ["--out", "-"], "needs MuJoCo's compiler"),
    ("plotly", [], "--out - to skip the viewer"),
])
def test_a_missing_extra_is_a_one_line_error(missing, args, message, tmp_path, capsys, monkeypatch):
    # A None entry in sys.modules makes `import missing` raise ImportError, as on a core install.
    monkeypatch.setitem(sys.modules, missing, None)
    model = tmp_path / "box.xml"
    model.write_text(TILTED_BOX)
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(model), "--duration", "0.01", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsim: error:") and message in err[0]
    assert "pip install -e '.[" in err[0]  # never the PyPI name `jaxsim` (a different project)


@pytest.mark.parametrize("args, message", [
    (["--duration", "-1"], "--duration must be positive"),
    (["--dt", "0"], "--dt must be positive"),
    (["--scene", "nope"], "invalid choice: 'nope'"),
    (["--duration", "1e9"], "at most 2147483647 steps"),
    (["--duration", "1e5"], "which the demo keeps in memory; at most"),  # 1e8 steps' States: over 2 GiB
    (["--set", "zeta=0.5"], "unknown option 'zeta'; scene options: timestep"),
    (["--contact", "cone", "--set", "contact_relaxation=1"], "parameters of contact model 'cone': zeta"),
    (["--set", "timestep=0.002", "--dt", "0.001"], "timestep is set by both --dt and --set"),
])
def test_bad_demo_arguments_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["demo", "--scene", "cube", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsim: error:") and message in err[0], err


def test_a_batch_beyond_memory_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(jaxsim.cli, "_memory_bytes", lambda: 10**6)
    model = tmp_path / "box.xml"
    model.write_text(TILTED_BOX)
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(model), "--out", "-", "--batch", "100000"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--batch 100000: the states alone take" in err[0] and "at most" in err[0]


def test_floor_is_added_under_the_lowest_point_and_the_box_comes_to_rest_on_it(tmp_path):
    path = tmp_path / "box.xml"
    path.write_text(TILTED_BOX)
    model, floor_z = load_with_floor(str(path), jnp.float32)
    # the lowest corner of the box turned 25 deg about y: 1.5 - (0.1 sin 25 + 0.05 cos 25)
    expected = 1.5 - (0.1 * np.sin(np.radians(25)) + 0.05 * np.cos(np.radians(25)))
    assert floor_z == pytest.approx(expected, abs=1e-6)
    assert jaxsim.make_state(model).contact.active.shape[0] > 0
    _, traj = rollout_in_chunks(model, jaxsim.make_state(model), jnp.zeros((1000, 0)))
    z = float(traj.q[-1, 2])  # the free joint's position is the box's centre
    assert z - floor_z == pytest.approx(0.05, abs=1e-3)  # tipped flat onto its largest face
    assert float(jnp.abs(traj.v[-1]).max()) < 1e-2
    ant, none = load_with_floor(ANT, jnp.float32)  # has its own floor: unchanged
    assert none is None and ant.topo.ngeom == 14


def test_urdf_gets_its_packages_a_floor_and_a_floating_base():
    """example-robot-data's Panda (``package://`` meshes): a floor under its lowest
    point, welded to the world unless ``floating_base``."""
    from conftest import example_robot_data_dir

    path = f"{example_robot_data_dir()}/panda_description/urdf/panda.urdf"
    fixed, z = load_with_floor(path, jnp.float32)
    floating, z2 = load_with_floor(path, jnp.float32, {"floating_base": True})
    assert (fixed.nq, floating.nq) == (9, 16) and z == pytest.approx(z2) and z <= 0.0
    assert fixed.topo.ngeom == floating.topo.ngeom and GeomType.PLANE in fixed.topo.geom_type

