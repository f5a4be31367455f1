"""The nodes inside `sim`, one per role, thin wrappers over the core."""
