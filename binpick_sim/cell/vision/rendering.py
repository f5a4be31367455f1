"""The old path of binpick_sim.cell.rendering, which moved up a level (the world chooses its renderer, and the
world must not import this package): this name is that very module, so nothing importing it from here
changes."""
import sys

from .. import rendering

sys.modules[__name__] = rendering
