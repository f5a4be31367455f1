"""The bin-picking task, no ROS: the episode rules (grabs, collisions, reward) and the scripted picker's planning."""
