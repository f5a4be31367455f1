"""What the cameras see: the camera model (`camera`), segmentation ids (`labels`), and what a view sees of each
object (`visibility`: the reasoner's visible / occluding masks). The renderer behind them is the world's
(cell/rendering/renderers.py) and rendering in a process of its own needs the whole cell
(cell/render_process/worker.py): both live beside this package, so that it imports the cell's world and
never the other way round."""
