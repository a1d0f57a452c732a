"""The secret guard, text level: find secret-like material in a string, or redact it.

Every string field of every event written passes through here. One combined regex (one
named group per rule) of the rules whose words a text holds is compiled on first use (each
set once per process); text holding no rule's word needs none. The leftmost match decides
the rule. Rules, in
the order they are tried at one position:

- ``private-key-block``: ``-----BEGIN ... PRIVATE KEY-----`` (RSA, EC, DSA, OPENSSH, PGP,
  ENCRYPTED, PKCS#8) followed by key material, through its END line, or to the end of the
  text when there is none. A header alone (code or docs naming it), certificates and public
  keys pass.
- ``aws-secret-access-key``: 40 base64 characters after an ``aws_secret_access_key`` /
  ``SecretAccessKey`` key (``=``, ``:`` or a space, as in ``aws configure set``).
- ``basic-auth-url``: the password of ``scheme://user:password@host`` (to the last ``@`` before the host: a
  password typed with an ``@`` in it goes whole).
- ``signed-url``: the value of a pre-signed URL's ``sig=`` (Azure SAS), ``X-Amz-Signature=``,
  ``X-Amz-Security-Token=`` (also as a header), ``X-Goog-Signature=`` or ``Signature=`` (CloudFront) after
  ``?`` or ``&``: 16 or more URL characters, a digit among them.
- ``aws-access-key-id``: ``AKIA``/``ASIA`` + 16 upper-case letters or digits.
- ``github-token``: ``ghp_ gho_ ghu_ ghs_ ghr_`` + 36 or more, ``github_pat_`` + 22 or more.
- ``gitlab-token``: ``glpat- gldt- glrt- glptt- glcbt- glsoat- glffct-`` + 20 or more.
- ``slack-webhook``: ``hooks.slack.com/services|workflows|triggers/`` + 20 or more.
- ``slack-token``: ``xoxb- xoxp- xoxa- xoxo- xoxs- xoxr- xoxe(.xoxp)- xapp-`` + digits + more.
- ``anthropic-key``: ``sk-ant-`` + 20 or more.
- ``openai-key``: ``sk-proj- sk-svcacct- sk-admin- sk-None-`` + 20 or more, or ``sk-`` + 32 or more
  letters and digits in one run (so ``sk-learn`` passes).
- ``stripe-key``: ``sk_live_ sk_test_ rk_live_ rk_test_`` + 16 or more, ``whsec_`` + 24 or
  more (publishable ``pk_`` keys are public and pass).
- ``google-api-key``: ``AIza`` + 35.
- ``npm-token``: ``npm_`` + 36.
- ``pypi-token``: ``pypi-AgEIcHlwaS5vcmc`` (the pypi.org macaroon header) + 50 or more.
- ``huggingface-token``: ``hf_`` + 34 or more letters and digits, one upper-case at least.
- ``jwt``: ``eyJ<header>.eyJ<payload>.<signature>``.
- ``ai-api-key``: OpenRouter ``sk-or-v1-`` + 32 or more hex, Groq ``gsk_``, xAI ``xai-``,
  Perplexity ``pplx-``, Replicate ``r8_``, Tavily ``tvly-``, LangSmith ``lsv2_pt_``/``lsv2_sk_``,
  Pinecone ``pcsk_``, Firecrawl ``fc-``, E2B ``e2b_``, Amazon Bedrock ``ABSK``, each with the
  length of its service's keys.
- ``cloud-token``: DigitalOcean ``dop_v1_ doo_v1_ dor_v1_``, HashiCorp Vault ``hvs. hvb. hvr.``
  (90 or more), Doppler ``dp.pt. dp.st.`` ..., Supabase ``sbp_ sb_secret_``, PlanetScale
  ``pscale_tkn_ pscale_pw_ pscale_oauth_``, Heroku ``HRKU-``, Fly.io ``fo1_ fm1a_ fm1r_ fm2_``,
  Pulumi ``pul-``, Databricks ``dapi``, Docker Hub ``dckr_pat_ dckr_oat_``, Sentry ``sntryu_
  sntrys_``, Grafana ``glsa_ glc_``, New Relic ``NRAK- NRII-``, Netlify ``nfp_``, Prefect ``pnu_``,
  Dynatrace ``dt0c01.``, OpenShift ``sha256~``, and Azure AD client secrets (``...8Q~...``:
  the four characters before ``Q~`` stay).
- ``saas-token``: Linear ``lin_api_ lin_oauth_``, Notion ``ntn_`` and ``secret_`` + 43 (a digit
  among them), Shopify ``shpat_ shpca_ shppa_ shpss_``, Square ``sq0atp- sq0csp-``, Postman
  ``PMAK-``, SendGrid ``SG.<22>.<43>``, Atlassian ``ATATT3 ATCTT3``, Bitbucket ``ATBB``, Google
  OAuth ``GOCSPX-`` and ``ya29.``, RubyGems ``rubygems_``.
- ``age-secret-key``: ``AGE-SECRET-KEY-1`` + 58 Bech32 characters.
- ``discord-webhook``: ``discord.com/api/webhooks/<id>/<token>`` (``discordapp.com``, ``ptb.``, ``canary.``; the
  host in any case).
- ``telegram-bot-token``: ``<bot id>:AA`` + 33 (as in ``api.telegram.org/bot<token>/``).
- ``auth-header``: ``Authorization: Basic <base64>``, ``Authorization: token <opaque>`` and
  ``Bearer <opaque>``; an opaque value needs 16 or more characters, a digit among them; and a key
  named ``auth`` (``_auth=`` in ``.npmrc``) holding 16 or more base64 characters, padded or with two
  digits (``"auth": "<user:password in base64>"`` in Docker's ``config.json``; ``ServicePrincipal`` stays).
- ``cookie-header``: the values of a ``Cookie:`` or ``Set-Cookie:`` header, from its first cookie's
  value to the end of the line (or a quote), when one value is a run of 16 or more characters with a
  digit (a date, ``Max-Age=31536000`` or ``_ga=GA1.1.123`` is none).
- ``user-flag``: the password of ``-u user:password`` (or glued, ``-uuser:password``), ``--user
  user:password`` and curl's proxy credentials (``-U``, ``--proxy-user``) in a text that names curl or
  wget (docker's and kubectl's ``-u user:group`` in a text that names neither is none); the password
  needs a digit or 16 characters, and a ``$VAR``, ``%VAR%``, ``{{ tpl }}`` or ``<placeholder>`` is
  left alone; curl's ``-b name=value`` / ``--cookie name=value`` (a cookie given inline, not a cookie
  file), read as ``cookie-header`` reads a header's values; and curl's ``--oauth2-bearer <token>``.
- ``password-flag``: a password given as a flag of the command that takes it: ``sshpass -p``, ``docker
  login -p`` (podman, nerdctl, ``helm registry login``; glued too), MySQL's and MariaDB's glued
  ``-p<password>`` (``-p`` then a space prompts: the next word is a database) and ``redis-cli -a`` /
  ``--pass``, with only that command's options before the flag (never another command's ``-p``: a port
  mapping, a path); a digit or 16 characters, never a variable, a mask, a path or a port mapping.
- ``dotenv-line``: ``NAME=value`` (no space before ``=``, as in a ``.env`` file or a shell
  ``export``) where the upper-case NAME contains SECRET, TOKEN, PASSWORD, PASSWD, API_KEY,
  APIKEY, PRIVATE_KEY, ACCESS_KEY or CREDENTIAL and does not end in a word that makes it
  metadata (``_FILE _PATH _URL _TTL _TIMEOUT _MAX _COUNT _NAME _ID`` ...).
- ``password-assignment``: ``key = value``, ``key: value``, ``--key=value`` or
  ``--key value`` where the key (any case; snake, kebab, camel or dotted) ends in password,
  passwd, passphrase, secret, token, credential(s), api/access/secret/private/account/
  master/client + key, or is the lower-case word pwd (``PWD`` is the shell's working
  directory). Quoted or not: JSON, YAML, Python (type annotations included), query strings,
  escaped JSON (``{\\"password\\": \\"...\\"}``).
  In a structured value (a note, a hook's tool input) each entry with a string value is also
  read as ``key: value``, so ``{"db": {"password": "<a password>"}}`` is caught (its value
  redacted whole) although neither the key nor the value alone is a secret; read unquoted, the
  value needs a digit or 16 characters, so a ``credentials`` key set to ``same-origin``, a type name, a
  label or a reference such as ``settings.API_KEY`` stays.

The assignment rules (and the value parts of ``basic-auth-url`` and ``auth-header``) never
flag a placeholder or a reference: a value under 6 characters (4 in a URL), ``$VAR``,
``${VAR}``, ``$(cmd)``, ``%VAR%``, ``<your-key>``, ``{{ tpl }}``, ``[REDACTED:...]``, values
starting with ``* ! / ~ . - @`` (masks, YAML tags, paths, flags), values containing ``xxx``,
``***`` or ``...``, words such as null, true, changeme, redacted, placeholder, example,
required, string, bearer, ``your-...``; identifiers that name a secret
(``password=password``, ``token=access_token``), dotted names (``settings.API_KEY``), calls
and subscripts (``get_token()``, ``os.environ[...]``), numbers, colours, URLs, and quoted
values holding whitespace (prose, not a credential). An unquoted value after ``:``, after
``=`` and a space, or after a flag and a space (``token: ...``, ``token = ...``,
``--password ...``) also needs a digit or 16 characters, so ``token: expired`` and
``token = Operator`` stay prose; ``password=...`` with nothing between is taken as written.
A value that a token rule recognises is reported under that rule (``GITHUB_TOKEN=ghp_...``
is a github-token).

Deliberately not caught (each would flag ordinary text): secrets in prose without ``=`` or
``:`` ("the password is ..."), unquoted values with no digit and under 16 characters
after ``:``, ``= `` or a flag (``password: supersecret``), passphrases with spaces, all-digit values, unquoted values
past a ``, ; & ) ] }`` or backslash (the rest stays), quoted values holding a quote or a
backslash, ``-pSECRET`` short flags, bare 40-character strings with no AWS key name
(git SHAs look the same), keys of 65 characters or more, and a token of fixed length
(``AKIA...``, ``AIza...``, ``NRAK-...``) with a letter or digit glued to its end (its rule
needs a boundary there, or it would take one from a longer word).

Redaction replaces the whole match, except for the rules with a key or a URL around the
value, where only the value goes: ``password=[REDACTED:password-assignment]``. A token rule
(``aws-access-key-id`` to ``age-secret-key``) matches after ``-``, ``_`` and anything else
but an ASCII letter or digit (``team-xoxb-...``, ``KEY_sk-ant-...``; the AWS key id's rule
after a lower-case letter too, Azure's ``Q~`` after its own four characters), and its
redaction takes what is glued to the token's end (letters, digits, ``_``, ``-``, and parts
after a ``.`` up to one of 8 characters or more, not a file's extension): a second token
written with nothing between leaves nothing of its body.
"""

from __future__ import annotations

import re

from events import lazyre

TYPE_CHECKING = False
if TYPE_CHECKING:  # on the hook path: `typing` costs its start a few ms
    from collections.abc import Iterator
    from typing import Any


__all__ = ["RULE_NAMES", "UNSCANNED", "cut", "find_secret", "redact_text", "redact_tree", "strings_in", "unsplit"]

# Each rule is written as (first character, rest): the first character stays outside the
# rule's group, so the regex engine skips a rule with one character test wherever its first
# character cannot start it (a rule that opens with a lookbehind is tried in full at every
# position, several times slower). Word-boundary lookbehinds are therefore written one
# character wider: `(?<![A-Za-z0-9]g)` after the `g` of `ghp_`. A token's shape may start after
# anything but an ASCII letter or digit: `team-xoxb-...` and `KEY_sk-ant-...` hold a token too.

# One character of an unquoted value: whitespace, quotes, backquote, separators, brackets
# and backslash end it (escaped JSON: `...=hunter22\n` stops before the `\`).
_UNQ = r"[^\s\"'`,;&<>()\[\]{}\\]"
# One character of a quoted value: a value holding whitespace is prose, not a credential.
_QCH = r"[^\s\"'\\]"
# Whole values of 6+ characters that are placeholders, not secrets (case-insensitive):
# shorter words (none, null, true, test, ...) already fall under the length floor; also
# token types, the database images' documented defaults, and colours (`Token: "#cccccc"`).
_PLACEHOLDER = (
    r"(?i:undefined|change[_-]?(?:me|it|this)|redacted|placeholder|example|sample|hidden"
    r"|masked|omitted|removed|required|optional|default|missing|invalid|expired|revoked"
    r"|unknown|string|secretstr|bearer|postgres|mysql|mariadb"
    r"|(?:your|insert|enter|put)[_-][A-Za-z0-9_-]*|#[0-9a-f]{3,8})"
)
# An identifier that names a secret: `password`, `access_token`, `API_KEY`, `dbPassword`.
_KEYWORD_IDENT = (
    r"[A-Za-z_-]{0,64}(?:(?i:pass|pwd|secret|token|cred|auth)|[_-][Kk][Ee][Yy]|K[Ee][Yy])"
    r"[A-Za-z_-]{0,64}+"
)
_MASK = r"(?:[xX]{3}|\*{3}|\.{3}|\u2022|\u2026)"
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]{0,64}(?:\.[A-Za-z_][A-Za-z0-9_]{0,64}){1,16}"
_SCHEME_REST = r"[A-Za-z0-9+.-]{0,30}://"
_OPAQUE = r"[A-Za-z0-9._~+/-]"
_HAS_DIGIT = rf"(?={_OPAQUE}*[0-9])"


def _lookbehinds(words: tuple[str, ...], sign: str) -> list[str]:
    """Lookbehinds (`sign` is `=` or `!`) for `words`, one per length: each is fixed-width."""
    by_width: dict[int, list[str]] = {}
    for word in words:
        by_width.setdefault(len(word), []).append(word)
    return [f"(?<{sign}{'|'.join(group)})" for group in by_width.values()]


# Rules that recognise a token by its own shape: (name, first character, rest).
_TOKEN_RULES: tuple[tuple[str, str, str], ...] = (
    ("aws-access-key-id", "A", r"(?<![A-Z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    (
        "github-token",
        "g",
        r"(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})",
    ),
    (
        "gitlab-token",
        "g",
        r"(?<![A-Za-z0-9]g)l(?:pat|dt|rt|ptt|cbt|soat|ffct)-[A-Za-z0-9_-]{20,}",
    ),
    (
        "slack-webhook",
        "h",
        r"(?:ttps?://h)?(?<![A-Za-z0-9.-]h)ooks\.slack\.com/(?:services|workflows|triggers)/"
        r"[A-Za-z0-9_/-]{20,}",
    ),
    (
        "slack-token",
        "x",
        r"(?<![A-Za-z0-9]x)(?:ox[abposre](?:\.xox[a-z])?|app)-[0-9]+-[A-Za-z0-9-]{8,}",
    ),
    ("anthropic-key", "s", r"(?<![A-Za-z0-9]s)k-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai-key",
        "s",
        r"(?<![A-Za-z0-9]s)k-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})",
    ),
    (
        "stripe-key",
        "[srw]",
        r"(?<![A-Za-z0-9].)(?:(?<=[sr])k_(?:live|test)_[A-Za-z0-9]{16,}"
        r"|(?<=w)hsec_[A-Za-z0-9]{24,})",
    ),
    ("google-api-key", "A", r"(?<![A-Za-z0-9]A)Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ("npm-token", "n", r"(?<![A-Za-z0-9]n)pm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("pypi-token", "p", r"(?<![A-Za-z0-9]p)ypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("huggingface-token", "h", r"(?<![A-Za-z0-9]h)f_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{34,}"),
    # a JWT starts a run of token characters or follows its `-` or `_` (`team-eyJ...`). Its first part runs to the
    # run's `.`, so every start in one run has the same outcome but the first (the longest part): only the run's
    # start and its first `-eyJ`/`_eyJ` are tried, once per run. Tried from each `-eyJ` of a long run, each scanned
    # to the run's end (a megabyte of them: minutes).
    ("jwt", "", r"(?<![A-Za-z0-9_-])(?:(?:(?![-_]eyJ)[A-Za-z0-9_-])*+[-_])??"
                r"(?P<jwt__v>eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*)"),
    # AI model and agent-tool APIs: OpenRouter, Groq, xAI, Perplexity, Replicate, Tavily, LangSmith, Pinecone,
    # Firecrawl, E2B, Amazon Bedrock (long-lived).
    (
        "ai-api-key",
        "[sgxprtlfeA]",
        r"(?<![A-Za-z0-9].)(?:(?<=s)k-or-v[0-9]+-[A-Fa-f0-9]{32,}|(?<=g)sk_[A-Za-z0-9]{32,}"
        r"|(?<=x)ai-[A-Za-z0-9]{60,}|(?<=p)(?:plx-[A-Za-z0-9]{40,}|csk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,})"
        r"|(?<=r)8_[A-Za-z0-9]{32,}|(?<=t)vly-(?:dev-|prod-)?[A-Za-z0-9]{32,}"
        r"|(?<=l)sv2_(?:pt|sk)_[A-Fa-f0-9]{32}_[A-Fa-f0-9]{10}|(?<=f)c-[a-f0-9]{32}|(?<=e)2b_[a-f0-9]{40}"
        r"|(?<=A)(?<![+/=]A)BSK[A-Za-z0-9+/]{100,}={0,2})(?![A-Za-z0-9])"
    ),
    # Hosting, infrastructure and observability: DigitalOcean, HashiCorp Vault, Doppler, Supabase, PlanetScale,
    # Heroku, Fly.io, Pulumi, Databricks, Docker Hub, Sentry, Grafana, New Relic, Netlify, Prefect, Dynatrace,
    # OpenShift, Azure AD client secrets.
    (
        "cloud-token",
        "[dhspHfgNnQ]",
        r"(?<![A-Za-z0-9].)(?:(?<=d)(?:o[opr]_v1_[A-Fa-f0-9]{64}|p\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9._-]{40,}"
        r"|api[a-f0-9]{32}(?:-[0-9])?|ckr_(?:pat|oat)_[A-Za-z0-9_-]{24,}|t0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})"
        r"|(?<=h)v[sbr]\.[A-Za-z0-9_-]{90,}"
        r"|(?<=s)(?:bp_[A-Fa-f0-9]{40}|b_secret_[A-Za-z0-9_-]{24,}|ntry(?:u_[A-Fa-f0-9]{64}|s_eyJ[A-Za-z0-9+/=_]{40,})"
        r"|ha256~[A-Za-z0-9_-]{43})"
        r"|(?<=p)(?:scale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,}|ul-[A-Fa-f0-9]{40}|nu_[A-Za-z0-9]{36})"
        r"|(?<=H)RKU-[A-Za-z0-9_-]{58,}|(?<=f)(?:o1_[A-Za-z0-9_-]{43}|m(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})"
        r"|(?<=g)(?:lsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|lc_[A-Za-z0-9+/]{32,}={0,3})"
        r"|(?<=N)R(?:AK-[A-Z0-9]{27}|II-[A-Za-z0-9_-]{32})|(?<=n)fp_[A-Za-z0-9]{36})(?![A-Za-z0-9])"
        # an Azure AD client secret has no prefix of its own: three characters and a digit before its `Q~`
        r"|(?<=[A-Za-z0-9_~.]{3}[0-9]Q)(?<![A-Za-z0-9_~.-][A-Za-z0-9_~.]{3}[0-9]Q)~[A-Za-z0-9_~.-]{31,34}"
        r"(?![A-Za-z0-9_~.-])"
    ),
    # Other services' API tokens: Linear, Notion, Shopify, Postman, SendGrid, Atlassian, Bitbucket, Google OAuth,
    # Square, RubyGems.
    (
        "saas-token",
        "[lnsPSAGyr]",
        r"(?<![A-Za-z0-9].)(?:(?<=l)in_(?:api|oauth)_[A-Za-z0-9]{40,}|(?<=n)tn_[A-Za-z0-9]{40,}"
        r"|(?<=s)(?:ecret_(?=[A-Za-z]*[0-9])[A-Za-z0-9]{43}|hp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}|q0(?:atp|csp)-[A-Za-z0-9_-]{22,})"
        r"|(?<=P)MAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}|(?<=S)G\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"
        r"|(?<=A)T(?:(?:ATT|CTT)3[A-Za-z0-9_=-]{150,}|BB[A-Za-z0-9]{32})"
        r"|(?<=G)OCSPX-[A-Za-z0-9_-]{24,}|(?<=y)a29\.[A-Za-z0-9_-]{30,}|(?<=r)ubygems_[a-f0-9]{48})"
        r"(?![A-Za-z0-9])"
    ),
    ("age-secret-key", "A", r"(?<![A-Za-z0-9]A)GE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # the URL is the credential: anyone holding it posts as the webhook
    (
        "discord-webhook",
        "[hHdD]",
        # a host name and a scheme are read in any case (`HTTPS://Discord.com`), as clients read them
        r"(?:(?<=[hH])(?<![A-Za-z0-9][hH])(?i:ttps?://(?:(?:ptb|canary)\.)?d)|(?<=[dD])(?<![A-Za-z0-9][dD]))"
        r"(?i:iscord(?:app)?\.com/api/(?:v[0-9]{1,2}/)?webhooks/)[0-9]{17,20}/[A-Za-z0-9_-]{60,}",
    ),
)

_PRIVATE_KEY_BLOCK = (
    r"----BEGIN[ A-Z0-9]{0,40}? PRIVATE KEY(?: BLOCK)?-----"
    # key material (or a PEM/PGP header line) must follow: a header alone is just a mention
    r"(?=(?:\s|\\[rn])*(?:[A-Za-z0-9+/]{16}|[A-Z][A-Za-z-]{1,30}: ))"
    r"(?s:.*?-----END[ A-Z0-9]{0,40}? PRIVATE KEY(?: BLOCK)?-----|.*)"
)
_AWS_SECRET_ACCESS_KEY = (
    r"(?<![\w$.-].)(?i:(?<=a)ws[_-]?s|(?<=s))(?i:ecret[_-]?access[_-]?key)(?:\\?[\"'])?"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+)(?:\\?[\"'])?"
    r"(?P<aws_secret_access_key__v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_BASIC_AUTH_URL = (
    rf"(?<![A-Za-z0-9+.-].){_SCHEME_REST}(?P<basic_auth_url__u>[^\s/?#@:\"'<>\[\]]{{0,128}}):"
    r"(?!(?P=basic_auth_url__u)@)(?![$%{<\[*])"
    r"(?!(?i:pass(?:wo?r?d)?|pwd|secret|token|changeme|redacted|example|foo|bar|baz|test)@)"
    rf"(?![^\s/?#@]{{0,64}}?{_MASK})"
    # to the authority's last `@`: a password typed with an `@` in it (`p@ss`) goes whole, as URL parsers read it
    r"(?P<basic_auth_url__v>[^\s/?#\"'<>]{4,})@(?=[A-Za-z0-9\[])"
)
# signed-url: the signature (or session token) that makes a pre-signed URL a credential on its own: Azure SAS `sig=`,
# S3 `X-Amz-Signature=` / `X-Amz-Security-Token=` (also as a header), Google Cloud Storage `X-Goog-Signature=`,
# CloudFront's `Signature=`; after `?` or `&` (`&amp;` too), with a digit in it (a word or a `${VAR}` stays).
_SIGNED_URL = (
    r"(?:(?<=[?&])(?:amp;)?(?i:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature)="
    r"|(?<=[Xx])(?<![A-Za-z0-9_-].)(?i:-amz-security-token)(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?)"
    r"(?=[A-Za-z0-9%+/=_.~-]*?[0-9])(?P<signed_url__v>[A-Za-z0-9%+/=_.~-]{16,})"
)
# user-flag: curl's and wget's `-u user:password` / `--user user:password` (the first `-` is the rule's first char),
# looked for only in a text that names curl or wget (_FLAG_WORDS): docker's `-u user:group` alone is none.
_USER_FLAG = (
    # `-u user:pw`, `--user`, curl's proxy credentials (`-U`, `--proxy-user`), and `-uuser:pw` written glued
    r"(?<![\w-].)(?:(?:[uU]|-user|-proxy-user)(?:[ \t]+|=|(?<=[uU])(?=[A-Za-z0-9_]))(?P<user_flag__q>[\"']?)"
    r"[^\s:\"'$%{<]{1,64}:"
    r"(?![$%{<\[*])"
    rf"(?![^\s\"']{{0,64}}?{_MASK})"
    r"(?=[^\s\"']{0,15}[0-9]|[^\s\"']{16})"
    r"(?P<user_flag__v>[^\s\"']{6,})"
    # curl's `-b name=value` / `--cookie name=value` (a cookie given inline, not a file name: it holds `=`), read as a
    # Cookie header's values are (cookie-header)
    r"|(?:b|-cookie)(?:[ \t]+|=)(?:(?P<user_flag__cq>[\"'])|)[^\s\"'\\=;$%{<]{1,64}="
    # quoted, the cookies may be spaced (`'a=1; sid=...'`); unquoted, the value ends at a space, and so does the
    # search for its long run with a digit (a later word of the line is no cookie: `id_ed25519` in the next command)
    r"(?(user_flag__cq)(?=(?>[^\s\"'\\;,=]*[ \t;,=]+){0,24}?(?=[^\s\"'\\;,=]{16})[^\s\"'\\;,=]{0,200}?[0-9])"
    r"|(?=(?>[^\s\"'\\;,=]*[;,=]+){0,24}?(?=[^\s\"'\\;,=]{16})[^\s\"'\\;,=]{0,200}?[0-9]))"
    r"(?P<user_flag__c>(?(user_flag__cq)[^\r\n\"'\\]|[^\s\"'\\]){16,})"
    # curl's `--oauth2-bearer <token>`
    rf"|-oauth2-bearer(?:[ \t]+|=)[\"']?{_HAS_DIGIT}(?P<user_flag__o>{_OPAQUE}{{16,}}=*))"
)


def _flag_value(group: str) -> str:
    """A password given as a flag's value (quoted or not; glued to the flag or not, as the flag takes it): a digit in
    its first 16 characters or 16 of them; never a `$VAR`, `%VAR%`, `{{ tpl }}`, `<placeholder>` or a mask, nor a
    path (`/`, `~`, `.`: an option file) or a port mapping (`3306:3306`, `127.0.0.1:80:80`)."""
    return (rf"(?P<{group}__q>[\"']?)(?![$%{{<\[*/~.=-])(?![^\s\"']{{0,64}}?{_MASK})"
            r"(?![0-9.]*:[0-9.:]*(?:/[a-z]+)?(?![A-Za-z0-9_]))"
            rf"(?=[^\s\"']{{0,15}}[0-9]|[^\s\"']{{16}})(?P<{group}>[^\s\"']{{6,}})")


# password-flag: a password on the command line of a tool that takes it as a flag: `sshpass -p <pw>`, `docker login`
# (podman, nerdctl, `helm registry login`) `-p <pw>` (or glued), MySQL's and MariaDB's `-p<pw>` written glued (`-p`
# alone, or `-p` then a space, prompts: the word after it is a database) and `redis-cli -a <pw>` / `--pass <pw>`. Only
# the command's own options come before the flag: each an option word (`-u`, `--host=h`, `-e'select 1'`) with at
# most one value word after it (`-u root`, `-e 'CREATE DATABASE app'`: quoted, spaces and line breaks and all, up to
# 2,000 characters), up to 8 of them (a login's registry, a client's database, one word before them); sshpass's own
# options only (`-e`, `-v` take no value: `sshpass -e scp -p file` is scp's -p); redis-cli's arguments any words
# (`--cluster create h1:7000`). Never past `,` `;` `|` `&` or a line's end outside quotes (`docker run --name mysql
# -p3306:3306`, `sshpass -e ssh h mkdir -p`).
_QUOTED = r"""(?:'[^']{0,2000}'|"[^"]{0,2000}")"""  # SQL given to `mysql -e` spans lines
_PART = rf"""(?:[^\s|;&<>(),'"]|{_QUOTED})"""
_VALUE_WORD = rf"""(?:[^\s|;&<>(),'"-]|{_QUOTED}){_PART}*"""
_OPTIONS = rf"(?:[ \t]+-{_PART}*(?:[ \t]+{_VALUE_WORD})?){{0,8}}?"
_ONE_WORD = rf"(?:[ \t]+{_VALUE_WORD})?"
_SSHPASS_OPTIONS = rf"(?:[ \t]+(?:-[ehvV]{_PART}*|-[fdP](?:{_PART}+|[ \t]+{_VALUE_WORD}))){{0,4}}?"
_ANY_WORDS = rf"(?:[ \t]+{_PART}+){{0,12}}?"
_PASSWORD_FLAG = (
    rf"(?<![\w.-])(?:sshpass{_SSHPASS_OPTIONS}[ \t]+-p[ \t]*{_flag_value('password_flag__v1')}"
    rf"|(?:(?:docker|podman|nerdctl){_OPTIONS}|helm[ \t]+registry)[ \t]+login{_ONE_WORD}{_OPTIONS}"
    rf"[ \t]+(?:-p|--password)(?:[ \t]+|=|){_flag_value('password_flag__v2')}"
    rf"|(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump){_ONE_WORD}{_OPTIONS}[ \t]+-p"
    rf"{_flag_value('password_flag__v3')}"
    rf"|redis-cli{_ANY_WORDS}[ \t]+(?:-a|--pass)[ \t]+{_flag_value('password_flag__v4')})"
)
# A base64 value's padded end (`...xx==`, `...xxx=`), and such a value of `n` or more groups of four with its end.
_B64_END = r"(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)"


def _base64(groups: int) -> str:
    return rf"(?:[A-Za-z0-9+/]{{4}}){{{groups},}}{_B64_END}?(?![A-Za-z0-9+/=])"


_AUTH_HEADER = (
    # `Proxy-Authorization` and `X-Authorization` carry the same credentials: only that name may follow a `-`
    r"(?:(?<![A-Za-z0-9_].)(?<=[Aa])(?i:uthorization)(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?(?:"
    rf"(?i:basic)[ \t]+(?=[A-Za-z0-9+/]*[A-Z0-9])(?P<auth_header__v1>{_base64(2)})"
    rf"|(?i:token)[ \t]+{_HAS_DIGIT}(?P<auth_header__v2>{_OPAQUE}{{16,}}=*))"
    rf"|(?<![A-Za-z0-9_-].)(?<=[Bb])(?i:earer)[ \t]+{_HAS_DIGIT}(?P<auth_header__v3>{_OPAQUE}{{16,}}=*)"
    # a key named `auth` (npm's `_auth`) holding base64 (`user:password`, as Docker's config.json and .npmrc keep it):
    # padded, or with two digits (an identifier such as `ServicePrincipal` or `oauth2ProviderGoogle` is none)
    r"|(?<![A-Za-z0-9_-].)(?:(?<=_)(?i:auth)|(?<=[Aa])(?i:uth))(?:\\?[\"'])?[:=][ \t]*(?:\\?[\"'])?"
    rf"(?=(?:[A-Za-z0-9+/]{{4}}){{4,}}{_B64_END}|(?:[A-Za-z+/]*[0-9]){{2}})(?P<auth_header__v4>{_base64(4)}))"
)
# cookie-header: a `Cookie:` or `Set-Cookie:` header's values, from its first cookie's (a session cookie signs its
# holder in), when one of them is a run of 16 or more characters with a digit: `Cookie: theme=dark`, an
# `Expires=` date, `Max-Age=31536000`, `_ga=GA1.1.123` and prose about the header stay.
_COOKIE_HEADER = (
    r"(?<![A-Za-z0-9_-].)(?:(?<=[Ss])(?i:et-c)|(?<=[Cc]))(?i:ookie)(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?"
    r"[^\s\"'\\=;]{1,64}="
    # run by run (each at most once: the classes are disjoint), up to 24 runs on the header's line; each run and the
    # separators after it taken whole (atomic): split every way, a line of 40 separators took minutes
    r"(?=(?>[^\s\"'\\;,=]*[ \t;,=]+){0,24}?(?=[^\s\"'\\;,=]{16})[^\s\"'\\;,=]{0,200}?[0-9])"
    r"(?P<cookie_header__v>[^\r\n\"'\\]{16,})"
)

# dotenv-line: an upper-case name holding a secret word, unless its ending makes it metadata.
_ENV_WORDS = (
    "SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY",
    "CREDENTIAL",
)  # fmt: skip
_ENV_META = (
    "FILE", "PATH", "DIR", "TTL", "EXPIRY", "EXPIRES", "EXPIRATION", "TIMEOUT", "LENGTH", "LEN",
    "MIN", "MAX", "COUNT", "SIZE", "LIMIT", "ENABLED", "DISABLED", "HASHER", "ALGORITHM",
    "TYPE", "NAME", "ID", "URL", "URI", "ENDPOINT", "HEADER", "PREFIX", "VERSION", "REGION",
    "USER", "USERNAME", "ENV", "VAR", "ARN", "MODE", "FORMAT", "LOCATION", "HOST", "PORT",
)  # fmt: skip
# After the name's first character: a secret word later in the name, or one it starts.
_ENV_WORD_AHEAD = (
    rf"(?=[A-Z0-9_]{{0,80}}?(?:{'|'.join(_ENV_WORDS)})"
    + "".join(f"|(?<={word[0]}){word[1:]}" for word in _ENV_WORDS)
    + ")"
)
_DOTENV_KEY = (
    rf"(?<=[A-Z_]){_ENV_WORD_AHEAD}[A-Z0-9_]{{0,80}}+"
    + "".join(_lookbehinds(tuple("_" + word for word in _ENV_META), "!"))
    + r"=(?![=~])(?P<dotenv_line>)"
)

# password-assignment: a key ending in a secret word, then `=`, `:` or (flags) a space.
_KEY_WORDS = ("password", "passwd", "passphrase", "secret", "token", "credential", "credentials")
_KEY_PREFIXES = ("api", "access", "secret", "private", "account", "master", "client")
_KEY_END = (
    "(?:(?i:"
    + "|".join(
        _lookbehinds(
            _KEY_WORDS + tuple(f"{p}{s}key" for p in _KEY_PREFIXES for s in ("_", "-", "")), "="
        )
    )
    + ")|(?<=pwd)(?<![A-Za-z]pwd))"
)
# An unquoted value after `:`, after `=` and a space, or after a flag and a space needs a
# digit or 16 characters.
_LOOSE = rf"(?=\\?[\"']|{_UNQ}{{0,15}}[0-9]|{_UNQ}{{16}})"
# A Python type annotation between a key and its `=`: `password: str | None = ...`.
_ANNOTATION = (
    r"[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\n]{0,60}\])?(?:[ \t]*\|[ \t]*None)?"
)
_ASSIGN_KEY = (
    rf"(?P<assign__flag>(?<=-)-)?[A-Za-z0-9_.-]{{0,63}}+{_KEY_END}(?:"
    rf"(?:\\?[\"'])?(?:{_ANNOTATION})?[ \t]*=(?![=>~])(?:[ \t]+{_LOOSE})?"
    rf"|(?:(?:\\?[\"'])?[ \t]*:(?![:=])[ \t]*|(?(assign__flag)[ \t]+|(?!))){_LOOSE})"
)
# The value of either assignment rule, quoted (`assign__q` set) or not; placeholders refused.
_VALUE_END = rf"(?(assign__q)\\?[\"']|(?!{_UNQ}))"
_ASSIGNED_VALUE = (
    r"(?:\\?(?P<assign__q>[\"']))?"
    rf"(?!(?:{_PLACEHOLDER}|{_KEYWORD_IDENT}){_VALUE_END})"
    rf"(?![$%{{<\[*/~.]|[A-Za-z]{_SCHEME_REST})"
    rf"(?(assign__q)|(?![-!@]|(?:{_DOTTED}|[0-9]+)(?!{_UNQ})|{_UNQ}{{0,64}}+[(\[]))"
    rf"(?!(?(assign__q){_QCH}|{_UNQ}){{0,64}}?{_MASK})"
    rf"(?P<assign__v>(?(assign__q){_QCH}|{_UNQ}){{6,}})(?(assign__q)\\?(?P=assign__q))"
)

# Order matters where two rules can match at the same position (dotenv before assignment).
_RULES: tuple[tuple[str, str, str], ...] = (
    ("private-key-block", "-", _PRIVATE_KEY_BLOCK),
    ("aws-secret-access-key", "[AaSs]", _AWS_SECRET_ACCESS_KEY),
    ("basic-auth-url", "[A-Za-z]", _BASIC_AUTH_URL),
    ("signed-url", "[?&Xx]", _SIGNED_URL),
    *_TOKEN_RULES,
    # `<bot id>:AA<33>`, as in `api.telegram.org/bot<token>/sendMessage` (its digits follow `bot`: not a token rule)
    ("telegram-bot-token", "[0-9]", r"(?<![0-9]\d)[0-9]{7,11}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
    ("auth-header", "[AaBb_]", _AUTH_HEADER),
    ("cookie-header", "[CcSs]", _COOKIE_HEADER),
    ("user-flag", "-", _USER_FLAG),
    ("password-flag", "(?=[sdpnhmr])", _PASSWORD_FLAG),
    # One alternative for both assignment rules, so their value pattern is compiled once;
    # the empty `dotenv_line` group tells them apart.
    (
        "password-assignment",
        r"[A-Za-z0-9_.-]",
        rf"(?<![\w$.-].)(?:{_DOTENV_KEY}|{_ASSIGN_KEY}){_ASSIGNED_VALUE}",
    ),
)
RULE_NAMES: tuple[str, ...] = (*(rule[0] for rule in _RULES[:-1]), "dotenv-line", _RULES[-1][0])

# The words each rule needs (lower-cased) somewhere in the text: the key words of the
# assignment rules, the prefixes of the token rules, `://` of URLs. A rule whose words are all
# missing cannot match, so only the rules a text might hold are compiled and scanned for: most
# work-log lines need none (the whole pattern takes about 10 ms to compile, the assignment rule a
# third of that), a line with a URL only the URL rule. tests/unit/test_guard_corpus.py holds
# each rule to its words. `sk-` counts only where a key can start (_key_opening); the words in
# _CASED_WORDS count only as written (lower-cased, SendGrid's `sg.` is in every `msg.`).
_KEY_NAMES = tuple(f"{p}{s}key" for p in ("api", "access", "private", "account", "master", "client")
                   for s in ("_", "-", ""))  # fmt: skip
_WORDS: dict[str, tuple[str, ...]] = {
    "private-key-block": ("private key",),
    "aws-secret-access-key": ("secret",),
    "basic-auth-url": ("://",),
    "signed-url": ("sig=", "signature=", "security-token"),
    "aws-access-key-id": ("akia", "asia"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glffct-"),
    "slack-webhook": ("hooks.slack.com",),
    "slack-token": ("xox", "xapp-"),
    "anthropic-key": ("sk-",),
    "openai-key": ("sk-",),
    "stripe-key": ("k_live_", "k_test_", "whsec_"),
    "google-api-key": ("aiza",),
    "npm-token": ("npm_",),
    "pypi-token": ("pypi-",),
    "huggingface-token": ("hf_",),
    "jwt": (".eyj",),  # its second part's opening
    "ai-api-key": ("sk-", "gsk_", "xai-", "pplx-", "pcsk_", "r8_", "tvly-", "lsv2_", "fc-", "e2b_", "absk"),
    "cloud-token": (
        "dop_v1_", "doo_v1_", "dor_v1_", "dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit.", "dapi",
        "dckr_", "dt0c01.", "hvs.", "hvb.", "hvr.", "sbp_", "sb_secret_", "sntry", "sha256~", "pscale_", "pul-",
        "pnu_", "hrku-", "fo1_", "fm1a_", "fm1r_", "fm2_", "glsa_", "glc_", "nrak-", "nrii-", "nfp_", "q~",
    ),
    "saas-token": (
        "lin_api_", "lin_oauth_", "ntn_", "secret", "shpat_", "shpca_", "shppa_", "shpss_", "sq0atp-", "sq0csp-",
        "pmak-", "SG.", "atatt3", "atctt3", "atbb", "gocspx-", "ya29.", "rubygems_",
    ),
    "age-secret-key": ("secret",),
    "discord-webhook": ("discord.com/api/", "discordapp.com/api/"),
    "telegram-bot-token": (":aa",),
    "auth-header": ("authorization", "bearer", "auth:", 'auth"', "auth'", "auth\\", "auth="),
    "cookie-header": ("cookie",),
    # `-u` (any case) is in `--user`, `--proxy-user` and `-uuser:pw`; a tab after `-b` is `\t` in the encoded event
    # the write path looks at first (JSON escapes it)
    "user-flag": ("-u", "-b ", "-b\t", "-b\\t", "-b=", "--cookie", "--oauth2-bearer"),
    "password-flag": ("sshpass", "docker", "podman", "nerdctl", "helm", "mysql", "mariadb", "redis-cli"),
    "password-assignment": ("secret", "passw", "passphrase", "pwd", "token", "credential", *_KEY_NAMES),
}  # fmt: skip
_CASED_WORDS = frozenset({"SG."})
#: user-flag's words count only in a text that names curl or wget: `-u user:group` is docker's or kubectl's too.
_FLAG_WORDS = frozenset(_WORDS["user-flag"])
# word -> the indices (in _RULES) of the rules that need it
_RULES_OF_WORD: dict[str, tuple[int, ...]] = {}
for _index, (_name, _, _) in enumerate(_RULES):
    for _word in _WORDS[_name]:
        _RULES_OF_WORD[_word] = (*_RULES_OF_WORD.get(_word, ()), _index)
del _index, _name, _word
#: The characters most texts lack, rarest first: a word holding one is looked for only in a text that holds it
#: too (a text without `_` is not searched for `ghp_` and the forty other words holding one).
_RARE = "\t\\~=_:-\"'./"


_grouped: dict[str | None, list[tuple[str, tuple[int, ...]]]] = {}
for _word, _rules in _RULES_OF_WORD.items():
    _grouped.setdefault(next((char for char in _RARE if char in _word.lower()), None), []).append((_word, _rules))
#: The words grouped by their rarest character (None: letters, digits and spaces only, looked for in every text).
_WORD_GROUPS = tuple((char, tuple(_grouped[char])) for char in (None, *_RARE) if char in _grouped)
del _grouped, _word, _rules
_ALL_RULES = tuple(range(len(_RULES)))
_compiled: dict[tuple[int, ...], re.Pattern[str]] = {}
_COMPILED_KEPT = 64  # patterns of rule sets kept per process (a long-lived server meets many)


def _lowered(text: str) -> str:
    """`text` in lower case as the rules' case-insensitive parts read it: `ſ` is s, `ı` and `İ` i, K k."""
    lowered = text.lower()
    if not lowered.isascii():
        lowered = lowered.replace("\u017f", "s").replace("\u0131", "i").replace("i\u0307", "i").replace("\u212a", "k")
    return lowered


def _rules_in(text: str) -> tuple[int, ...]:
    """The indices of the rules `text` holds the words of, in rule order (the only ones that can match)."""
    lowered = _lowered(text)
    found: set[int] = set()
    for char, group in _WORD_GROUPS:
        if char is not None and char not in lowered:
            continue
        for word, rules in group:
            if (word in text if word in _CASED_WORDS else word in lowered) and (
                    word != "sk-" or _key_opening(text)) and (
                    word not in _FLAG_WORDS or "curl" in lowered or "wget" in lowered):
                found.update(rules)
    return tuple(sorted(found))


def _pattern(rules: tuple[int, ...] = _ALL_RULES) -> re.Pattern[str]:
    """The combined pattern of `rules` (every rule by default), compiled on first use."""
    pattern = _compiled.get(rules)
    if pattern is None:
        if len(_compiled) >= _COMPILED_KEPT:
            _compiled.clear()
        source = "|".join(f"{_RULES[i][1]}(?P<{_RULES[i][0].replace('-', '_')}>{_RULES[i][2]})" for i in rules)
        pattern = _compiled[rules] = re.compile(source)
    return pattern


def might_hold_secret(text: str) -> bool:
    """False when `text` holds none of the words every rule needs (so no rule can match)."""
    return bool(_rules_in(text))


def _key_opening(text: str) -> bool:
    """Whether `sk-` appears where a key rule can start: no ASCII letter or digit before it.

    The `sk-` rules look behind for exactly that (they are case-sensitive), so a task id
    such as `task-1f2e` or a word such as `desk-` never costs the pattern's compilation.
    In JSON text (the encoded event the write path checks first) a control character before `sk-` is an escape,
    whose last character is a letter or a hex digit (`\\n`, `\\t`, `\\u001b`): the text it stands for has no letter
    there.
    """
    start = text.find("sk-")
    while start >= 0:
        before = text[start - 1] if start else " "
        if (not (before.isascii() and before.isalnum()) or (start >= 2 and text[start - 2] == "\\")
                or (start >= 6 and text[start - 6:start - 4] == "\\u")):
            return True
        start = text.find("sk-", start + 1)
    return False
_RULE_OF_GROUP = {name.replace("-", "_"): name for name, _, _ in _RULES}
_VALUE_GROUPS: dict[str, tuple[str, ...]] = {
    "aws-secret-access-key": ("aws_secret_access_key__v",),
    "basic-auth-url": ("basic_auth_url__v",),
    "signed-url": ("signed_url__v",),
    "auth-header": ("auth_header__v1", "auth_header__v2", "auth_header__v3", "auth_header__v4"),
    "cookie-header": ("cookie_header__v",),
    "jwt": ("jwt__v",),
    "user-flag": ("user_flag__v", "user_flag__c", "user_flag__o"),
    "password-flag": ("password_flag__v1", "password_flag__v2", "password_flag__v3", "password_flag__v4"),
    "dotenv-line": ("assign__v",),
    "password-assignment": ("assign__v",),
}
_TOKEN_NAMES = frozenset(name for name, _, _ in _TOKEN_RULES)
_MAX_ROUNDS = 64
#: What is glued to a token's end and goes with it: another token's body, with its dotted parts (`ya29.`, `hvs.`,
#: `dp.st.prd.`, a JWT's), but not a file's extension (`notes/<token>.md` keeps `.md`, `.tar.gz` too: dotted parts
#: go only up to one of 8 characters or more).
_GLUED = lazyre.pattern(r"[A-Za-z0-9_-]*(?:(?:\.[A-Za-z0-9_-]{1,7})*\.[A-Za-z0-9_-]{8,})*")


def _rule_of(match: re.Match[str]) -> tuple[str, tuple[int, int] | None]:
    """The rule of `match` and the span of its value part (None: redact the whole match)."""
    group = match.lastgroup
    assert group is not None
    rule = _RULE_OF_GROUP[group]
    if rule == "password-assignment" and match.start("dotenv_line") >= 0:
        rule = "dotenv-line"
    for value_group in _VALUE_GROUPS.get(rule, ()):
        start, end = match.span(value_group)
        if start >= 0:
            # A value with a shape of its own is reported under that rule (GITHUB_TOKEN=ghp_), when it starts there (a
            # JWT matches from its run's start: `Z9_eyJ...` is no JWT's value); a token's own value is itself.
            inner = None if rule in _TOKEN_NAMES else match.re.match(match.string, start)
            if inner is not None and inner.lastgroup is not None:
                name = _RULE_OF_GROUP[inner.lastgroup]
                if name in _TOKEN_NAMES and _value_start(inner, name) == start:
                    rule = name
            return rule, (start, end)
    return rule, None


def _value_start(match: re.Match[str], rule: str) -> int:
    """Where the value of `match` (of `rule`) starts: its value group's start, or the match's."""
    return next((match.start(group) for group in _VALUE_GROUPS.get(rule, ()) if match.start(group) >= 0),
                match.start())


def unsplit(text: str, index: int, *, before: int = 16_384, after: int = 4_096) -> int:
    """`index`, or the start of a secret-like match that spans it: text cut there splits no secret, so the part
    before it holds a whole secret (which the guard then finds) or none of it. A text cut to a length limit, or
    read from one of its lines on, kept a token's first characters (too few for its rule) or a private key's lines
    without their header. Only `before` characters back and `after` on are read (a key block is a few kB)."""
    low = max(0, index - before)
    window = text[low : index + after]
    rules = _rules_in(window)
    if not rules:
        return index
    for match in _pattern(rules).finditer(window):
        start, end = low + match.start(), low + match.end()
        if start >= index:
            break
        if end > index:
            return start
    return index


def cut(text: str, limit: int, *, before: int = 16_384, after: int = 4_096) -> str:
    """`text` within `limit` characters, cut before a secret the cut would split (see unsplit)."""
    return text if len(text) <= limit else text[:unsplit(text, limit, before=before, after=after)]


def find_secret(text: str) -> str | None:
    """The name of the first rule that matches `text`, or None."""
    rules = _rules_in(text)
    if not rules:
        return None
    match = _pattern(rules).search(text)
    return None if match is None else _rule_of(match)[0]


def refuse_secret_id(field: str, value: str) -> None:
    """SecretRefused (exit 4) when an id or a name looks like a secret: it is shown back and carried by events as
    it is, and an id cannot be redacted."""
    rule = find_secret(value)
    if rule is not None:
        from events.errors import SecretRefused

        raise SecretRefused(field, rule, redactable=False)


def _glued_end(pattern: re.Pattern[str], text: str, end: int, limit: int) -> int:
    """Where the redaction of a token ending at `end` ends. A token's rule stops where its alphabet does (`ghp_` at
    `-`, `xoxb-` at `_`), so a second token glued on would leave its body (`ghp_...xoxb-1-SECRET` kept
    `-1-SECRET`): what is glued on goes too, up to a token of its own there (the next round finds it after this
    marker: `AKIA...ghp_...` stays two), and never past `limit`, the next match (so a run of many tokens glued one
    to the next is read once; read to the run's end for each token, it was quadratic)."""
    tail = _GLUED().match(text, end, limit)  # always matches (it may be empty)
    glued = end if tail is None else tail.end()
    if glued == end:
        return end
    inner = pattern.search(" " + text[end:glued])  # a space: a token at `end` is found as after a separator
    stop = glued if inner is None else end + inner.start() - 1
    return stop if text[end:stop].strip("_-") else end


def redact_text(text: str) -> tuple[str, tuple[str, ...]]:
    """`text` with each match made [REDACTED:<rule>], and the rules applied (first seen first)."""
    applied: list[str] = []
    rules = _rules_in(text)
    if not rules:
        return text, ()

    def redacted_once(pattern: re.Pattern[str], text: str) -> str:
        parts: list[str] = []
        done = 0  # text[:done] is in parts
        match = pattern.search(text)
        while match is not None:
            rule, span = _rule_of(match)
            if rule not in applied:
                applied.append(rule)
            marker = f"[REDACTED:{rule}]"
            start, end = span if span is not None else match.span()
            following = pattern.search(text, max(match.end(), match.start() + 1))
            if rule in _TOKEN_NAMES and _RULE_OF_GROUP.get(match.lastgroup or "") == rule:  # the token's own match
                end = _glued_end(pattern, text, end, len(text) if following is None else following.start())
            parts.append(text[done:start])
            parts.append(marker)
            done = end
            match = following
        parts.append(text[done:])
        return "".join(parts)

    # A replacement can expose a neighbour that a lookbehind or lookahead hid (`AKIA...ghp_...`
    # with nothing between), so repeat until nothing matches; every round shrinks the
    # unredacted text, and a marker never matches.
    # A marker can bring words of other rules (`[REDACTED:github-token]` holds `token`): each round
    # takes the rules of the text it scans.
    for _ in range(_MAX_ROUNDS):
        redacted = redacted_once(_pattern(rules), text)
        if redacted == text:
            break
        text = redacted
        rules = _rules_in(text)
        if not rules:
            break
    return text, tuple(applied)


# -- over a whole event (its plain form: dicts, lists, strings) -------------------------------
#: Fields the log fills or that describe the event itself: never scanned.
UNSCANNED = frozenset({"kind", "v", "event_id", "created_at", "prev", "redacted"})


def _child(path: str, key: str) -> str:
    """The path of a dict entry; a key that looks like a secret is named redacted, never echoed."""
    shown = redact_text(key)[0]
    return f"{path}.{shown}" if path else shown


#: What a key the key-and-value rules look for holds (password-assignment's key words and `...key` names, `pwd`,
#: aws-secret-access-key's `secret`, auth-header's `authorization`, cookie-header's `cookie` and `set-cookie`), in
#: lower case: a first look at a key.
_SECRET_KEY_PARTS = ("pass", "secret", "token", "credential", "key", "pwd", "auth", "cookie")


def entry_text(key: str, value: str) -> str | None:
    """A structured entry as `key: value` when its key may name a secret, else None: the key-and-value rules need
    both, which a walk of the strings one by one never sees. Unquoted, as YAML writes it: the assignment rule then
    wants a digit or 16 characters in the value, and leaves dotted names, calls and numbers (quoted, as JSON writes
    it, any word of 6 letters would do: `credentials` set to `same-origin`, `password` to a column type)."""
    named = _NAMES_A_SECRET.get(key)
    if named is None:  # each key is looked at once a process: a view walks the same few keys in every event
        lowered = _lowered(key)
        named = any(part in lowered for part in _SECRET_KEY_PARTS)
        if len(_NAMES_A_SECRET) < _KEYS_KEPT:
            _NAMES_A_SECRET[key] = named
    return f"{key}: {value}" if named else None


#: Keys entry_text has looked at, and whether each may name a secret (at most _KEYS_KEPT of them).
_NAMES_A_SECRET: dict[str, bool] = {}
_KEYS_KEPT = 20_000


_MARKERS = lazyre.pattern(r"\[REDACTED:[a-z-]+\]")


def _paired_secret(key: str, value: str) -> str | None:
    """The rule a nested entry's key and string value match together, not the key alone (a password under a key
    named `password`), or None. The value is read with what its own rules find already redacted: a password with
    a token glued to it goes whole (only the token went), a token alone under such a key is its own rule's."""
    text = entry_text(key, value)
    if text is None:
        return None
    if _rules_in(value):  # each match a space: a marker reads as a placeholder, or a subscript (`x_[REDACTED`);
        # what the token leaves at the front (`!`, `@`, `/` between it and a password) goes too
        text = entry_text(key, _MARKERS().sub(" ", redact_text(value)[0]).lstrip(" \t!@#$%^&*,;:/|~.-_=+"))
    rule = None if text is None else find_secret(text)
    if rule is None or find_secret(key) is not None:
        return None
    return rule


def strings_in(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a tree, dict keys included (a key can hold a secret too), and of every nested
    entry with a string value as `key: value` (entry_text: a password is a secret only with its key)."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if path or key not in UNSCANNED:
                child = _child(path, str(key))
                if path:
                    yield f"{child} (a key)", str(key)
                    entry = entry_text(str(key), value) if isinstance(value, str) else None
                    if entry is not None:
                        yield child, entry
                yield from strings_in(value, child)
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from strings_in(value, f"{path}[{index}]")


def redact_tree(node: Any, path: str, applied: list[str]) -> Any:
    """A copy of a tree with every match redacted; `applied` gets `<path>:<rule>` for each."""
    if isinstance(node, str):
        text, rules = redact_text(node)
        applied.extend(f"{path}:{rule}" for rule in rules)
        return text
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if not path and key in UNSCANNED:
                cleaned[key] = value
                continue
            child = _child(path, str(key))
            new_key = str(key)
            if path:
                paired = _paired_secret(str(key), value) if isinstance(value, str) else None
                if paired is not None:  # the whole value goes: the key says what it is
                    value = f"[REDACTED:{paired}]"
                    applied.append(f"{child}:{paired}")
                new_key, rules = redact_text(str(key))
                applied.extend(f"{child} (a key):{rule}" for rule in rules)
            cleaned[new_key] = redact_tree(value, child, applied)
        return cleaned
    if isinstance(node, list | tuple):
        return [redact_tree(value, f"{path}[{index}]", applied) for index, value in enumerate(node)]
    return node
