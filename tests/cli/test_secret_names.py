"""A name or id that looks like a secret (a team, agent, role, project, repository id) is never shown back or
written: every command refuses it (exit 4; the compat CLI's `invalid_arguments`), a read that never fails (the
briefing) degrades without naming it, and a refusal that quotes a bad value redacts the value before cutting it
(a token cut short no longer matches its rule and showed most of it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import cli_process

#: Tokens of four of the guard's rules, in the shapes their vendors issue.
TOKENS = ["ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
          "AKIA" + "Q3EGRIV5NZ7XMPLK",
          "xoxb-" + "123456789012-123456789012-" + "abcdefABCDEF0123456789ab",
          "sk-ant-api03-" + "x4Rk9Lm2Np7Qs1Tv6Wy3Zb8Cd5Fg0Hj2Kl4Mn6Pq8Rs1Tu3Vw5Xy7Za9Bc2De4Fg6Hi8Jk0Lm2No4Pq6Rs8Tu0" +
          "VwAA"]


def fragments(token: str) -> list[str]:
    """Every 10-character piece of the token's secret part: none may be shown."""
    body = token.split("_", 1)[-1] if token.startswith("ghp_") else token[4:] if token.startswith("AKIA") else \
        token.rsplit("-", 1)[-1]
    return [body[start:start + 10] for start in range(len(body) - 9)]


def shown_anywhere(token: str, texts: list[str], roots: list[Path]) -> list[str]:
    """Where any piece of the token appears: in the texts given, or in any file under the roots."""
    pieces = fragments(token)
    found = [f"output {index}" for index, text in enumerate(texts) if any(piece in text for piece in pieces)]
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(piece.encode() in data for piece in pieces):
                    found.append(str(path))
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with a store and team t1 holding role r1."""
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for args in (["init"], ["role", "create", "t1", "r1"], ["role", "claim", "t1", "r1", "--agent", "amy"]):
        assert cli_process(*args, cwd=root).returncode == 0
    return root


REFUSED = [  # (arguments with {T} for the token, environment)
    ("queue t1 --agent {T}", {}), ("queue {T} --agent amy", {}), ("queue t1", {"CONTINUITY_AGENT": "{T}"}),
    ("inbox t1 --agent {T}", {}), ("inbox {T} --agent amy", {}), ("inbox t1", {"CONTINUITY_AGENT": "{T}"}),
    ("health {T}", {}), ("role list {T}", {}), ("role show t1 {T}", {}), ("moments list {T}", {}),
    ("moments deliver {T} --agent amy", {}), ("send t1 --to {T} --message hi --agent amy", {}),
    ("role claim t1 {T} --agent amy", {}), ("handoff show {T}", {}),
    ("install ai-context --repository {T}", {}), ("install ai-context --repository {T} --dry-run", {}),
]


@pytest.mark.parametrize("token", TOKENS[:2])
@pytest.mark.parametrize(("args", "env"), REFUSED)
def test_a_secret_like_name_is_refused_and_never_shown(project: Path, tmp_path: Path, args: str,
                                                        env: dict[str, str], token: str) -> None:
    before = sorted(path.relative_to(project) for path in project.rglob("*") if ".git" not in path.parts)
    result = cli_process(*args.format(T=token).split(), cwd=project,
                         env={key: value.format(T=token) for key, value in env.items()})
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "looks like a secret" in result.stderr and "Traceback" not in result.stderr
    assert shown_anywhere(token, [result.stdout, result.stderr], [project, tmp_path / "home"]) == []
    assert sorted(path.relative_to(project) for path in project.rglob("*")
                  if ".git" not in path.parts and "local" not in path.parts) == \
        [path for path in before if "local" not in path.parts]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("env", [False, True])
def test_the_briefing_never_fails_and_never_names_a_secret_like_agent_or_team(project: Path, tmp_path: Path,
                                                                               token: str, env: bool) -> None:
    for args in (["briefing", "t1"] + ([] if env else ["--agent", token]), ["briefing", token],
                 ["briefing", "t1", "--json"] + ([] if env else ["--agent", token])):
        result = cli_process(*args, cwd=project, env={"CONTINUITY_AGENT": token} if env else None)
        assert result.returncode == 0, result.stderr
        assert "looks like a secret" in result.stderr + result.stdout
        assert shown_anywhere(token, [result.stdout, result.stderr], [project, tmp_path / "home"]) == []


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("args", ["role list team.{T}/x", "role claim t1 r1 --agent amy --ttl ttl:{T}",
                                  "role list abcdefghijklmnopqrstuvwxyz0123.{T}/x",
                                  "inbox t1 --agent a/{T}"])
def test_a_refusal_quoting_a_bad_value_redacts_it_before_cutting_it(project: Path, tmp_path: Path, args: str,
                                                                    token: str) -> None:
    """The value is cut to 40 characters to be quoted; the cut used to come first, so a token after a short
    prefix was shown but for its last characters."""
    from events.guard import find_secret

    assert find_secret(args.format(T=token)) is not None  # the guard sees the token inside the value
    result = cli_process(*args.format(T=token).split(), cwd=project)
    assert result.returncode == 2, result.stderr
    assert "[REDACTED" in result.stderr or "looks like a secret" in result.stderr, result.stderr
    assert shown_anywhere(token, [result.stdout, result.stderr], [project, tmp_path / "home"]) == []


COMPAT = ["status", "restore --gate user --auto", "restore --gate user --load latest", "restore --gate user --list",
          "resume-bundle", "warm", "warm --auto", "assess --gate user", "list-contexts",
          "log --gate agent --message hi", "checkpoint --gate agent --message hi", "archive --gate user",
          "host-switch --gate user --to-host codex"]


@pytest.mark.parametrize("token", TOKENS[::3])
@pytest.mark.parametrize("mode", COMPAT)
def test_the_compat_cli_takes_no_secret_like_project_in_any_mode(project: Path, tmp_path: Path, mode: str,
                                                                 token: str) -> None:
    """runtime-continuity echoed the project in its answer and wrote it into the harness's run file (status,
    restore, warm --auto) and into the contexts folder's names."""
    runs = project / ".agent" / "runs"
    runs.mkdir(parents=True)
    (runs / "r1.json").write_text('{"run_id": "r1", "status": "running", "events": []}\n')
    result = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity",
                             *mode.split(), "--project", token], cwd=project, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stdout
    answer = json.loads(result.stdout)
    assert list(answer) == ["ok", "error", "message"] and answer["ok"] is False
    assert answer["error"] == "invalid_arguments"
    assert re.fullmatch(r"invalid --project: it looks like a secret \(rule [a-z0-9-]+\); not shown", answer["message"])
    assert shown_anywhere(token, [result.stdout, result.stderr], [project, tmp_path / "home"]) == []
    assert (runs / "r1.json").read_text() == '{"run_id": "r1", "status": "running", "events": []}\n'


def test_resume_bundle_names_every_id_it_leaves_out(project: Path, tmp_path: Path) -> None:
    """resume-bundle is a read: ids that look like secrets are left out of the brief, and each is named (with
    --record, in the line saying the brief was not recorded; that line named only the first)."""
    for record in ([], ["--record"]):
        result = cli_process("resume-bundle", "--agent", TOKENS[0], "--session", TOKENS[1], *record, cwd=project)
        assert result.returncode == 0, result.stderr
        assert "agent_id looks like a secret" in result.stderr and "session_id looks like a secret" in result.stderr
        assert ("not recorded" in result.stderr) == bool(record)
        assert shown_anywhere(TOKENS[0], [result.stdout, result.stderr], [project, tmp_path / "home"]) == []
        assert shown_anywhere(TOKENS[1], [result.stdout, result.stderr], [project, tmp_path / "home"]) == []


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(("args", "code"), [("queue team-{T} --agent amy", 4), ("inbox t1 --agent amy_{T}", 4),
                                            ("role claim t1 r1 --agent amy --ttl ttl-{T}", 2)])
def test_a_token_glued_to_a_name_by_a_hyphen_or_underscore_is_seen(project: Path, tmp_path: Path, args: str,
                                                                    code: int, token: str) -> None:
    """`team-xoxb-...` or `ttl-sk-ant-...`: the guard's rules took a token only after a non-word character, so
    these were shown back (and a name recorded) as given."""
    result = cli_process(*args.format(T=token).split(), cwd=project)
    assert result.returncode == code, result.stderr
    assert "[REDACTED" in result.stderr or "looks like a secret" in result.stderr, result.stderr
    assert shown_anywhere(token, [result.stdout, result.stderr], [project, tmp_path / "home"]) == []


#: A key of each `sk-` shape (the rules that look behind for a letter), built from parts.
SK_KEYS = ["sk-ant-api03-" + "Qw3_Er5-" * 8, "sk-proj-" + "Zx9-Cv8_" * 6, "sk-" + "Ab12Cd34" * 6,
           "sk-or-v1-" + "9f3a0c7e" * 8]


@pytest.mark.parametrize("before", ["\n", "\t", "\r\n"])
def test_a_key_after_a_line_break_or_a_tab_is_refused_or_redacted_on_every_write_path(
        tmp_path: Path, before: str) -> None:
    """`done:<line break>sk-ant-...` was stored whole by `log`, `checkpoint`, `work validate`, the hooks, MCP and
    the compat CLI: the write path's first look at the encoded event saw `\\nsk-` (a letter before the key) and
    skipped the scan. Refused with exit 4 (the plain path and the typed one), redacted with --redact and by hooks."""
    root = tmp_path / "proj"
    root.mkdir()
    assert cli_process("init", "--project", "p", cwd=root).returncode == 0
    home = {"HOME": str(tmp_path / "home")}
    outputs: list[str] = []
    for key in SK_KEYS:
        text = f"done:{before}{key}"
        for args in (["log", "-m", text], ["checkpoint", "-m", "phase", "--next", text],
                     ["log", "-m", "structured", "--note-json", json.dumps({"said": text})]):
            refused = cli_process(*args, cwd=root, env=home)
            assert refused.returncode == 4, (args, refused.stderr)
            outputs += [refused.stdout, refused.stderr]
        kept = cli_process("log", "-m", text, "--redact", cwd=root, env=home)
        assert kept.returncode == 0, kept.stderr
        stop = json.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(root),
                           "last_assistant_message": text})
        hook = cli_process("hook", "claude-code", cwd=root, env=home, stdin=stop)
        assert hook.returncode == 0
        outputs += [kept.stdout, kept.stderr, hook.stdout, hook.stderr]
    stored = b"".join(path.read_bytes() for path in (root / ".agent").rglob("*.json") if path.is_file())
    assert stored.count(b"[REDACTED") >= 2 * len(SK_KEYS)
    for key in SK_KEYS:
        body = key[-20:-4]
        assert body.encode() not in stored and not any(body in text for text in outputs), key
        assert shown_anywhere(key, outputs, [root, tmp_path / "home"]) == []


#: A value a key names as a secret, in a structured note: no rule matches the value alone.
PAIRED = {"db": {"password": "KEYVAL" + "Hunter2222x", "api_key": "KEYVAL" + "abcdef0123456789ABCDEF",
                 # a password with a token glued to it, before or after: whole, not the token alone
                 "db_password": "hunter2secretX9_" + "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                 "root_password": "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" + "!hunter2secret99"},
          "steps": [{"aws_secret_access_key": "KEYVAL" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzz"}],
          # a header's name as the key (a Cookie header is a credential whoever sends it)
          "headers": {"Cookie": "sessionid=" + "Kq7Vb2Nm9X" + "c4Zt6Lp3Rw",
                      "Set-Cookie": "__Host-sess=" + "Rc5tYu8iOp" + "2aSd4fGh6j; Path=/",
                      "Proxy-Authorization": "Basic " + "YWxpY2U6UHg3cVJ0OXpMbTJ3"},
          "fine": {"Cookie": "theme=dark",
                   "token": "expired", "description": "the password reset flow", "password": "${DB_PASSWORD}",
                   # what a key naming a secret often holds that is none (quoted, each read as a password)
                   "credentials": "same-origin", "test_reset_password": "FAILED", "api_token": "Optional[str]",
                   "columns": {"password": "VARCHAR(255)", "refreshToken": "String?"}, "login.password": "Kennwort",
                   "api_key": "settings.API_KEY", "apiKey": "process.env.OPENAI_API_KEY", "auth_token": "get_token()",
                   "pwd": "src/app", "private_key": "server.key", "lexer": [{"token": "LPAREN"}],
                   "refresh_token": "rotated", "existingSecret": "grafana-admin"}}


def test_a_secret_under_a_key_that_names_it_is_refused_or_redacted_in_a_note(tmp_path: Path) -> None:
    """`--note-json '{"db": {"password": "..."}}'` was stored: the guard looked at the key and at the value one by
    one, and the assignment rules need both. An entry is also looked at as the JSON text it is written as: refused
    (exit 4, naming the entry), and with --redact the value goes; prose and placeholders under such keys stay."""
    root = tmp_path / "proj"
    root.mkdir()
    home = {"HOME": str(tmp_path / "home")}
    assert cli_process("init", "--project", "p", cwd=root, env=home).returncode == 0
    note = json.dumps(PAIRED)
    outputs = []
    for args in (["log", "-m", "creds", "--note-json", note], ["checkpoint", "-m", "creds", "--note-json", note]):
        refused = cli_process(*args, cwd=root, env=home)
        assert refused.returncode == 4 and "note.db.password looks like a secret" in refused.stderr, refused.stderr
        outputs += [refused.stdout, refused.stderr]
    assert list((root / ".agent" / "runtime-continuity" / "events").rglob("*.json")) == []
    kept = cli_process("--json", "log", "-m", "creds", "--note-json", note, "--redact", cwd=root, env=home)
    assert kept.returncode == 0, kept.stderr
    stored = json.loads(next((root / ".agent" / "runtime-continuity" / "events").rglob("*.json")).read_bytes())
    assert stored["note"] == {
        "db": {"password": "[REDACTED:password-assignment]", "api_key": "[REDACTED:password-assignment]",
               "db_password": "[REDACTED:password-assignment]", "root_password": "[REDACTED:password-assignment]"},
        "steps": [{"aws_secret_access_key": "[REDACTED:aws-secret-access-key]"}], "fine": PAIRED["fine"],
        "headers": {"Cookie": "[REDACTED:cookie-header]", "Set-Cookie": "[REDACTED:cookie-header]",
                    "Proxy-Authorization": "[REDACTED:auth-header]"}}
    assert sorted(stored["redacted"]) == ["note.db.api_key:password-assignment",
                                          "note.db.db_password:password-assignment",
                                          "note.db.password:password-assignment",
                                          "note.db.root_password:password-assignment",
                                          "note.headers.Cookie:cookie-header",
                                          "note.headers.Proxy-Authorization:auth-header",
                                          "note.headers.Set-Cookie:cookie-header",
                                          "note.steps[0].aws_secret_access_key:aws-secret-access-key"]
    for value in ("Hunter2222x", "abcdef0123456789ABCDEF", "wJalrXUtnFEMI", "hunter2secretX9", "hunter2secret99",
                  "c4Zt6Lp3Rw", "2aSd4fGh6j", "UHg3cVJ0OXpMbTJ3"):
        assert not any(value in text for text in [*outputs, kept.stdout, kept.stderr])


@pytest.mark.parametrize("before", [100, 120, 127, 250, 290])
def test_a_name_or_message_cut_to_its_length_keeps_no_part_of_a_token(tmp_path: Path, before: int) -> None:
    """A task title near the message's 300 characters (with --redact), a folder name near a project name's 128
    and a task near a snapshot slug's 128: the plain cut kept the token's first characters (`ghp_LEAKa1b2...`),
    too few for its rule, so they were stored. Each cut now falls before the token."""
    from continuity.core.store import project_name_for
    from continuity.team.plain import task_slug

    token = "ghp_" + "Zq7Wm3Xk9P" * 4
    folder = tmp_path / ("a" * (before if before < 128 else 90) + "-" + token)  # a name: 255 bytes at most
    folder.mkdir()
    home = {"HOME": str(tmp_path / "home")}
    assert cli_process("init", cwd=folder, env=home).returncode == 0
    made = cli_process("task", "create", "--title", "t" * before + " " + token, "--redact", cwd=folder, env=home)
    assert made.returncode == 0, made.stderr
    stored = "".join(path.read_text() for path in (folder / ".agent").rglob("*.json") if path.is_file())
    named = [project_name_for(str(folder)), task_slug("t" * before + "-" + token)]
    for text in (stored, *named, made.stdout):
        assert "ghp_" not in text and "Zq7Wm3" not in text
    assert all(named)


def test_a_password_in_a_curl_user_flag_is_never_stored(tmp_path: Path) -> None:
    """A PostToolUse hook recorded `curl -u deploy:<password> ...` whole (no rule read `-u user:password`); `log`
    stored it too. The hook redacts the password, `log` refuses it (exit 4)."""
    root = tmp_path / "proj"
    root.mkdir()
    home = {"HOME": str(tmp_path / "home")}
    assert cli_process("init", "--project", "p", cwd=root, env=home).returncode == 0
    password = "Tr0ub4" + "dor3x"
    command = f"curl -fsS -u deploy:{password} https://api.example.com/v1/releases"
    payload = json.dumps({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(root),
                          "tool_name": "Bash", "tool_input": {"command": command},
                          "tool_response": {"stdout": "ok"}})
    assert cli_process("hook", "claude-code", cwd=root, env=home, stdin=payload).returncode == 0
    refused = cli_process("log", "-m", f"ran {command}", cwd=root, env=home)
    assert refused.returncode == 4 and "user-flag" in refused.stderr
    stored = b"".join(path.read_bytes() for path in (root / ".agent").rglob("*") if path.is_file())
    assert password.encode() not in stored and b"deploy:[REDACTED:user-flag]" in stored


def test_a_tab_after_curls_user_or_cookie_flag_is_no_way_past_the_guard(tmp_path: Path) -> None:
    """`curl -u<tab>admin:password` with no other word a rule needs (no `://`): the write paths look for the rules'
    words in the encoded event first, where the tab is `\\t`, and stored the password unscanned (the CLI, the hook,
    runtime-continuity); the views redacted it, so only the files held it."""
    root = tmp_path / "proj"
    root.mkdir()
    home = {"HOME": str(tmp_path / "home")}
    assert cli_process("init", "--project", "p", cwd=root, env=home).returncode == 0
    secrets = ["Zx9qLmP4" + "rT7wKd2", "Zx9qLmP4" + "rT7wKd2abcdef", "Qw8rTy5u" + "Io3pAs7", "Mn4bVc7x" + "Zl2kJh9"]
    for text in (f"ran: curl -u\tadmin:{secrets[0]} api.internal", f"ran: curl -b\tsession={secrets[1]} api.internal"):
        refused = cli_process("log", text, cwd=root, env=home)
        assert refused.returncode == 4 and "(rule user-flag)" in refused.stderr, refused.stderr
    payload = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": f"curl -u\tadmin:{secrets[2]} api.internal/x"},
               "tool_response": {"stdout": "ok", "exit_code": 0}}
    assert cli_process("hook", "claude-code", cwd=root, env=home, stdin=json.dumps(payload)).returncode == 0
    compat = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "log",
                             "--project", "p", "--gate", "agent", "--message", f"curl -u\tadmin:{secrets[3]} h"],
                            cwd=root, env={**home, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                            timeout=60)
    assert compat.returncode == 2 and secrets[3] not in compat.stdout, compat.stdout
    stored = b"".join(path.read_bytes() for path in (root / ".agent").rglob("*") if path.is_file())
    assert b"[REDACTED:user-flag]" in stored  # the hook's command, kept with the password redacted
    assert not any(secret.encode() in stored for secret in secrets)
