"""Several cameras from `cameras:` in the scene file: each its own node, topics, frames and rate, each
rendered only while watched; `camera:` keeps today's names."""
import numpy as np
import pytest
import yaml

from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.config import ConfigError, config_from_dict, config_to_dict, load_config
from binpick_sim.description import cell_description
from binpick_sim.nodes.clients.client import TOPICS, SimClient
from binpick_sim.paths import default_config

WRIST = {"parent": "panda_hand", "position": [0.05, 0.0, 0.04], "orientation_deg": [0.0, -90.0, 0.0],
         "width": 160, "height": 120}


@pytest.fixture
def two_cameras(tmp_path):
    data = yaml.safe_load(default_config().read_text())
    data["cameras"] = {"wrist": WRIST}
    path = tmp_path / "two_cameras.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_named_cameras_are_read_checked_and_described(two_cameras):
    config = load_config(two_cameras)
    assert config.cameras["wrist"].parent == "panda_hand" and config.camera.width == 640
    assert config_from_dict(config_to_dict(config)) == config
    urdf = cell_description(config)
    assert '<joint name="camera_wrist_joint" type="fixed">' in urdf and 'link="camera_wrist_optical_frame"' in urdf
    assert '<joint name="camera_joint" type="fixed">' in urdf  # camera: keeps its names
    data = config_to_dict(config)
    data["cameras"] = {"Wrist Cam": WRIST}
    with pytest.raises(ConfigError, match="cameras: 'Wrist Cam' is not a name"):
        config_from_dict(data)
    data["cameras"] = {"wrist": {**WRIST, "fov_deg": float("nan")}}
    with pytest.raises(ConfigError, match="cameras.wrist.fov_deg: expected a finite number"):
        config_from_dict(data)


def test_wrist_camera_follows_the_hand(two_cameras):
    sim = BinPickingSim(load_config(two_cameras))
    try:
        wrist = sim.cameras["wrist"]
        assert set(sim.cameras) == {"", "wrist"} and sim.cameras[""] is sim.camera
        assert (wrist.link_frame, wrist.optical_frame) == ("camera_wrist_link", "camera_wrist_optical_frame")
        before = wrist.link_pose()[0]
        sim.arm.move_to(sim.arm.home + [0.4, 0, 0, 0, 0, 0, 0, 0, 0])
        assert np.linalg.norm(wrist.link_pose()[0] - before) > 0.05
        assert wrist.render().rgb.shape == (120, 160, 3) and sim.camera.render().rgb.shape == (480, 640, 3)
    finally:
        sim.close()


def test_each_camera_is_served_under_its_name_only_while_watched(ros_context, two_cameras):
    from binpick_sim.nodes.process.stack import SimStack
    from rclpy.parameter import Parameter

    def parameters(**values):
        return [Parameter(k, value=v) for k, v in values.items()]

    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0, config=str(two_cameras)),
                                "camera_wrist": parameters(rate=5.0)}) as stack:
        nodes = {n.get_name(): n for n in stack.nodes}
        main, wrist = nodes["camera"], nodes["camera_wrist"]
        assert wrist.get_parameter("rate").value == 5.0 and main.get_parameter("rate").value == 10.0
        watcher = SimClient("wrist_watcher", context=ros_context,
                            topics={"camera/wrist/image_raw": TOPICS["camera/image_raw"],
                                    "camera/wrist/camera_info": TOPICS["camera/camera_info"]})
        try:
            watcher.wait_for_topics(["camera/wrist/image_raw", "camera/wrist/camera_info"], timeout=60)
            image, info = watcher.latest["camera/wrist/image_raw"], watcher.latest["camera/wrist/camera_info"]
            assert (image.width, image.height, image.header.frame_id) == (160, 120, "camera_wrist_optical_frame")
            assert info.header.frame_id == "camera_wrist_optical_frame"
            assert np.allclose(np.reshape(info.k, (3, 3)), stack.sim.cameras["wrist"].intrinsics())
            watcher.wait_for_new("camera/wrist/image_raw", count=3, timeout=60)
            assert main.frames == 0  # nobody watches the main camera: it renders nothing
            assert wrist.frames >= 3
        finally:
            watcher.close()
