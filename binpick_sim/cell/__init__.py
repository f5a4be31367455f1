"""The simulated cell, no ROS: one PyBullet world with its physics thread, the bins (which can shake) and
objects, the arms and their IK, the cameras and their rendering (`vision/`), and `sim`, all of it built
from one scene file."""
