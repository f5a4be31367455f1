"""The cell as named entities (the simulation standard's view): `registry` (spawn, delete, state, resets),
`errors` (its refusals), `name_filter` (a client's name filter, in linear time), and what a spawn may read:
`spawn_sources` (the folders a URDF may come from), `spawn_folder` (walking one), `urdf_resources` (a URDF's
files) and `urdf_limits` (its numbers within bounds)."""
