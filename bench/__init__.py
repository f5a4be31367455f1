"""Benchmarks behind `make bench`. Every module has `measure(progress) -> list[Figure]`; each figure
stands beside a raw-PyBullet reference measured in the same run."""
