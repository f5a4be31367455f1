"""The learnability benchmark's building blocks (bench/learnability.py, issue 27): DART episodes execute
a noisy action but keep the scripted picker's clean one as the label; DAgger episodes execute the learner's
actions, with the picker made to follow the learner's choice of object and yaw as the labeller. Short
episodes on the direct backend; no training (scikit-learn is a bench extra) and no success assertions."""
import gymnasium as gym
import numpy as np
import pytest

import binpick_sim.envs  # noqa: F401
from binpick_sim.config import load_config
from binpick_sim.envs.scripted import ScriptedPicker
from binpick_sim.paths import default_config
from binpick_sim.picking.policy import BinInterior
from bench import learnability as L

STEPS = 12  # enough to leave the start and turn; cheap


class Recorder(gym.Wrapper):
    """Keeps the actions the env executed."""

    def reset(self, **kwargs):
        self.executed = []
        return self.env.reset(**kwargs)

    def step(self, action):
        self.executed.append(np.array(action, np.float64))
        return self.env.step(action)


@pytest.fixture(scope="module")
def env():
    env = Recorder(gym.make(L.ENV, observation="privileged", max_episode_steps=STEPS))
    yield env
    env.close()


@pytest.fixture
def picker_outputs(monkeypatch):
    """Every action the scripted picker returns, in order."""
    outputs = []
    act = ScriptedPicker.act

    def recording(self, observation):
        action = act(self, observation)
        outputs.append(np.array(action, np.float64))
        return action

    monkeypatch.setattr(ScriptedPicker, "act", recording)
    return outputs


@pytest.fixture(scope="module")
def features():
    pick = load_config(default_config()).scene.pick_bin
    return L.Features(L.Parts(pick.max_objects), BinInterior.from_config(pick))


def test_dart_labels_are_the_pickers_clean_actions_not_the_noisy_ones_executed(env, picker_outputs, features):
    episode = L.labelled_episode(env, features.parts, seed=3, noise=0.3)
    executed = np.array(env.executed)
    assert len(episode.labels) == len(executed) == STEPS
    np.testing.assert_array_equal(episode.labels, np.array(picker_outputs))  # the labels are the picker's
    assert np.abs(executed[:, :4] - episode.labels[:, :4]).max() > 0.05  # the motion executed was perturbed
    np.testing.assert_array_equal(executed[:, 4], episode.labels[:, 4])  # the gripper command was not
    assert episode.expert and episode.keep.all()


def test_without_noise_the_picker_executes_its_own_labels(env, picker_outputs, features):
    episode = L.labelled_episode(env, features.parts, seed=3)
    np.testing.assert_array_equal(np.array(env.executed), episode.labels)


class Learner:
    """A stand-in learner: goes for a given object at a given yaw and always moves the same way."""

    def __init__(self, slot, yaw):
        self.choice, self.slot, self.yaw = (slot, yaw), None, None

    def reset(self):
        self.slot = self.yaw = None

    def decide(self, vector):
        self.slot, self.yaw = self.choice

    def act(self, vector):
        return np.array([0.5, -0.5, 0.25, 0.0, 1.0], np.float32)


def test_dagger_executes_the_learners_actions_and_labels_them_with_the_picker_following_its_choice(
        env, picker_outputs, features):
    observation, _ = env.reset(seed=5)
    present = [int(o.name.rsplit("_", 1)[1]) for o in env.unwrapped.object_views()]
    picker = ScriptedPicker(env)
    picker.act(observation)  # the picker's own first choice
    own = int(picker.grasp.name.rsplit("_", 1)[1])
    other = next(k for k in present if k != own)  # a choice the picker would not make
    picker_outputs.clear()
    episode = L.labelled_episode(env, features.parts, seed=5, policy=Learner(other, 0.7), beta=0.0)
    executed = np.array(env.executed)
    np.testing.assert_allclose(executed, np.tile([0.5, -0.5, 0.25, 0.0, 1.0], (STEPS, 1)))  # the learner's
    np.testing.assert_array_equal(episode.labels, np.array(picker_outputs))  # labelled by the picker
    assert (episode.slot, episode.yaw, episode.expert) == (other, 0.7, False)
    assert not np.allclose(episode.labels[:, :4], executed[:, :4])
    # the first label turns toward the learner's yaw, not the picker's own
    turn = L.wrap_turn(0.7 - L._yaw(episode.vectors[0][features.parts.robot["ee_orientation"]]))
    assert episode.labels[0, 3] == pytest.approx(np.clip(turn / L.DA, -1, 1), abs=1e-6)


def test_follow_gives_the_picker_the_learners_object_yaw_and_grasp_point(env, features):
    observation, _ = env.reset(seed=7)
    picker = ScriptedPicker(env)
    slot = int(env.unwrapped.object_views()[-1].name.rsplit("_", 1)[1])
    parts = features.parts
    position = parts.objects(np.asarray(observation, np.float64))[slot, parts.object["position"]]
    L.follow(picker, slot, -0.4, position)
    assert (picker.grasp.name, picker.grasp.yaw, picker.phase, picker.attempts) == (f"object_{slot}", -0.4, 0, 1)
    np.testing.assert_array_equal(picker.grasp.position, position)
    # its first action heads for the approach point above that grasp point
    action = picker.act(observation)
    error = position + [0, 0, 0.10] - np.asarray(env.unwrapped.last.ee_position, np.float32).astype(float)
    np.testing.assert_allclose(action[:3], np.clip(error / L.DV, -1, 1), atol=1e-6)


def test_yaw_candidates_and_control_features_come_from_the_privileged_vector(env, features):
    observation, _ = env.reset(seed=2)
    vector = np.asarray(observation, np.float64)
    slot = int(env.unwrapped.object_views()[0].name.rsplit("_", 1)[1])
    yaws, x = features.yaws(vector, slot)
    assert yaws.shape == (L.YAWS,) and x.shape[0] == L.YAWS and np.isfinite(x).all()
    assert np.allclose(np.diff(yaws), np.pi / L.YAWS)
    control = features.control(vector[None], vector[None], slot, 0.3)
    assert control.shape[0] == 1 and np.isfinite(control).all()
    assert -np.pi / 2 <= L.wrap_turn(np.pi / 2) < np.pi / 2 and L.wrap_turn(0.1) == pytest.approx(0.1)


class Always:
    """A stand-in estimator: predicts `value` for every row (probabilities: the first row scores highest)."""

    def __init__(self, value):
        self.value = value

    def predict(self, x):
        return np.array([self.value] * len(x))

    def predict_proba(self, x):
        scores = np.linspace(1.0, 0.0, len(x)) if len(x) > 1 else np.full(1, float(self.value))
        return np.column_stack([1 - scores, scores])


def test_the_cloned_policy_keeps_a_phase_that_only_moves_on_and_feeds_it_to_its_networks(env, features):
    seen = []

    class Mover(Always):
        def predict(self, x):
            seen.append(x[0, -L.PHASES:].copy())
            return np.zeros((len(x), 4))

    policy = L.ClonedPolicy(features, Always(1), Always(1), Always(True), Mover(0), Always(True))
    observation, _ = env.reset(seed=2)
    for _ in range(5):
        action = policy.act(observation)
    assert policy.phase == L.PHASES - 1  # moved on at each step, never past the last phase
    assert [int(np.argmax(s)) for s in seen] == [1, 2, 3, 3, 3] and all(s.sum() == 1 for s in seen)
    assert action[4] == 1.0 and policy.slot is not None and policy.yaw is not None
    policy.reset()
    assert (policy.phase, policy.slot) == (0, None)


def test_labelled_steps_carry_the_pickers_phase(env, picker_outputs, features):
    episode = L.labelled_episode(env, features.parts, seed=3)
    assert episode.phases[0] == 0 and (np.diff(episode.phases) >= 0).all()
    assert set(episode.phases) <= set(range(L.PHASES))
