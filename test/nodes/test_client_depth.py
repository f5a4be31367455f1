"""SimClient's subscription depth: with depth 1 a message that arrives before the one before it was taken
replaces it (the client reads `latest`); with the camera publishers' depth every frame of a burst is kept,
so the bench's published frame rates count what the camera node published, not what one slow take kept."""
from std_msgs.msg import String

from binpick_sim.nodes.clients.client import SimClient
from binpick_sim.nodes.servers.camera_node import FRAME_DEPTH

BURST = FRAME_DEPTH + 3


def test_a_burst_keeps_the_newest_with_depth_1_and_the_last_frame_depth_with_the_publishers_depth(ros_context):
    newest_only = SimClient("depth_one", context=ros_context, topics={"burst": String})
    every_frame = SimClient("depth_frames", context=ros_context, topics={"burst": String}, depth=FRAME_DEPTH)
    sender = SimClient("burst_sender", context=ros_context, topics={})
    publisher = sender.node.create_publisher(String, "burst", BURST)
    try:
        sender.spin_until(lambda: publisher.get_subscription_count() == 2, 30, "both subscribers")
        for i in range(BURST):  # neither client spins meanwhile: the messages wait in their histories
            publisher.publish(String(data=str(i)))
        assert publisher.wait_for_all_acked()  # reliable: every reader has them (or the last of its depth)
        for client in (newest_only, every_frame):
            client.spin_for(0.5)
        assert newest_only.counts["burst"] == 1 and newest_only.latest["burst"].data == str(BURST - 1)
        assert every_frame.counts["burst"] == FRAME_DEPTH and every_frame.latest["burst"].data == str(BURST - 1)
    finally:
        for client in (newest_only, every_frame, sender):
            client.close()
