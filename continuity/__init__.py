"""continuity: keeps AI coding agents' working state alive across sessions, hosts and machines."""

import events as _events  # noqa: F401  (installs events/loading.py before anything loads msgspec)

__version__ = "0.1.0"


def package_version() -> str:
    """This continuity's version from the installed package's metadata (`__version__` when run from a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("continuity")
    except PackageNotFoundError:
        return __version__
