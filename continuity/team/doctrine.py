"""The parking doctrine (seed 000, "Parking for a successor") as checks `park --handoff` runs first.

Pure: the caller reads the remotes (`git ls-remote`) and the role documents, and passes
what it found. Each rule yields findings, one line each; any finding refuses the park.

- An artifact claims pushed state when it reads `<remote>#<ref>@<commit>`: the remote at
  that exact ref must hold exactly that full commit hash, else the snapshot must say
  `IMPORT NOT DONE` followed by the recipe (a literal `git ...` command).
- One home per artifact: an artifact naming two locations (two URLs or remotes, or
  "X or Y"), or two artifacts claiming one ref on different remotes, is a finding.
- The role document `team/<team>/roles/<role>.md` exists for every role parked.
- The snapshot carries an operator pre-flight checklist: a text holding
  `Operator pre-flight` and at least one `- [ ]` (or `- [x]`) item.
"""

from __future__ import annotations

import re

import msgspec

PUSHED = re.compile(r"^(?P<remote>[^\s#]+)#(?P<ref>[^\s#@]+)@(?P<commit>[0-9a-fA-F]{4,64})$")
_FULL_HASH = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_LOCATION = re.compile(r"^(?:[a-z][a-z0-9+.-]*://\S+|\S+\.git\b\S*|[\w.-]+@[\w.-]+:\S+)$", re.IGNORECASE)
_RECIPE = re.compile(r"IMPORT NOT DONE\b")
_RECIPE_GIT = re.compile(r"\bgit\s+\S")
# a line's own leading blanks (`\s*` ran over every blank line after each line start: 100,000 of them took a minute)
_CHECKBOX = re.compile(r"^[^\S\n]*[-*]\s+\[[ xX]\]\s+\S", re.MULTILINE)


class PushClaim(msgspec.Struct, frozen=True, kw_only=True):
    """An artifact's claim that `remote` holds `commit` at `ref`."""

    artifact: str
    remote: str
    ref: str
    commit: str


class RemoteRead(msgspec.Struct, frozen=True, kw_only=True):
    """What `git ls-remote` answered for a claim: the (sha, ref name) pairs, or why it failed."""

    refs: tuple[tuple[str, str], ...] = ()
    error: str | None = None


def push_claims(artifacts: tuple[str, ...]) -> list[PushClaim]:
    """The artifacts that claim pushed state (`<remote>#<ref>@<commit>`)."""
    claims = []
    for artifact in artifacts:
        found = PUSHED.match(artifact.strip())
        if found is not None:
            claims.append(PushClaim(artifact=artifact, remote=found["remote"], ref=found["ref"],
                                    commit=found["commit"].lower()))
    return claims


def _held_at(claim: PushClaim, read: RemoteRead) -> list[str]:
    ref = claim.ref
    exact = {ref} if ref.startswith("refs/") else {f"refs/heads/{ref}", f"refs/tags/{ref}", ref}
    exact |= {f"{name}^{{}}" for name in exact}  # an annotated tag's commit
    return sorted({sha for sha, name in read.refs if name in exact})


def check_push(claim: PushClaim, read: RemoteRead) -> str | None:
    """Why the remote does not verifiably hold the claimed commit at the exact ref (None: verified)."""
    where = f"artifact {claim.artifact!r}"
    if not _FULL_HASH.match(claim.commit):
        return f"{where}: claim the full commit hash (40 or 64 hex digits), not {claim.commit!r}"
    if read.error is not None:
        return f"{where}: could not read {claim.remote} ({read.error}); the push is not verified"
    held = _held_at(claim, read)
    if not held:
        return f"{where}: {claim.remote} has no ref {claim.ref}; push it and verify, or say IMPORT NOT DONE"
    if claim.commit not in held:
        return (f"{where}: {claim.remote} holds {', '.join(held)} at {claim.ref}, not the claimed {claim.commit}; "
                "push it and verify, or say IMPORT NOT DONE")
    return None


#: A full commit hash as a word of an artifact's text (not a digest written `sha256:<hex>`, an image's say).
_HASH_WORD = re.compile(r"(?<![0-9A-Za-z:])(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40})(?![0-9A-Za-z])")
#: Words that put a hash in git's terms: a repository, a remote, a branch or ref, a push.
_GIT_WORDS = re.compile(r"\.git\b|\bgit@|\brefs/|\b(?:origin|upstream|main|master|trunk|develop|HEAD|branch|"
                        r"pushed|push|commit)\b", re.IGNORECASE)
#: A web address (a pull request, a commit page): a link to look at, not a claim of what a remote holds.
_WEB = re.compile(r"^https?://\S+$", re.IGNORECASE)


def unparsed_claims(artifacts: tuple[str, ...], claims: list[PushClaim]) -> list[str]:
    """Findings for artifacts that state a pushed commit but not as `<remote>#<ref>@<commit>`: a state asserted
    that nothing can verify (`repo.git @ main <hash>`, `<hash> on main`, `pushed <hash>`). A hash with no word of
    git beside it (a checksum, a content-addressed path, an image digest) is no such claim."""
    claimed = {claim.artifact for claim in claims}
    return [f"artifact {artifact!r} names a commit but not as <remote>#<ref>@<commit>, so its push cannot be "
            "verified; write it so, or say IMPORT NOT DONE"
            for artifact in artifacts
            if artifact not in claimed and not _WEB.match(artifact.strip()) and _HASH_WORD.search(artifact)
            and _GIT_WORDS.search(_HASH_WORD.sub(" ", artifact))]


def says_import_not_done(texts: list[str]) -> bool:
    """Whether the snapshot says `IMPORT NOT DONE` followed by a recipe (a literal git command)."""
    return any((found := _RECIPE.search(text)) and _RECIPE_GIT.search(text, found.end()) for text in texts)


def one_home(artifacts: tuple[str, ...], claims: list[PushClaim]) -> list[str]:
    """Findings for artifacts naming more than one home."""
    findings = []
    for artifact in artifacts:
        locations = [word for word in artifact.split() if _LOCATION.match(word)]
        if len(locations) > 1 or (locations and re.search(r"\s(or|and/or)\s", artifact)):
            findings.append(f"artifact {artifact!r} names more than one home; name exactly one target repo/path")
    homes: dict[str, set[str]] = {}
    for claim in claims:
        homes.setdefault(claim.ref.removeprefix("refs/heads/"), set()).add(claim.remote)
    for ref, remotes in sorted(homes.items()):
        if len(remotes) > 1:
            findings.append(f"ref {ref} is claimed on {len(remotes)} remotes ({', '.join(sorted(remotes))}); "
                            "name exactly one home")
    return findings


def has_preflight(texts: list[str]) -> bool:
    """Whether the snapshot carries the operator pre-flight checklist (heading and a checkbox item)."""
    joined = "\n".join(texts)
    return "operator pre-flight" in joined.lower() and _CHECKBOX.search(joined) is not None


def findings(*, texts: list[str], artifacts: tuple[str, ...], reads: dict[str, RemoteRead],
             missing_docs: list[str]) -> list[str]:
    """Every doctrine finding for a park with `--handoff` (empty: the park may proceed)."""
    found: list[str] = []
    claims = push_claims(artifacts)
    unread = RemoteRead(error="not read")
    unverified = [problem for claim in claims
                  if (problem := check_push(claim, reads.get(claim.artifact, unread))) is not None]
    unverified += unparsed_claims(artifacts, claims)
    if unverified and not says_import_not_done(texts):
        found += unverified
    found += one_home(artifacts, claims)
    found += [f"role document {path} is missing (the log holds the role: `continuity rebuild` writes it again)"
              for path in missing_docs]
    if not has_preflight(texts):
        found.append("no operator pre-flight checklist: add '## Operator pre-flight' with '- [ ]' items "
                     "(for example with --next)")
    return found
