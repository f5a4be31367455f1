"""The defects an outside audit of the seeds found (issue 13, items 4-14): each test failed before its fix."""
import numpy as np
import pytest


def move_grasp_target_to(sim, point):
    """Joint-space move (no workspace clipping) of the grasp target to `point`, pointing down."""
    arm = sim.arm
    arm.move_to(arm.ik(np.asarray(point, float), arm.ee_yaw()))
    assert np.linalg.norm(arm.ee_pose()[0] - point) < 0.005


# --- 4: a shake anywhere returns to where it started --------------------------------------------
def test_a_shake_above_the_drop_bin_goes_up_and_back_where_it_started(sim):
    arm = sim.arm
    move_grasp_target_to(sim, sim.scene.drop_bin.to_world([0, 0, 0.15]))
    start = arm.ee_pose()[0]
    heights = []
    original = arm.move_to

    def recording(q, *args, **kwargs):
        readings = original(q, *args, **kwargs)
        heights.append(arm.ee_pose()[0].copy())
        return readings
    arm.move_to = recording
    arm.shake()
    up, down = heights
    assert np.linalg.norm(up[:2] - start[:2]) < 0.003 and up[2] - start[2] == pytest.approx(0.03, abs=0.003)
    assert np.linalg.norm(down - start) < 0.003
