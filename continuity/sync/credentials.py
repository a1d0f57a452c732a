"""Remote URLs that embed credentials: refused, or warned about once, and never shown.

Seed 002: context remote URLs must not embed credentials; runtime git uses the host's
credential chain (a credential helper, an ssh key). So a URL handed to sync or clone-store
(`--remote`, clone-store's argument, `sync_remote` in config.json) that holds a secret is
refused before git runs; a configured git remote whose URL holds one (the user's own git
config, `git remote add`) is used as configured, with one warning. Every URL and git
message that sync prints, logs or stores goes through `mask_url` or `mask_text`.

A secret is a password (`user:secret@`, any scheme, scp-like `user:secret@host:path`), a
user part that is a token (`https://ghp_...@github.com/...`), either one percent-encoded,
or anything the event guard finds secret-like (`?access_token=...`). A bare user name
(`ssh://git@host/...`, `git@host:repo.git`, `https://user@host/...`) is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import unquote

from continuity.core.errors import UsageError
from events.guard import find_secret, redact_text

if TYPE_CHECKING:
    from continuity.sync.git import Repo

MASK = "***"
#: The shortest query value hidden wherever it appears in a message (shorter ones: where a URL shows them).
MIN_HIDDEN = 6
#: What a URL's scheme is made of (`[A-Za-z][A-Za-z0-9+.-]*`), and what ends the rest of a URL in a message.
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_URL_END = re.compile(r"[\s'\"<>`]")


def _schemes(text: str) -> Iterator[tuple[int, int]]:
    """(where each URL's scheme starts, where its `://` ends), left to right, as `[A-Za-z][A-Za-z0-9+.-]*://` finds
    them. Found from each `://` back, never tried from every letter forward: a regular expression took time in
    the square of a long run of letters without one (20 s for a remote of 100,000)."""
    sep = text.find("://")
    while sep >= 0:
        start = sep
        while start and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < sep and not ("A" <= text[start] <= "Z" or "a" <= text[start] <= "z"):
            start += 1
        if start < sep:
            yield start, sep + 3
        sep = text.find("://", sep + 3)


def _urls(text: str) -> Iterator[tuple[int, int]]:
    """The spans of the URLs in a message (a scheme, `://` and at least one character up to a space or a quote)."""
    after = 0
    for start, rest in _schemes(text):
        if start < after:  # inside the URL before it
            continue
        end = _URL_END.search(text, rest)
        end_at = end.start() if end else len(text)
        if end_at > rest:
            yield start, end_at
            after = end_at
_AUTHORITY_END = re.compile(r"[/?#\s'\"<>`]")
#: Where a userinfo written with an unescaped `/`, `?` or `#` in its password may end at most: the `@` before the
#: next `/` (`https://alice:s3cret#pw@host/x`, `https://u:pa55/w0rd@host/x`), as git and its HTTP library read it.
_SEGMENT_END = re.compile(r"[/\s'\"<>`]")
# A user part that is a token: a known token prefix, or a long opaque run of letters and digits
# (GitHub's classic 40 hex digits, Azure DevOps' 52 characters); user names are shorter.
_TOKEN_USER = re.compile(
    r"(?:gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt|cbt|soat|ffct)-)[^:@]*"
    r"|(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}",
    re.ASCII,
)
_PLAIN_USER = re.compile(r"[A-Za-z0-9._~-]{1,64}", re.ASCII)


def _userinfos(text: str, *, scp_like: bool) -> list[tuple[int, int]]:
    """Spans of the userinfo parts (`user[:password]` before the host) of the URLs in `text`."""
    spans = []
    for _, start in _schemes(text):
        end = _AUTHORITY_END.search(text, start)
        at = text.rfind("@", start, end.start() if end else len(text))
        if at < 0 and end is not None and _password_cut(text[start:end.start()]):
            # `user:pass` cut short by a `/`, `?` or `#` of the password: the userinfo runs to the `@` after it
            further = _SEGMENT_END.search(text, end.start() + 1)
            at = text.rfind("@", end.start(), further.start() if further else len(text))
        if at >= 0:
            spans.append((start, at))
    if spans or not scp_like or next(_schemes(text), None):
        return spans
    colon = text.find(":")
    if colon < 0 or "/" in text[:colon] or "@" not in text:
        return []  # a local path, as git reads it
    head = text.split("/", 1)[0]
    ats = [i for i, char in enumerate(head) if char == "@" and ":" in head[i:]]
    return [(0, ats[-1])] if ats else []


def _password_cut(head: str) -> bool:
    """Whether the text before a URL's first `/`, `?` or `#` reads as `user:` and the start of a password (a
    colon followed by anything but a port's digits)."""
    if "[" in head:  # an IPv6 host (`[::1]:8080`): a userinfo holds no bracket, it comes before the host's
        return False
    user, colon, rest = head.partition(":")
    return bool(colon) and bool(user) and not rest.isdigit()


def _token_like(user: str) -> bool:
    return bool(_TOKEN_USER.fullmatch(user)) or find_secret(user) is not None


def _holds_secret(userinfo: str) -> bool:
    user, _, password = unquote(userinfo).partition(":")
    return bool(password) or _token_like(user)


#: What the name of a parameter that carries a credential ends with, once lowercased and stripped of `_.-`
#: (`access_token`, `accessToken`, `X-Amz-Signature`, `client_secret`, `private-token`), whatever the length
#: of its value: the event guard finds only long values. `sort_key`, `zip_code`, `session` are not credentials.
_SECRET_ENDINGS = ("token", "secret", "password", "passwd", "pwd", "apikey", "accesskey", "privatekey",
                   "secretkey", "signature", "credential", "credentials", "sessionid", "authorization")
#: Names that are a credential only on their own (`?key=` is Google's API key, `?sig=` a signed URL's).
_SECRET_NAMES = frozenset({"key", "sig", "auth", "code", "pass"})


def _secret_param(name: str) -> bool:
    word = re.sub(r"[^a-z0-9]", "", unquote(name).lower())
    return word in _SECRET_NAMES or word.endswith(_SECRET_ENDINGS)


def _query_spans(url: str) -> list[tuple[int, int]]:
    """Spans of the values of credential-named parameters: the query's and the fragment's (`#access_token=`),
    separated by `&` or `;`."""
    mark = url.find("?")
    hash_mark = url.find("#")
    if mark < 0 or (hash_mark >= 0 and hash_mark < mark):
        mark = hash_mark
    if mark < 0:
        return []
    spans = []
    for match in re.finditer(r"[^&;#?]+", url[mark + 1:]):
        key, equals, value = match[0].partition("=")
        if equals and value and _secret_param(key):
            start = mark + 1 + match.start() + len(key) + 1
            spans.append((start, start + len(value)))
    return spans


def _secret_spans(url: str) -> list[tuple[int, int]]:
    return [(start, end) for start, end in _userinfos(url, scp_like=True) if _holds_secret(url[start:end])]


def has_secret(url: str) -> bool:
    """True when a remote URL embeds credentials (a password, a token as the user, a credential-named query
    parameter, anything secret-like)."""
    return bool(_secret_spans(url)) or bool(_query_spans(url)) or find_secret(url) is not None


def _shown_user(userinfo: str) -> str | None:
    """The user name of `user:password`, when it is a plain name and not itself a token."""
    user, colon, _ = userinfo.partition(":")
    return user if colon and _PLAIN_USER.fullmatch(user) and not _token_like(user) else None


def _masked_userinfo(userinfo: str) -> str:
    user = _shown_user(userinfo)
    return f"{user}:{MASK}" if user else MASK


def _replace(text: str, spans: list[tuple[int, int]], render: Callable[[str], str]) -> str:
    """`text` with each span (in order, not overlapping) replaced by `render` of it: pieces joined once (a string
    made again per span was quadratic in a URL of many parameters)."""
    pieces, at = [], 0
    for start, end in spans:
        pieces += [text[at:start], render(text[start:end])]
        at = end
    return "".join(pieces) + text[at:]


def mask_url(url: str) -> str:
    """The URL with every secret replaced by `***` (the user name stays when it is a plain name)."""
    masked = _replace(url, _query_spans(url), lambda _value: MASK)  # after the userinfo: spans stay put
    return redact_text(_replace(masked, _secret_spans(masked), _masked_userinfo))[0]


def without_secrets(url: str) -> str | None:
    """The URL without its secrets (a plain user name stays), or None when more than the userinfo holds one."""
    spans = [(start, end + 1) for start, end in _secret_spans(url)]  # with the `@`
    stripped = _replace(url, spans, lambda userinfo: f"{user}@" if (user := _shown_user(userinfo)) else "")
    return None if has_secret(stripped) else stripped


def secrets_of(url: str) -> list[str]:
    """The secret strings of a URL as written and percent-decoded, to hide wherever git might echo them."""
    found = []
    for start, end in _secret_spans(url):
        raw = url[start:end]
        decoded = unquote(raw)
        user, _, password = raw.partition(":")
        found += [raw, decoded, password, unquote(password), decoded.partition(":")[2]]
        if _token_like(unquote(user)) or ":" in unquote(user):
            found += [user, unquote(user)]
    for start, end in _query_spans(url):  # a short one is masked where a URL shows it (mask_text), not everywhere
        found += [value for value in (url[start:end], unquote(url[start:end])) if len(value) >= MIN_HIDDEN]
    return sorted({secret for secret in found if secret}, key=len, reverse=True)


def mask_text(text: str, hidden: Iterable[str] = ()) -> str:
    """A message with the given secrets, the credentials of any URL in it and secret-like text masked."""
    pieces, done = [], 0
    for start, end in _urls(text):
        url = text[start:end]
        pieces += [text[done:start], _replace(url, _query_spans(url), lambda _value: MASK)]
        done = end
    text = "".join(pieces) + text[done:]
    for secret in hidden:
        text = text.replace(secret, MASK)
    spans = [(start, end) for start, end in _userinfos(text, scp_like=False) if _holds_secret(text[start:end])]
    return redact_text(_replace(text, spans, _masked_userinfo))[0]


def guard_remote(repo: Repo, remote: str) -> list[str]:
    """Refuse a remote URL that embeds credentials, before any git runs against it.

    A configured git remote whose URL (as written, or as url.*.insteadOf rewrites it) embeds
    credentials is used as the user configured it: one warning, and its secrets are hidden
    from every git message this sync repeats.
    """
    if has_secret(remote):
        suggestion = without_secrets(remote)
        instead = f" (use {suggestion} and let git's credential helper supply them)" if suggestion else ""
        raise UsageError(f"refused remote URL {mask_url(remote)}: it embeds credentials, which sync never "
                         f"prints or stores; runtime git uses the host's credential chain{instead}")
    if remote not in repo.remotes():
        return []
    leaky = [url for url in repo.remote_urls(remote) if has_secret(url)]
    if not leaky:
        return []
    repo.hide(secret for url in leaky for secret in secrets_of(url))
    shown = ", ".join(dict.fromkeys(mask_url(url) for url in leaky))
    fixes = [fixed for fixed in dict.fromkeys(without_secrets(url) for url in leaky) if fixed]
    fix = f" (the URL without them: {fixes[0]})" if len(fixes) == 1 else ""
    return [f"git remote {remote!r} embeds credentials in its URL ({shown}): sync uses it as configured and "
            f"never prints or stores them, but move them to a credential helper{fix}"]
