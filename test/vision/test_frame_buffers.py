"""The render worker keeps a large frame's buffers on the heap from one frame to the next (cell/rendering/frame_memory.py) instead
of faulting in new pages: without it, its Camera.render at 1024 x 768 with egl took about 4,700 minor page
faults a frame in a process that had made calls with the segmentation mask (glibc had raised its thresholds
and trimmed the heap after every frame); the worker, whose frames alternate like that, took 180-1,200.
Measured in the worker process (/proc), which sets it for itself: Camera.render in a caller's process does
not change that process's allocator."""
from helpers import egl_or_skip, with_renderer

FRAMES = 20  # averaged over: a kept heap still grows by a few hundred pages in an odd frame (below)


def minor_faults(pid: int) -> int:
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])  # minflt


def test_the_render_worker_reuses_the_heap_for_large_frames_instead_of_faulting_in_new_pages(config):
    egl_or_skip()
    from binpick_sim.cell.render_process.worker import RenderWorker, capture
    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    config = with_renderer(config, "tiny", width=1024, height=768)  # the live sim only captures states
    sim = BinPickingSim(config)
    worker = RenderWorker(config, "egl")
    try:
        sim.reset(seed=0)

        def frame(segmentation: bool):
            worker.request(capture(sim, sim.camera, segmentation))
            assert worker.wait(120) is not None

        for segmentation in (True, True, False):  # the mask's frames: what left glibc trimming after each frame
            frame(segmentation)
        before = minor_faults(worker.pid)
        for _ in range(FRAMES):
            frame(False)
        per_frame = (minor_faults(worker.pid) - before) / FRAMES
        # with the heap kept: 0-2 a frame, but in up to 4 frames of 40 the heap grew by 0.5-3 MB (129-768
        # faults; a CI run's 5 frames took 115 on average from one such); without: 0-4,580 a frame, and
        # 394-947 on average over 20 (six runs)
        assert per_frame < 200, per_frame
    finally:
        worker.close()
        sim.close()
