"""Where the test suite's time goes: per module, the CPU time of its tests and how much
of it JAX spent tracing, lowering and XLA compiling (JAX's own duration events).

    python experiments/suite_profile.py                 # the default suite
    python experiments/suite_profile.py tests/test_qp.py -n 0

runs pytest (with the project's options, so under pytest-xdist as usual) with this file
as a plugin, prints one row per module, longest first, and writes
``experiments/results/suite_profile.json``. The columns are each module's summed test
CPU time (setup, call and teardown, in its worker process), and within it the time of
XLA's backend compiles (with their count), of tracing to jaxprs and of lowering to
MLIR. Work in subprocesses a test starts (notebook kernels, the float32 robustness
runs, the CLI) is not in its row; the total line puts the whole run's CPU time, those
children included, beside the rows' sum.
"""

from __future__ import annotations

import collections
import datetime
import glob
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import pytest

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "suite_profile.json")
EVENTS = {  # JAX's duration events (jax.monitoring) -> column
    "/jax/core/compile/backend_compile_duration": "compile_s",
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
}
DIR_VARIABLE = "JAXSIM_SUITE_PROFILE_DIR"  # where each worker writes its tests' figures

# ------------------------------------------------------------------ the pytest plugin

_tests: dict = collections.defaultdict(lambda: collections.defaultdict(float))
_current = ["(outside a test)"]


def _on_duration(event: str, duration: float, **_) -> None:
    column = EVENTS.get(event)
    if column is not None:
        row = _tests[_current[0]]
        row[column] += duration
        if column == "compile_s":
            row["compiles"] += 1


def pytest_configure(config):
    import jax.monitoring  # importing JAX does not start its backend: conftest's XLA flags still apply

    jax.monitoring.register_event_duration_secs_listener(_on_duration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    cpu0, wall0 = time.process_time(), time.perf_counter()
    yield
    row = _tests[item.nodeid]
    row["cpu_s"] += time.process_time() - cpu0
    row["wall_s"] += time.perf_counter() - wall0
    _current[0] = "(outside a test)"


def pytest_sessionfinish(session):
    directory = os.environ.get(DIR_VARIABLE)
    if directory:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(directory, f"{worker}.json"), "w") as f:
            json.dump({test: dict(row) for test, row in _tests.items()}, f)


# ------------------------------------------------------------------- run and summarize

COLUMNS = ("cpu_s", "wall_s", "compile_s", "compiles", "trace_s", "lower_s")


def by_module(tests: dict) -> dict:
    modules: dict = collections.defaultdict(lambda: dict.fromkeys(COLUMNS, 0.0))
    for test, row in tests.items():
        module = modules[test.split("::")[0]]
        for column in COLUMNS:
            module[column] += row.get(column, 0.0)
    return dict(sorted(modules.items(), key=lambda kv: -kv[1]["cpu_s"]))


def main(pytest_args: list[str]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as directory:
        env = dict(os.environ, **{DIR_VARIABLE: directory})
        env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "suite_profile", *pytest_args], env=env)
        wall = time.perf_counter() - t0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        tests = {}
        for path in glob.glob(os.path.join(directory, "*.json")):
            with open(path) as f:
                tests.update(json.load(f))
    modules = by_module(tests)
    total = {c: sum(m[c] for m in modules.values()) for c in COLUMNS}
    print(f"\n{'module':<42} {'cpu s':>8} {'compile s':>10} {'compiles':>9} {'trace s':>8} {'lower s':>8}")
    for name, m in list(modules.items()) + [("(all tests)", total)]:
        print(f"{name.removeprefix('tests/'):<42} {m['cpu_s']:8.1f} {m['compile_s']:10.1f} {int(m['compiles']):9d} "
              f"{m['trace_s']:8.1f} {m['lower_s']:8.1f}")
    run_cpu = children.ru_utime + children.ru_stime
    print(f"pytest exit {rc}: {wall:.0f} s wall, {run_cpu:.0f} s CPU in all processes "
          f"({run_cpu - total['cpu_s']:.0f} s outside the tests' own processes: subprocesses, collection)")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"machine": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "cpu_count": os.cpu_count(), "platform": platform.platform(),
                               "python": platform.python_version()},
                   "pytest_args": pytest_args, "exit_code": rc, "wall_s": wall, "cpu_s_all_processes": run_cpu,
                   "modules": modules, "tests": tests}, f, indent=1)
    sys.exit(rc)


if __name__ == "__main__":
    main(sys.argv[1:])
