"""`continuity install` / `uninstall` run as a process on files it must refuse, or must not write where they point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli_process, put_continuity_on_path


@pytest.fixture(autouse=True)
def _continuity_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put_continuity_on_path(tmp_path, monkeypatch)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """An empty project folder."""
    root = tmp_path / "proj"
    root.mkdir()
    return root


def nested(depth: int) -> str:
    """A settings object holding a value `depth` objects deep."""
    return '{"x": ' + '{"a":' * depth + "1" + "}" * depth + "}\n"


def test_the_deepest_settings_install_takes_uninstall_takes_too(proj: Path) -> None:
    """Found by halving: the deepest settings file `install` accepts is installed and uninstalled (its bytes back);
    one deeper is refused with one line. Uninstall compared it deeper in the stack and crashed (exit 70)."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    taken, refused = 1, 4000
    while refused - taken > 1:
        middle = (taken + refused) // 2
        settings.write_text(nested(middle))
        done = cli_process("install", "claude-code", "--dry-run", cwd=proj)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr
        taken, refused = (middle, refused) if done.returncode == 0 else (taken, middle)
    settings.write_text(nested(refused))
    done = cli_process("install", "claude-code", cwd=proj)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nested too deeply" in done.stderr
    settings.write_text(nested(taken))
    for action in ("install", "uninstall"):
        done = cli_process(action, "claude-code", cwd=proj)
        assert done.returncode == 0, (taken, done.stderr)
    assert settings.read_text() == nested(taken) and not (proj / "CLAUDE.md").exists()


STORE = Path(".agent", "runtime-continuity")


def files_under(folder: Path) -> dict[Path, bytes]:
    """Every file below `folder` (links not followed) and its bytes."""
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file() and not path.is_symlink()}


@pytest.mark.parametrize(("link", "into", "args"), [
    (".claude/settings.json", "config.json", ("claude-code",)),
    ("CLAUDE.md", "an event file", ("claude-code",)),
    (".claude", "local", ("claude-code",)),
    ("AGENTS.md", "an event file", ("codex",)),
    (".ai/context/config.json", "config.json", ("ai-context", "--repository", "repo-a")),
])
def test_a_file_linked_into_the_store_is_refused(proj: Path, link: str, into: str, args: tuple[str, ...]) -> None:
    """A settings or instructions file (or its folder) that is a symlink into the store: install and uninstall exit 6
    with one line naming it, and write nothing (install appended its block to an event file, breaking the log).
    Uninstall leaves the member config alone, so ai-context's is refused by install only."""
    assert cli_process("init", "--project", "demo", cwd=proj).returncode == 0
    assert cli_process("checkpoint", "-m", "first step", cwd=proj).returncode == 0
    [event] = (proj / STORE / "events").rglob("*.json")
    target = event if into == "an event file" else proj / STORE / into
    (proj / link).parent.mkdir(parents=True, exist_ok=True)
    (proj / link).symlink_to(target)
    before = files_under(proj)
    for action in ("install", "uninstall")[:1 if args[0] == "ai-context" else 2]:
        done = cli_process(action, *args if action == "install" else args[:1], cwd=proj)
        assert done.returncode == 6, done.stderr
        assert done.stderr.count("\n") == 1 and str(proj / link) in done.stderr and "inside the store" in done.stderr
        assert files_under(proj) == before
    assert cli_process("verify", cwd=proj).returncode == 0


def test_a_link_out_of_the_project_is_followed_and_named(proj: Path, tmp_path: Path) -> None:
    """A settings file linked to a dotfiles folder outside the project is changed there, and the output line names
    where it went (it named only the link, so a planted link sent the write elsewhere unseen)."""
    target = tmp_path / "dotfiles" / "settings.json"
    target.parent.mkdir()
    target.write_text('{"model": "opus"}\n')
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").symlink_to(target)
    (proj / "AGENTS.md").write_text("notes\n")
    (proj / "CLAUDE.md").symlink_to("AGENTS.md")  # a link within the project needs no arrow
    done = cli_process("install", "claude-code", cwd=proj)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{proj / '.claude' / 'settings.json'} (-> {target}): updated (backup: ")
    assert lines[1].startswith(f"{proj / 'CLAUDE.md'}: updated (backup: ")
    assert "continuity hook claude-code" in target.read_text()
    done = cli_process("uninstall", "claude-code", "--json", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert [entry["target"] for entry in json.loads(done.stdout)["files"]] == [str(target), None]
    assert target.read_text() == '{"model": "opus"}\n'


@pytest.mark.parametrize("read_only", [".claude/settings.json", "CLAUDE.md"])
@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_read_only_file_is_not_replaced(proj: Path, tmp_path: Path, read_only: str, action: str) -> None:
    """A file made read-only (mode 0444) was replaced by the temp file's rename (the folder allows it, and root may
    write anything): exit 5, one line, every file as it was (one written before it is put back), no copy kept."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    (proj / "CLAUDE.md").write_text("notes\n")
    if action == "uninstall":
        assert cli_process("install", "claude-code", cwd=proj).returncode == 0
    (proj / read_only).chmod(0o444)
    before, home = files_under(proj), files_under(tmp_path / "home")
    done = cli_process(action, "claude-code", cwd=proj)
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and f"{proj / read_only}: cannot write (read-only" in done.stderr
    assert files_under(proj) == before and files_under(tmp_path / "home") == home
    assert (proj / read_only).stat().st_mode & 0o777 == 0o444


def test_a_read_only_file_refuses_before_a_file_before_it_is_removed(proj: Path) -> None:
    """Uninstall removes `.codex/hooks.json` (install made it) before it reaches a read-only AGENTS.md: the refusal
    came half way, and the file put back (and its folder, made again) came back 0666 and 0755 instead of the
    user's 0600 and 0700. The read-only file refuses before anything is written now."""
    assert cli_process("install", "codex", cwd=proj).returncode == 0
    hooks = proj / ".codex" / "hooks.json"
    hooks.parent.chmod(0o700)
    hooks.chmod(0o600)
    (proj / "AGENTS.md").chmod(0o444)
    before = files_under(proj)
    done = cli_process("uninstall", "codex", cwd=proj)
    assert done.returncode == 5 and "AGENTS.md: cannot write (read-only" in done.stderr, done.stderr
    assert "nothing changed" in done.stderr and done.stderr.count("\n") == 1
    assert files_under(proj) == before
    assert (hooks.parent.stat().st_mode & 0o777, hooks.stat().st_mode & 0o777) == (0o700, 0o600)


@pytest.mark.parametrize(("text", "key"), [
    ('{"hooks": {"Stop": []}, "model": "opus", "hooks": {"PreToolUse": []}}\n', "hooks"),
    ('{"env": {"FOO": "1", "FOO": "2"}}\n', "FOO"),
])
def test_a_key_given_twice_is_refused(proj: Path, text: str, key: str) -> None:
    """Two equal keys in one object: exit 2, one line naming the file and the key, nothing written (the first was
    dropped without a word, say the user's own "hooks")."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    for action in ("install", "uninstall"):
        done = cli_process(action, "claude-code", cwd=proj)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and str(settings) in done.stderr and f"'{key}' twice" in done.stderr
        assert settings.read_text() == text and sorted(path.name for path in proj.rglob("*")) == [".claude",
                                                                                                 "settings.json"]


def test_ai_context_keeps_what_the_member_config_holds(proj: Path) -> None:
    """`install ai-context --repository` on an existing .ai/context/config.json sets repositoryId and keeps every
    other key and the projectId there (the file was replaced whole: "remote" lost, projectId overwritten)."""
    assert cli_process("init", "--project", "demo", cwd=proj).returncode == 0
    config = proj / ".ai" / "context" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text('{\n    "schemaVersion": 1,\n    "projectId": "shop",\n    "repositoryId": "old",\n'
                      '    "remote": "git@example.com:team/context.git"\n}\n')
    done = cli_process("install", "ai-context", "--repository", "repo-a", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert config.read_text() == ('{\n    "schemaVersion": 1,\n    "projectId": "shop",\n    "repositoryId": "repo-a",'
                                  '\n    "remote": "git@example.com:team/context.git"\n}\n')
    config.write_text('{"remote": "r"}\n')
    assert cli_process("install", "ai-context", "--repository", "repo-a", cwd=proj).returncode == 0
    assert json.loads(config.read_text()) == {"schemaVersion": 1, "projectId": "demo", "remote": "r",
                                              "repositoryId": "repo-a"}


@pytest.mark.parametrize("text", ['["repo-a"]\n', '{"remote": "r",}\n'])
def test_ai_context_refuses_a_member_config_that_is_no_json_object(proj: Path, text: str) -> None:
    """A member config that is not a JSON object: exit 2, one line naming it, nothing written (it was replaced)."""
    config = proj / ".ai" / "context" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    done = cli_process("install", "ai-context", "--repository", "repo-a", cwd=proj)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and str(config) in done.stderr, done.stderr
    assert config.read_text() == text and sorted(path.name for path in proj.rglob("*")) == [".ai", "config.json",
                                                                                           "context"]


def test_markers_quoted_in_the_users_text_are_the_users(proj: Path) -> None:
    """AGENTS.md quoting the markers in a sentence, and showing a block in a fenced example: install took the first
    for its block's edges (the user's sentence was split, and uninstall deleted what lay between), and the second
    was overwritten. Only marker lines of their own, outside fences, are the block's."""
    begin, end = "<!-- continuity:begin -->", "<!-- continuity:end -->"
    original = (f"# Agents\nInstall adds a marked `{begin}` ... `{end}` block; do not edit it.\n\n"
                f"Example:\n\n```markdown\n{begin}\nexample rules\n{end}\n```\n\nMore rules.\n")
    (proj / "AGENTS.md").write_text(original)
    done = cli_process("install", "codex", cwd=proj)
    assert done.returncode == 0, done.stderr
    text = (proj / "AGENTS.md").read_text()
    assert text.startswith(original) and text.count(begin) == 3  # the block appended after the user's text
    done = cli_process("uninstall", "codex", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert (proj / "AGENTS.md").read_text() == original


def test_a_file_the_user_had_before_an_install_made_before_init_comes_back(proj: Path) -> None:
    """`{"hooks": {}}` installed into before `continuity init` (the copy kept under the state home), then init, then
    uninstall: the copy was looked for only in the new store, and the file, stripped to nothing, was removed."""
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text('{"hooks": {}}\n')
    (proj / "CLAUDE.md").write_text("")
    assert cli_process("install", "claude-code", cwd=proj).returncode == 0
    assert cli_process("init", cwd=proj).returncode == 0
    done = cli_process("uninstall", "claude-code", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert (proj / ".claude" / "settings.json").read_text() == '{"hooks": {}}\n'
    assert (proj / "CLAUDE.md").read_text() == ""


def test_a_link_target_with_a_line_break_stays_on_its_line(proj: Path, tmp_path: Path) -> None:
    """The output names a link's target out of the project: a planted target's name with a line break and an
    escape sequence added a line of its own to the output."""
    target = tmp_path / "out\x1b[31mRED\nfake: line"
    target.write_text("# notes\n")
    (proj / "CLAUDE.md").symlink_to(target)
    done = cli_process("install", "claude-code", cwd=proj)
    assert done.returncode == 0, done.stderr
    named = [line for line in done.stdout.splitlines() if "(-> " in line]
    assert len(named) == 1 and "fake: line" in named[0] and "RED" in named[0], done.stdout
    assert "\x1b" not in done.stdout and not any(line.startswith("fake") for line in done.stdout.splitlines())


@pytest.mark.parametrize("text", [
    "# Notes\n\n```make``` builds it.\n",  # three backticks in a sentence: no fence (its info holds a backtick)
    "# Notes\n\n```sh\nmake\n",  # a fence left open to the end of the file
    "# Notes\n\n    ```\n    indented code\n",  # four spaces: indented code, no fence
    "# N\n\n````md\n```\ninner\n````\n",  # a shorter run inside a longer fence does not close it
], ids=["inline", "open-fence", "indented", "longer-fence"])
def test_what_only_looks_like_a_fence_hides_no_block(proj: Path, text: str) -> None:
    """A fence read too loosely hid the block install appended after it: every install appended another block and
    uninstall removed none. The block is found again (installs twice = once) and uninstall gives the bytes back."""
    (proj / "CLAUDE.md").write_text(text)
    for _ in range(3):
        assert cli_process("install", "claude-code", cwd=proj).returncode == 0
    assert (proj / "CLAUDE.md").read_text().count("<!-- continuity:begin -->") == 1
    assert cli_process("uninstall", "claude-code", cwd=proj).returncode == 0
    assert (proj / "CLAUDE.md").read_text() == text


@pytest.mark.parametrize(("harness", "doc", "indent"), [("claude-code", "CLAUDE.md", "    "),
                                                         ("codex", "AGENTS.md", "\t")], ids=["spaces", "tab"])
def test_markers_shown_as_indented_code_are_the_users_example(proj: Path, harness: str, doc: str,
                                                              indent: str) -> None:
    """A marker pair in an indented code block (four spaces or a tab: CommonMark's code, as between fences) is an
    example of the user's: install replaced it with the block and uninstall deleted it, the example's text lost."""
    text = (f"# Notes\n\nHow the managed block looks:\n\n{indent}<!-- continuity:begin -->\n{indent}(the managed "
            f"block)\n{indent}<!-- continuity:end -->\n\nMore notes.\n")
    (proj / doc).write_text(text)
    assert cli_process("install", harness, cwd=proj).returncode == 0
    installed = (proj / doc).read_text()
    assert installed.startswith(text.rstrip("\n")) and installed.count("<!-- continuity:begin -->") == 2
    assert cli_process("uninstall", harness, cwd=proj).returncode == 0
    assert (proj / doc).read_text() == text


def test_files_whose_lines_end_in_crlf_keep_them(proj: Path) -> None:
    """A CLAUDE.md and a settings file written on Windows (or by git's autocrlf): the block was written with LF
    among CRLF lines and the settings rewritten LF throughout; once normalized back to CRLF, the next install said
    `updated` (and kept another backup) instead of unchanged, and uninstall left extra blank lines."""
    doc = proj / "CLAUDE.md"
    settings = proj / ".claude" / "settings.json"
    doc.write_bytes(b"# Title\r\n\r\nSome rules\r\n")
    settings.parent.mkdir()
    settings.write_bytes(b'{\r\n    "a": 1\r\n}\r\n')
    assert cli_process("install", "claude-code", cwd=proj).returncode == 0
    for path in (doc, settings):
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") > 3, data
    again = cli_process("install", "claude-code", "--json", cwd=proj)
    assert again.returncode == 0 and '"updated"' not in again.stdout, again.stdout
    assert cli_process("uninstall", "claude-code", cwd=proj).returncode == 0
    assert doc.read_bytes() == b"# Title\r\n\r\nSome rules\r\n"
    assert settings.read_bytes() == b'{\r\n    "a": 1\r\n}\r\n'


@pytest.mark.parametrize("edit", ["bom", "indent", "trailing"])
def test_a_block_an_editor_or_a_person_touched_is_still_ours(proj: Path, edit: str) -> None:
    """A byte order mark an editor put before the begin marker on the first line, markers indented by hand, text
    after the end marker on its line: the block is found (it was refused as unpaired, or a second one appended)."""
    assert cli_process("install", "claude-code", cwd=proj).returncode == 0
    path = proj / "CLAUDE.md"
    text = path.read_text()
    if edit == "bom":
        text = "\ufeff" + text
    elif edit == "indent":
        text = text.replace("<!-- continuity:", "  <!-- continuity:")
    else:
        text = text.replace("<!-- continuity:end -->", "<!-- continuity:end --> <!-- keep -->")
    path.write_text(text)
    done = cli_process("install", "claude-code", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert path.read_text().count("<!-- continuity:begin -->") == 1
    done = cli_process("uninstall", "claude-code", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert not path.exists() or "continuity:" not in path.read_text()  # install made the file: it may go
