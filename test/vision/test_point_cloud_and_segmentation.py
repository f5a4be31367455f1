"""camera/points and camera/segmentation/image_raw: what they hold, and that they cost nothing unwatched."""
import dataclasses

import numpy as np
import pytest
from sensor_msgs.msg import Image, PointCloud2

from binpick_sim.cell.vision import labels
from binpick_sim.cell.vision.camera import organised_cloud
from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.nodes.clients.client import TOPICS, SimClient
from binpick_sim.nodes.common import convert


def cloud_array(msg: PointCloud2) -> np.ndarray:
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("rgb", 12, 7)]
    return np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(msg.height, msg.width, 4)


def test_cloud_is_the_depth_image_back_projected_with_nan_where_nothing_is_hit(config):
    camera = dataclasses.replace(config.camera, width=80, height=60, far=0.5)  # the far plane cuts the floor off
    sim = BinPickingSim(dataclasses.replace(config, camera=camera))
    try:
        frame = sim.camera.render()
        cloud = cloud_array(convert.point_cloud(frame.stamp, sim.camera.points(frame.depth), frame.rgb))
        assert np.all(np.isnan(cloud[..., :3][np.isinf(frame.depth)])) and np.isinf(frame.depth).any()
        hit = np.isfinite(frame.depth)
        assert np.array_equal(cloud[..., 2][hit], frame.depth[hit])
        # each point projects back (by K) onto its own pixel
        rows, cols = np.nonzero(hit)
        u, v, w = sim.camera.intrinsics() @ cloud[rows, cols, :3].T.astype(float)
        assert np.allclose(u / w, cols, atol=1e-3) and np.allclose(v / w, rows, atol=1e-3)
        packed = cloud[..., 3].view(np.uint32)
        assert np.array_equal((packed >> 16) & 255, frame.rgb[..., 0])
        assert np.array_equal(packed & 255, frame.rgb[..., 2])
        # what the worker and the node build, in one pass: the same bits
        fused = organised_cloud(frame.depth, sim.camera.intrinsics(), frame.rgb)
        assert fused.tobytes() == cloud_array(convert.point_cloud(frame.stamp, sim.camera.points(frame.depth),
                                                                  frame.rgb)).tobytes()
        assert cloud_array(convert.packed_point_cloud(frame.stamp, fused)).tobytes() == fused.tobytes()
    finally:
        sim.close()


def test_image_messages_are_what_cv_bridge_builds_and_reads_back():
    """convert.image builds rgb8 / 32FC1 / 32SC1 messages with one copy (no cv_bridge): field for field what
    cv_bridge's cv2_to_imgmsg made, read back by cv_bridge unchanged; from a strided view too; a wrong array
    is refused."""
    from cv_bridge import CvBridge

    bridge, rng = CvBridge(), np.random.default_rng(3)
    rgba = rng.integers(0, 256, (6, 5, 4), dtype=np.uint8)
    arrays = {"rgb8": rgba[:, :, :3], "32FC1": rng.random((6, 5), dtype=np.float32),
              "32SC1": rng.integers(-3, 40, (6, 5), dtype=np.int32)}
    for encoding, pixels in arrays.items():
        msg = convert.image(2.5, pixels, encoding, "cam")
        expected = bridge.cv2_to_imgmsg(np.ascontiguousarray(pixels), encoding=encoding)
        for field in ("height", "width", "encoding", "is_bigendian", "step", "data"):
            assert getattr(msg, field) == getattr(expected, field), (encoding, field)
        assert msg.header.frame_id == "cam" and convert.to_seconds(msg.header.stamp) == 2.5
        assert np.array_equal(bridge.imgmsg_to_cv2(msg), pixels)
    for wrong, encoding in [(arrays["32FC1"], "rgb8"), (arrays["rgb8"].astype(np.float32), "rgb8"),
                            (arrays["32SC1"], "32FC1")]:
        with pytest.raises(ValueError, match=f"{encoding} needs"):
            convert.image(0.0, wrong, encoding)


def test_points_and_segmentation_topics_only_while_subscribed(ros_context, stack, client):
    camera_node = next(n for n in stack.nodes if n.get_name() == "camera")
    client.spin_for(0.5)
    assert camera_node.frames == 0
    watcher = SimClient("cloud_watcher", context=ros_context,
                        topics={"camera/points": PointCloud2, "camera/depth/image_raw": TOPICS["camera/image_raw"],
                                "world/objects": TOPICS["world/objects"]})
    try:
        watcher.wait_for_topics(["camera/points", "camera/depth/image_raw", "world/objects"], timeout=60)
        watcher.spin_until(lambda: watcher.stamp("camera/points") == watcher.stamp("camera/depth/image_raw"), 30,
                           "a cloud and a depth image of one frame")
        cloud = cloud_array(watcher.latest["camera/points"])
        msg = watcher.latest["camera/points"]
        assert (msg.header.frame_id, msg.width, msg.height, msg.is_dense) == ("camera_optical_frame", 640, 480, False)
        assert np.array_equal(cloud[..., 2], watcher.depth())  # the floor is everywhere: no NaN here
        assert camera_node.segmented_frames == 0  # the cloud does not need the mask
    finally:
        watcher.close()

    segmenter = SimClient("segmentation_watcher", context=ros_context,
                          topics={"camera/segmentation/image_raw": Image, "world/objects": TOPICS["world/objects"]})
    try:
        segmenter.wait_for_topics(["camera/segmentation/image_raw", "world/objects"], timeout=60)
        segmenter.wait_for_new("camera/segmentation/image_raw", timeout=30)
        msg = segmenter.latest["camera/segmentation/image_raw"]
        assert (msg.encoding, msg.width, msg.height, msg.header.frame_id) == ("32SC1", 640, 480,
                                                                              "camera_optical_frame")
        ids = segmenter.bridge.imgmsg_to_cv2(msg, desired_encoding="32SC1")
        marker_ids = {m.id for m in segmenter.latest["world/objects"].markers if m.action == m.ADD}
        seen = set(np.unique(ids).tolist())
        assert seen <= marker_ids | set(labels.CODES.values())
        assert seen & marker_ids, "the default camera sees objects in the pick bin"
        assert {labels.ROBOT, labels.CELL} <= seen
        # the ids match where the simulation's objects are: each object's pixels are its own body's
        truth = stack.loop.run(lambda: stack.sim.camera.render(segmentation=True).segmentation)
        bodies = {obj.index: obj.body for obj in stack.sim.scene.objects}
        for marker_id in seen & marker_ids:
            assert np.mean(truth[ids == marker_id] == bodies[marker_id]) > 0.9
    finally:
        segmenter.close()
    assert camera_node.segmented_frames > 0
    client.spin_for(1.0)  # the node learns that nobody watches any more
    segmented = camera_node.segmented_frames
    client.spin_for(1.0)
    assert camera_node.segmented_frames == segmented
