"""Datasets of rollouts (tools layer: nothing in binpick_sim's core, nodes or envs imports this package): the
Parquet format `rollouts` writes (parquet.py), exact replay of a recorded dataset, and export to the
ecosystem's formats (Minari, LeRobot). `rollouts` imports these, never the other way round."""
