"""jaxsim: a GPU-vectorized, differentiable rigid-body robot simulator in pure JAX."""

from jaxsim.builder import ModelBuilder
from jaxsim.collision.driver import collide
from jaxsim.contact import MODELS as CONTACT_MODELS
from jaxsim.contact.query import ContactForces, body_contact_wrench, contact_forces
from jaxsim.dynamics import (bias_forces, forward_dynamics_aba, forward_dynamics_crba,
                             inverse_dynamics, mass_matrix)
from jaxsim.kinematics import (Kinematics, body_jacobian, body_velocities, forward_kinematics,
                               point_jacobian)
from jaxsim.randomize import Range, randomize
from jaxsim.step import accelerations, make_state, rollout, rollout_policy, step
from jaxsim.types import (ContactMode, Contacts, ContactState, DynType, GeomType, JointType, Model,
                          ModelError, Options, State, Topology, batch_models, cast_floats)

__version__ = "0.1.0"

__all__ = [
    "ModelBuilder", "ModelError", "Model", "Options", "State", "Topology", "Kinematics",
    "Contacts", "collide", "ContactMode", "ContactState", "CONTACT_MODELS", "ContactForces",
    "contact_forces", "body_contact_wrench",
    "JointType", "GeomType", "DynType", "batch_models", "cast_floats",
    "forward_kinematics", "body_velocities", "point_jacobian", "body_jacobian",
    "mass_matrix", "bias_forces", "inverse_dynamics", "forward_dynamics_aba",
    "forward_dynamics_crba", "accelerations", "make_state", "step", "rollout",
    "rollout_policy", "Range", "randomize",
]
