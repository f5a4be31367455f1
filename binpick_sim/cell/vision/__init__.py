"""What the cell looks like: the cameras (`camera`), the renderer behind them (`rendering`: TinyRenderer,
EGL or the GUI), rendering in a process of its own (`render_worker`), segmentation ids (`labels`), and
what a view sees of each object (`visibility`: the reasoner's visible / occluding masks)."""
