"""`python -m binpick_sim.rollouts`: the command line of binpick_sim.rollouts.cli."""
import sys

# Through the importable modules, so Ray pickles the actors by reference, not as `__main__` copies.
from binpick_sim.rollouts.cli import main

sys.exit(main())
