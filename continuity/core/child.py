"""Starting continuity again as a child process of this one (a background sync, clone-store's fold worker)."""

from __future__ import annotations

import os
import sys


def python_command(*module_args: str) -> tuple[list[str], dict[str, str]]:
    """`python -P -m MODULE ARGS` and the environment it runs in, importing this very continuity.

    `-P`: the folder it runs in (the user's project, which may hold an `events.py`, an `events/` package or a
    checkout of continuity) is not put on the import path: run as `python -m` from a project, the child imported
    the project's code in place of continuity's. The folder continuity was imported from is put first, unless the
    interpreter finds it there anyway (a wheel in site-packages, which must not go ahead of the standard library).
    """
    import site

    import continuity

    home = os.path.dirname(os.path.dirname(os.path.realpath(continuity.__file__)))
    env = dict(os.environ)
    # Only absolute folders: an empty or relative entry would name the project it runs in, `-P` or not.
    path = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    if home not in {os.path.realpath(folder) for folder in [*site.getsitepackages(), site.getusersitepackages()]}:
        path.insert(0, home)
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    return [sys.executable, "-P", "-m", *module_args], env
