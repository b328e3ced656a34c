"""Model loaders (MJCF and URDF through MuJoCo's compiler; URDF ``package://`` URIs resolved)."""

from jaxsim.io.mjcf import compile_urdf, from_mjmodel, load_mjcf, load_urdf

__all__ = ["load_mjcf", "load_urdf", "compile_urdf", "from_mjmodel"]
