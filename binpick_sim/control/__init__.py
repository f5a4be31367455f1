"""Ways to drive the arm beyond motor targets, no ROS: joint trajectories, robosuite's controller family, and TriFinger's time-indexed robot interface."""
