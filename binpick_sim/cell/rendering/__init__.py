"""Drawing the cell's images in this process: `renderers` (choosing and loading TinyRenderer, EGL or the GUI)
and `frame_memory` (large frames' buffers kept by glibc's heap, freed memory handed back). The world imports
this package; drawing in a process of its own needs the whole cell, so it lives beside it (`render_process/`)."""
