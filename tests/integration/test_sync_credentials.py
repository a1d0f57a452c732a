"""Remote URLs with embedded credentials through sync, clone-store and the background sync, over real git.

No test touches the network: a credential URL is refused before git runs, and a configured remote
that embeds credentials is rewritten by `url.<bare remote>.insteadOf` to a bare remote in a temp folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_REMOTE, EXIT_USAGE
from continuity.sync.credentials import has_secret, mask_url
from continuity.sync.git import Repo
from tests.integration.test_sync import IDENTITY, STORE, World, append, git

SECRET = "s3cr3tTOKEN"
GITHUB_TOKEN = "ghp_" + "A1b2" * 9  # built here so no token-shaped literal sits in the source
HEX_TOKEN = "0123456789abcdef" * 2 + "01234567"
ENCODED = "%73%33cr%33tTOKEN"  # SECRET, percent-encoded
CREDENTIAL_URL = f"https://user:{SECRET}@127.0.0.1:9/repo.git"

#: (case, URL, every form of its secret that must never appear)
REFUSED = [
    ("https-password", CREDENTIAL_URL, [SECRET]),
    ("http-password", f"http://user:{SECRET}@127.0.0.1:9/repo.git", [SECRET]),
    ("ssh-password", f"ssh://git:{SECRET}@127.0.0.1:9/repo.git", [SECRET]),
    ("scp-like-password", f"git:{SECRET}@127.0.0.1:repo.git", [SECRET]),
    ("ipv6-host", f"https://user:{SECRET}@[::1]:9/repo.git", [SECRET]),
    ("token-as-user", f"https://{GITHUB_TOKEN}@127.0.0.1:9/repo.git", [GITHUB_TOKEN]),
    ("scp-like-token-as-user", f"{GITHUB_TOKEN}@127.0.0.1:org/repo.git", [GITHUB_TOKEN]),
    ("token-user-with-placeholder", f"https://{HEX_TOKEN}:x-oauth-basic@127.0.0.1:9/repo.git", [HEX_TOKEN]),
    ("encoded-password", f"https://user:{ENCODED}@127.0.0.1:9/repo.git", [SECRET, ENCODED]),
    ("encoded-colon", f"https://user%3A{SECRET}@127.0.0.1:9/repo.git", [SECRET]),
    ("encoded-token-user", f"https://%67{GITHUB_TOKEN[1:]}@127.0.0.1:9/repo.git", [GITHUB_TOKEN[1:]]),
    ("token-in-query", f"https://127.0.0.1:9/repo.git?access_token={SECRET}", [SECRET]),
    # a credential-named parameter whatever the length of its value (the guard finds only long ones)
    ("short-token-in-query", "https://127.0.0.1:9/x.git?access_token=SECRETQ", ["SECRETQ"]),
    ("signature-in-query", "https://127.0.0.1:9/x.git?ref=main&X-Amz-Signature=Zq81xw", ["Zq81xw"]),
    ("encoded-key-in-query", "https://127.0.0.1:9/x.git?private%5Ftoken=Pv7qZ2", ["Pv7qZ2"]),
    ("camel-case-in-query", "https://127.0.0.1:9/x.git?accessToken=Qm4xzP", ["Qm4xzP"]),
    ("semicolon-separated", "https://127.0.0.1:9/x.git?a=1;client_secret=Wq7yT3", ["Wq7yT3"]),
    ("token-in-fragment", "https://127.0.0.1:9/x.git#access_token=Zt5kR8", ["Zt5kR8"]),
    # a password holding an unescaped `#`, `?` or `/` (its userinfo ran only to it: printed and stored whole)
    ("hash-in-password", "https://alice:s3cret#pw@127.0.0.1:9/x.git", ["s3cret#pw", "s3cret"]),
    ("question-mark-in-password", "https://alice:GG?TOKHH@127.0.0.1:9/x.git", ["GG?TOKHH", "TOKHH"]),
    ("slash-in-password", "https://alice:pa55/wORD2@127.0.0.1:9/x.git", ["pa55/wORD2", "wORD2"]),
]
ALLOWED = ["ssh://git@127.0.0.1:9/repo.git", "git@127.0.0.1:repo.git", "https://user@127.0.0.1:9/repo.git"]


@pytest.fixture(autouse=True)
def _git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity from the environment only, and an ssh that never connects."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_SSH_COMMAND", "false")


@pytest.fixture
def network_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every git command sync runs with network=True (ls-remote, fetch, push), recorded on the real Repo."""
    calls: list[tuple[str, ...]] = []
    real = Repo.try_run

    def spy(self: Repo, *args: str, **options: Any) -> subprocess.CompletedProcess[bytes]:
        if options.get("network"):
            calls.append(args)
        return real(self, *args, **options)

    monkeypatch.setattr(Repo, "try_run", spy)
    return calls


def run(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process; (exit code, stdout, stderr)."""
    raw_out, raw_err = io.BytesIO(), io.BytesIO()
    out, err = io.TextIOWrapper(raw_out, encoding="utf-8"), io.TextIOWrapper(raw_err, encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    out.flush()
    err.flush()
    return code, raw_out.getvalue().decode(), raw_err.getvalue().decode()


def both_ways(*args: str) -> list[tuple[int, str, str]]:
    """The command's (code, stdout, stderr) as human text and with --json."""
    return [run(*args), run(*args, "--json")]


def files_holding(root: Path, secrets: list[str]) -> list[str]:
    """Files under `root` holding any of the secrets; .git/config (written by the user, not by us) excepted."""
    return [str(path) for path in sorted(root.rglob("*"))
            if path.is_file() and path != root / ".git" / "config"
            and any(secret.encode() in path.read_bytes() for secret in secrets)]


def project(tmp_path: Path, name: str = "p", *, store: bool = True) -> Path:
    """A git work tree (with a store unless `store` is False), no remote."""
    root = tmp_path / name
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    if store:
        assert run("init", "--project", "demo", "--root", str(root))[0] == 0
    return root


def rewrite(root: Path, url: str, to: Path | str) -> None:
    """Make git in `root` reach `url` at `to` (url.<to>.insteadOf): no network."""
    git(root, "config", "--add", f"url.{to}.insteadOf", url)


def wait_for_log(root: Path, needle: str) -> str:
    """local/sync.log once the background sync has written `needle` to it (or after 30 s)."""
    log = root / STORE / "local" / "sync.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (log.exists() and needle in log.read_text()):
        time.sleep(0.1)
    return log.read_text() if log.exists() else ""


@pytest.mark.parametrize(("url", "secrets"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_sync_and_clone_store_refuse_a_credential_url_before_git_contacts_it(
        tmp_path: Path, network_calls: list[tuple[str, ...]], url: str, secrets: list[str]) -> None:
    """A URL embedding credentials is a usage error naming it masked; nothing contacted, stored or printed."""
    root, fresh = project(tmp_path), project(tmp_path, "fresh", store=False)
    runs = both_ways("sync", "--remote", url, "--root", str(root))
    runs += both_ways("clone-store", url, "--root", str(fresh))
    for code, out, err in runs:
        assert code == EXIT_USAGE
        assert "embeds credentials" in err and ("***" in err or "[REDACTED:" in err) and err.count("\n") == 1
        assert url.split("@")[-1].split("?")[0].split("#")[0] in err, "the URL is shown, its secret masked"
        assert not [secret for secret in secrets if secret in out + err]
    assert json.loads(runs[1][1])["message"] == json.loads(runs[3][1])["message"]
    assert network_calls == []
    assert not (fresh / STORE).exists(), "clone-store wrote nothing, config.json included"
    assert files_holding(root, secrets) == [] and files_holding(fresh, secrets) == []


def test_credential_classes_and_bare_user_names() -> None:
    """Passwords, tokens as the user, percent-encoding, any scheme: secret; a bare user name is not."""
    for _, url, secrets in REFUSED:
        assert has_secret(url)
        assert not [secret for secret in secrets if secret in mask_url(url)]
    for url in [*ALLOWED, "https://github.com/org/repo.git", "/srv/git/repo.git", "file:///srv/repo.git",
                "git@host:repo@v2", "origin", "https://h/x.git?ref=main", "https://h/x.git?monkey=1&keys",
                "https://h/x.git?token=", "https://h/x.git?zip_code=12345&status_code=200&sort_key=name",
                "https://h/x.git?cache_key=abc123&session=continuity&passage=3", "https://h:8080/x@v1.git",
                "https://h/path:with@sign", "https://h:8080?x@y", "http://[::1]:8080/alice@example.com.git",
                "https://[2001:db8::5]:3000/@org/repo.git", "ssh://git@[::1]:22/x"]:
        assert not has_secret(url) and mask_url(url) == url


def test_bare_user_names_sync_and_clone(world: World, network_calls: list[tuple[str, ...]]) -> None:
    """ssh://git@, scp-like git@host: and https://user@ URLs sync and clone-store with no warning."""
    fresh = world.tmp / "fresh"
    git(world.tmp, "clone", "-q", str(world.remote), str(fresh))
    for root in (world.a, fresh):
        for url in ALLOWED:
            rewrite(root, url, world.remote)
    for number, url in enumerate(ALLOWED):
        append(world.a, f"step {number}")
        code, out, err = run("sync", "--remote", url, "--root", str(world.a), "--json")
        assert code == 0 and json.loads(out)["pushed"] is True and json.loads(out)["remote"] == url
        assert "warning" not in err
    code, out, err = run("clone-store", ALLOWED[0], "--root", str(fresh), "--json")
    assert code == 0 and json.loads(out)["events"] == 3 and "warning" not in err
    assert json.loads((fresh / STORE / "config.json").read_text())["sync_remote"] == ALLOWED[0]
    assert network_calls, "rewritten to the bare remote: git ran, yet nothing left this machine"


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A bare remote, clone `a` (which pushed the code) and clone `b`, both with a store."""
    return World(tmp_path)


NAMED = [("https-password", CREDENTIAL_URL, [SECRET]),
         ("token-as-user", f"https://{GITHUB_TOKEN}@127.0.0.1:9/repo.git", [GITHUB_TOKEN]),
         ("encoded-password", f"https://user:{ENCODED}@127.0.0.1:9/repo.git", [SECRET, ENCODED]),
         ("ssh-password", f"ssh://git:{SECRET}@127.0.0.1:9/repo.git", [SECRET])]


@pytest.mark.parametrize(("url", "secrets"), [case[1:] for case in NAMED], ids=[case[0] for case in NAMED])
def test_a_named_remote_with_credentials_warns_once(world: World, url: str, secrets: list[str]) -> None:
    """`git remote add` with a credential URL: sync and clone-store work, warn once, and never show the secret."""
    git(world.a, "remote", "add", "creds", url)
    rewrite(world.a, url, world.remote)
    append(world.a, "through a configured remote")
    as_text, as_json = both_ways("sync", "--remote", "creds", "--root", str(world.a))
    assert as_text[0] == as_json[0] == 0 and as_text[1].startswith("synced creds/continuity")
    assert as_text[1].endswith("; pushed\n")
    assert len(json.loads(as_json[1])["warnings"]) == 1 and json.loads(as_json[1])["remote"] == "creds"
    for _, out, err in (as_text, as_json):
        warnings = [line for line in err.splitlines() if "warning:" in line]
        assert len(warnings) == 1 and "'creds' embeds credentials" in warnings[0] and "***@127.0.0.1" in warnings[0]
        assert not [secret for secret in secrets if secret in out + err]
    fresh = world.tmp / "fresh"
    git(world.tmp, "clone", "-q", str(world.remote), str(fresh))
    git(fresh, "remote", "add", "creds", url)
    rewrite(fresh, url, world.remote)
    code, out, err = run("clone-store", "creds", "--root", str(fresh), "--json")
    assert code == 0 and json.loads(out)["events"] == 1
    assert len(json.loads(out)["warnings"]) == 1 and err.count("warning:") == 1
    assert not [secret for secret in secrets if secret in out + err]
    assert json.loads((fresh / STORE / "config.json").read_text())["sync_remote"] == "creds"
    assert files_holding(world.a, secrets) == [] and files_holding(fresh, secrets) == []


def test_a_named_remote_with_credentials_warns_when_the_sync_fails_too(world: World, tmp_path: Path) -> None:
    """The warning came only with a sync that succeeded: one that failed (here: the remote, rewritten to a folder
    that does not exist, cannot be read; exit 8) printed its error alone. Now the warning comes first."""
    git(world.a, "remote", "add", "creds", CREDENTIAL_URL)
    rewrite(world.a, CREDENTIAL_URL, tmp_path / "missing.git")
    append(world.a, "a1")
    for code, out, err in both_ways("sync", "--remote", "creds", "--root", str(world.a)):
        lines = err.splitlines()
        assert code == EXIT_REMOTE and len(lines) == 2, err
        assert "warning:" in lines[0] and "'creds' embeds credentials" in lines[0]
        assert "error" in lines[1] and SECRET not in out + err


def test_a_credential_push_url_warns_without_contacting_it(world: World,
                                                          network_calls: list[tuple[str, ...]]) -> None:
    """A remote whose push URL embeds credentials is named, masked, in the warning; --no-push never contacts it."""
    git(world.a, "remote", "set-url", "--push", "origin", CREDENTIAL_URL)
    append(world.a, "fetch only")
    code, out, err = run("sync", "--no-push", "--root", str(world.a), "--json")
    assert code == 0 and json.loads(out)["warnings"] == [line.split("warning: ", 1)[1] for line in err.splitlines()]
    assert "https://user:***@127.0.0.1:9/repo.git" in err and SECRET not in out + err
    # reads only, through the fetch URL (here one `ls-remote`: the remote holds nothing to fetch yet)
    assert [call[0] for call in network_calls] == ["ls-remote"]


def test_git_messages_never_echo_a_named_remotes_secret(world: World) -> None:
    """When git's own error repeats the secret (here in a rewritten path), the failure line masks it."""
    git(world.a, "remote", "add", "creds", CREDENTIAL_URL)
    rewrite(world.a, f"https://user:{SECRET}@127.0.0.1:9/", f"{world.tmp}/gone-{SECRET}/")
    append(world.a, "kept safe")
    for code, out, err in both_ways("sync", "--remote", "creds", "--root", str(world.a)):
        assert code == EXIT_REMOTE and "does not appear to be a git repository" in err and "gone-***" in err
        assert SECRET not in out + err
    assert files_holding(world.a, [SECRET]) == []


def _background_sync(root: Path) -> None:
    """Configure sync_after ["archive"] and archive, so a detached sync starts."""
    config = root / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["archive"]}))
    assert run("archive", "--gate", "agent", "--root", str(root))[0] == 0


def test_background_sync_refuses_a_credential_url_in_config(world: World) -> None:
    """sync_remote holding a credential URL (as older versions saved): the detached sync refuses it, masked."""
    config = world.a / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_remote": CREDENTIAL_URL}))
    _background_sync(world.a)
    log = wait_for_log(world.a, "continuity: error:")
    assert "embeds credentials" in log and "https://user:***@127.0.0.1:9/repo.git" in log and SECRET not in log
    config.write_text(config.read_text().replace(CREDENTIAL_URL, "origin"))  # the user's own copy, fixed
    assert files_holding(world.a, [SECRET]) == []


def test_background_sync_through_a_named_credential_remote(world: World) -> None:
    """The detached sync pushes through a configured credential remote; sync.log has the masked warning only."""
    git(world.a, "remote", "set-url", "origin", CREDENTIAL_URL)
    rewrite(world.a, CREDENTIAL_URL, world.remote)
    append(world.a, "before the archive")
    _background_sync(world.a)
    log = wait_for_log(world.a, "continuity: warning:")
    assert "'origin' embeds credentials" in log and "user:***@127.0.0.1" in log
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "continuity" not in git(world.remote, "branch", "--list"):
        time.sleep(0.1)
    assert "continuity" in git(world.remote, "branch", "--list")
    assert files_holding(world.a, [SECRET]) == []
