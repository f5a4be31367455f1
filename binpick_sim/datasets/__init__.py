"""Dataset tools on top of `rollouts` (tools layer: nothing in binpick_sim's core, nodes or envs imports
this package): exact replay of a recorded dataset, and export to the ecosystem's formats (Minari)."""
