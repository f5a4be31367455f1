"""Following a trajectory as a planner sends it: interpolation in time, replacement, refusals."""
import numpy as np
import pytest

from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.control.trajectory import BadTrajectory, Trajectory, TrajectoryFollower

ARM = JOINT_NAMES[:7]


def parse(sim, names=ARM, times=(1.0,), positions=None, velocities=None):
    positions = positions if positions is not None else [list(sim.arm.home[:7])] * len(times)
    velocities = velocities if velocities is not None else [[] for _ in times]
    return Trajectory.parse(names, times, positions, velocities, sim.arm.limits.lower, sim.arm.limits.upper)


def follow(sim, trajectory):
    follower = TrajectoryFollower(sim.arm, trajectory, sim.world.time)
    sim.arm.set_controller(follower)
    return follower


def test_the_arm_passes_each_point_at_its_time(sim):
    home = sim.arm.home[:7]
    goal_a = home + [0.3, 0.2, 0, -0.2, 0, 0, 0]
    goal_b = home + [-0.2, 0.1, 0.2, 0, 0, 0.1, 0]
    follower = follow(sim, parse(sim, times=(1.0, 2.0), positions=[goal_a, goal_b]))
    sim.world.step(round(1.0 / sim.world.timestep))  # t = 1 s
    assert np.abs(sim.arm.joint_states()[0][:7] - goal_a).max() < 0.02
    halfway = follower.sample(1.5)
    assert halfway == pytest.approx((goal_a + goal_b) / 2)  # linear between positions-only points
    sim.world.step(round(1.2 / sim.world.timestep))
    assert np.abs(sim.arm.joint_states()[0][:7] - goal_b).max() < 0.01
    assert follower.done and sim.arm.controller is None  # finished: the last point is held


def test_velocities_make_cubic_segments_that_meet_them(sim):
    home = sim.arm.home[:7]
    goal = home + [0.4, 0, 0, 0, 0, 0, 0]
    follower = follow(sim, parse(sim, times=(2.0,), positions=[goal], velocities=[[0.0] * 7]))
    assert follower.sample(1.0)[0] == pytest.approx(home[0] + 0.2, abs=1e-4)  # symmetric: half way at half time
    assert follower.sample(0.5)[0] - home[0] < 0.1  # and slow at the start (linear would be 0.1)


def test_a_new_trajectory_replaces_the_running_one(sim):
    home = sim.arm.home[:7]
    follow(sim, parse(sim, times=(2.0,), positions=[home + [0.5, 0, 0, 0, 0, 0, 0]]))
    sim.world.step(60)
    other = home + [-0.3, 0, 0, 0, 0, 0, 0]
    follow(sim, parse(sim, times=(1.0,), positions=[other]))
    sim.world.step(round(1.3 / sim.world.timestep))
    assert sim.arm.joint_states()[0][0] == pytest.approx(other[0], abs=0.01)


def test_only_the_named_joints_move(sim):
    start = sim.arm.joint_states()[0]
    follow(sim, parse(sim, names=["panda_joint2"], times=(0.5,), positions=[[start[1] + 0.3]]))
    sim.world.step(200)
    now = sim.arm.joint_states()[0]
    assert now[1] == pytest.approx(start[1] + 0.3, abs=0.01)
    assert np.abs(np.delete(now - start, 1)).max() < 0.01


@pytest.mark.parametrize("kwargs, message", [
    (dict(names=["panda_joint1", "elbow"]), "unknown joint"),
    (dict(names=["panda_joint1", "panda_joint1"], positions=[[0, 0]]), "named twice"),
    (dict(names=[]), "no joint names"),
    (dict(times=()), "no points"),
    (dict(times=(1.0, 0.5)), "increase strictly"),
    (dict(times=(1.0, 1.0)), "increase strictly"),
    (dict(times=(-1.0,)), "start at >= 0"),
    (dict(positions=[[0.0] * 6]), "needs 7 positions"),
    (dict(positions=[[np.nan] * 7]), "finite"),
    (dict(positions=[[0, 0, 0, 0.5, 0, 1, 0]]), "outside its limits"),
    (dict(velocities=[[0.0] * 3]), "velocities"),
])
def test_bad_trajectories_are_refused_with_the_reason(sim, kwargs, message):
    with pytest.raises(BadTrajectory, match=message):
        parse(sim, **kwargs)


def test_accelerations_make_quintic_segments_that_meet_them(sim):
    home = sim.arm.home[:7]
    goal = home + [0.4, 0, 0, 0, 0, 0, 0]
    trajectory = Trajectory.parse(ARM, [1.0], [goal], [[0.5] + [0.0] * 6], sim.arm.limits.lower, sim.arm.limits.upper,
                                  accelerations=[[-2.0] + [0.0] * 6])
    follower = TrajectoryFollower(sim.arm, trajectory, sim.world.time)
    start = follower.positions[0][0]
    for t in (0.0, 1.0):  # the boundary conditions: position and velocity at both ends
        q, v = follower.sample_state(t)
        assert q[0] == pytest.approx(start if t == 0 else goal[0]) and v[0] == pytest.approx(0.0 if t == 0 else 0.5)
    h = 1e-4  # and the acceleration, by finite differences
    accel = lambda t: (follower.sample(t + h)[0] - 2 * follower.sample(t)[0] + follower.sample(t - h)[0]) / h**2
    assert accel(1.0 - h) == pytest.approx(-2.0, abs=1e-2) and accel(h) == pytest.approx(0.0, abs=1e-2)
    with pytest.raises(BadTrajectory, match="accelerations need velocities"):
        Trajectory.parse(ARM, [1.0], [goal], [[]], sim.arm.limits.lower, sim.arm.limits.upper, accelerations=[[0.0] * 7])
    with pytest.raises(BadTrajectory, match="acceleration .* above its limit"):
        Trajectory.parse(ARM, [1.0], [goal], [[0.0] * 7], sim.arm.limits.lower, sim.arm.limits.upper,
                         accelerations=[[16.0] + [0.0] * 6], acceleration_limits=sim.arm.limits.acceleration)


def test_tolerances_are_judged_every_step(sim):
    from binpick_sim.control.trajectory import PATH_TOLERANCE_VIOLATED, SUCCEEDED, Tolerances

    home = sim.arm.home[:7]
    zeros = np.zeros(7)
    tight = Tolerances(np.full(7, 1e-4), zeros, zeros, zeros, 1.0)
    follower = TrajectoryFollower(sim.arm, parse(sim, times=(0.5,), positions=[home + [0.5, 0, 0, 0, 0, 0, 0]]),
                                  sim.world.time, tight)
    sim.arm.set_controller(follower)
    sim.world.step(120)
    assert follower.outcome.kind == PATH_TOLERANCE_VIOLATED and sim.arm.controller is None
    held = sim.arm.joint_states()[0][:7]
    sim.world.step(120)
    assert np.abs(sim.arm.joint_states()[0][:7] - held).max() < 0.01 and held[0] - home[0] < 0.45
    loose = Tolerances(zeros, zeros, np.full(7, 0.01), zeros, 1.0)
    follower = TrajectoryFollower(sim.arm, parse(sim, times=(0.5,)), sim.world.time, loose)
    sim.arm.set_controller(follower)
    sim.world.step(360)
    assert follower.outcome.kind == SUCCEEDED and follower.done
