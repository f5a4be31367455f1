"""What the cameras see: the camera model (`camera`), segmentation ids (`labels`), and what a view sees of each
object (`visibility`: the reasoner's visible / occluding masks). The renderer behind them is the world's
(cell/rendering.py) and rendering in a process of its own needs the whole cell (cell/render_worker.py): both
live one level up, so that this package imports the cell's world and never the other way round."""
