"""Renderer selection (tiny | egl | gui | auto) and the same images whichever renderer draws them.

Each image test runs once per renderer available here: TinyRenderer always; EGL where PyBullet's EGL
plugin loads (skipped with the reason otherwise; on this Debian machine Mesa's llvmpipe provides it).
"""
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from binpick_sim.cell.rendering import renderers
from binpick_sim.cell.rendering.renderers import RendererError
from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.config import ConfigError, config_from_dict, config_to_dict

from helpers import egl_or_skip, with_renderer


def test_scene_file_names_one_of_four_renderers(config):
    data = config_to_dict(config)
    for name in renderers.RENDERERS:
        data["simulation"]["renderer"] = name
        assert config_from_dict(data).simulation.renderer == name
    data["simulation"]["renderer"] = "vulkan"
    with pytest.raises(ConfigError, match=r"simulation.renderer: expected one of \['auto', 'tiny', 'egl', 'gui'\]"):
        config_from_dict(data)


def test_egl_that_cannot_load_fails_at_start_up_with_one_clear_line(tmp_path):
    """No EGL vendor library: the sim process exits 2 with one line naming the renderer and a way out
    (PyBullet's plugin alone would end the process with 'failed to EGL with glad.')."""
    env = {**os.environ, "__EGL_VENDOR_LIBRARY_FILENAMES": str(tmp_path / "no_vendor.json"),
           "EGL_PLATFORM": "surfaceless"}
    done = subprocess.run([sys.executable, "-m", "binpick_sim.nodes.process.entry", "--ros-args", "-p",
                           "renderer:=egl", "-p", "exit_with_parent:=false"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("binpick_sim: cannot start")]
    assert len(lines) == 1 and "renderer egl: PyBullet's EGL plugin cannot start here" in lines[0]
    assert "use renderer tiny" in lines[0]


def test_egl_and_gui_refuse_frames_they_would_upsample(config):
    """Both draw into a window of 1024 x 768 and rescale larger frames from it: refused at start-up and
    at run time, naming the way out; `auto` takes TinyRenderer for them."""
    with pytest.raises(RendererError, match="renderer egl: frames up to 1024x768 only.*got 1280x720"):
        BinPickingSim(with_renderer(config, "egl", width=1280, height=720))
    assert renderers.choose("auto", False, [(1280, 720)]) == "tiny"
    with pytest.raises(RendererError, match="renderer gui: frames up to 1024x768 only .the GUI window.*got 1280x720"):
        renderers.choose("gui", True, [(640, 480), (1280, 720)])
    assert renderers.choose("auto", True, [(1280, 720)]) == "tiny"
    assert renderers.choose("auto", True, [(1024, 768)]) == "gui"
    sim = BinPickingSim(config)  # the run-time check, as it would run with the GUI's renderer (no display here)
    try:
        sim.world.renderer = renderers.GUI
        with pytest.raises(ConfigError, match="renderer gui: frames up to 1024x768"):
            sim.camera.set_view(width=1280, height=720)
        assert sim.camera.config.width == 640
    finally:
        sim.close()


def test_auto_follows_its_rule(config):
    assert renderers.choose("auto", True, [(640, 480)]) == "gui"
    assert renderers.choose("auto", False, [(64, 64)]) == "tiny"  # TinyRenderer is faster for tiny frames
    try:
        renderers.probe_egl()
        expected = "egl"
    except RendererError:
        expected = "tiny"
    assert renderers.choose("auto", False, [(640, 480)]) == expected


def test_one_egl_world_per_process(config):
    egl_or_skip()
    first = BinPickingSim(with_renderer(config, "egl", width=64, height=48))
    try:
        assert first.world.renderer.name == "egl" and "Vendor" in first.world.renderer.describe()
        with pytest.raises(RendererError, match="another world of this process already renders with EGL"):
            BinPickingSim(with_renderer(config, "egl", width=64, height=48))
        second = BinPickingSim(with_renderer(config, "auto", width=640, height=480))
        assert second.world.renderer.name == "tiny"  # auto falls back instead of crashing
        second.close()
    finally:
        first.close()
    again = BinPickingSim(with_renderer(config, "egl", width=64, height=48))
    assert again.world.renderer.name == "egl"
    again.close()


# --- the same images whichever renderer -------------------------------------------------------
def mesh_box(path, half) -> str:
    """An OBJ file of a box with these half extents, faces wound outwards."""
    corners = [(x, y, z) for x in (-half[0], half[0]) for y in (-half[1], half[1]) for z in (-half[2], half[2])]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]  # 1 bit x, 2 y, 4 z
    lines = [f"v {x} {y} {z}" for x, y, z in corners]
    for a, b, c, d in faces:
        lines += [f"f {a + 1} {b + 1} {c + 1}", f"f {a + 1} {c + 1} {d + 1}"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def cell_in_view(config, renderer, tmp_path):
    """The default scene seen by the scene file's camera as it is (640 x 480, near 0.1, far 3), with boxes."""
    sim = BinPickingSim(with_renderer(config, renderer))
    sim.reset(seed=0)
    add_mesh_boxes(sim, tmp_path)
    yield sim
    sim.close()


def add_mesh_boxes(sim, folder) -> None:
    """Three tilted boxes in and beside the bins (`sim.boxes`) whose visual and collision shapes are one
    triangle mesh: Bullet's ray test is exact on a triangle mesh and on the ground plane, while on box
    shapes it lands up to about 1 mm off the face (measured: a bin wall hit 0.9 mm in front of it,
    mid-face), so those are the references depth is held to."""
    c = sim.world.client
    sim.boxes = []
    for k, (position, yaw, half) in enumerate((((0.55, 0.25, 0.05), 0.4, (0.05, 0.04, 0.05)),
                                               ((0.45, -0.3, 0.03), -0.7, (0.06, 0.03, 0.03)),
                                               ((0.5, -0.18, 0.06), 0.3, (0.03, 0.05, 0.02)))):
        mesh = mesh_box(folder / f"box_{k}.obj", half)
        sim.boxes.append(c.createMultiBody(
            0, c.createCollisionShape(c.GEOM_MESH, fileName=mesh, flags=c.GEOM_FORCE_CONCAVE_TRIMESH),
            c.createVisualShape(c.GEOM_MESH, fileName=mesh, rgbaColor=(0.8, 0.2, 0.2, 1)),
            position, c.getQuaternionFromEuler((0, 0.2, yaw))))


def ray_depths(sim, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth along the optical axis, and the body hit, of a ray test through each (u, v) pixel via K."""
    camera, c = sim.camera, sim.world.client
    position, rotation = camera.optical_pose()
    directions = np.linalg.inv(camera.intrinsics()) @ np.vstack([pixels.T, np.ones(len(pixels))])  # z = 1
    ends = (position[:, None] + rotation @ directions * camera.config.far).T.tolist()
    hits = [h for i in range(0, len(ends), 8000)  # PyBullet's batches hold at most 16,384 rays
            for h in c.rayTestBatch([position.tolist()] * len(ends[i:i + 8000]), ends[i:i + 8000])]
    depth = np.array([(rotation.T @ (np.array(h[3]) - position))[2] if h[0] >= 0 else np.inf for h in hits])
    return depth, np.array([h[0] for h in hits])


def depth_errors(sim, count: int = 10000) -> tuple[np.ndarray, np.ndarray]:
    """|rendered depth - ray test| and the ray test's depth at `count` pixels on the ground and the boxes,
    whose 5 x 5 neighbourhood is the same body and whose depth changes by less than 1 cm to each
    neighbour (not faces seen edge-on, where a pixel spans centimetres of depth)."""
    frame = sim.camera.render(segmentation=True)
    seg, depth = frame.segmentation, frame.depth.astype(float)
    height, width = seg.shape
    interior = np.zeros_like(seg, dtype=bool)
    interior[2:-2, 2:-2] = True
    for dv in range(-2, 3):
        for du in range(-2, 3):
            interior[2:-2, 2:-2] &= seg[2 + dv:height - 2 + dv, 2 + du:width - 2 + du] == seg[2:-2, 2:-2]
    with np.errstate(invalid="ignore"):  # inf - inf beyond the far plane: never interior ground anyway
        steep = np.zeros_like(interior)
        steep[:, 1:] |= np.abs(np.diff(depth, axis=1)) >= 0.01
        steep[:, :-1] |= np.abs(np.diff(depth, axis=1)) >= 0.01
        steep[1:, :] |= np.abs(np.diff(depth, axis=0)) >= 0.01
        steep[:-1, :] |= np.abs(np.diff(depth, axis=0)) >= 0.01
    rng, picked = np.random.default_rng(0), []
    for bodies in ([sim.scene.ground], sim.boxes):  # half on the ground, half on the boxes
        rows, cols = np.nonzero(interior & ~steep & np.isin(seg, bodies))
        assert len(rows) > count
        picked.append(rng.choice(len(rows), size=count // 2, replace=False))
        picked[-1] = (rows[picked[-1]], cols[picked[-1]])
    rows, cols = (np.concatenate(part) for part in zip(*picked))
    expected, bodies = ray_depths(sim, np.column_stack([cols, rows]).astype(float))
    same = bodies == seg[rows, cols]  # a ray grazing an edge the 5 x 5 test let through: a handful
    assert np.count_nonzero(~same) < 0.001 * len(rows)
    return np.abs(depth[rows, cols] - expected)[same], expected[same]


def test_depth_is_within_a_millimetre_of_a_ray_test(cell_in_view):
    """At the scene file's camera settings, with each renderer: the depth at every pixel, along the optical
    axis, is within 1 mm of where a ray through that pixel (by K) hits; the view spans 0.48 to 1.12 m.
    Measured here: TinyRenderer (float depth) within 0.01 mm, EGL on Mesa (16-bit depth) within 0.07 mm."""
    error, z = depth_errors(cell_in_view)
    assert z.max() > 1.0 and error.max() < 0.001, f"worst {error.max() * 1000:.2f} mm at {z[error.argmax()]:.2f} m"


def test_egl_depth_stays_within_its_depth_buffers_resolution_at_a_small_near_plane(config, tmp_path):
    """A near plane of 1 cm (a wrist camera's): EGL's 16-bit depth buffer on Mesa then steps by
    z^2 (1/near - 1/far) / 2^16, and depth stays within 0.75 of a step (doc/cameras.md, "Renderers"): 1 mm out to
    0.94 m, 1.1 mm at the view's far edge. The bits are those the renderer reports."""
    egl_or_skip()
    sim = BinPickingSim(with_renderer(config, "egl", near=0.01))
    try:
        sim.reset(seed=0)
        add_mesh_boxes(sim, tmp_path)
        bits = int(sim.world.renderer.gl.split("depth buffer ")[1].split(" bit")[0])
        error, z = depth_errors(sim)
    finally:
        sim.close()
    step = z ** 2 * (1 / 0.01 - 1 / config.camera.far) / 2 ** bits
    assert np.all(error <= 0.75 * step + 1e-5), f"{(error / step).max():.2f} of a step"
    assert np.all(error[z < 0.93] < 0.001)


def test_intrinsics_match_each_renderers_principal_point(cell_in_view):
    """A small marker sphere shows up where K projects its centre (sub-pixel)."""
    c = cell_in_view.world.client
    position, rotation = cell_in_view.camera.optical_pose()
    for offset in ((0.0, 0.0), (0.06, -0.04), (-0.05, 0.05)):
        point = position + rotation @ np.array([offset[0], offset[1], 0.5])
        marker = c.createMultiBody(0, -1, c.createVisualShape(c.GEOM_SPHERE, radius=0.006), point.tolist())
        rows, cols = np.nonzero(cell_in_view.camera.render(segmentation=True).segmentation == marker)
        c.removeBody(marker)
        assert len(rows) > 10
        u, v, w = cell_in_view.camera.intrinsics() @ (rotation.T @ (point - position))
        assert (u / w, v / w) == pytest.approx((cols.mean(), rows.mean()), abs=0.25)


def test_an_object_type_seen_again_at_another_size_is_drawn_at_that_size(config, renderer):
    """The same random_urdfs object in a later episode, three times larger: three times larger in the
    picture too. (PyBullet's EGL plugin keeps a mesh by file name, not scale: loaded again at another
    scale it would be drawn at its first size; renderers.spelled is the way round.)"""
    def episode(size):
        sim.scene.config = dataclasses.replace(sim.scene.config, object_size_range=(size, size * 1.001))
        sim.reset(seed=5)  # the same object type both times: the same draws from the same seed
        seg = sim.camera.render(segmentation=True).segmentation
        return sim.scene.object_urdf, np.mean([np.count_nonzero(seg == o.body) for o in sim.scene.objects])

    sim = BinPickingSim(with_renderer(config, renderer))
    try:
        (small_type, small), (large_type, large) = episode(0.015), episode(0.045)
    finally:
        sim.close()
    assert small_type == large_type and small > 20
    assert large / small > 5, f"{small:.0f} px, then {large:.0f} px"  # 9 for a 3x size, unless it is hidden


def test_the_first_egl_frame_is_lit_like_the_next(config):
    egl_or_skip()
    sim = BinPickingSim(with_renderer(config, "egl"))
    try:
        sim.reset(seed=0)
        first, second = sim.camera.render(), sim.camera.render()
        assert np.array_equal(first.rgb, second.rgb)  # without the sim's one-pixel frame: 5 % of them differ
    finally:
        sim.close()


def test_colour_images_of_one_scene_agree_coarsely(config):
    """TinyRenderer's and EGL's pictures of the same scene: the same colours in the same places, blockwise."""
    egl_or_skip()
    images = {}
    for name in ("tiny", "egl"):
        sim = BinPickingSim(with_renderer(config, name, width=320, height=240))
        try:
            sim.reset(seed=0)
            images[name] = sim.camera.render().rgb.astype(float)
        finally:
            sim.close()
    blocks = {k: v.reshape(12, 20, 16, 20, 3).mean(axis=(1, 3)) for k, v in images.items()}  # 16 x 12 blocks
    def correlation(a, b):
        return np.corrcoef(a.ravel(), b.ravel())[0, 1]

    same = correlation(blocks["tiny"], blocks["egl"])  # the renderers light the scene a little differently
    shifted = correlation(blocks["tiny"], np.roll(blocks["egl"], 4, axis=1))  # a picture of something else
    print(f"block correlation {same:.3f}, shifted by 4 blocks {shifted:.3f}")
    assert same > 0.9 and same > shifted + 0.2


def test_egl_renders_the_requested_size_without_upsampling(config):
    egl_or_skip()
    sim = BinPickingSim(with_renderer(config, "egl", width=1024, height=768, position=(0.6, 0.0, 0.5),
                                      orientation_deg=(0.0, 30.0, 0.0), near=0.3))
    try:
        depth = sim.camera.render().depth
        assert depth.shape == (768, 1024)
        floor = np.isfinite(depth).all(axis=1)
        # an upsampled image repeats whole rows; the floor's depth changes from each row to the next
        assert not np.any(np.all(np.diff(depth[floor], axis=0) == 0, axis=1))
    finally:
        sim.close()


def test_egl_frames_published_from_the_physics_thread_show_the_current_scene(ros_context):
    """The camera node renders on the physics thread, not the thread that loaded the EGL plugin: the
    context moves with it (renderers.EglContext). Without that, frames silently repeat an old picture."""
    egl_or_skip()
    from rclpy.parameter import Parameter

    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.stack import SimStack

    world = [Parameter("realtime_factor", value=0.0), Parameter("renderer", value="egl")]
    with SimStack(ros_context, {"world": world}) as stack:
        assert stack.sim.world.renderer.name == "egl"
        watcher = SimClient("egl_watcher", context=ros_context,
                            topics={"camera/depth/image_raw": TOPICS["camera/image_raw"]})
        try:
            for fov in (60.0, 35.0):
                # a frame of a state after the change: frames captured before it may still be on their way
                # (the render worker draws one and holds the next), so counting new frames is not enough
                def change_view():  # physics thread: the change and the sim time it took effect at
                    stack.sim.camera.set_view(fov_deg=fov)
                    return stack.sim.world.time

                changed = stack.loop.run(change_view)
                watcher.wait_for_stamp("camera/depth/image_raw", changed + stack.sim.world.timestep / 2, timeout=60)
                depth = watcher.depth()
                rows, cols = np.nonzero(np.isfinite(depth))
                pick = np.random.default_rng(0).choice(len(rows), size=200, replace=False)
                pixels = np.column_stack([cols[pick], rows[pick]]).astype(float)
                expected, _ = stack.loop.run(lambda: ray_depths(stack.sim, pixels))
                error = np.abs(depth[rows[pick], cols[pick]] - expected)
                assert np.median(error) < 0.001, f"fov {fov}: median {np.median(error) * 1000:.1f} mm off"
        finally:
            watcher.close()


@pytest.mark.parametrize("backend", ["direct", "ros"])
def test_image_env_renders_with_the_chosen_renderer(backend):
    """The gym envs take `renderer=` (default: the scene file's simulation.renderer), on both backends:
    the ROS one hands it to its private `sim`, whose camera node says what draws its frames."""
    egl_or_skip()
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    env = gym.make("binpick_sim/FrankaPosition-v0", observation="image", renderer="egl", camera_size=(160, 120),
                   backend=backend)
    try:
        observation, _ = env.reset(seed=0)
        if backend == "direct":
            assert env.unwrapped.backend.sim.world.renderer.name == "egl"
        else:
            log = (Path(env.unwrapped.backend.folder.name) / "sim.log").read_text()
            assert f"160x120 frames rendered by egl ({renderers.probe_egl()})" in log, log[-2000:]
        assert observation["rgb"].shape == (120, 160, 3) and np.isfinite(observation["depth"]).all()
        assert observation["rgb"].std() > 10
    finally:
        env.close()


def test_diagnostics_and_the_start_up_log_name_the_renderer_with_its_gl_strings(ros_context, renderer, tmp_path):
    """`sim -p renderer:=...` as a user runs it: the camera node's start-up line and its /diagnostics
    status say which renderer draws (for EGL with the GL vendor / renderer string of this machine), and
    /diagnostics which Fast DDS profile the process runs with."""
    import time

    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor

    from binpick_sim.nodes.common.dds import profile_path
    from binpick_sim.nodes.process.spawn import SimProcess

    expected = "tiny (PyBullet TinyRenderer, CPU)" if renderer == "tiny" else f"egl ({renderers.probe_egl()})"
    log = tmp_path / "sim.log"
    process = SimProcess({"world:renderer": renderer, "realtime_factor": 0.0}, log=log)
    node = rclpy.create_node("renderer_watcher", context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    camera = {}  # the camera node's diagnostic values, by key
    node.create_subscription(DiagnosticArray, "/diagnostics", lambda msg: camera.update(
        {kv.key: kv.value for status in msg.status if status.name == "/camera" for kv in status.values}), 10)
    try:
        deadline = time.monotonic() + 120
        while "renderer" not in camera:
            assert time.monotonic() < deadline, "no /diagnostics status from the camera node"
            process.check_alive()
            executor.spin_once(timeout_sec=0.1)
        assert camera["renderer"] == expected
        assert f"frames rendered by {expected}" in log.read_text()
        # the sim process loads the package's Fast DDS profile itself (nodes/common/dds.py)
        assert camera["dds_profile"] == str(profile_path())
    finally:
        executor.shutdown()
        node.destroy_node()
        process.stop()
