"""The simulated cell, no ROS. Its rooms: `world` (one PyBullet client, sim time, seeded RNG) and `loop` (the
physics thread); `scene` (ground, bins and objects placed), `bins/`, `objects/`; `arm/` (the Panda, its motors,
actions and IK); `vision/` (cameras, labels, visibility), `rendering/` (the renderers), `render_process/`
(drawing in a process of its own); `entities/` (the cell as named entities: spawning, deleting, resets);
`finite_world` (a reset's check that every body is finite), `tf_frames` (the cell's frames as TF carries them),
`pybullet_stdout` (PyBullet's chatter silenced); and `bin_picking_sim`, all of it built from one scene file."""
