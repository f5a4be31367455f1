"""The objects' geometry: `meshes` (their OBJ files read) and `shapes` (an object's visual geometry as
`world/objects` carries it, and the vertices the scripted picker plans with)."""
