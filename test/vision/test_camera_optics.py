"""The camera: metric depth along the optical axis, intrinsics that match the rendering, mounting."""
import dataclasses

import numpy as np
import pytest

from binpick_sim.cell.vision.camera import Camera
from binpick_sim.cell.bin_picking_sim import BinPickingSim

HEIGHT = 0.5  # camera above the empty floor behind the robot, looking straight down
SPOT = (-1.0, 1.0)


@pytest.fixture
def looking_down(config):
    camera = dataclasses.replace(config.camera, parent="world", position=(*SPOT, HEIGHT),
                                 orientation_deg=(0.0, 90.0, 0.0), width=160, height=120)
    sim = BinPickingSim(dataclasses.replace(config, camera=camera))
    yield sim
    sim.close()


def test_depth_is_the_distance_along_the_optical_axis(looking_down):
    frame = looking_down.camera.render(segmentation=True)
    assert frame.depth.dtype == np.float32 and frame.depth.shape == (120, 160)
    # every pixel sees the floor at the same depth, corners included (a ray length would be longer there)
    assert frame.depth == pytest.approx(np.full_like(frame.depth, HEIGHT), abs=0.002)
    assert np.all(frame.segmentation == looking_down.scene.ground)


def test_depth_of_a_box_top_and_infinity_past_the_far_plane(looking_down, config):
    sim = looking_down
    c = sim.world.client
    half = 0.05
    box = c.createMultiBody(0, c.createCollisionShape(c.GEOM_BOX, halfExtents=[half] * 3),
                            c.createVisualShape(c.GEOM_BOX, halfExtents=[half] * 3), [*SPOT, half])
    frame = sim.camera.render(segmentation=True)
    assert frame.segmentation[60, 80] == box
    assert frame.depth[60, 80] == pytest.approx(HEIGHT - 2 * half, abs=0.002)
    far = dataclasses.replace(sim.camera.config, far=0.3)
    assert np.all(np.isinf(Camera(sim.world, far).render().depth))


def test_intrinsics_match_the_rendered_projection(looking_down):
    """A marker placed off-centre shows up where K projects it."""
    sim = looking_down
    c = sim.world.client
    point = np.array([SPOT[0] + 0.08, SPOT[1] - 0.05, 0.1])
    marker = c.createMultiBody(0, -1, c.createVisualShape(c.GEOM_SPHERE, radius=0.01), point.tolist())
    frame = sim.camera.render(segmentation=True)
    rows, cols = np.nonzero(frame.segmentation == marker)
    assert len(rows) > 10
    position, rotation = sim.camera.optical_pose()
    in_camera = rotation.T @ (point - position)
    u, v, w = sim.camera.intrinsics() @ in_camera
    assert (u / w, v / w) == pytest.approx((cols.mean(), rows.mean()), abs=0.25)
    # and K agrees with PyBullet's OpenGL projection matrix
    projection = np.array(sim.camera.projection).reshape(4, 4).T
    k = sim.camera.intrinsics()
    assert k[0, 0] == pytest.approx(projection[0, 0] * 160 / 2)
    assert k[1, 1] == pytest.approx(projection[1, 1] * 120 / 2)


@pytest.mark.parametrize("size", [(64, 64), (40, 90)])
def test_a_view_drawn_at_another_size_keeps_its_field_of_view_and_scales_k(looking_down, size):
    """`aspect`: the 160 x 120 camera's view drawn on another grid (an observation at its own size): K is the
    camera's scaled to the grid (fx by width, fy by height), and a marker off the axis in both directions shows
    up where that K projects it."""
    sim = looking_down
    c = sim.world.client
    point = np.array([SPOT[0] + 0.08, SPOT[1] - 0.05, 0.1])
    marker = c.createMultiBody(0, -1, c.createVisualShape(c.GEOM_SPHERE, radius=0.02), point.tolist())
    full = sim.camera.intrinsics()
    width, height = size
    small = Camera(sim.world, dataclasses.replace(sim.camera.config, width=width, height=height, aspect=160 / 120))
    k = small.intrinsics()
    assert (k[0, 0], k[1, 1]) == pytest.approx((full[0, 0] * width / 160, full[1, 1] * height / 120), rel=1e-12)
    frame = small.render(segmentation=True)
    assert frame.rgb.shape == (height, width, 3) and frame.depth.shape == (height, width)
    rows, cols = np.nonzero(frame.segmentation == marker)
    assert len(rows) > 10
    position, rotation = small.optical_pose()
    u, v, w = k @ (rotation.T @ (point - position))
    assert (u / w, v / w) == pytest.approx((cols.mean(), rows.mean()), abs=0.35)


def test_optical_frame_convention(looking_down):
    """camera_optical_frame: z forward (down here), and x right / y down in the image."""
    _, rotation = looking_down.camera.optical_pose()
    assert rotation[:, 2] == pytest.approx([0, 0, -1], abs=1e-9)
    _, link = looking_down.camera.link_pose()
    assert rotation[:, 0] == pytest.approx(-link[:, 1], abs=1e-9)  # image right = camera_link's -y


def test_mounted_camera_follows_its_link(config):
    camera = dataclasses.replace(config.camera, parent="panda_hand", position=(0.05, 0.0, 0.05),
                                 orientation_deg=(0.0, -90.0, 0.0), width=64, height=64)
    sim = BinPickingSim(dataclasses.replace(config, camera=camera))
    try:
        c = sim.world.client
        before, _ = sim.camera.link_pose()
        sim.arm.move_to(sim.arm.home + [0.4, 0, 0, 0, 0, 0, 0, 0, 0])
        after, rotation = sim.camera.link_pose()
        hand = c.getLinkState(sim.arm.body, sim.arm.link_index["panda_hand"], computeForwardKinematics=True)
        hand_rotation = np.array(c.getMatrixFromQuaternion(hand[5])).reshape(3, 3)
        assert after == pytest.approx(np.array(hand[4]) + hand_rotation @ [0.05, 0, 0.05], abs=1e-9)
        assert np.linalg.norm(after - before) > 0.05
        assert sim.camera.render().rgb.shape == (64, 64, 3)
    finally:
        sim.close()


def test_segmentation_only_when_asked_and_from_the_same_call(looking_down):
    """One getCameraImage per frame, the mask from that call (flags 0), never a second pass for it; without
    the mask PyBullet is told to leave it out."""
    client, calls = looking_down.world.client, []
    call = client.getCameraImage

    def counted(*args, **kwargs):
        calls.append(kwargs.get("flags"))
        return call(*args, **kwargs)
    client.getCameraImage = counted
    try:
        assert looking_down.camera.render().segmentation is None
        assert looking_down.camera.render(segmentation=True).segmentation.shape == (120, 160)
    finally:
        del client.getCameraImage
    assert calls == [client.ER_NO_SEGMENTATION_MASK, 0]


@pytest.mark.parametrize("size", [(64, 48), (320, 240), (1024, 768)])
def test_rgb_is_the_rendered_rgba_without_alpha_on_either_copy_path(size):
    """Below OPENCV_MIN_PIXELS numpy's slice copies it, from there OpenCV's cvtColor: the same bytes, contiguous."""
    from binpick_sim.cell.vision.camera import OPENCV_MIN_PIXELS, rgb_of

    width, height = size
    rgba = np.random.default_rng(0).integers(0, 256, (height, width, 4), dtype=np.uint8)
    rgb = rgb_of(rgba)
    assert (width * height >= OPENCV_MIN_PIXELS) == (size != (64, 48))
    assert rgb.dtype == np.uint8 and rgb.flags.c_contiguous and np.array_equal(rgb, rgba[:, :, :3])


def test_far_plane_test_in_float32_agrees_with_float64_at_the_boundary(looking_down):
    """Buffer values around FAR_BUFFER, float32 neighbours included: inf exactly where the value, read as float64,
    is at or beyond FAR_BUFFER (the comparison runs in float32 against FAR_BUFFER_32)."""
    from binpick_sim.cell.vision.camera import FAR_BUFFER

    near = np.float32(FAR_BUFFER)
    values = [np.nextafter(near, np.float32(0)), near, np.nextafter(near, np.float32(2)), np.float32(1.0),
              np.float32(0.5), np.float32(0.999)]
    buffer = np.array(values, dtype=np.float32).reshape(1, -1)
    metres = looking_down.camera.linearize(buffer)
    assert list(np.isinf(metres[0])) == [float(v) >= FAR_BUFFER for v in values]
    assert np.isfinite(metres[0, 4:]).all()


def test_unknown_parent_frame_is_refused(config):
    camera = dataclasses.replace(config.camera, parent="panda_nose")
    with pytest.raises(ValueError, match="camera.parent: unknown frame 'panda_nose'"):
        BinPickingSim(dataclasses.replace(config, camera=camera))


def test_camera_is_remounted_and_refocused_at_run_time(config):
    """The seed's mount_camera_on_robot and recompute_view_and_projection_matrix: pose, lens and size change
    on a live camera; K and the images follow."""
    sim = BinPickingSim(dataclasses.replace(config, camera=dataclasses.replace(config.camera, width=64, height=48)))
    try:
        camera, c = sim.camera, sim.world.client
        camera.mount("panda_hand", (0.05, 0.0, 0.04), (0.0, -90.0, 0.0))
        hand = c.getLinkState(sim.arm.body, sim.arm.link_index["panda_hand"], computeForwardKinematics=True)
        rotation = np.array(c.getMatrixFromQuaternion(hand[5])).reshape(3, 3)
        assert camera.link_pose()[0] == pytest.approx(np.array(hand[4]) + rotation @ [0.05, 0, 0.04], abs=1e-9)
        wide = camera.intrinsics()[0, 0]
        camera.set_view(fov_deg=30.0, width=80, height=60)
        assert camera.render().rgb.shape == (60, 80, 3)
        assert camera.intrinsics()[0, 0] == pytest.approx(30 / np.tan(np.radians(15)))
        assert camera.intrinsics()[0, 0] > wide
        camera.mount("world", (0.85, 0.0, 0.55), (0.0, 55.0, 180.0))
        assert camera.parent_body is None and camera.link_pose()[0] == pytest.approx([0.85, 0.0, 0.55])
    finally:
        sim.close()


@pytest.mark.parametrize("changes, message", [
    ({"far": 0.001}, "far: must be > near"),
    ({"fov_deg": float("nan")}, "fov_deg"),
    ({"near": 1e308}, "far: must be > near"),
    ({"width": 2 ** 63}, "camera.width: must be from 1 to 4096"),
    ({"position": (1e308, 0.0, 0.0)}, r"camera.position\[0\]: must be from -100 to 100"),
    ({"parent": "panda_nose"}, "unknown frame 'panda_nose'"),
    ({"aspect": 0.005}, "camera.aspect: must be 0"),
    ({"aspect": float("inf")}, "camera.aspect: expected a finite number"),
])
def test_bad_run_time_camera_changes_are_refused_and_change_nothing(sim, changes, message):
    before = sim.camera.config, sim.camera.intrinsics(), sim.camera.link_pose()[0]
    with pytest.raises(ValueError, match=message):
        sim.camera.reconfigure(**changes)
    assert sim.camera.config == before[0]
    assert np.array_equal(sim.camera.intrinsics(), before[1]) and np.array_equal(sim.camera.link_pose()[0], before[2])
