"""What the cell looks like: the cameras (`camera`), the renderer behind them (`rendering`: TinyRenderer,
EGL or the GUI), rendering in a process of its own (`render_worker`), and segmentation ids (`labels`)."""
