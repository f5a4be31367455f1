"""A large frame's buffers come from the heap kept from the frame before (cell/heap.py), not from new pages: without
it, Camera.render at 1024 x 768 with egl took about 4,700 minor page faults a frame after two getCameraImage calls
with the segmentation mask (glibc had raised its thresholds and trimmed the heap after every frame). Run in a
fresh Python, whose heap nothing else has touched."""
import subprocess
import sys

from helpers import egl_or_skip

SCRIPT = """
import resource
import dataclasses
from binpick_sim.cell.sim import BinPickingSim
from binpick_sim.config import load_config
from binpick_sim.paths import default_config

config = load_config(default_config())
config = dataclasses.replace(config, simulation=dataclasses.replace(config.simulation, renderer="egl"),
                             camera=dataclasses.replace(config.camera, width=1024, height=768))
sim = BinPickingSim(config)
sim.reset(seed=0)
camera, c = sim.camera, sim.world.client
for _ in range(2):  # what left glibc trimming the heap after every frame
    c.getCameraImage(camera.width, camera.height, camera.view_matrix(), camera.projection,
                     renderer=camera.renderer, flags=0)
camera.render()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    camera.render()
print("faults per frame", (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
sim.close()
"""


def test_large_frames_reuse_the_heap_instead_of_faulting_in_new_pages(tmp_path):
    egl_or_skip()
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=240,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    faults = float(result.stdout.split("faults per frame")[-1])
    # 17 MB of buffers a frame would be some 4,000 pages; what is left is the renderer's own
    assert faults < 500, result.stdout
