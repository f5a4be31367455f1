"""ROS clients of a running simulation, as a user's script or agent would write them."""
