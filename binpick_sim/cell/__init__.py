"""The simulated cell, no ROS: one PyBullet world with its physics thread, the bins and objects, the arm and its IK, the camera, and `sim`, all of it built from one scene file."""
