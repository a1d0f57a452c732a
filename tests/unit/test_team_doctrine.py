"""The parking doctrine's checks without disk or git: claims, verification, one home, recipe, checklist."""

from __future__ import annotations

from continuity.team import doctrine
from continuity.team.doctrine import RemoteRead

SHA = "a" * 40
OTHER = "b" * 40
PREFLIGHT = "## Operator pre-flight\n- [ ] Write permission: verified with git push --dry-run"


def test_push_claims_are_recognized() -> None:
    """`<remote>#<ref>@<commit>` claims pushed state; plain paths and URLs do not."""
    claims = doctrine.push_claims((f"/srv/r.git#main@{SHA.upper()}", "https://example.invalid/pull/5", "notes.md"))
    assert [(claim.remote, claim.ref, claim.commit) for claim in claims] == [("/srv/r.git", "main", SHA)]


def test_check_push_verdicts() -> None:
    """Verified only when the exact ref holds the exact full hash; every other case names why."""
    claim = doctrine.push_claims((f"r.git#main@{SHA}",))[0]
    assert doctrine.check_push(claim, RemoteRead(refs=((SHA, "refs/heads/main"),))) is None
    assert doctrine.check_push(claim, RemoteRead(refs=((SHA, "refs/remotes/x/main"),))) is not None
    assert "not the claimed" in str(doctrine.check_push(claim, RemoteRead(refs=((OTHER, "refs/heads/main"),))))
    assert "has no ref main" in str(doctrine.check_push(claim, RemoteRead()))
    assert "could not read" in str(doctrine.check_push(claim, RemoteRead(error="fatal: nope")))
    short = doctrine.push_claims(("r.git#main@abcdef1",))[0]
    assert "full commit hash" in str(doctrine.check_push(short, RemoteRead(refs=((SHA, "refs/heads/main"),))))
    tag = doctrine.push_claims((f"r.git#v1@{SHA}",))[0]
    assert doctrine.check_push(tag, RemoteRead(refs=((OTHER, "refs/tags/v1"), (SHA, "refs/tags/v1^{}")))) is None


def test_import_not_done_needs_a_recipe() -> None:
    """The marker alone is not enough: a literal git command must follow it."""
    assert not doctrine.says_import_not_done(["IMPORT NOT DONE, sorry"])
    assert doctrine.says_import_not_done(["IMPORT NOT DONE: git push --mirror git@example.invalid:o/r.git"])


def test_one_home_per_artifact() -> None:
    """Two locations in one artifact, "X or Y", or one ref claimed on two remotes: findings."""
    assert doctrine.one_home(("https://a.invalid/r.git",), []) == []
    assert doctrine.one_home(("https://a.invalid/r.git https://b.invalid/r.git",), [])
    assert doctrine.one_home(("git@a.invalid:o/r.git or the fork",), [])
    claims = doctrine.push_claims((f"a.git#main@{SHA}", f"b.git#main@{SHA}"))
    assert "claimed on 2 remotes" in doctrine.one_home((), claims)[0]


def test_findings_all_together() -> None:
    """An unverified claim, a missing role doc and no checklist are each one finding; IMPORT NOT DONE excuses
    only the claim."""
    artifact = f"r.git#main@{SHA}"
    found = doctrine.findings(texts=["objective"], artifacts=(artifact,), reads={artifact: RemoteRead()},
                              missing_docs=["team/t/roles/r.md"])
    assert len(found) == 3 and "pre-flight" in found[-1] and "team/t/roles/r.md" in found[1]
    texts = ["IMPORT NOT DONE: git clone --mirror r.git && git push --mirror new.git", PREFLIGHT]
    assert doctrine.findings(texts=texts, artifacts=(artifact,), reads={artifact: RemoteRead()},
                             missing_docs=[]) == []
    verified = {artifact: RemoteRead(refs=((SHA, "refs/heads/main"),))}
    assert doctrine.findings(texts=[PREFLIGHT], artifacts=(artifact,), reads=verified, missing_docs=[]) == []


def test_a_commit_named_outside_the_claim_form_is_a_finding() -> None:
    """`repo.git @ main <hash>` (spaces), `<hash> on main`, a 64-digit hash: a state asserted that nothing
    verified passed the check as a plain artifact. It is a finding now, excused by IMPORT NOT DONE as an
    unverified claim is; a web page that names a commit, a short hash and a plain path are not."""
    for artifact in (f"/srv/r.git @ main {SHA}", f"{SHA} on main", f"ext::sh -c x.git#main@{SHA} y",
                     f"{'c' * 64} pushed to origin", f"pushed {SHA.upper()}", f"git@host:o/r {SHA}"):
        found = doctrine.findings(texts=[PREFLIGHT], artifacts=(artifact,), reads={}, missing_docs=[])
        assert len(found) == 1 and "names a commit but not as <remote>#<ref>@<commit>" in found[0], artifact
        texts = ["IMPORT NOT DONE: git push origin main", PREFLIGHT]
        assert doctrine.findings(texts=texts, artifacts=(artifact,), reads={}, missing_docs=[]) == []
    for artifact in (f"https://github.example/o/r/commit/{SHA}", "notes/plan.md", "abc1234 on main",
                     "x" + SHA, "PR-12", f"ghcr.io/acme/app@sha256:{'c' * 64}", f"dist/app.tar.gz sha256 {'c' * 64}",
                     f"s3://bucket/builds/{SHA}/app.zip", f"docs/review-{SHA}.md", f"build cache key {SHA}",
                     "c" * 64):
        assert doctrine.findings(texts=[PREFLIGHT], artifacts=(artifact,), reads={}, missing_docs=[]) == [], artifact
    verified = {f"r.git#main@{SHA}": RemoteRead(refs=((SHA, "refs/heads/main"),))}
    assert doctrine.findings(texts=[PREFLIGHT], artifacts=(f"r.git#main@{SHA}",), reads=verified,
                             missing_docs=[]) == []
