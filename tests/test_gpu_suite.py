"""``experiments/gpu_suite.py --smoke``: every stage of the GPU suite (bench_step,
bench_grad, bench_scale, PPO on jaxsim and on MJX) runs at tiny sizes on the CPU and
lands in the suite's JSON and markdown table, so the suite is known to work when a
GPU is at hand. Five processes of a benchmark driver, each compiling its own
programs (two minutes of CPU): under the ``benchmark`` marker, to run before a GPU
session (``pytest -m benchmark tests/test_gpu_suite.py``)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.benchmark  # a benchmark driver's five processes: 130 s of CPU
def test_smoke_run_writes_every_stage(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "gpu_suite.py"), "--smoke",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-5000:]
    suite = json.loads((tmp_path / "gpu_suite.json").read_text())
    assert set(suite["stages"]) == {"bench_step", "bench_grad", "bench_scale", "ppo_jaxsim", "ppo_mjx"}
    for name, stage in suite["stages"].items():
        assert stage["rc"] == 0 and "result" in stage, (name, stage["rc"])
    step = suite["stages"]["bench_step"]["result"]["results"][0]
    assert step["jaxsim"]["steps_per_s"] > 0 and step["jaxsim_over_mjx"] > 0
    table = (tmp_path / "gpu_suite.md").read_text()
    for title in ("Steps per second", "Rollout gradients", "Scaling exponents", "PPO on the cart-pole"):
        assert title in table
    assert "| jaxsim |" in table and "| mjx |" in table and "failed" not in table
