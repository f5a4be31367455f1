"""The simulation node's entity services: listing and filtering entities, their states and info, spawning
and deleting, named poses and spawnables (simulation_interfaces' entity half).

A mixin of SimulationNode (simulation_node.py): each handler turns the standard's messages into a call on
the core's `Entities` (cell/entities/registry.py), run on the physics thread, and back; kept apart from the node's
state and stepping (simulation_steps.py), which share nothing with it but the plumbing.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Accel, Twist, Vector3
from rclpy.exceptions import InvalidNamespaceException
from rclpy.validate_namespace import validate_namespace

from ...cell.entities import registry as core
from ...cell.entities.registry import State
from ...cell.entities.errors import OPERATION_FAILED, EntityError
from ..common import convert


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def _xyzw(q) -> list[float]:
    return [q.x, q.y, q.z, q.w]


class EntityServices:
    """SimulationNode's entity handlers; use its `msg`, `entities`, `categories`, `sim`, `run`, `ok`, `fail`,
    `code` and `republish`."""

    # --- entities -----------------------------------------------------------------------------
    def selected(self, filters) -> list[core.Entity]:
        """Entities passing an EntityFilters (physics thread)."""
        b = self.msg.Bounds
        bounds, points = filters.bounds, [_xyz(p) for p in filters.bounds.points]
        sphere = box = None
        if bounds.type == b.TYPE_SPHERE:
            if len(points) != 2:
                raise EntityError(OPERATION_FAILED, "a sphere is two points: centre, then (radius, 0, 0)")
            sphere = (points[0], points[1][0])
        elif bounds.type == b.TYPE_BOX:
            if len(points) != 2:
                raise EntityError(OPERATION_FAILED, "a box is two points: opposite corners")
            box = points
        elif bounds.type == b.TYPE_CONVEX_HULL:
            raise EntityError("feature_unsupported", "convex hull bounds are not supported (sphere and box are)")
        elif bounds.type != b.TYPE_EMPTY:
            raise EntityError(OPERATION_FAILED, f"unknown bounds type {bounds.type}")
        names = {v: k for k, v in self.categories.items()}
        categories = {names.get(c.category, "none") for c in filters.categories}
        tags = filters.tags
        return self.entities.select(filters.filter, categories, list(tags.tags),
                                    tags.filter_mode == self.msg.TagsFilter.FILTER_MODE_ALL, sphere, box)

    def entity_state(self, name: str):
        s = self.entities.state(name)
        return self.msg.EntityState(header=convert.header(self.sim.world.time),
                                    pose=convert.pose(s.position, s.orientation),
                                    twist=Twist(linear=Vector3(**dict(zip("xyz", map(float, s.linear)))),
                                                angular=Vector3(**dict(zip("xyz", map(float, s.angular))))),
                                    acceleration=Accel())

    def on_get_entities(self, request, response):
        response.entities = [e.name for e in self.run(self.selected, request.filters)]
        self.ok(response)

    def on_get_entities_states(self, request, response):
        def gather():
            chosen = [e.name for e in self.selected(request.filters)]
            return chosen, [self.entity_state(n) for n in chosen]
        response.entities, response.states = self.run(gather)
        self.ok(response)

    def on_get_entity_state(self, request, response):
        response.state = self.run(self.entity_state, request.entity)
        self.ok(response)

    def on_set_entity_state(self, request, response):
        st = request.state
        state = State(_xyz(st.pose.position), _xyzw(st.pose.orientation), _xyz(st.twist.linear), _xyz(st.twist.angular))
        acceleration = _xyz(st.acceleration.linear) + _xyz(st.acceleration.angular)

        def apply():
            self.entities.set_state(request.entity, state, st.header.frame_id, acceleration)
            self.republish()
        self.run(apply)
        self.ok(response, "acceleration is not applied to objects" if np.any(acceleration) else "")

    def on_get_entity_info(self, request, response):
        entity = self.run(self.entities.get, request.entity)
        response.info = self.msg.EntityInfo(category=self.msg.EntityCategory(category=self.categories[entity.category]),
                                            description=entity.description, tags=list(entity.tags))
        self.ok(response)

    # --- spawning -----------------------------------------------------------------------------
    def spawn(self, request) -> str:
        """Spawn one entity from a SpawnEntity request or a SpawnEntity message; returns its name."""
        resource = getattr(request, "entity_resource", request)
        if request.entity_namespace:
            namespace = "/" + request.entity_namespace.lstrip("/")
            try:
                validate_namespace(namespace)
            except InvalidNamespaceException as exc:
                raise EntityError("namespace_invalid", f"entity_namespace: {exc}".splitlines()[0]) from None
        pose = request.initial_pose
        args = (request.name, request.allow_renaming, resource.uri, resource.resource_string, pose.header.frame_id,
                _xyz(pose.pose.position), _xyzw(pose.pose.orientation))

        def load():
            name = self.entities.spawn(*args)
            self.republish()
            return name
        return self.run(load)

    def on_spawn(self, request, response):
        response.entity_name = self.spawn(request)
        self.ok(response)

    def on_spawn_many(self, request, response):
        for item in request.spawn_requests:
            result = self.msg.SpawnResult()
            try:
                result.entity_name = self.spawn(item)
                result.result.result = self.msg.Result.RESULT_OK
            except EntityError as exc:
                result.result.result = self.code(exc.code, self.msg.SpawnResult)
                result.result.error_message = str(exc)
            response.results.append(result)
        failed = [r for r in response.results if r.result.result != self.msg.Result.RESULT_OK]
        if failed:
            return self.fail(response, type(response).ENTITIES_SPAWN_FAILED, f"{len(failed)} of "
                             f"{len(response.results)} failed: " + "; ".join(r.result.error_message for r in failed))
        self.ok(response)

    def on_delete(self, request, response):
        def delete():
            self.entities.delete(request.entity)
            self.republish()
        self.run(delete)
        self.ok(response)

    def on_named_poses(self, request, response):
        wanted, all_tags = set(request.tags.tags), request.tags.filter_mode == self.msg.TagsFilter.FILTER_MODE_ALL
        for p in self.run(self.entities.named_poses):
            if wanted and not (wanted <= set(p.tags) if all_tags else wanted & set(p.tags)):
                continue
            response.poses.append(self.msg.NamedPose(name=p.name, description=p.description, tags=list(p.tags),
                                                     pose=convert.pose(p.position, p.orientation)))
        self.ok(response)

    def on_spawnables(self, request, response):
        found, unknown, stopped = self.entities.spawnables(list(request.sources))
        response.spawnables = [self.msg.Spawnable(uri=uri, description=text) for uri, text in found]
        notes = ([f"sources not found: {', '.join(s[:200] for s in unknown[:20])}"] if unknown else []) + (
            [f"listing stopped after {stopped}"] if stopped else [])
        self.ok(response, "; ".join(notes))
