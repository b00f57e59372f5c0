"""Named pipelines per target (registered with ``register_pipeline``)."""

from . import cpu, cuda, vulkan  # noqa: F401  (registration)
