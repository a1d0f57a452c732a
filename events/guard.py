"""The secret guard, text level: find secret-like material in a string, or redact it.

Every string field of every event written passes through here. One combined regex (one
named group per rule) is compiled at import; the first match decides the rule. Rules, in
the order they are tried at a given position:

- ``private-key-block``: ``-----BEGIN ... PRIVATE KEY-----`` (RSA, EC, OPENSSH, PGP,
  ENCRYPTED, PKCS#8) through its END line, or to the end of the text when there is none.
  Certificates and public keys are public and pass.
- ``aws-secret-access-key``: 40 base64 characters after an ``aws_secret_access_key`` /
  ``SecretAccessKey`` key (``=``, ``:`` or a space, as in ``aws configure set``).
- ``basic-auth-url``: the password of ``scheme://user:password@host``.
- ``aws-access-key-id``: ``AKIA``/``ASIA`` + 16 upper-case letters or digits.
- ``github-token``: ``ghp_ gho_ ghu_ ghs_ ghr_`` + 36 or more, ``github_pat_`` + 22 or more.
- ``gitlab-token``: ``glpat- gldt- glrt- glptt- glcbt- glsoat- glffct-`` + 20 or more.
- ``slack-webhook``: ``hooks.slack.com/services|workflows|triggers/...``.
- ``slack-token``: ``xoxb- xoxp- xoxa- xoxo- xoxs- xoxr- xoxe(.xoxp)- xapp-`` + digits + rest.
- ``anthropic-key``: ``sk-ant-`` + 20 or more.
- ``openai-key``: ``sk-proj- sk-svcacct- sk-admin-`` + 20 or more, or ``sk-`` + 32 or more
  letters and digits (so ``sk-learn`` passes).
- ``stripe-key``: ``sk_live_ sk_test_ rk_live_ rk_test_`` + 16 or more, ``whsec_`` + 24 or
  more (publishable ``pk_`` keys are public and pass).
- ``google-api-key``: ``AIza`` + 35.
- ``npm-token``: ``npm_`` + 36.
- ``pypi-token``: ``pypi-AgEIcHlwaS5vcmc`` (the pypi.org macaroon header) + 50 or more.
- ``huggingface-token``: ``hf_`` + 34 or more letters and digits, one upper-case at least.
- ``jwt``: ``eyJ<header>.eyJ<payload>.<signature>``.
- ``auth-header``: ``Authorization: Basic <base64>`` / ``Authorization: token <opaque>`` and
  ``Bearer <opaque>``; the opaque value needs 16 or more characters, a digit among them.
- ``dotenv-line``: ``NAME=value`` (no spaces around ``=``, as in a ``.env`` file or a shell
  ``export``) where the upper-case NAME contains SECRET, TOKEN, PASSWORD, PASSWD, API_KEY,
  APIKEY, PRIVATE_KEY, ACCESS_KEY or CREDENTIAL, and does not end in a word that makes it
  metadata (``_FILE _PATH _URL _TTL _TIMEOUT _MAX _COUNT _NAME _ID`` ...).
- ``password-assignment``: ``key = value`` / ``key: value`` / ``--key=value`` /
  ``--key value`` where the key (any case, ``snake``, ``kebab``, ``camel`` or dotted) ends in
  password, passwd, pwd (lower case only: ``PWD`` is the shell's working directory),
  passphrase, secret, token, credential(s), or api/access/secret/private/account/auth/
  signing/encryption/master/client + key. Quoted or not; JSON, YAML, Python (type
  annotations included), query strings and escaped JSON (``\\"password\\": \\"...\\"``).

The two assignment rules (and the value parts of ``basic-auth-url`` and ``auth-header``)
never flag a placeholder or a reference: an empty or short value (under 6 characters,
4 in a URL), ``$VAR ${VAR} $(cmd) %VAR% <your-key> {{ tpl }} [REDACTED:...]``, values
starting with ``* ! / ~ . - @`` (masks, YAML tags, paths, flags), anything containing
``xxx``, ``***`` or ``...``, words such as None, null, true, false, changeme, redacted,
placeholder, example, required, string, ``your-...``; identifiers naming a secret
(``password=password``, ``token=access_token``), dotted names (``settings.API_KEY``,
``os.environ[...]``), calls and subscripts (``get_token()``, ``os.getenv(...)``),
numbers, URLs, and quoted values holding whitespace (prose, not a credential). After
``:`` or a flag and a space (``token: ...``, ``--password ...``) an unquoted value also
needs a digit or 16 characters, so ``token: expired`` is prose. A value that a specific
token rule recognises is reported under that rule (``GITHUB_TOKEN=ghp_...`` is a
github-token).

Redaction replaces the whole match, except for the rules with a key or a URL around the
value, where only the value goes: ``password=[REDACTED:password-assignment]``.
"""

from __future__ import annotations

import re

__all__ = ["RULE_NAMES", "find_secret", "redact_text"]

# One character of an unquoted value: whitespace, quotes, backquote, separators, brackets
# and backslash end it (escaped JSON: `...=hunter22\n` stops before the `\`).
_UNQ = r"[^\s\"'`,;&<>()\[\]{}\\]"

# Whole values that are placeholders, not secrets (case-insensitive).
_PLACEHOLDER = (
    r"(?i:none|null|nil|undefined|true|false|yes|no|on|off|changeme|change[_-]?(?:me|it|this)"
    r"|redacted|placeholder|example|sample|dummy|fake|test|testing|todo|tbd|fixme|hidden"
    r"|masked|omitted|removed|required|optional|default|missing|invalid|expired|revoked|unset"
    r"|empty|unknown|string|str|bytes|int|integer|number|bool|boolean|any|object|secretstr"
    r"|your[_-][A-Za-z0-9_-]*|(?:insert|enter|put)[_-][A-Za-z0-9_-]*)"
)
# An identifier naming a secret: `password`, `access_token`, `API_KEY`, `dbPassword`.
_KEYWORD_IDENT = (
    r"[A-Za-z_-]{0,64}(?:(?i:pass|pwd|secret|token|cred|auth)|[_-][Kk][Ee][Yy]|K[Ee][Yy])"
    r"[A-Za-z_-]{0,64}+"
)
_MASK = r"(?:[xX]{3}|\*{3}|\.{3}|\u2022|\u2026)"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]{0,30}://"
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
_OPAQUE = r"[A-Za-z0-9._~+/-]"

# Rules recognising a token by its own shape; they carry no groups, so they can be reused
# inside the lookaheads that hand such values over from the generic rules.
_TOKEN_RULES: tuple[tuple[str, str], ...] = (
    ("aws-access-key-id", r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    (
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("gitlab-token", r"(?<![A-Za-z0-9_-])gl(?:pat|dt|rt|ptt|cbt|soat|ffct)-[A-Za-z0-9_-]{20,}"),
    (
        "slack-webhook",
        r"(?:https?://)?(?<![A-Za-z0-9.-])hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"[A-Za-z0-9_/-]{20,}",
    ),
    (
        "slack-token",
        r"(?<![A-Za-z0-9_-])(?:xox[abposre](?:\.xox[a-z])?|xapp)-[0-9]+-[A-Za-z0-9-]{8,}",
    ),
    ("anthropic-key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai-key",
        r"(?<![A-Za-z0-9_-])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})",
    ),
    (
        "stripe-key",
        r"(?<![A-Za-z0-9_])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
    ),
    ("google-api-key", r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ("npm-token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("pypi-token", r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("huggingface-token", r"(?<![A-Za-z0-9_])hf_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{34,}"),
    (
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    ),
)
_TOKENS = "(?:" + "|".join(body for _, body in _TOKEN_RULES) + ")"

# Key endings of password-assignment, as lookbehinds after the key (case-insensitive).
_KEY_WORDS = ("password", "passwd", "passphrase", "secret", "token", "credential", "credentials")
_KEY_PREFIXES = (
    "api", "access", "secret", "private", "account", "auth", "signing", "encryption",
    "master", "client",
)  # fmt: skip
_KEY_END = (
    "(?:(?i:"
    + "|".join(
        [f"(?<={w})" for w in _KEY_WORDS]
        + [f"(?<={p}{sep}key)" for p in _KEY_PREFIXES for sep in ("_", "-", "")]
    )
    + ")|(?<=pwd))"
)
_ENV_WORDS = r"(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|ACCESS_KEY|CREDENTIAL)"
_ENV_META = (
    "FILE", "PATH", "DIR", "TTL", "EXPIRY", "EXPIRES", "EXPIRATION", "TIMEOUT", "LENGTH", "LEN",
    "MIN", "MAX", "COUNT", "SIZE", "LIMIT", "ENABLED", "DISABLED", "HASHER", "ALGORITHM",
    "TYPE", "NAME", "ID", "URL", "URI", "ENDPOINT", "HEADER", "PREFIX", "VERSION", "REGION",
    "USER", "USERNAME", "ENV", "VAR", "ARN", "MODE", "FORMAT", "LOCATION", "HOST", "PORT",
)  # fmt: skip
_ENV_NOT_META = "".join(f"(?<!_{word})" for word in _ENV_META)

# Unquoted value after `:` or a flag and a space: needs a digit or 16 characters.
_LOOSE = rf"(?=\\?[\"']|{_UNQ}*[0-9]|{_UNQ}{{16}})"
# A Python type annotation between a key and its `=`: `password: str | None = ...`.
_ANNOTATION = (
    r"[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\n]{0,60}\])?(?:[ \t]*\|[ \t]*None)?"
)


def _gid(rule: str) -> str:
    """The regex group name of a rule."""
    return rule.replace("-", "_")


class _Builder:
    """Collects the alternatives of the combined pattern and the value groups of each rule."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.rules: list[str] = []
        self.value_groups: dict[str, tuple[str, ...]] = {}
        self._pending: list[str] = []

    def value(self, rule: str, body: str) -> str:
        """A named group for the value part of `rule` (the part that redaction replaces)."""
        name = f"{_gid(rule)}__v{len(self._pending) + 1}"
        self._pending.append(name)
        return f"(?P<{name}>{body})"

    def rule(self, rule: str, pattern: str) -> None:
        """Add `rule`, claiming the value groups made since the previous rule."""
        self.parts.append(f"(?P<{_gid(rule)}>{pattern})")
        self.rules.append(rule)
        self.value_groups[rule] = tuple(self._pending)
        self._pending = []

    def assigned_value(self, rule: str) -> str:
        """A quoted or unquoted value of an assignment rule, placeholders refused."""
        quoted = []
        for quote in ('"', "'"):
            char = rf"[^{quote}\s\\]"
            end = rf"\\?{quote}"
            quoted.append(
                rf"\\?{quote}"
                rf"(?!(?:{_PLACEHOLDER}|{_KEYWORD_IDENT}){end})"
                rf"(?![$%{{<\[*/~.]|{_SCHEME})"
                rf"(?!{char}*?{_MASK})"
                rf"(?!{_TOKENS})"
                + self.value(rule, rf"{char}{{6,}}")
                + end
            )
        unquoted = (
            rf"(?!(?:{_PLACEHOLDER}|{_KEYWORD_IDENT}|{_DOTTED}|[0-9]+)(?!{_UNQ}))"
            rf"(?![-$%*!/~.@]|{_SCHEME})"
            rf"(?!{_UNQ}*+[(\[])"
            rf"(?!{_UNQ}*?{_MASK})"
            rf"(?!{_TOKENS})" + self.value(rule, rf"{_UNQ}{{6,}}")
        )
        return "(?:" + "|".join([*quoted, unquoted]) + ")"


def _build() -> tuple[re.Pattern[str], tuple[str, ...], dict[str, tuple[str, ...]]]:
    """Compile the combined pattern; return it, the rule names and each rule's value groups."""
    b = _Builder()
    b.rule(
        "private-key-block",
        r"-----BEGIN[ A-Z0-9]{0,40}? PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?-----END[ A-Z0-9]{0,40}? PRIVATE KEY(?: BLOCK)?-----|.*)",
    )
    b.rule(
        "aws-secret-access-key",
        r"(?<![\w$.-])(?i:(?:aws[_-]?)?secret[_-]?access[_-]?key)(?:\\?[\"'])?"
        r"(?:[ \t]*[:=][ \t]*|[ \t]+)(?:\\?[\"'])?"
        + b.value("aws-secret-access-key", r"[A-Za-z0-9/+]{40}")
        + r"(?![A-Za-z0-9/+=])",
    )
    user = "basic_auth_url__u"
    b.rule(
        "basic-auth-url",
        rf"(?<![A-Za-z0-9+.-]){_SCHEME}(?P<{user}>[^\s/?#@:\"'<>\[\]]{{1,128}}):"
        rf"(?!(?P={user})@)(?![$%{{<\[*])"
        rf"(?!(?:{_PLACEHOLDER}|{_KEYWORD_IDENT}|(?i:foo|bar|baz|pass))@)"
        rf"(?![^\s/?#@]*?{_MASK})(?!{_TOKENS})"
        + b.value("basic-auth-url", r"[^\s/?#@\"'<>]{4,}")
        + r"@(?=[A-Za-z0-9\[])",
    )
    for name, body in _TOKEN_RULES:
        b.rule(name, body)
    opaque = rf"(?!{_TOKENS})(?={_OPAQUE}*[0-9])"
    b.rule(
        "auth-header",
        r"(?<![A-Za-z0-9_-])(?i:authorization)(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?(?:"
        r"(?i:basic)[ \t]+(?=[A-Za-z0-9+/]*[A-Z0-9])"
        + b.value(
            "auth-header",
            r"(?:[A-Za-z0-9+/]{4}){2,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?",
        )
        + r"(?![A-Za-z0-9+/=])"
        + rf"|(?i:token)[ \t]+{opaque}"
        + b.value("auth-header", rf"{_OPAQUE}{{16,}}=*")
        + rf")|(?<![A-Za-z0-9_-])(?i:bearer)[ \t]+{opaque}"
        + b.value("auth-header", rf"{_OPAQUE}{{16,}}=*"),
    )
    b.rule(
        "dotenv-line",
        rf"(?<![\w$.-])(?=[A-Z_])(?=[A-Z0-9_]{{0,80}}?{_ENV_WORDS})[A-Z0-9_]{{1,80}}+"
        rf"{_ENV_NOT_META}=(?![=~])" + b.assigned_value("dotenv-line"),
    )
    flag = "password_assignment__flag"
    b.rule(
        "password-assignment",
        rf"(?<![\w$.-])(?P<{flag}>--)?[A-Za-z0-9_.-]{{1,64}}+{_KEY_END}(?:"
        rf"(?:\\?[\"'])?(?:{_ANNOTATION})?[ \t]*=(?![=>~])[ \t]*"
        rf"|(?:\\?[\"'])?[ \t]*:(?![:=])[ \t]*{_LOOSE}"
        rf"|(?({flag})[ \t]+{_LOOSE}|(?!)))" + b.assigned_value("password-assignment"),
    )
    pattern = re.compile("|".join(b.parts))
    return pattern, tuple(b.rules), b.value_groups


_PATTERN, RULE_NAMES, _VALUE_GROUPS = _build()
_RULE_OF_GROUP = {_gid(rule): rule for rule in RULE_NAMES}
_MAX_ROUNDS = 64


def _rule_of(match: re.Match[str]) -> str:
    """The rule whose group produced `match`."""
    group = match.lastgroup
    assert group is not None
    return _RULE_OF_GROUP[group]


def find_secret(text: str) -> str | None:
    """The name of the first rule that matches `text`, or None."""
    match = _PATTERN.search(text)
    return None if match is None else _rule_of(match)


def redact_text(text: str) -> tuple[str, tuple[str, ...]]:
    """`text` with every match replaced by [REDACTED:<rule>], and the rule names applied."""
    applied: list[str] = []

    def replace(match: re.Match[str]) -> str:
        rule = _rule_of(match)
        if rule not in applied:
            applied.append(rule)
        token = f"[REDACTED:{rule}]"
        for group in _VALUE_GROUPS[rule]:
            start, end = match.span(group)
            if start >= 0:
                whole = match.group(0)
                offset = match.start()
                return whole[: start - offset] + token + whole[end - offset :]
        return token

    # A replacement can expose a neighbour that a lookbehind/lookahead hid (`AKIA...ghp_...`),
    # so repeat until nothing matches; each round only shrinks the unredacted text.
    for _ in range(_MAX_ROUNDS):
        redacted = _PATTERN.sub(replace, text)
        if redacted == text:
            break
        text = redacted
    return text, tuple(applied)
