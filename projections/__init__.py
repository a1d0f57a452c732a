"""Read models: pure folds `apply(state, event) -> state`, one module per read model.

Projections never read the clock, the environment or git; what they need of the outside
world is captured in the events they fold.
"""

import events as _events  # noqa: F401  (installs events/loading.py before any read model loads msgspec)
