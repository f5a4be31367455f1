"""The bins: `geometry` (the boxes a bin is made of, without PyBullet, shared with the robot description) and
`shake` (a bin on a constraint while it shakes)."""
