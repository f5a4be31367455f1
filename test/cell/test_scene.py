"""The bin scene: counts, sizes, settling inside the pick bin, bookkeeping of removed objects."""
from pathlib import Path

import numpy as np
import pytest

from binpick_sim.cell.objects.meshes import obj_vertices
from binpick_sim.cell.scene import MAX_PARTS, _largest_extent, object_files
from binpick_sim.cell.world import connect


def largest_dimension(sim, obj):
    """Largest side of the object's oriented mesh (the bounding box PyBullet reports adds margins)."""
    shape = sim.world.client.getVisualShapeData(obj.body)[0]
    vertices = obj_vertices(shape[4].decode()) * np.asarray(shape[3])
    return float(np.max(vertices.max(axis=0) - vertices.min(axis=0)))


def test_object_count_and_size_follow_the_config(sim, config):
    pick = config.scene.pick_bin
    counts = set()
    for seed in range(6):
        sim.reset(seed=seed)
        counts.add(sim.scene.object_count)
        assert pick.min_objects <= sim.scene.object_count <= pick.max_objects
        for obj in sim.scene.objects:
            assert 0.01 - 1e-6 <= largest_dimension(sim, obj) <= 0.03 + 1e-6
        assert len({obj.urdf for obj in sim.scene.objects}) == 1  # one type per episode
    assert len(counts) > 1  # the count is drawn, not fixed


def test_objects_settle_inside_the_pick_bin(sim):
    c = sim.world.client
    for obj in sim.scene.objects:
        position = sim.scene.object_position(obj)
        assert sim.scene.pick_bin.contains(position), obj.name
        assert sim.scene.pick_bin.to_local(position)[2] < sim.scene.pick_bin.config.size[2]  # below the rim
        linear, _ = c.getBaseVelocity(obj.body)
        assert np.linalg.norm(linear) < 0.05, f"{obj.name} still moving"


def test_bins_are_hollow(sim):
    """A cube dropped into the drop bin lands on its floor, not on a lid."""
    c = sim.world.client
    drop_bin = sim.scene.drop_bin
    cube = c.loadURDF("cube_small.urdf", drop_bin.to_world([0, 0, 0.1]).tolist())  # 5 cm cube
    sim.world.step(300)
    floor = drop_bin.to_world([0, 0, drop_bin.config.wall_thickness])[2]
    assert c.getBasePositionAndOrientation(cube)[0][2] == pytest.approx(floor + 0.025, abs=0.002)


def test_objects_that_leave_the_bins_are_removed(sim):
    c = sim.world.client
    first, *rest = sim.scene.objects
    before = sim.scene.object_count
    c.resetBasePositionAndOrientation(first.body, [2.0, 2.0, 0.05], [0, 0, 0, 1])
    assert sim.scene.remove_objects_outside_bins() == [first.name]
    assert sim.scene.object_count == before - 1
    assert [o.name for o in sim.scene.objects] == [o.name for o in rest]
    with pytest.raises(KeyError, match="no object named 'object_0'"):
        sim.scene.object_named("object_0")


def test_same_seed_same_episode(sim, config):
    def episode(seed):
        sim.reset(seed=seed)
        return sim.scene.object_urdf, [tuple(np.round(sim.scene.object_position(o), 6)) for o in sim.scene.objects]

    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    other = BinPickingSim(config)
    try:
        other.reset(seed=3)
        expected = other.scene.object_urdf, [tuple(np.round(other.scene.object_position(o), 6))
                                             for o in other.scene.objects]
    finally:
        other.close()
    assert episode(3) == expected
    assert episode(4) != expected


def test_keep_object_type(sim):
    sim.reset(seed=1)
    kind = sim.scene.object_urdf
    sim.reset(keep_object_type=True)
    assert sim.scene.object_urdf == kind
    kinds = set()
    for _ in range(3):
        sim.reset()
        kinds.add(sim.scene.object_urdf)
    assert len(kinds) > 1


def test_train_and_test_sets_are_disjoint():
    train, test = object_files("train"), object_files("test")
    assert len(train) == 900 and len(test) == 100
    assert not set(train) & set(test)
    # the sets as every random_urdfs file found, in order (object_files lists the folders only)
    root = train[0].parent.parent
    assert [f for i, f in enumerate(sorted(root.glob("*/*.urdf"))) if i % 10] == list(train)


def test_each_object_types_extent_is_read_from_its_file_as_pybullet_reads_it():
    """The scale of a type (its largest side) comes from the URDF and its mesh file: the same number as from
    the file and scale PyBullet loads for the visual shape, for every object of every set."""
    client = connect()
    try:
        for urdf in object_files("train") + object_files("test") + object_files("cube"):
            body = client.loadURDF(str(urdf), flags=client.URDF_IGNORE_COLLISION_SHAPES)
            shape = client.getVisualShapeData(body)[0]
            client.removeBody(body)
            vertices = obj_vertices(shape[4].decode()) * np.asarray(shape[3])
            # (random_urdfs/168's mesh has NaN vertices: NaN either way)
            np.testing.assert_equal(_largest_extent(urdf), float(np.max(vertices.max(axis=0) - vertices.min(axis=0))),
                                    err_msg=str(urdf))
    finally:
        client.disconnect()


def test_a_type_without_a_finite_point_is_drawn_again(sim, monkeypatch):
    """random_urdfs/168's points are all NaN: drawn, it was a pile of NaN-scaled objects nobody could see or grab."""
    shapeless, good = (next(f for f in object_files("train") if f.stem == stem) for stem in ("168", "001"))
    assert np.isnan(_largest_extent(shapeless))
    monkeypatch.setattr("binpick_sim.cell.scene.object_files", lambda object_set: (shapeless, good))
    for seed in range(7100, 7108):  # layouts not seen yet; some of these seeds draw the shapeless type first
        sim.reset(seed=seed)
        assert sim.scene.object_urdf == good and np.isfinite(sim.scene.object_scale), seed
        for obj in sim.scene.objects:
            assert np.all(np.isfinite(sim.scene.object_position(obj))) and 0.01 - 1e-6 <= largest_dimension(sim, obj)


@pytest.mark.parametrize("yaw", [0.0, 30.0])
def test_a_bin_turned_or_not_knows_what_it_contains(config, yaw):
    """Bin frames (the workspace, the seed's inside-a-bin rule) for a bin as shipped and one turned about
    z: points a bin's length apart in its own frame, round trips to the world, and its objects inside."""
    import dataclasses

    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    pick = dataclasses.replace(config.scene.pick_bin, orientation_deg=(0.0, 0.0, yaw))
    sim = BinPickingSim(dataclasses.replace(config, scene=dataclasses.replace(config.scene, pick_bin=pick)))
    try:
        sim.reset(seed=0)
        bin_ = sim.scene.pick_bin
        assert bin_.unrotated == (yaw == 0.0)
        inside, outside = bin_.to_world([0.07, 0.0, 0.01]), bin_.to_world([0.09, 0.0, 0.01])
        assert np.linalg.norm(outside - inside) == pytest.approx(0.02)
        assert bin_.contains(inside) and not bin_.contains(outside)
        assert not bin_.contains(bin_.to_world([0.0, 0.0, -0.001])) and bin_.contains(bin_.to_world([0, 0, 0.079]))
        assert bin_.to_local(inside) == pytest.approx([0.07, 0.0, 0.01])
        direction = bin_.to_world([1.0, 0.0, 0.0]) - bin_.to_world([0.0, 0.0, 0.0])
        assert np.degrees(np.arctan2(direction[1], direction[0])) == pytest.approx(yaw)
        assert sim.scene.object_count and all(bin_.contains(sim.scene.object_position(o)) for o in sim.scene.objects)
    finally:
        sim.close()


def test_the_cube_set_fills_the_bin_with_boxes_of_the_configured_size(config):
    """`scene.object_set: cube` (the like-for-like scene's): every object is pybullet_data's small cube,
    a box collision shape, scaled to the size range, settled in the bin; the world's objects and
    their meshes (what world/objects and the picker see) describe it as other objects."""
    import dataclasses

    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    sim = BinPickingSim(dataclasses.replace(config, scene=dataclasses.replace(config.scene, object_set="cube")))
    try:
        c = sim.world.client
        for seed in range(3):
            sim.reset(seed=seed)
            assert sim.scene.object_count >= config.scene.pick_bin.min_objects
            for obj in sim.scene.objects:
                assert obj.urdf.name == "cube_small.urdf"
                assert c.getCollisionShapeData(obj.body, -1)[0][2] == c.GEOM_BOX
                assert 0.01 - 1e-6 <= largest_dimension(sim, obj) <= 0.03 + 1e-6
                assert sim.scene.pick_bin.contains(sim.scene.object_position(obj))
            views = sim.object_views()
            assert len(views) == sim.scene.object_count and all(len(v.vertices) >= 8 for v in views)
    finally:
        sim.close()


def test_a_client_binds_each_function_to_its_own_physics_server():
    """World clients keep PyBullet's functions bound to their id (cheaper calls); two clients stay apart
    and disconnecting still works."""
    first, second = connect(), connect()
    try:
        first.createMultiBody(0, first.createCollisionShape(first.GEOM_SPHERE, radius=0.1))
        assert first.getNumBodies() == 1 and second.getNumBodies() == 0
        assert first.getNumBodies is first.getNumBodies  # bound once, then a plain attribute
        assert first.getNumBodies.keywords == {"physicsClientId": first._client}
    finally:
        first.disconnect()
        second.disconnect()
    assert first._client == -1


def test_object_views_share_one_read_only_mesh_per_object_type(sim):
    views = sim.object_views()
    again = sim.object_views()
    assert [v.name for v in views] == [o.name for o in sim.scene.objects]
    assert all(a.vertices is b.vertices for a, b in zip(views, again))  # read once, not every step
    assert not views[0].vertices.flags.writeable
    shape = sim.world.client.getVisualShapeData(sim.scene.objects[0].body)[0]
    assert np.array_equal(views[0].vertices, obj_vertices(shape[4].decode()) * np.asarray(shape[3]))
    sim.reset(seed=1)  # another episode, maybe another object type and size: read anew
    shape = sim.world.client.getVisualShapeData(sim.scene.objects[0].body)[0]
    assert np.array_equal(sim.object_views()[0].vertices, obj_vertices(shape[4].decode()) * np.asarray(shape[3]))


# --- the bin is five boxes, not the seed's concave mesh; its walls and floor where the seed's are (issue 28, item 10)
def test_the_bins_outer_size_inner_walls_and_floor_are_the_seeds_measured_with_rays(sim):
    from binpick_sim.cell.scene import Bin

    assert Bin.default_dimensions == (0.16, 0.16, 0.04)  # seed BaseBin: 160 x 160 x 40 mm
    c = sim.world.client
    for b in sim.scene.bins:
        assert tuple(b.config.size) == Bin.default_dimensions
        shapes = c.getCollisionShapeData(b.body, -1)
        assert len(shapes) == 5 and all(s[2] == c.GEOM_BOX for s in shapes)  # floor + 4 walls, no mesh
    drop = sim.scene.drop_bin  # empty: nothing but the bin in the rays' way
    length, width, height = drop.config.size
    t = drop.config.wall_thickness

    def hit(start, end):
        """Where a ray from `start` to `end` (bin frame) first meets the drop bin, in the bin frame."""
        body, _, _, position, _ = c.rayTest(drop.to_world(start).tolist(), drop.to_world(end).tolist())[0]
        assert body == drop.body, (start, end)
        return drop.to_local(position)

    mid = height / 2
    assert hit([0, 0, 1.0], [0, 0, -0.1])[2] == pytest.approx(t, abs=1e-6)  # the floor's top, inside
    assert hit([0, 0, -0.1], [0, 0, 1.0])[2] == pytest.approx(0.0, abs=1e-6)  # its underside
    for axis, half in ((0, length / 2), (1, width / 2)):
        for sign in (1, -1):
            out = np.zeros(3)
            out[axis], out[2] = sign * (half + 0.02), mid  # 2 cm outside: clear of the other bin
            inside = np.array([0.0, 0.0, mid])
            assert hit(inside, out)[axis] == pytest.approx(sign * (half - t), abs=1e-6)  # inner wall
            assert hit(out, inside)[axis] == pytest.approx(sign * half, abs=1e-6)  # outer wall
            rim = np.zeros(3)
            rim[axis] = sign * (half - t / 2)
            assert hit(rim + [0, 0, 1.0], rim)[2] == pytest.approx(height, abs=1e-6)  # the rim
    low, high = drop.interior()
    np.testing.assert_allclose(low, [-length / 2 + t, -width / 2 + t, t])
    np.testing.assert_allclose(high, [length / 2 - t, width / 2 - t, height])


def test_spawn_anywhere_drops_objects_all_over_the_pick_bin(config):
    """`scene.spawn: anywhere`: the objects settle at places all over the pick bin, not only in the rows by one
    wall the default drops them in (its first row's objects all rest within 3 cm of that wall)."""
    import dataclasses

    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    pick_bin = dataclasses.replace(config.scene.pick_bin, min_objects=1, max_objects=1)
    ys = {}
    for spawn in ("rows", "anywhere"):
        sim = BinPickingSim(dataclasses.replace(config, scene=dataclasses.replace(config.scene, pick_bin=pick_bin,
                                                                                  spawn=spawn)))
        try:
            ys[spawn] = []
            for seed in range(8):
                sim.reset(seed=seed)
                (obj,) = sim.scene.objects
                assert sim.scene.pick_bin.contains(sim.scene.object_position(obj))
                ys[spawn].append(sim.scene.pick_bin.to_local(sim.scene.object_position(obj))[1])
        finally:
            sim.close()
    wall = sim.scene.pick_bin.interior()[0][1]
    assert max(ys["rows"]) - wall < 0.03
    assert max(ys["anywhere"]) - wall > 0.06 and np.ptp(ys["anywhere"]) > 0.05


def test_a_pile_of_a_many_part_type_comes_to_rest_within_the_settle(sim, monkeypatch):
    """Seed 3031 draws random_urdfs 395, a VHACD mesh of 100 convex parts: collided part by part, its pile
    interpenetrated (1,395 contact points among 5 objects) and never came to rest within `settle_steps`; its
    parts merged to MAX_PARTS (cell/hulls.py), it settles as the other types do."""
    layouts = []
    settle = sim.scene._settled_layout
    monkeypatch.setattr(sim.scene, "_settled_layout", lambda *a: layouts.append(settle(*a)) or layouts[-1])
    sim.reset(seed=3031)
    assert sim.scene.object_urdf.stem == "395" and len(layouts) == 1
    assert layouts[0].settled and layouts[0].steps < sim.config.scene.settle_steps
    mesh = Path(sim.scene.objects[0].collision_urdf).parent / "hulls"
    parts = [sum(1 for line in m.read_text().splitlines() if line.startswith("o ")) for m in mesh.iterdir()]
    assert parts == [MAX_PARTS]
    contacts = sim.world.client.getContactPoints()
    assert contacts and min(p[8] for p in contacts) > -0.0005  # no part sunk half a millimetre into another
