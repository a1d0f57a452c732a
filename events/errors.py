"""The error tree of the event log. Only the CLI turns these into exit codes."""

from __future__ import annotations


class ContinuityError(Exception):
    """Root of every error continuity raises on purpose; the message is one line.

    `exit_code` is the process exit code the CLI ends with (docs/cli.md has the table).
    """

    exit_code: int = 70
    #: Warnings the failing command had gathered before it failed, for the caller to print first.
    warnings: list[str] = []  # noqa: RUF012 (never mutated: an instance sets its own list)

    def __str__(self) -> str:
        """The message, with anything in it that looks like a secret as `[REDACTED:<rule>]`: a refusal often
        quotes what it was given (`unknown task '...'`), and it is printed, logged and sent to clients."""
        text = super().__str__()
        from events.guard import might_hold_secret

        if not might_hold_secret(text):
            return text
        from events.guard import redact_text

        return redact_text(text)[0]


class EventInvalid(ContinuityError):
    """Raised when an event does not match its Struct or breaks a limit (size, names)."""

    exit_code = 2


class SecretRefused(ContinuityError):
    """Raised when an event carries secret-like material and redaction was not asked for."""

    exit_code = 4

    def __init__(self, field: str, rule: str, *, redactable: bool = True, redact_with: str | None = "--redact",
                 ) -> None:
        """`redactable`: the field can hold the redaction marker (an id cannot); `redact_with`: how the caller asks
        for redaction (the CLI's flag, an MCP tool's argument; None: this command cannot)."""
        if not redactable:
            fix = "an id cannot be redacted: remove it or use another id"
        elif redact_with:
            fix = f"remove it or pass {redact_with} to store it as [REDACTED:{rule}]"
        else:
            fix = "remove it"
        super().__init__(f"refused: field {field} looks like a secret (rule {rule}); {fix}")
        self.field = field
        self.rule = rule
        self.redactable = redactable


class WriteFailed(ContinuityError):
    """Raised when an append could not be made durable; nothing was left visible."""

    exit_code = 5


class EventExists(WriteFailed):
    """Raised when the final name of a new event is already taken (never overwritten)."""


class EventUndecodable(ContinuityError):
    """Raised when stored bytes are not a valid event of any known version."""

    exit_code = 1


class EventsUnlisted(EventUndecodable):
    """Raised when events/ itself cannot be listed (no permission, an I/O error): no event can be read."""


class UnknownEventType(EventUndecodable):
    """Raised when an event's kind, or its kind's version, is not known to this version (a newer writer made it).

    `kind` names what was not known: the kind, or for a version newer than this release reads, `<kind> v<N>`
    (folded as the version this release knows, its fields could mean something else).
    """

    def __init__(self, kind: str, version: int | None = None) -> None:
        if version is None:
            super().__init__(f"unknown event type {kind!r} (written by a newer version?)")
            self.kind = kind
        else:
            super().__init__(f"unknown version {version} of event type {kind!r} (written by a newer version?)")
            self.kind = f"{kind} v{version}"
        #: What a reader notes to know when a release reads it (catchup.keep_unknown): `kind`, or "*" for a kind
        #: spelt like a versioned one (`work.logged v1`, a kind no writer makes), which would read as one it knows.
        self.noted = "*" if version is None and " v" in kind else self.kind


class StoreUnsafe(ContinuityError):
    """Raised when a folder the program reads or writes inside the store is a symlink or not a folder, or when a
    file install or uninstall would write resolves inside the store (a symlink into it)."""

    exit_code = 6


class EventNotFound(ContinuityError):
    """Raised when an event id names no event in the log."""

    exit_code = 7
