"""Ways to drive the arm beyond motor targets, no ROS: joint trajectories, the controller family of seed 001, and the time-indexed robot interface of seeds 002/003."""
