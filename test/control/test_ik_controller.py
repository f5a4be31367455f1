"""The inverse kinematics controller's seed 001 surface (issue 28, item 7): a base that moves, the
helpers that work on the controller's own copy of the arm, and a global goal in `set_goal(set_ik=...)`."""
import numpy as np
import pytest


def moved_base(sim, dx):
    """The live arm's base shifted by `dx` along x (a mobile base, as the seed's update_base_pose expects)."""
    c, arm = sim.world.client, sim.arm
    position, orientation = c.getBasePositionAndOrientation(arm.body)
    position = np.array(position) + [dx, 0, 0]
    c.resetBasePositionAndOrientation(arm.body, position.tolist(), orientation)
    return position, np.array(orientation)


def test_ik_update_base_pose_solves_for_the_arm_where_its_base_now_is(sim):
    from binpick_sim.control.controllers import InverseKinematicsController

    sim.arm.move_to(sim.arm.ik(sim.scene.pick_bin.to_world([0, 0, 0.25]), sim.arm.ee_yaw()))
    results = {}
    for told in (False, True):
        sim.arm.move_to(sim.arm.ik(sim.scene.pick_bin.to_world([0, 0, 0.25]), sim.arm.ee_yaw()))
        c = InverseKinematicsController(sim.arm)
        try:
            if told:
                base, orientation = moved_base(sim, 0.05)
                c.update_base_pose(base, orientation)
                assert c.own_solver and c.solver is not sim.arm.solver
            else:
                moved_base(sim, 0.05)
            c.engage()
            start = c.state.ee_position.copy()
            c.set_goal([0, 0, -0.03, 0, 0, 0])
            sim.world.step(240)
            results[told] = np.linalg.norm(sim.arm.ee_pose()[0] - (start + [0, 0, -0.03]))
        finally:
            c.close()
            moved_base(sim, -0.05)
            sim.arm.set_controller(None)
    assert results[True] < 0.003 and results[False] > 0.03, results  # told: there; not told: 5 cm off


def test_the_seeds_ik_helpers_work_on_the_controllers_copy(sim):
    from scipy.spatial.transform import Rotation

    from binpick_sim.control.controllers import InverseKinematicsController

    sim.arm.move_to(sim.arm.ik(sim.scene.pick_bin.to_world([0, 0, 0.25]), sim.arm.ee_yaw()))
    c = InverseKinematicsController(sim.arm, load_urdf=True)
    try:
        assert c.own_solver
        q = sim.arm.joint_states()[0]
        # sync: the copy's last joint is the arm's pose; its pose in the base frame back in the world frame
        c.sync_state()
        c.update(force=True)
        pose = c.bullet_base_pose_to_world_pose(c.ik_robot_eef_joint_cartesian_pose())
        link7 = sim.world.client.getLinkState(sim.arm.body, sim.arm.joints[6], computeForwardKinematics=True)
        assert pose[0] == pytest.approx(link7[4], abs=1e-6)
        c.sync_ik_robot(q[:7] + 0.1, sync_last=False)
        copy_q = [s[0] for s in c.solver.client.getJointStates(c.solver.body, c.solver.joints[:7])]
        assert copy_q[:6] == pytest.approx(q[:6] + 0.1) and copy_q[6] == pytest.approx(q[6])
        c.sync_ik_robot(q[:7], simulate=True)  # driven there by the copy's motors
        copy_q = [s[0] for s in c.solver.client.getJointStates(c.solver.body, c.solver.joints[:7])]
        assert copy_q == pytest.approx(q[:7], abs=1e-3)
        # IK: joints for a pose, and for a delta command, that put the grasp target there
        target = c.state.ee_position + [0.02, 0, -0.02]
        joints = c.inverse_kinematics(target, Rotation.from_matrix(c.state.ee_rotation).as_quat())
        assert len(joints) == 7 and c.ik_error < 1e-3
        joints = c.joint_positions_for_eef_command([0.02, 0, -0.02], np.eye(3), update_targets=True)
        assert c.ik_target_position == pytest.approx(target) and len(joints) == 7
        velocities = c.get_control([0.02, 0, -0.02], np.eye(3))  # 10 x the joint error
        joints = c.commanded_joint_positions
        assert velocities == pytest.approx(10 * (joints - c.state.q))
        assert c.get_control() == pytest.approx(velocities)  # no new command: toward the last one
        assert c._get_current_error([1.0, 2.0], [0.5, 0.5]) == pytest.approx([0.5, 1.5])
        made = c._make_input([0.1, 0, 0, 0, 0, 2.0], [0, 0, 0, 1])  # clipped to 5 cm and 0.5 rad
        assert made["dpos"] == pytest.approx([0.05, 0, 0])
        assert Rotation.from_matrix(made["rotation"]).as_rotvec() == pytest.approx([0, 0, 0.5])
        assert c._clip_ik_input([0, 0.2, 0], [0, 0, 0])[0] == pytest.approx([0, 0.05, 0])
        # driven by get_control's velocities, the arm gets to the commanded joints
        sim.arm.set_velocity_targets(np.concatenate([c.get_control(), [0.0, 0.0]]))
        sim.world.step(24)
        assert np.abs(sim.arm.joint_states()[0][:7] - joints).max() < np.abs(q[:7] - joints).max()
    finally:
        c.close()
    assert c.solver is sim.arm.solver and not c.own_solver


def test_ik_set_goal_takes_the_seeds_global_goal_set_ik(sim):
    from scipy.spatial.transform import Rotation

    from binpick_sim.control.controllers import InverseKinematicsController

    sim.arm.move_to(sim.arm.ik(sim.scene.pick_bin.to_world([0, 0, 0.25]), sim.arm.ee_yaw()))
    c = InverseKinematicsController(sim.arm)
    c.engage()
    target = c.state.ee_position + [0.03, -0.02, -0.04]  # farther than ik_pos_limit: a goal, not a delta
    turned = Rotation.from_rotvec([0, 0, 0.3]) * Rotation.from_matrix(c.state.ee_rotation)
    c.set_goal(np.zeros(6), set_ik=[*target, *turned.as_quat()])
    sim.world.step(240)
    position, orientation = sim.arm.ee_pose()
    assert np.linalg.norm(position - target) < 0.003
    assert (Rotation.from_quat(orientation) * turned.inv()).magnitude() < 0.02
    goal = c.goal.copy()
    with pytest.raises(ValueError, match="set_ik"):
        c.set_goal(np.zeros(6), set_ik=[0.5, 0, 0.3, 0, 0, 0, 0])
    assert np.array_equal(c.goal, goal)  # refused: the goal stays
