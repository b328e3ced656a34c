"""MJCF / URDF loading: strings and files, error messages, unsupported elements,
cylinders / ellipsoids / meshes as convex polyhedra, height fields, and the mass matrix
of a URDF against MuJoCo's (float64)."""

import os
import sys
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxsim  # noqa: E402
from jaxsim import GeomType, ModelError  # noqa: E402
from jaxsim.io import load_mjcf, load_urdf  # noqa: E402
from jaxsim.io import mjcf as mjcf_mod  # noqa: E402
from conftest import gymnasium_dir  # noqa: E402

mujoco = pytest.importorskip("mujoco")

_mass = jax.jit(lambda model, q: jaxsim.mass_matrix(model, jaxsim.forward_kinematics(model, q)))

ARM_XML = """
<mujoco model="arm">
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1 1" damping="0.1"/>
      <geom name="upper_geom" type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04"/>
      <body name="lower" pos="0 0 -0.4">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom name="lower_geom" type="box" size="0.03 0.03 0.2" pos="0 0 -0.2"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="elbow_motor" joint="elbow" gear="5" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


def _leaves_equal(a, b):
    assert a.topo == b.topo
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# ------------------------------------------------------------ strings and files

def test_string_and_file_give_same_model(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(ARM_XML)
    from_string = load_mjcf(ARM_XML, dtype=jnp.float64)
    from_file = load_mjcf(str(path), dtype=jnp.float64)
    _leaves_equal(from_string, from_file)
    assert from_file.topo.body_name == ("world", "upper", "lower")
    assert from_file.topo.jnt_name == ("shoulder", "elbow")
    assert from_file.nv == 2 and from_file.nu == 1
    assert float(from_file.opt.timestep) == pytest.approx(0.002)


def test_pathlib_path_accepted(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(ARM_XML)
    _leaves_equal(load_mjcf(path, dtype=jnp.float64), load_mjcf(ARM_XML, dtype=jnp.float64))


def test_missing_file():
    with pytest.raises(ModelError, match="not found"):
        load_mjcf("/nonexistent/dir/robot.xml")
    with pytest.raises(ModelError, match="not found"):
        load_urdf("/nonexistent/dir/robot.urdf")


@pytest.mark.parametrize("xml", [
    '<mujoco><worldbody><body><joint type="telescope"/></body></worldbody></mujoco>',
    '<mujoco><worldbody><body name="a">',  # truncated XML
], ids=["bad_keyword", "truncated"])
def test_uncompilable_xml_is_a_model_error(xml, tmp_path):
    with pytest.raises(ModelError, match="could not compile"):
        load_mjcf(xml)
    path = tmp_path / "bad.xml"
    path.write_text(xml)
    with pytest.raises(ModelError, match="could not compile"):
        load_mjcf(str(path))


# ---------------------------------------------------------- unsupported elements

_TWO_BODIES = """
<body name="a"><joint name="ja" type="hinge" range="-1 1"/><geom size="0.1"/><site name="s1"/></body>
<body name="b" pos="1 0 0"><joint name="jb" type="hinge"/><geom size="0.1"/><site name="s2" pos="0 0 0.1"/></body>
"""


def _mjcf(worldbody, extra=""):
    return f"<mujoco><worldbody>{worldbody}</worldbody>{extra}</mujoco>"


@pytest.mark.parametrize("xml,match", [
    (_mjcf(_TWO_BODIES, '<tendon><spatial name="rope"><site site="s1"/><site site="s2"/></spatial></tendon>'),
     r"tendon 'rope'.*spatial tendons are not supported"),
    (_mjcf(_TWO_BODIES, '<actuator><general name="gmus" joint="ja" dyntype="muscle"/></actuator>'),
     r"actuator 'gmus'.*'muscle' is not supported"),
    (_mjcf(_TWO_BODIES, '<actuator><muscle name="bicep" joint="ja"/></actuator>'),
     r"actuator 'bicep'.*'muscle' is not supported"),
    (_mjcf(_TWO_BODIES, '<actuator><motor name="thruster" site="s1" gear="0 0 1 0 0 0"/></actuator>'),
     r"actuator 'thruster'.*transmission 'site' is not supported"),
    (_mjcf('<body name="floaty" gravcomp="1"><joint type="hinge"/><geom size="0.1"/></body>'),
     r"body 'floaty'.*gravcomp.*not supported"),
], ids=["spatial_tendon", "dyntype_muscle", "muscle", "site_transmission", "gravcomp"])
def test_unsupported_elements(xml, match):
    mujoco.MjModel.from_xml_string(xml)  # valid for MuJoCo: the rejection is jaxsim's
    with pytest.raises(ModelError, match=match):
        load_mjcf(xml)


# ---------------------------------------- cylinders, ellipsoids, meshes -> convex

BOX_CORNERS = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.2, 0.2) for z in (-0.3, 0.3)])
INTERIOR = np.array([[0.01, 0.02, 0.0]])  # inside the box: not a hull vertex
CYL_R, CYL_H = 0.15, 0.25
ELL = np.array([0.1, 0.2, 0.3])
MESH_POS = np.array([0.0, 1.0, 0.0])

SHAPES_XML = f"""
<mujoco>
  <asset>
    <mesh name="m" vertex="{' '.join(map(str, np.r_[BOX_CORNERS, INTERIOR].ravel()))}"/>
  </asset>
  <worldbody>
    <body name="b">
      <freejoint/>
      <geom name="cyl" type="cylinder" size="{CYL_R} {CYL_H}"/>
      <geom name="ell" type="ellipsoid" size="{' '.join(map(str, ELL))}" pos="1 0 0"/>
      <geom name="mesh" type="mesh" mesh="m" pos="{' '.join(map(str, MESH_POS))}"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def shapes():
    return load_mjcf(SHAPES_XML, dtype=jnp.float64)


def _polyhedron(model, name):
    g = model.topo.geom_name.index(name)
    assert model.topo.geom_type[g] == GeomType.CONVEX
    k = model.topo.geom_mesh[g]
    assert k >= 0
    nv, nf = model.topo.mesh_nvert[k], model.topo.mesh_nface[k]
    return g, np.asarray(model.mesh_vert[k, :nv]), np.asarray(model.mesh_face[k, :nf])


def _assert_closed_outward_convex(v, f):
    # every face's normal points away from all other vertices (convex, outward)
    normals = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area = np.linalg.norm(normals, axis=1)
    assert np.all(area > 1e-12)
    n = normals / area[:, None]
    heights = np.einsum("fk,fvk->fv", n, v[None, :, :] - v[f[:, 0]][:, None, :])
    assert heights.max() <= 1e-9
    centre = v.mean(0)
    assert np.all(np.einsum("fk,fk->f", n, v[f].mean(1) - centre) > 0)
    # watertight: every directed edge appears once and its reverse once
    edges = {}
    for a, b, c in f:
        for e in ((a, b), (b, c), (c, a)):
            edges[e] = edges.get(e, 0) + 1
    assert all(cnt == 1 for cnt in edges.values())
    assert all((b, a) in edges for a, b in edges)
    # Euler characteristic of a sphere-like closed surface
    assert len(np.unique(f)) - len(edges) // 2 + len(f) == 2
    # the faces use every vertex
    assert len(np.unique(f)) == len(v)


def test_cylinder_is_convex_polyhedron_on_its_surface(shapes):
    _, v, f = _polyhedron(shapes, "cyl")
    radial = np.linalg.norm(v[:, :2], axis=1)
    np.testing.assert_allclose(radial, CYL_R, atol=1e-12)
    np.testing.assert_allclose(np.abs(v[:, 2]), CYL_H, atol=1e-12)
    assert np.sum(v[:, 2] > 0) == np.sum(v[:, 2] < 0) >= 8
    _assert_closed_outward_convex(v, f)


def test_ellipsoid_is_convex_polyhedron_on_its_surface(shapes):
    _, v, f = _polyhedron(shapes, "ell")
    np.testing.assert_allclose(np.sum((v / ELL) ** 2, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(v.min(0), -ELL, atol=1e-12)
    np.testing.assert_allclose(v.max(0), ELL, atol=1e-12)
    _assert_closed_outward_convex(v, f)


def test_mesh_becomes_its_convex_hull(shapes):
    g, v, f = _polyhedron(shapes, "mesh")
    _assert_closed_outward_convex(v, f)
    # MuJoCo may re-centre / re-orient a mesh and compensate with the geom pose:
    # compare in the body frame. MuJoCo stores mesh vertices in float32.
    w, x, y, z = np.asarray(shapes.geom_quat[g]) / np.linalg.norm(shapes.geom_quat[g])
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    in_body = v @ rot.T + np.asarray(shapes.geom_pos[g])
    expected = BOX_CORNERS + MESH_POS
    assert len(in_body) == len(expected) == 8  # the interior vertex is dropped
    d = np.linalg.norm(in_body[:, None, :] - expected[None, :, :], axis=-1)
    assert np.all(d.min(1) < 1e-6) and np.all(d.min(0) < 1e-6)


# ------------------------------------------------------------------------ URDF

URDF = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base">
    <inertial><origin xyz="0 0 0.05"/><mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <visual><geometry><box size="0.2 0.2 0.1"/></geometry></visual>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><origin xyz="0.02 0.01 0.25" rpy="0.3 -0.2 0.1"/><mass value="1.5"/>
      <inertia ixx="0.03" ixy="0.001" ixz="0.002" iyy="0.03" iyz="-0.001" izz="0.005"/></inertial>
    <visual><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.03" length="0.5"/></geometry></visual>
    <collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.03" length="0.5"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.1" rpy="0.1 0.2 0"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" {effort}velocity="5"/>
  </joint>
</robot>
"""


def _check_urdf(path):
    model = load_urdf(str(path), dtype=jnp.float64)
    assert model.nv == 1 and model.nq == 1
    assert model.topo.jnt_name == ("shoulder",)
    assert GeomType.CONVEX in model.topo.geom_type  # the collision cylinder
    assert GeomType.BOX in model.topo.geom_type
    mm = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(mm)
    for angle in (0.0, 0.7, -1.2):
        d.qpos[:] = angle
        mujoco.mj_forward(mm, d)
        ref = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, d, ref)
        got = np.asarray(_mass(model, jnp.array([angle])))
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_urdf_mass_matrix_matches_mujoco(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(URDF.format(effort=""))
    _check_urdf(path)


def test_urdf_with_effort_limit_loads(tmp_path):
    path = tmp_path / "arm_effort.urdf"
    path.write_text(URDF.format(effort='effort="10" '))
    _check_urdf(path)


def test_joint_actuator_force_range_matches_mujoco():
    """A joint's actuatorfrcrange clamps the summed actuator force, as in MuJoCo."""
    xml = """
    <mujoco>
      <worldbody>
        <body name="arm" pos="0 0 1">
          <joint name="hinge" axis="0 1 0" actuatorfrcrange="-2 3" actuatorfrclimited="true"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        </body>
      </worldbody>
      <actuator>
        <motor joint="hinge" gear="5"/>
        <position joint="hinge" kp="20"/>
      </actuator>
    </mujoco>
    """
    mm = mujoco.MjModel.from_xml_string(xml)
    model = load_mjcf(xml, dtype=jnp.float64)
    d = mujoco.MjData(mm)
    for ctrl in ([1.0, 0.0], [-1.0, 0.2], [0.1, -0.3]):
        d.ctrl[:] = ctrl
        mujoco.mj_forward(mm, d)
        got, _ = jaxsim.dynamics.actuator_forces(model, jnp.zeros(1), jnp.zeros(1), jnp.zeros(0),
                                                 jnp.asarray(ctrl))
        np.testing.assert_allclose(np.asarray(got), d.qfrc_actuator, rtol=1e-12, atol=1e-12)
    assert d.qfrc_actuator[0] != 0


# ------------------------------------------------------------------ hfield

def test_hfield_geom():
    xml = """
    <mujoco>
      <asset>
        <hfield name="h" nrow="3" ncol="3" size="1 1 0.5 0.1" elevation="0 1 2 3 4 5 6 7 8"/>
      </asset>
      <worldbody>
        <geom name="terrain" type="hfield" hfield="h"/>
        <body name="ball" pos="0 0 1"><freejoint/><geom size="0.1"/></body>
      </worldbody>
    </mujoco>
    """
    model = load_mjcf(xml, dtype=jnp.float64)
    g = model.topo.geom_name.index("terrain")
    assert model.topo.geom_type[g] == GeomType.HFIELD
    assert model.topo.geom_body[g] == 0
    h = model.topo.geom_hfield[g]
    assert h == 0 and model.topo.nhfield == 1
    assert (model.topo.hfield_nrow[h], model.topo.hfield_ncol[h]) == (3, 3)
    np.testing.assert_allclose(np.asarray(model.hfield_size[h]), [1, 1, 0.5, 0.1])
    data = np.asarray(model.hfield_data[h, :9])
    # MuJoCo normalizes the elevation to [0, 1]; the nine distinct values survive
    np.testing.assert_allclose(np.sort(data), np.arange(9) / 8, atol=1e-7)


# ------------------------------------------------------------ missing extra

def test_missing_mujoco_extra_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # `import mujoco` now fails
    with pytest.raises(ImportError, match="pip install"):
        mjcf_mod._mujoco()
    with pytest.raises(ImportError, match="pip install"):
        load_mjcf(ARM_XML)


RESTITUTION_XML = """<mujoco><custom>{numerics}</custom><worldbody>
  <geom name="floor" type="plane" size="1 1 0.1"/>
  <body name="b" pos="0 0 1"><freejoint/>
    <geom name="tagged" type="sphere" size="0.1"/>
    <geom name="bouncy" type="sphere" size="0.1" pos="0.3 0 0" solref="0.02 0.2"/>
    <geom name="plain" type="sphere" size="0.1" pos="0.6 0 0"/>
  </body></worldbody></mujoco>"""


def test_geom_restitution_from_custom_numerics_and_solref():
    """``jaxsim:restitution:GEOM`` first, then an underdamped solref (damping ratio 0.2:
    a released spring-damper keeps exp(-pi 0.2 / sqrt(0.96)) = 0.5266 of its speed),
    then the scene's ``jaxsim:restitution``, then the contact model's default (0.4 for
    springhead); bad numerics name what is wrong."""
    tagged = '<numeric name="jaxsim:restitution:tagged" data="0.7"/>'
    model = load_mjcf(RESTITUTION_XML.format(numerics=tagged), contact="springhead")
    e = {g: float(model.geom_restitution[model.geom_id(g)]) for g in ("floor", "tagged", "bouncy", "plain")}
    np.testing.assert_allclose([e["tagged"], e["bouncy"], e["plain"], e["floor"]],
                               [0.7, np.exp(-np.pi * 0.2 / np.sqrt(0.96)), 0.4, 0.4], rtol=1e-6)
    scene = load_mjcf(RESTITUTION_XML.format(numerics=tagged + '<numeric name="jaxsim:restitution" data="0.1"/>'),
                      contact="springhead")
    ids = [scene.geom_id(g) for g in ("plain", "tagged")]
    np.testing.assert_allclose(np.asarray(scene.geom_restitution)[ids], [0.1, 0.7])
    assert mjcf_mod.solref_restitution((0.02, 1.0)) is None and mjcf_mod.solref_restitution((-1e4, -10)) is None
    with pytest.raises(ModelError, match="no geom named 'nope'"):
        load_mjcf(RESTITUTION_XML.format(numerics='<numeric name="jaxsim:restitution:nope" data="0.5"/>'))
    with pytest.raises(ModelError, match="restitution must be in"):
        load_mjcf(RESTITUTION_XML.format(numerics='<numeric name="jaxsim:restitution:tagged" data="1.5"/>'))


# ------------------------------------------------------------ jaxsim: options in the file

OPTIONS_XML = """<mujoco><option integrator="{integrator}">{flag}</option><custom>{custom}</custom><worldbody>
  <geom name="floor" type="plane" size="1 1 0.1"/>
  <body name="b" pos="0 0 1"><joint type="hinge" damping="0.5"/><geom name="ball" type="sphere" size="0.1"/></body>
</worldbody></mujoco>"""


def _options_xml(custom="", integrator="Euler", flag=""):
    return OPTIONS_XML.format(custom=custom, integrator=integrator, flag=flag)


def test_custom_elements_set_options_and_contact_parameters():
    """``jaxsim:KEY`` numerics and texts set scene options and parameters of the file's
    contact model, beside the per-geom ``jaxsim:restitution``; keyword options win."""
    custom = ('<numeric name="jaxsim:contact_relaxation" data="0.02"/><text name="jaxsim:solver_iterations" data="7"/>'
              '<numeric name="jaxsim:gravity" data="0 0 -1"/><text name="jaxsim:edge_contacts" data="false"/>'
              '<numeric name="jaxsim:restitution:ball" data="0.3"/>')
    model = load_mjcf(_options_xml(custom))
    assert float(model.contact_params.contact_relaxation) == pytest.approx(0.02) and model.opt.solver_iterations == 7
    assert not model.opt.edge_contacts and float(model.geom_restitution[model.geom_id("ball")]) == pytest.approx(0.3)
    np.testing.assert_allclose(np.asarray(model.opt.gravity), [0, 0, -1])
    mine = load_mjcf(_options_xml(custom), contact_relaxation=0.05, solver_iterations=9)
    assert float(mine.contact_params.contact_relaxation) == pytest.approx(0.05) and mine.opt.solver_iterations == 9
    springhead = '<text name="jaxsim:contact" data="springhead"/><text name="jaxsim:solver" data="qp"/>'
    assert load_mjcf(_options_xml(springhead)).contact_params.solver == "qp"
    with pytest.warns(UserWarning, match="contact model 'relaxed' has no parameter 'solver'; left out"):
        assert load_mjcf(_options_xml(springhead), contact="relaxed").opt.contact == "relaxed"


@pytest.mark.parametrize("custom, match", [
    ('<numeric name="jaxsim:stiffnes" data="1"/>',
     r"custom numeric 'jaxsim:stiffnes': unknown name; allowed: jaxsim:contact, .*scene options: timestep"),
    ('<text name="jaxsim:zeta" data="0.5"/>',
     r"contact model 'relaxed' has no parameter 'zeta' \(a parameter of cone\); its parameters: "),
    ('<numeric name="jaxsim:solver_iterations" data="2.5"/>', "solver_iterations must be an integer"),
    ('<text name="jaxsim:gravity" data="0 -9.81"/>', "gravity must be 3 numbers"),
    ('<numeric name="jaxsim:contact" data="1"/>', "jaxsim:contact must be a custom text"),
    ('<text name="jaxsim:contact" data="nope"/>', r"unknown contact model 'nope'; one of \['cone'"),
    ('<numeric name="jaxsim:contact_relaxation" data="-1"/>', "contact_relaxation must be >= 0"),
])
def test_bad_custom_options_name_what_is_allowed(custom, match):
    with pytest.raises(ModelError, match=match):
        load_mjcf(_options_xml(custom))
    with pytest.raises(ModelError, match=r"unknown option 'stiffnes'; scene options: .*contact model 'relaxed'"):
        load_mjcf(_options_xml(), stiffnes=1.0)


def test_implicit_integrators_become_euler_with_one_warning():
    """MuJoCo's implicit / implicitfast: jaxsim's Euler with implicit joint damping (even
    with eulerdamp off, which only concerns MuJoCo's Euler), one warning naming both;
    RK4 stays RK4, and an explicit integrator is no substitution."""
    for asked in ("implicitfast", "implicit"):
        xml = _options_xml(integrator=asked, flag='<flag eulerdamp="disable"/>')
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_mjcf(xml)
        assert [str(w.message)[:80] for w in caught] == [
            f"MuJoCo's '{asked}' integrator is not available in jaxsim: using 'euler' (semi-implicit)"[:80]]
        assert "implicit_damping=True" in str(caught[0].message) and caught[0].category is UserWarning
        assert model.opt.integrator == "euler" and model.opt.implicit_damping
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_mjcf(_options_xml(integrator="RK4")).opt.integrator == "rk4"
        assert load_mjcf(_options_xml(integrator="implicitfast"), integrator="rk4").opt.integrator == "rk4"


# ------------------------------------------------------------ URDF packages

PKG_URDF = """<robot name="pkg">
  <link name="base">
    <inertial><mass value="1.0"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>
    <collision><geometry><mesh filename="{uri}" scale="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><mesh filename="{uri}"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""

TETRA = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)


def _write_stl(path):
    """A binary STL of the unit tetrahedron (outward faces)."""
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    out = bytearray(80) + np.uint32(len(faces)).tobytes()
    for f in faces:
        out += np.zeros(3, np.float32).tobytes() + TETRA[list(f)].tobytes() + b"\0\0"
    path.write_bytes(bytes(out))


@pytest.fixture
def pkg_tree(tmp_path):
    """``ws/src/my_robot`` (a package.xml naming ``my_robot``) with a mesh and a URDF
    under ``urdf/``, and the same mesh under ``other/my_robot``."""
    root = tmp_path / "ws" / "src" / "my_robot"
    (root / "meshes").mkdir(parents=True), (root / "urdf").mkdir()
    (root / "package.xml").write_text("<package format='3'><name>my_robot</name></package>")
    _write_stl(root / "meshes" / "tetra.stl")
    (tmp_path / "other" / "my_robot" / "meshes").mkdir(parents=True)
    _write_stl(tmp_path / "other" / "my_robot" / "meshes" / "tetra.stl")
    return tmp_path, root


def _pkg_urdf(path, uri="package://my_robot/meshes/tetra.stl", inertia=(0.01, 0.01, 0.01)):
    path.write_text(PKG_URDF.format(uri=uri, ixx=inertia[0], iyy=inertia[1], izz=inertia[2]))
    return path


def test_urdf_package_uris_resolve(pkg_tree, monkeypatch):
    """``package://`` from the directories above the file (package.xml), from
    ``package_dirs`` and from ``ROS_PACKAGE_PATH``; the base mesh is the tetrahedron
    scaled by 0.1, so its hull vertices are MuJoCo's."""
    tmp, root = pkg_tree
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    urdf = _pkg_urdf(root / "urdf" / "robot.urdf")
    model = load_urdf(urdf, dtype=jnp.float64)
    assert model.nv == 1 and list(model.topo.geom_type).count(GeomType.CONVEX) == 2
    mm = mjcf_mod.compile_urdf(urdf)
    diameters = []
    for k in range(mm.nmesh):  # MuJoCo moves a mesh to its principal frame: compare distances
        v = mm.mesh_vert[mm.mesh_vertadr[k]:mm.mesh_vertadr[k] + mm.mesh_vertnum[k]]
        diameters.append(np.max(np.linalg.norm(v[:, None] - v[None], axis=-1)))
    np.testing.assert_allclose(sorted(diameters), [0.1 * np.sqrt(2), np.sqrt(2)], rtol=1e-6)
    lone = _pkg_urdf(tmp / "lone.urdf")  # no package.xml above it
    with pytest.raises(ModelError, match="cannot resolve 'package://my_robot/meshes/tetra.stl'"):
        load_urdf(lone)
    assert load_urdf(lone, package_dirs=[tmp / "other"]).nv == 1  # D/NAME
    assert load_urdf(lone, package_dirs=str(root)).nv == 1  # D is the package
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp / 'nowhere'}{':'}{tmp / 'ws' / 'src'}")
    assert load_urdf(lone).nv == 1
    with pytest.raises(ModelError, match="holding 'meshes/none.stl'"):
        load_urdf(_pkg_urdf(tmp / "bad.urdf", uri="package://my_robot/meshes/none.stl"))
    rel = _pkg_urdf(root / "rel.urdf", uri="meshes/tetra.stl")  # relative to the file
    assert load_urdf(rel).nv == 1


def test_urdf_balance_inertia(pkg_tree):
    """A (1, 1, 3) inertia breaks the triangle inequality: rejected with a hint,
    balanced to (1.5, 1.5, 3) on request (the smaller moments raised equally); a
    valid inertia is left as it is; ``floating_base`` adds a free joint."""
    _, root = pkg_tree
    urdf = _pkg_urdf(root / "urdf" / "bad_inertia.urdf", inertia=(0.01, 0.01, 0.03))
    with pytest.raises(ModelError, match="balance_inertia=True"):
        load_urdf(urdf)
    mm = mjcf_mod.compile_urdf(urdf, balance_inertia=True)
    floating = mjcf_mod.compile_urdf(urdf, balance_inertia=True, floating_base=True)
    assert (floating.nq, floating.nv) == (mm.nq + 7, mm.nv + 6)
    base, arm = floating.body("base").id, floating.body("arm").id  # (fixed, MuJoCo fuses base into the world)
    np.testing.assert_allclose(np.sort(floating.body_inertia[base]), [0.015, 0.015, 0.03], rtol=1e-9)
    np.testing.assert_allclose(floating.body_inertia[arm], 0.01, rtol=1e-9)
    assert load_urdf(urdf, balance_inertia=True, floating_base=True).nq == 8


# ------------------------------------------------------------ hull vertex cap

def _sphere_mesh_xml(n: int, maxhullvert: str = "") -> str:
    rng = np.random.default_rng(3)
    pts = rng.standard_normal((n, 3))
    pts = 0.1 * pts / np.linalg.norm(pts, axis=1, keepdims=True)
    return f"""<mujoco><asset><mesh name="ball" {maxhullvert} vertex="{' '.join(map(str, pts.ravel()))}"/></asset>
    <worldbody><body><freejoint/><geom name="hull" type="mesh" mesh="ball"/></body></worldbody></mujoco>"""


def _graph_vertices(mm, mesh: int = 0) -> np.ndarray:
    """MuJoCo's own hull vertices (``mesh_graph``) in the mesh frame."""
    adr, vadr = mm.mesh_graphadr[mesh], mm.mesh_vertadr[mesh]
    n = mm.mesh_graph[adr]
    return mm.mesh_vert[vadr + mm.mesh_graph[adr + 2 + n:adr + 2 + 2 * n]]


@pytest.mark.parametrize("cap", [None, 12])
def test_max_hull_vertices_gives_mujocos_hull(cap):
    """``max_hull_vertices`` is MuJoCo's ``maxhullvert``: the hull keeps at most that many
    vertices, the same ones as MuJoCo's hull, closed and convex; a file's own
    ``maxhullvert`` is honoured without the option."""
    xml = _sphere_mesh_xml(300)
    model = load_mjcf(xml, dtype=jnp.float64, max_hull_vertices=cap)
    own = load_mjcf(_sphere_mesh_xml(300, 'maxhullvert="12"'), dtype=jnp.float64)
    spec = mujoco.MjSpec.from_string(xml)
    mjcf_mod.limit_hull_vertices(spec, cap)
    mm = spec.compile()
    for m in (model, own) if cap else (model,):
        _, v, f = _polyhedron(m, "hull")
        _assert_closed_outward_convex(v, f)
        ref = _graph_vertices(mm)
        assert len(v) == len(ref) == (cap or 300)  # points on a sphere: all are hull vertices
        d = np.linalg.norm(v[:, None] - ref[None], axis=-1)
        assert np.all(d.min(1) < 1e-6) and np.all(d.min(0) < 1e-6)


@pytest.mark.parametrize("bad", [3, 2.5, True, "16", 2**40])
def test_bad_max_hull_vertices_is_refused(bad):
    with pytest.raises(ModelError, match="max_hull_vertices"):
        load_mjcf(_sphere_mesh_xml(20), max_hull_vertices=bad)


def test_condim_one_gives_frictionless_contacts():
    """gymnasium's pusher has condim 1 on every geom: its object, on x/y slides and
    resting on the table, slides under 1 N as in MuJoCo C (with friction it would
    stick). A pair takes the larger condim of its geoms, so one condim-3 geom keeps
    the blended friction."""
    import mujoco

    path = os.path.join(gymnasium_dir(), "pusher_v5.xml")
    model = load_mjcf(path, dtype=jnp.float64)
    force = jnp.zeros(model.nv).at[8].set(1.0)
    state = jaxsim.make_state(model)
    for _ in range(50):
        state = jaxsim.step(model, state, jnp.zeros(model.nu), force)
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    d.qfrc_applied[8] = 1.0
    for _ in range(50):
        mujoco.mj_step(m, d)
    assert d.qpos[8] > 0.4  # it slides: 1 N on 0.04 kg of armature, 0.5 N s/m damping
    np.testing.assert_allclose(np.asarray(state.q[7:9]), d.qpos[7:9], atol=1e-4)

    from jaxsim.contact.materials import pair_params

    b = jaxsim.ModelBuilder()
    b.add_geom("world", "plane", (1, 1, 0.1), name="floor", friction=(0.8, 0.8))
    b.add_geom("world", "plane", (1, 1, 0.1), name="ice", friction=(0.8, 0.8), condim=1, pos=(0, 0, 1))
    b.add_body("cube", pos=(0, 0, 0.5), mass=1.0, inertia=(0.01,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (0.05,) * 3, name="cube", friction=(0.3, 0.3), condim=1)
    built = b.build()
    friction = np.asarray(pair_params(built, "max").friction)
    partners = [built.topo.geom_name[g] for g in built.topo.pair_geom1]
    np.testing.assert_allclose(friction[partners.index("floor")], [0.8, 0.8])
    np.testing.assert_allclose(friction[partners.index("ice")], [0.0, 0.0])
    with pytest.raises(ModelError, match="condim must be 1, 3, 4 or 6, got 2"):
        b.add_geom("cube", "sphere", (0.01,), condim=2)
