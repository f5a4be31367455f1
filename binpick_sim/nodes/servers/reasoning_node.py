"""The `reasoning` node: one std_srvs/Trigger service per query, answering for every object at once
with JSON in `message`; what a query needs besides the world (camera pose, gripper link,
thresholds, extra positions) comes from this node's parameters."""
from __future__ import annotations

import json
import math

import numpy as np
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from std_srvs.srv import Trigger

from ...cell.loop import PhysicsLoop
from ...reasoning import CameraView, Reasoner
from ...cell.render_process.worker import VisibilityAnswer, VisibilityRequest
from ...cell.bin_picking_sim import BinPickingSim
from ..common.diagnostics import NodeDiagnostics
from ..common.long_requests import SERVICE_QOS
from ..common.params import declare

# A visible/occluding query renders at most (objects + 1) masks (objects whose footprints cannot overlap
# share one) in the reasoner's render worker, while the physics goes on and the caller waits: at most
# 5 million pixels (16 objects at 640 x 480; seconds with EGL on llvmpipe), well inside the worker's timeout.
MAX_QUERY_PIXELS = 640 * 480 * 16
MAX_POSITIONS = 256  # extra points for reachable: about 2 ms of IK each, all while the physics waits
QUERIES = ("stable", "contact", "visible", "occluding", "reachable", "blocking", "supporting")


class ReasoningNode(Node):
    parameter_table = "reasoning"  # config/parameters.py

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, **kwargs):
        super().__init__("reasoning", **kwargs)
        self.sim, self.loop = sim, loop
        self.reasoner = loop.run(Reasoner, sim)
        checked = lambda name: (lambda value: parameter_problem(name, value))  # noqa: E731
        declare(self, "objects", "Objects the per-object queries answer for "
                "(unset: all of them).", check=checked("objects"))
        declare(self, "use_camera_pose", "visible/occluding look from the camera's camera_optical_frame; "
                "false: from camera_position / camera_orientation.")
        declare(self, "camera_position", "Eye position in world [m] when use_camera_pose is false.",
                check=checked("camera_position"))
        declare(self, "camera_orientation", "Eye orientation in world (quaternion xyzw) "
                "when use_camera_pose is false.", check=checked("camera_orientation"))
        declare(self, "front_axis", "The eye frame's axis it looks along (z for an optical frame).",
                check=checked("front_axis"))
        declare(self, "visible_threshold", "visible: share of an object's own pixels that must be seen.", check=checked("visible_threshold"))
        declare(self, "render_width", "Image width for visible/occluding [px].")
        declare(self, "render_height", "Image height for visible/occluding [px].")
        declare(self, "gripper_link", "Link that reachable/blocking put at the target.",
                check=self.link_problem)
        declare(self, "reach_threshold", "reachable: largest distance left between link and target [m].", check=checked("reach_threshold"))
        declare(self, "top_down", "reachable/blocking: the gripper points down (false: position only, "
                "as PyCRAM).")
        declare(self, "arm", "reachable/blocking: the arm to use, by its name in the scene file's arms "
                "(empty: the first).", check=self.arm_problem)
        declare(self, "positions", "Extra points for reachable, x y z after x y z "
                f"in world [m] (unset: none; at most {MAX_POSITIONS} points).", check=checked("positions"))
        self.answered, self.failed = 0, 0
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time, values=lambda: {
            "answered": self.answered, "failed": self.failed,
            "visibility_renderer": self.reasoner.visibility_renderer or "none yet (no visible/occluding query)"})
        for query in QUERIES:
            self.create_service(Trigger, f"reasoning/{query}", self.server(query), qos_profile=SERVICE_QOS)

    def server(self, query: str):
        def serve(request, response):
            try:
                if query in ("visible", "occluding"):  # captured between two steps, drawn while the physics goes on
                    answer = getattr(self, f"answer_{query}")(self.visibility())
                else:
                    answer = self.loop.run(getattr(self, f"answer_{query}"), timeout=60.0)
                response.success, response.message = True, json.dumps({"stamp": self.sim.world.time, **answer})
                self.answered += 1
            except (KeyError, ValueError) as exc:  # the question cannot be answered as asked
                reason = str(exc.args[0] if exc.args else exc)
                response.success, response.message = False, f"reasoning/{query}: {reason}"
                self.failed += 1
                self.diagnostics.reject(f"reasoning/{query}", reason)
            except Exception as exc:  # a fault of ours: say so, keep serving
                if not self.context.ok():  # shutting down under the query (Ctrl-C): not a fault
                    response.success, response.message = False, f"reasoning/{query}: shutting down"
                    return response
                response.success, response.message = False, f"reasoning/{query}: internal error: {exc!r}"
                self.failed += 1
                self.get_logger().error(response.message)
            return response
        return serve

    # --- the answers (physics thread) ---------------------------------------------------------
    def names(self):
        return self.reasoner.objects(self.value("objects") or None)

    def answer_stable(self) -> dict:
        return {"objects": self.reasoner.stable(self.names())}

    def answer_contact(self) -> dict:
        return {"pairs": [list(p) for p in self.reasoner.contacts()], "types": self.reasoner.types()}

    def answer_supporting(self) -> dict:
        return {"pairs": [list(p) for p in self.reasoner.supporting()], "types": self.reasoner.types()}

    def answer_visible(self, seen: VisibilityAnswer) -> dict:
        threshold = self.value("visible_threshold")
        return {"stamp": seen.stamp, "objects": {
            n: {"visible": a["ratio"] >= threshold and a["pixels_alone"] > 0, "ratio": a["ratio"],
                "pixels": a["pixels"], "pixels_alone": a["pixels_alone"]} for n, a in seen.objects.items()},
                "threshold": threshold, "renderer": seen.renderer}

    def answer_occluding(self, seen: VisibilityAnswer) -> dict:
        return {"stamp": seen.stamp, "objects": {n: a["occluded_by"] for n, a in seen.objects.items()},
                "renderer": seen.renderer}

    def answer_reachable(self) -> dict:
        link, threshold, top_down = self.value("gripper_link"), self.value("reach_threshold"), self.value("top_down")
        names = self.names()
        arm = self.value("arm")
        answer = self.reasoner.reachable({n: self.reasoner.object_position(n) for n in names}, link, threshold,
                                         top_down, arm)
        points = np.reshape(self.value("positions") or [], (-1, 3))
        extra = self.reasoner.reachable({str(i): p for i, p in enumerate(points)}, link, threshold, top_down, arm)
        trim = lambda a: {"reachable": bool(a["reachable"]), "distance": a["distance"]}  # noqa: E731
        return {"objects": {n: trim(a) for n, a in answer.items()},
                "positions": [{"position": points[int(i)].tolist(), **trim(a)} for i, a in extra.items()],
                "link": link, "threshold": threshold, "top_down": top_down, "arm": arm or self.sim.arm.config.name}

    def answer_blocking(self) -> dict:
        answer = self.reasoner.blocking(self.value("gripper_link"), self.value("top_down"), self.names(),
                                        self.value("arm"))
        return {"objects": answer, "types": self.reasoner.types()}

    def visibility(self) -> VisibilityAnswer:
        """The live state captured on the physics thread, the masks drawn by the reasoner's render worker
        (this thread waits; the physics does not)."""
        return self.reasoner.see(self.loop.run(self.visibility_request, timeout=60.0))

    def visibility_request(self) -> VisibilityRequest:
        if self.value("use_camera_pose"):
            view = self.reasoner.default_view()
        else:
            x, y, z, w = self.value("camera_orientation")
            rotation = np.array(self.sim.world.client.getMatrixFromQuaternion([x, y, z, w])).reshape(3, 3)
            view = CameraView(np.array(self.value("camera_position")), rotation)
        view = CameraView(view.position, view.rotation, np.array(self.value("front_axis")))
        width, height, names = self.value("render_width"), self.value("render_height"), self.names()
        pixels = width * height * (len(names) + 1)  # one render of the scene, one of each object alone
        if pixels > MAX_QUERY_PIXELS:
            raise ValueError(f"{len(names)} objects at {width}x{height} could render {pixels} pixels, at most "
                             f"{MAX_QUERY_PIXELS}: lower render_width/render_height or "
                             "name fewer objects (parameter objects)")
        return self.reasoner.visibility_request(view, width, height, names)

    def value(self, name: str):
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:  # an array parameter nobody has set: "none"
            return None

    def destroy_node(self) -> None:
        self.reasoner.close()
        super().destroy_node()

    def arm_problem(self, name: str) -> str | None:
        names = [a.config.name for a in self.sim.arms]
        if name and name not in names:
            return f"unknown arm {name[:80]!r} (arms: {', '.join(names)})"
        return None

    def link_problem(self, name: str) -> str | None:
        if name not in self.sim.arm.link_index:
            return f"unknown link {name[:80]!r} (links: {', '.join(sorted(self.sim.arm.link_index))})"
        return None


def parameter_problem(name: str, value) -> str | None:
    """Why a value cannot be used for this parameter, or None."""
    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def finite(values, length):  # rclpy hands arrays over as lists or array.array
        return (hasattr(values, "__len__") and not isinstance(values, str) and len(values) == length
                and all(number(v) for v in values))

    if name == "camera_position" and not finite(value, 3):
        return "needs 3 finite numbers"
    if name == "camera_orientation" and not (finite(value, 4) and abs(np.linalg.norm(value) - 1) < 1e-3):
        return "needs a unit quaternion x y z w"
    if name == "front_axis" and not (finite(value, 3) and np.linalg.norm(value) > 1e-9):
        return "needs 3 finite numbers, not all zero"
    if name == "visible_threshold" and not (number(value) and 0 < value <= 1):
        return "needs a number in (0, 1]"
    if name == "reach_threshold" and not (number(value) and value > 0):
        return "needs a number > 0 [m]"
    if name == "positions" and value is not None and not (
            finite(value, len(value)) and len(value) % 3 == 0 and len(value) <= 3 * MAX_POSITIONS):
        return f"needs at most {MAX_POSITIONS} x y z triples of finite numbers"
    if name == "objects" and value is not None and len(value) > 10_000:
        return "names too many objects"
    return None
