"""Named pipelines per target (registered with ``register_pipeline``)."""

from . import cpu  # noqa: F401  (registration)
