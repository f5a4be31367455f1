"""What the env tests share: a small camera (image envs render fast at it) and the env made with it."""
import gymnasium as gym

SMALL_CAMERA = (64, 48)


def make(env_id, backend="direct", **kwargs):
    """gym.make with the small camera unless the test asks for another size."""
    kwargs.setdefault("camera_size", SMALL_CAMERA)
    return gym.make(env_id, backend=backend, **kwargs)
