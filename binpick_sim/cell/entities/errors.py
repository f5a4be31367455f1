"""How the entities refuse a request: EntityError with a code the simulation node maps onto the standard's
result codes (simulation_interfaces), and those codes.

Below both the entities (entities.py) and the reading of a spawned URDF (urdf_resources.py), which refuse
with the same error.
"""

# Codes of refusals (the node maps them onto the standard's result codes).
NOT_FOUND, INVALID_POSE, OPERATION_FAILED = "not_found", "invalid_pose", "operation_failed"
NAME_NOT_UNIQUE, NAME_INVALID, NO_RESOURCE = "name_not_unique", "name_invalid", "no_resource"
UNSUPPORTED_FORMAT, RESOURCE_PARSE_ERROR = "unsupported_format", "resource_parse_error"
MISSING_ASSETS, UNSUPPORTED_ASSETS = "missing_assets", "unsupported_assets"


class EntityError(ValueError):
    """A request the world refuses; `code` says which kind, the message says why."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
