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


# --- 5: gripper_open follows the fingers' command in every env ----------------------------------
def state_env(env_id, **kwargs):
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    return gym.make(env_id, observation="state", camera_size=(32, 24), **kwargs).unwrapped


@pytest.mark.parametrize("env_id", ["binpick_sim/FrankaPosition-v0", "binpick_sim/FrankaVelocity-v0"])
def test_gripper_open_follows_the_finger_command(env_id):
    env = state_env(env_id)
    try:
        observation, _ = env.reset(seed=1)
        assert observation["gripper_open"] == 1
        home = observation["joint_positions"].astype(float)
        close = (np.concatenate([home[:7], [0.0, 0.0]]) if env.command == "position"
                 else np.concatenate([np.zeros(7), -env.joint_velocity[7:]]))
        for _ in range(5):
            observation, *_ = env.step(close.astype(np.float32))
        assert observation["joint_positions"][7:].max() < 0.002  # the fingers did close
        assert observation["gripper_open"] == 0
        still = np.concatenate([home[:7], [0.0, 0.0]]) if env.command == "position" else np.zeros(9)
        observation, *_ = env.step(still.astype(np.float32))  # velocity env: no finger motion keeps the state
        assert observation["gripper_open"] == 0
        opened = (home if env.command == "position" else np.concatenate([np.zeros(7), env.joint_velocity[7:]]))
        for _ in range(5):
            observation, *_ = env.step(opened.astype(np.float32))
        assert observation["gripper_open"] == 1
        assert env.reset()[0]["gripper_open"] == 1
    finally:
        env.close()
