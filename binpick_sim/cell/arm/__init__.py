"""The Franka Panda arm in the cell: `franka` (FrankaArm: one arm's body, state and commands), `motors` (how
commands reach its motors), `actions` (the stepping actions: move, grasp, shake to verify), `panda` (facts about
the Panda itself: joint names, URDF, limits) and `ik` (inverse kinematics on a private copy of the arm)."""
