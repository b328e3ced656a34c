"""``experiments/shac.py``'s TD(lambda) targets against the lambda-return written out
as its weighted sum of n-step returns, each truncated where the episode or the window
ends."""

import importlib.util
import os
import sys

import numpy as np
import pytest

pytest.importorskip("brax")
pytest.importorskip("flax")

_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "experiments", "shac.py")
_spec = importlib.util.spec_from_file_location("shac", _PATH)
shac = sys.modules["shac"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(shac)


def _lambda_returns(rewards, next_values, done, gamma, lam):
    """G_t = (1 - lam) sum_{n < L} lam^(n-1) G_t^(n) + lam^(L-1) G_t^(L), L the steps
    from t to the end of t's segment (an ended episode or the window's last step)."""
    steps, envs = rewards.shape
    out = np.zeros_like(rewards)
    for i in range(envs):
        for t in range(steps):
            end = t
            while end < steps - 1 and not done[end, i]:
                end += 1
            length = end - t + 1

            def n_step(n):
                discounted = sum(gamma ** k * rewards[t + k, i] for k in range(n))
                return discounted + gamma ** n * next_values[t + n - 1, i]

            out[t, i] = ((1 - lam) * sum(lam ** (n - 1) * n_step(n) for n in range(1, length))
                         + lam ** (length - 1) * n_step(length))
    return out


def test_td_lambda_matches_the_weighted_n_step_returns():
    rng = np.random.default_rng(0)
    steps, envs, gamma, lam = 7, 4, 0.97, 0.9
    rewards = rng.normal(size=(steps, envs))
    next_values = rng.normal(5.0, 2.0, size=(steps, envs))
    done = np.zeros((steps, envs), bool)
    done[2, 1] = done[5, 1] = done[0, 2] = done[6, 3] = True
    got = np.asarray(shac.td_lambda(rewards, next_values, done, gamma, lam))
    np.testing.assert_allclose(got, _lambda_returns(rewards, next_values, done, gamma, lam), rtol=1e-5)
