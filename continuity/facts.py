"""Live facts from outside the log: the time, git, and files the harness keeps.

Commands that observe these record them in the events they write (archive) or in the
`context.served` event (views), so replay and audits never need to observe them again.
Everything here fails open: a missing git binary or an unreadable file is a warning.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from continuity.core.fsio import project_file
from continuity.core.text import control_pictures
from events import clock
from events.archive import GitFacts
from events.context import GitNow, RunFile, ViewInputs

if TYPE_CHECKING:
    import subprocess  # imported where git is run: a brief outside a work tree starts none

READ_FIRST_CANDIDATES = (
    "AGENTS.md",
    "CLAUDE.md",
    ".agent/rules/core-principles.md",
    ".agent/rules/ai-behavior.md",
)
GIT_TIMEOUT = 5.0


#: How far the newest event may be ahead of this machine's clock before it is reported.
CLOCK_AHEAD_TOLERANCE_S = 300


def clock_ahead_warning(log: Any, now: int) -> str | None:
    """A warning when the log's newest event is stamped ahead of the local clock (a skewed writer).

    Appends keep the order (each event is stamped after the head), so every later event
    carries that future time; saying so is all a reader can do.
    """
    from events import names

    try:  # the head new events follow: events stamped early (past counts_as_now) wait, and the catch-up says so
        head = log.head_name(log.now_limit(now))
    except OSError:  # a day folder that cannot be listed: the read that needs it says so
        return None
    parsed = names.parse_name(head) if head else None
    if parsed is None:
        return None
    ahead_s = (clock.parse_stamp(parsed.stamp) - now) // 1_000_000
    if ahead_s <= CLOCK_AHEAD_TOLERANCE_S:
        return None
    return (f"the newest event is stamped {ahead_s // 60} min ahead of this machine's clock "
            f"({clock.iso(clock.parse_stamp(parsed.stamp))}); new events keep that order and carry later times")


def read_first(root: str) -> tuple[str, ...]:
    """The read-first candidates that exist in the project."""
    return tuple(path for path in READ_FIRST_CANDIDATES if os.path.exists(os.path.join(root, path)))


RUN_FILES_LIMIT = 50


class GitUnavailable(Exception):
    """git is missing, timed out, or this is not a work tree."""


def _git(root: str, *args: str) -> str:
    return git_bytes(root, *args).decode("utf-8", "replace")


def git_bytes(root: str, *args: str) -> bytes:
    """What `git -C root ARGS` prints, as bytes (paths in `-z` output need not be UTF-8)."""
    return GitCall(root, *args).output()


#: What makes git use another repository than the one of the folder it runs in (`git rev-parse
#: --local-env-vars`, and GIT_NAMESPACE). Inherited from a git hook of another repository, `vcsh enter`
#: or a dotfiles alias, they sent a project's events to that repository and its remote: every git
#: call of continuity is about the project's own work tree, found from its folder.
REPOSITORY_VARS = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_IMPLICIT_WORK_TREE", "GIT_PREFIX", "GIT_NAMESPACE", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE",
    "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS", "GIT_INTERNAL_SUPER_PREFIX",
})


def git_environ(**settings: str) -> dict[str, str]:
    """This process's environment for a git call, without REPOSITORY_VARS, with `settings` added."""
    env = {key: value for key, value in os.environ.items() if key not in REPOSITORY_VARS}
    env.update(settings)
    return env


class GitCall:
    """One `git -C root ARGS` started now and read later, so several run side by side (and beside our own work).

    Errors (no git, no answer within GIT_TIMEOUT, a non-zero exit) surface as GitUnavailable
    from `output()`, as `git_bytes` reports them.
    """

    def __init__(self, root: str, *args: str, env: dict[str, str] | None = None, given: bytes | None = None) -> None:
        self._problem: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._given = given  # written to its stdin (`hash-object --stdin-paths`) when read
        import subprocess

        try:
            self._process = subprocess.Popen(
                ["git", "-C", root, *args], stdin=subprocess.DEVNULL if given is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=git_environ(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", **(env or {})),
            )
        except FileNotFoundError:
            self._problem = "git is not installed"
        except OSError as error:
            self._problem = f"git did not answer ({type(error).__name__})"

    def output(self) -> bytes:
        """What the call printed on stdout (GitUnavailable when it failed)."""
        process = self._process
        if process is None:
            raise GitUnavailable(self._problem or "git did not start")
        import subprocess

        try:
            out, err = process.communicate(self._given, timeout=GIT_TIMEOUT)
        except (subprocess.TimeoutExpired, OSError) as error:
            _stop(process)
            raise GitUnavailable(f"git did not answer ({type(error).__name__})") from None
        if process.returncode != 0:
            raise GitUnavailable(git_refusal(err))
        return out

    def cancel(self) -> None:
        """Stop the call if it still runs (its output is no longer wanted)."""
        process = self._process
        if process is not None and process.returncode is None:
            _stop(process)


def git_refusal(stderr: bytes) -> str:
    """Why a git call failed, from what it said: `not a git work tree` when it is none; else git's first `fatal:` or
    `error:` line (a repository owned by another user, a broken config file, a failing clean filter), one line."""
    from continuity.core.text import one_line, shortened

    lines = stderr.decode("utf-8", "replace").splitlines()
    said = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
    if not said or "not a git repository" in said:
        return "not a git work tree"
    fix = next((line.strip() for line in lines if "--add safe.directory" in line), None)  # git's way to trust it
    return f"git failed: {shortened(one_line(said), 300)}" + (f" (to trust it: {shortened(one_line(fix), 300)})"
                                                             if fix else "")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill and reap git, then drop its pipes without reading them to the end: a child git left
    behind (a submodule's, a hook's) may hold them open long after, and must not keep us waiting."""
    process.kill()
    process.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def work_tree_root(start: str) -> str | None:
    """The nearest folder from `start` upward holding `.git` (a folder or a worktree file)."""
    here = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


#: Where the path is among the space-separated fields of each kind of `git status --porcelain=v2` record.
_PATH_AT = {"1 ": 8, "2 ": 9, "u ": 10}
#: NUL-separated, so paths come as they are and from the work tree's top, whatever `core.quotePath` or the folder
#: git runs in (quoted or folder-relative, one file was named two ways, and its drift depended on a setting).
_STATUS = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=normal")
_started: dict[str, GitCall] = {}


def start_git_facts(root: str) -> None:
    """Start the git call `git_facts(root)` will read, so git looks at the tree while this process
    loads and catches up (SessionStart: git's time hides behind ours instead of adding to it)."""
    if root not in _started and work_tree_root(root) is not None:
        _started[root] = GitCall(root, *_STATUS)


def tree_written() -> None:
    """This process wrote into the work tree (a derived document outside the store): a `git status` started
    before that no longer describes it, so `git_facts` runs its own (the first brief after a workstream is
    folded left out the `.ai-bridge/` it had just written, and the next brief listed it)."""
    for call in _started.values():
        call.cancel()
    _started.clear()


def path_text(path: str) -> str:
    """A file system path as event text: the UTF-8 its bytes are, whatever the locale decoded them as (under
    `LC_ALL=C PYTHONUTF8=0` a folder `réßü` comes as escapes an event cannot hold), bytes that are no UTF-8
    shown as U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def git_facts(root: str, warnings: list[str]) -> GitFacts:
    """Root, branch, HEAD, short status and dirty files of the work tree at `root` (one git call)."""
    call = _started.pop(root, None)
    found = work_tree_root(root)
    if found is None:
        if call is not None:
            call.cancel()
        return GitFacts()
    # a name with a control character (`red\x1b[31m.txt`), which git lists as any other, as an event holds it: it
    # made every archive refuse its git facts (exit 2, and the SessionEnd archive skipped) until it was gone
    top = control_pictures(path_text(found))
    try:
        status = (call or GitCall(root, *_STATUS)).output().decode("utf-8", "replace")
    except GitUnavailable as error:
        warnings.append(f"git facts unavailable: {error}")
        return GitFacts(root=top)
    branch = head = None
    short: list[str] = []
    dirty: set[str] = set()
    records = iter(status.split("\0"))
    for record in records:
        if record.startswith("# branch.oid "):
            oid = record[13:]
            head = None if oid == "(initial)" else oid
        elif record.startswith("# branch.head "):
            name = record[14:]
            branch = None if name == "(detached)" else name
        elif record[:2] in _PATH_AT:  # changed (1), renamed or copied (2, its source the record after), unmerged
            kind, at = record[:2], _PATH_AT[record[:2]]
            parts = record.split(" ", at)
            source = next(records, "") if kind == "2 " else None
            if len(parts) == at + 1:
                path, state = parts[at], parts[1] if kind == "u " else parts[1].replace(".", " ")
                moved = f"{shown_path(source)} -> " if source is not None else ""
                short.append(f"{state} {moved}{shown_path(path)}")
                dirty.add(control_pictures(path))
        elif record.startswith("? "):
            short.append(f"?? {shown_path(record[2:])}")
            dirty.add(control_pictures(record[2:]))
    return GitFacts(
        root=top, branch=branch, head=head, status_short=first_lines("\n".join(short)),
        dirty_files=first_paths(sorted(dirty)),
    )


#: What git writes for these characters in a path it quotes (the rest of the controls as octal escapes).
_QUOTED = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r", '"': '"', "\\": "\\"}


def shown_path(path: str) -> str:
    """A path as a line of `git status` shows it under `core.quotePath false`: as it is, unless it holds a control
    character, a quote or a backslash, then between quotes with those escaped (a path's line break cannot end the
    line)."""
    return git_quoted(path, every_byte=False)


def git_quoted(path: str, *, every_byte: bool = True) -> str:
    """A path as git prints it without `-z`: C-quoted when it holds a control character, a quote or a backslash,
    or (`every_byte`, git's default `core.quotePath`) a byte past ASCII, each such byte as an octal escape."""
    def plain(char: str) -> bool:
        return (" " <= char <= "~" and char not in '"\\') or (not every_byte and char > "~" and char != "\x7f")

    if all(plain(char) for char in path):
        return path
    escaped: list[str] = []
    for char in path:
        if plain(char):
            escaped.append(char)
        elif char in _QUOTED:
            escaped.append(f"\\{_QUOTED[char]}")
        else:
            escaped.extend(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogateescape"))
    return f'"{"".join(escaped)}"'


def _archived(path: str, archived: set[str]) -> bool:
    """Whether a dirty file is among an archive's: as it is (archives since git's status is read with `-z`), as
    git quoted it (earlier archives, and runtime-continuity's, under either `core.quotePath`), or redacted (a name
    that looks like a secret is stored as the archive redacted it: sessions/service.observed_redacted)."""
    if path in archived or git_quoted(path) in archived or git_quoted(path, every_byte=False) in archived:
        return True
    from events.guard import cut, find_secret, redact_text

    if find_secret(path) is None:
        return False
    redacted = redact_text(path)[0]
    return redacted in archived or cut(redacted, PATH_CHARS) in archived  # cut as the archive bounds it


#: The longest path an event holds (events.base.PathRef).
PATH_CHARS = 1024


#: The most dirty files an event carries, by count and by total length: an archive of a tree with
#: a thousand changes under long paths must still fit in its event (at most 256 KiB, the status
#: text taking up to 64 KiB more); `git status` has them all.
DIRTY_FILES_MAX, DIRTY_CHARS_MAX = 1024, 96 * 1024


#: The most of `git status` an event carries (GitFacts.status_short), in UTF-8 bytes: paths in
#: Chinese under `core.quotePath false` take three bytes a character.
STATUS_BYTES_MAX = 65536


def first_lines(text: str) -> str:
    """`text` whole, or its first lines within STATUS_BYTES_MAX bytes (never a line cut in two)."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= STATUS_BYTES_MAX:
        return text
    cut = raw[: STATUS_BYTES_MAX + 1]
    return cut[: max(cut.rfind(b"\n"), 0)].decode("utf-8", "surrogateescape")


def first_paths(paths: list[str]) -> tuple[str, ...]:
    """The first paths of a sorted list, whole, within DIRTY_FILES_MAX and DIRTY_CHARS_MAX."""
    kept: list[str] = []
    total = 0
    for path in paths[:DIRTY_FILES_MAX]:
        total += len(path.encode("utf-8", "surrogateescape")) + 3  # its quotes and comma in the event
        if total > DIRTY_CHARS_MAX:
            break
        kept.append(path)
    return tuple(kept)


def git_now(root: str, archived: Any, warnings: list[str]) -> GitNow | None:
    """Git now, and what moved since the archive (`archived` holds its head and dirty files)."""
    facts = git_facts(root, warnings)
    if facts.root is None or (facts.head is None and facts.branch is None):  # no work tree, or git failed (a warning
        return None  # says why): no Git section, rather than one that says "no commit yet"
    head_moved = bool(archived and archived.head and facts.head and not same_commit(archived.head, facts.head))
    changed: tuple[str, ...] = ()
    if head_moved:
        try:
            # from the top, as the status names them, whatever `diff.relative` says
            diff = _git(root, "diff", "--no-relative", "--name-only", "-z", f"{archived.head}..{facts.head}")
            changed = first_paths(sorted({path for path in diff.split("\0") if path}))
        except GitUnavailable:
            warnings.append("git drift unknown: the archived HEAD is not in this clone")
    before = set(archived.dirty_files) if archived else set()
    return GitNow(
        root=facts.root, branch=facts.branch, head=facts.head, status_short=facts.status_short,
        dirty_files=facts.dirty_files, head_moved=head_moved, changed_since_archive=changed,
        new_dirty_files=tuple(path for path in facts.dirty_files if not _archived(path, before)),
    )


def same_commit(archived: str, now: str) -> bool:
    """Whether an archive's HEAD is the commit at HEAD now: the same id, or its abbreviation (runtime-continuity
    archives the `git rev-parse --short HEAD` seed 004 recorded)."""
    return archived == now or (len(archived) >= 4 and now.startswith(archived.lower()))


#: The most of a project file the views read to learn its status or addressee.
DOCUMENT_BYTES = 1_000_000


def _document(root: str, path: str) -> tuple[str | None, Any]:
    """(None, the JSON value) of a project file, or (its state, None): `outside`, `missing` or `unreadable`."""
    import orjson

    from events.osfs import read_regular

    full = project_file(root, path)
    if full is None:
        return "outside", None
    try:  # the real path has no link left: a link swapped in since is refused, as is a FIFO or a device
        raw = read_regular(full, follow=False, limit=DOCUMENT_BYTES)
    except FileNotFoundError:
        return "missing", None
    except OSError:
        return "unreadable", None
    try:
        return None, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "unreadable", None


def _status(problem: str | None, data: Any) -> str:
    """The `status` (or `state`) a project's JSON file holds (`_document`'s answer); `present`, or the file's state."""
    if problem is not None:
        return problem
    if isinstance(data, dict):
        for key in ("status", "state"):
            value = data.get(key)
            if isinstance(value, str):  # cut before a token the cut would split (its start matches no rule)
                from events.guard import cut

                return cut(value, 64)
    return "present"


def run_files(root: str) -> tuple[RunFile, ...]:
    """Run records under `.agent/runs/`, newest first, with their status."""
    folder = os.path.join(root, ".agent", "runs")
    try:
        entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json") and entry.is_file()]
    except OSError:
        return ()
    entries.sort(key=lambda entry: (-entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    return tuple(
        RunFile(path=f".agent/runs/{path_text(entry.name)}",  # shown and recorded as text; read by its own name
                status=_status(*_document(root, f".agent/runs/{entry.name}")))
        for entry in entries[:RUN_FILES_LIMIT]
    )


def file_states(root: str, paths: list[str], addressees: dict[str, str] | None = None) -> dict[str, str]:
    """The `status` (or `state`) each JSON file holds; present or missing for other files; outside
    for a path that leads out of the project (never looked up).

    With `addressees`, whom each JSON document names (`_addressee`) goes there, from the same read.
    """
    states: dict[str, str] = {}
    for path in paths:
        if path.endswith(".json"):
            problem, data = _document(root, path)
            states[path] = _status(problem, data)
            if addressees is not None and (to := _addressee(data)) is not None:
                addressees[path] = to
        else:
            full = project_file(root, path)
            states[path] = "outside" if full is None else "present" if os.path.exists(full) else "missing"
    return states


def _addressee(data: Any) -> str | None:
    """Whom a handoff document names as its addressee: `agent:<name>` or `host:<name>` (None: it does not say).

    Reads `to: {agent, host}` (continuity's handoff documents) or `to_agent` / `to_host`.
    """
    if not isinstance(data, dict):
        return None
    to = data.get("to")
    to = to if isinstance(to, dict) else {}
    for kind in ("agent", "host"):
        name = to.get(kind, data.get(f"to_{kind}"))
        if isinstance(name, str) and name and name.isprintable():
            return f"{kind}:{name[:128]}"
    return None


def view_inputs(
    root: str, *, now_us: int, archived_git: Any, archived_read_first: list[str], handoffs: list[str],
    artifacts: list[str], latest_markdown: str | None, warnings: list[str],
) -> ViewInputs:
    """Gather every outside fact a view shows, once, so it can be recorded."""
    git = git_now(root, archived_git, warnings)
    first = list(read_first(root))
    for path in archived_read_first:  # named by an archive event: looked up only inside the project
        full = project_file(root, path)
        if path not in first and full is not None and os.path.exists(full):
            first.append(path)
    handoff_to: dict[str, str] = {}
    return ViewInputs(
        now=clock.iso(now_us),
        git=git,
        runs=run_files(root),
        handoff_states=file_states(root, handoffs, handoff_to),  # each document read once for both
        handoff_to=handoff_to,
        artifact_states=file_states(root, artifacts),
        read_first=tuple(first),
        latest_markdown=latest_markdown if latest_markdown and os.path.exists(latest_markdown) else None,
        warnings=tuple(warnings),
    )


#: Transports `park --handoff` may ask git to reach (never `ext::`, which runs commands).
LS_REMOTE_PROTOCOLS = "file:git:http:https:ssh"
LS_REMOTE_TIMEOUT = 30.0


def ls_remote(root: str, remote: str, ref: str) -> tuple[list[tuple[str, str]] | None, str | None]:
    """What `remote` holds at refs matching `ref`: ([(sha, refname)], None), or (None, why it could not be read).

    Relative remote paths are taken from `root`. No prompt is ever shown (a hook may run this).
    """
    env = git_environ(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0",
                      GIT_ALLOW_PROTOCOL=LS_REMOTE_PROTOCOLS, GIT_SSH_COMMAND="ssh -o BatchMode=yes")
    import subprocess

    try:
        result = subprocess.run(["git", "ls-remote", "--", remote, ref], cwd=root, capture_output=True, text=True,
                                errors="replace", timeout=LS_REMOTE_TIMEOUT, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return None, "git is not installed"
    except (subprocess.TimeoutExpired, OSError) as error:
        return None, f"git did not answer ({type(error).__name__})"
    if result.returncode != 0:
        first = next((line.strip() for line in result.stderr.splitlines() if line.strip()), "")
        return None, first[:200] or f"git ls-remote exited {result.returncode}"
    found = [tuple(line.split("\t", 1)) for line in result.stdout.split("\n") if "\t" in line]
    return [(sha, name) for sha, name in found], None
