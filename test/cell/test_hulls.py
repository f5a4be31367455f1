"""URDFs loaded from their hulled copies (cell/hulls.py) are the bodies pybullet_data describes: the Panda and the
scene's objects with the same collision hulls part by part, inertias, joints and visual meshes, the same motion
through a grasp; and a copy is written once per machine, safely beside other processes, or per process where no
cache can be written."""
import os
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pybullet
import pybullet_data
import pytest

from binpick_sim.cell import hulls, scene
from binpick_sim.cell.arm import franka, ik
from binpick_sim.cell.arm.panda import PANDA_URDF
from binpick_sim.cell.objects.meshes import obj_vertices
from binpick_sim.cell.scene import object_files

ORIGINAL = str(Path(pybullet_data.getDataPath()) / PANDA_URDF)


@pytest.fixture
def client():
    c = pybullet.connect(pybullet.DIRECT)
    yield c
    pybullet.disconnect(c)


def _links(c, body) -> range:
    return range(-1, pybullet.getNumJoints(body, physicsClientId=c))


def _points(c, body, link) -> np.ndarray:
    """The points Bullet keeps of a link's collision meshes, part after part."""
    return np.array(pybullet.getMeshData(body, link, physicsClientId=c)[1]).reshape(-1, 3)


def test_every_link_collides_with_the_hulls_of_the_original_meshes_and_keeps_its_dynamics_and_joints(client):
    flags = pybullet.URDF_IGNORE_VISUAL_SHAPES
    original = pybullet.loadURDF(ORIGINAL, useFixedBase=True, flags=flags, physicsClientId=client)
    copy = pybullet.loadURDF(franka.hulled_panda_urdf(), useFixedBase=True, flags=flags, physicsClientId=client)
    meshed = 0
    for link in _links(client, original):
        ours, theirs = (_points(client, b, link) for b in (copy, original))
        assert len(ours) == len(theirs), link  # the same points Bullet keeps of the mesh, in any order
        np.testing.assert_array_equal(np.unique(ours, axis=0), np.unique(theirs, axis=0))
        meshed += len(theirs) > 0
        assert (pybullet.getDynamicsInfo(copy, link, physicsClientId=client)
                == pybullet.getDynamicsInfo(original, link, physicsClientId=client)), link
    assert meshed >= 10  # every link with a mesh was compared (the two empty ones are frames)
    for joint in range(pybullet.getNumJoints(original, physicsClientId=client)):
        assert (pybullet.getJointInfo(copy, joint, physicsClientId=client)
                == pybullet.getJointInfo(original, joint, physicsClientId=client))


def _dropped(c, urdf: str) -> list:
    """Where an object tipped onto the ground comes to: its pose and velocity after each of 300 steps."""
    pybullet.resetSimulation(physicsClientId=c)
    pybullet.setGravity(0, 0, -9.81, physicsClientId=c)
    pybullet.loadURDF(str(Path(pybullet_data.getDataPath()) / "plane.urdf"), physicsClientId=c)
    body = pybullet.loadURDF(urdf, [0, 0, 0.03], pybullet.getQuaternionFromEuler([0.3, 0.5, 0.7]), globalScaling=0.7,
                             physicsClientId=c)
    seen = []
    for _ in range(300):
        pybullet.stepSimulation(physicsClientId=c)
        seen.append((pybullet.getBasePositionAndOrientation(body, physicsClientId=c),
                     pybullet.getBaseVelocity(body, physicsClientId=c)))
    return seen


@pytest.mark.parametrize("object_set", ["train", "test"])
def test_objects_keep_their_convex_parts_inertia_contacts_and_looks(client, object_set):
    files = object_files(object_set)
    for urdf in files[:: max(1, len(files) // 25)] + tuple(f for f in files if f.name == "168.urdf"):  # NaN points
        original = pybullet.loadURDF(str(urdf), globalScaling=0.7, physicsClientId=client)
        copied = hulls.hulled(urdf, "copied")
        copy = pybullet.loadURDF(copied, [1, 0, 0], globalScaling=0.7, physicsClientId=client)
        # A mesh without a finite point (168's) is kept as it is: PyBullet makes up its points and inertia from
        # memory it never set (7 of 600 loads of 168 gave another inertia, inf and 2e59 among them), so only its
        # file is compared.
        shapeless = not np.all(np.isfinite(obj_vertices(str(urdf.with_suffix(".obj")))))
        if shapeless:
            meshes = ElementTree.parse(copied).getroot().iter("collision")
            assert [m.find("geometry/mesh").get("filename") for m in meshes] == [str(urdf.with_suffix(".obj"))]
        else:
            ours, theirs = (_points(client, b, -1) for b in (copy, original))
            assert len(ours) == len(theirs) > 0, urdf
            np.testing.assert_array_equal(np.unique(ours, axis=0), np.unique(theirs, axis=0), err_msg=str(urdf))
            assert (pybullet.getDynamicsInfo(copy, -1, physicsClientId=client)
                    == pybullet.getDynamicsInfo(original, -1, physicsClientId=client)), urdf
        (ours,), (theirs,) = (pybullet.getVisualShapeData(b, physicsClientId=client) for b in (copy, original))
        assert ours[1:4] + ours[5:] == theirs[1:4] + theirs[5:]  # link, geometry, scale, pose, colour
        assert Path(ours[4].decode()).read_bytes() == Path(theirs[4].decode()).read_bytes()  # the same mesh drawn
        assert Path(ours[4].decode()).parent == Path(copied).parent  # beside the copy (rendering.renderers.spelled)
        assert shapeless or _dropped(client, copied) == _dropped(client, str(urdf)), urdf  # same tumble, bit for bit
    cube = Path(pybullet_data.getDataPath()) / "cube_small.urdf"  # a box: nothing to hull
    assert hulls.hulled(cube, "copied") == str(cube)


def test_a_drawn_arm_shows_the_original_visual_meshes(client):
    shapes = [pybullet.getVisualShapeData(pybullet.loadURDF(urdf, useFixedBase=True, physicsClientId=client),
                                          physicsClientId=client) for urdf in (ORIGINAL, franka.hulled_panda_urdf())]
    assert len(shapes[0]) == len(shapes[1]) >= 10
    for theirs, ours in zip(*shapes):
        assert ours[1:4] == theirs[1:4] and ours[5:] == theirs[5:]  # link, geometry, scale, pose, colour
        assert Path(ours[4].decode()).resolve() == Path(theirs[4].decode()).resolve()  # the same file


def test_the_hull_mesh_is_smaller_and_spans_the_same_box():
    source = Path(pybullet_data.getDataPath()) / "franka_panda/meshes/collision/link6.obj"
    text = hulls.hull_obj(source)
    ours = np.array([[float(x) for x in line.split()[1:]] for line in text.splitlines() if line.startswith("v ")])
    theirs = np.array([[float(x) for x in line.split()[1:4]] for line in source.read_text().splitlines()
                       if line.startswith("v ")])
    assert len(ours) < len(theirs) / 2
    np.testing.assert_array_equal(ours.min(axis=0), theirs.min(axis=0))
    np.testing.assert_array_equal(ours.max(axis=0), theirs.max(axis=0))
    assert text == hulls.hull_obj(source)  # the same text every time


def test_a_scripted_grasp_runs_the_same_with_the_copies_as_with_the_originals(monkeypatch):
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401
    from binpick_sim.envs.scripted import ScriptedPicker

    def episode() -> tuple[np.ndarray, dict]:
        env = gym.make("binpick_sim/FrankaDelta-v0", observation="privileged", max_episode_steps=60)
        try:
            observation, _ = env.reset(seed=0)
            picker, seen, done = ScriptedPicker(env), [], False
            while not done:
                observation, _, terminated, truncated, info = env.step(picker.act(observation))
                seen.append(observation)
                done = terminated or truncated
            return np.array(seen), info
        finally:
            env.close()

    ours, info = episode()
    for module in (franka, ik):  # the arm and its IK copy
        monkeypatch.setattr(module, "hulled_panda_urdf", lambda: ORIGINAL)
    monkeypatch.setattr(scene, "hulled", lambda urdf, *settings: str(urdf))  # the objects too, in both worlds
    theirs, _ = episode()
    assert info["grabbed"] and len(ours) < 60  # the episode ends with an object lifted in the fingers
    np.testing.assert_array_equal(ours, theirs)  # joints, gripper and every object, step by step


def test_the_copy_is_written_once_into_the_cache_and_a_finished_one_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    hulls.hulled.cache_clear()
    try:
        urdf = Path(franka.hulled_panda_urdf())
        assert urdf.parent.parent == tmp_path / "binpick_sim" and urdf.is_file()
        assert sorted(p.name.split("_", 1)[1] for p in (urdf.parent / hulls.HULLS).iterdir()) == [
            "finger.obj", "hand.obj"] + [f"link{i}.obj" for i in range(8)]
        stamp = urdf.stat().st_mtime_ns
        hulls.hulled.cache_clear()
        monkeypatch.setattr(hulls, "_write", lambda *_: pytest.fail("written again"))
        assert franka.hulled_panda_urdf() == str(urdf) and urdf.stat().st_mtime_ns == stamp
        assert [p.name for p in (tmp_path / "binpick_sim").iterdir()] == [urdf.parent.name]  # no scratch left
    finally:
        hulls.hulled.cache_clear()


def test_a_copy_another_process_finished_first_wins_the_rename(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    write = hulls._write

    def racing(urdf, folder, *settings):  # another process renames its copy into place while this one writes
        write(urdf, folder, *settings)
        write(urdf, tmp_path / "other", *settings)
        os.replace(tmp_path / "other", target[0])

    hulls.hulled.cache_clear()
    try:
        target = [tmp_path / "binpick_sim" / Path(franka.hulled_panda_urdf()).parent.name]
        shutil.rmtree(target[0])
        hulls.hulled.cache_clear()
        monkeypatch.setattr(hulls, "_write", racing)
        assert Path(franka.hulled_panda_urdf()).is_file()
        assert [p.name for p in (tmp_path / "binpick_sim").iterdir()] == [target[0].name]
    finally:
        hulls.hulled.cache_clear()


def test_without_a_writable_cache_the_copy_is_this_processs_own(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    hulls.hulled.cache_clear()
    try:
        urdf = Path(franka.hulled_panda_urdf())
        assert urdf.is_file() and blocked not in urdf.parents
        c = pybullet.connect(pybullet.DIRECT)
        try:
            assert pybullet.getNumJoints(pybullet.loadURDF(str(urdf), physicsClientId=c), physicsClientId=c) == 12
        finally:
            pybullet.disconnect(c)
    finally:
        hulls.hulled.cache_clear()


def _parts(text: str) -> list[np.ndarray]:
    """The points of each part (`o` record) of an OBJ's text."""
    parts = []
    for line in text.splitlines():
        if line.startswith("o "):
            parts.append([])
        elif line.startswith("v "):
            parts[-1].append([float(x) for x in line.split()[1:4]])
    return [np.array(p) for p in parts]


@pytest.mark.parametrize("name", ["395", "524"])  # 100 and 83 convex parts
def test_a_many_part_type_keeps_the_cells_most_parts_each_the_hull_of_whole_source_parts(name):
    from scipy.spatial import ConvexHull, Delaunay

    source = Path(pybullet_data.getDataPath()) / "random_urdfs" / name / f"{name}.obj"
    originals = _parts(hulls.hull_obj(source))
    text = hulls.hull_obj(source, scene.MAX_PARTS)
    merged = _parts(text)
    assert len(originals) > scene.MAX_PARTS == len(merged)
    every_point = np.vstack(originals)
    for part in merged:  # made of the source's points alone
        assert {tuple(p) for p in part} <= {tuple(p) for p in every_point}
    inside = [Delaunay(part) for part in merged]
    for part in originals:  # each source part lies whole inside one merged part: nothing of the object is lost
        assert any(np.all(hull.find_simplex(part, tol=1e-9) >= 0) for hull in inside)
    # Merged along the object: its parts fill far less than its own hull (a thin shell stays a shell).
    assert sum(ConvexHull(p).volume for p in merged) < 0.5 * ConvexHull(every_point).volume
    assert text == hulls.hull_obj(source, scene.MAX_PARTS)  # the same every time


def test_a_type_of_few_parts_is_the_same_copy_under_the_cells_most():
    urdf = Path(pybullet_data.getDataPath()) / "random_urdfs" / "002" / "002.urdf"  # 6 parts
    copies = [Path(hulls.hulled(urdf, "copied", most)) for most in (None, scene.MAX_PARTS)]
    assert copies[0] != copies[1]  # two copies, one per setting
    meshes = [sorted((c.parent / hulls.HULLS).iterdir()) for c in copies]
    assert [m.read_bytes() for m in meshes[0]] == [m.read_bytes() for m in meshes[1]] != []
