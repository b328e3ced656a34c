"""Open-loop trajectory optimization problems through contact.

A problem holds a model, an initial state, a parametrization ``theta`` of what the
optimizer chooses (controls, a throw) and a scalar loss: ``problem.loss(theta)`` rolls
the model out and is differentiable (``jax.grad``: the contact solves are
differentiated implicitly), vmappable over ``theta`` (a population for a zeroth-order
optimizer) and jittable. Any optimizer of a function of an array then applies:
optax's first-order ones on ``jax.value_and_grad(problem.loss)``, an evolution
strategy on ``jax.vmap(problem.loss)``.

Every problem has the same interface:

* ``loss(theta)``: the scalar to minimize;
* ``initial_guess()``: a ``theta`` that every optimizer starts from;
* ``metrics(theta)``: a dict of named scalars (jittable) saying how far the rollout
  is from the goal, in the units their names carry;
* ``solved(metrics)``: whether those values (floats) meet the task's tolerance.

Problems:

* ``CubePushProblem``: the ``cube_push`` environment's pusher brings the cube to a
  pose (x, y, yaw) on the floor.
* ``BounceProblem``: a ball thrown off the floor and a wall (Springhead's impacts,
  restitution 0.6) is at a target point at a given time.
* ``QuadrupedGaitProblem``: an open-loop periodic gait walks the implicit-PD
  quadruped forward at least 1 m in 3 s without falling.
* ``ArmPushProblem``: gymnasium's pusher arm, following PD waypoints, pushes its
  object to a target on the table.
"""

from jaxsim.trajopt.arm_push import ArmPushProblem
from jaxsim.trajopt.bounce import BounceProblem
from jaxsim.trajopt.cube_push import CubePushProblem, quarter_turn_error
from jaxsim.trajopt.walk import QuadrupedGaitProblem

__all__ = ["ArmPushProblem", "BounceProblem", "CubePushProblem", "QuadrupedGaitProblem", "quarter_turn_error"]
