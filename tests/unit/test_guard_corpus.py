"""Corpus tests of the text-level secret guard (`events.guard`).

No secret-shaped literal appears in this file: every positive is assembled at run time from
fragments, so the repository's own secret scanners have nothing to flag.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events import guard
from events.guard import RULE_NAMES, find_secret, redact_text


def _j(*parts: str) -> str:
    """Join fragments into one string (keeps whole secrets out of the source)."""
    return "".join(parts)


# --- secret values, built from fragments ---------------------------------------------------

PW1 = _j("Tr0ub4", "dor3x")
PW2 = _j("c0rrect", "Horse7", "Battery")
PW3 = _j("s3cr3t", "-Sauce", "-42")
PW4 = _j("Zq8", "!vN2", "#pL5")
PW5 = _j("Zq8", "vN2", "pL5", "~k")
OPAQUE = _j("a7F3k9", "Qm2Lx8", "Pw4Rt6", "Yz1")
AWS_ID = _j("AK", "IA", "Q7" * 8)
AWS_TEMP_ID = _j("AS", "IA", "Z3" * 8)
AWS_SECRET = _j("Ab3/", "kL9+" * 4, "Ab3/" * 5)
GH_PAT = _j("gh", "p_", "a1B2" * 9)
GH_SERVER = _j("gh", "s_", "Zy9X" * 9)
GH_FINE = _j("github", "_pat_", "11ABCDE", "fgh" * 5, "_", "Jk4" * 20)
GL_PAT = _j("gl", "pat-", "Ab3_" * 5)
GL_RUNNER = _j("gl", "rt-", "Qx7-" * 6)
SLACK_HOOK = _j("https://hooks.", "slack.com/services/", "T0AB12CD3", "/B0EF45GH6/", "xY9z" * 6)
SLACK_BOT = _j("xo", "xb-", "1234567890", "-", "9876543210", "-", "aB3dE5" * 4)
SLACK_USER = _j("xo", "xp-", "2233445566", "-", "7788990011", "-", "Qr5St7" * 5)
ANTHROPIC = _j("sk-", "ant-", "api03-", "Qw3_Er5-" * 8)
OPENAI_PROJ = _j("sk-", "proj-", "Zx9-Cv8_" * 6)
OPENAI_LEGACY = _j("sk-", "Ab12Cd34" * 6)
STRIPE_LIVE = _j("sk", "_live_", "4eC39HqL" * 3)
STRIPE_RESTRICTED = _j("rk", "_test_", "9Xy8Wv7U" * 3)
STRIPE_WEBHOOK = _j("wh", "sec_", "Mn5Bv4Cx" * 4)
GOOGLE = _j("AI", "za", "Sy", "B1c2D3e4F5" * 3, "g6H")
NPM = _j("np", "m_", "aB1c" * 9)
PYPI = _j("py", "pi-", "AgEIcHlwaS5vcmc", "CJDk7Xq_" * 8)
HF = _j("hf", "_", "AbCd" * 8, "Ef")
JWT = _j(
    "ey", "J", "hbGciOiJIUzI1NiJ9", ".", "ey", "J", "zdWIiOiIxMjM0NTY3ODkwIn0", ".",
    "SflKxwRJSMeKKF2QT4fwpM",
)  # fmt: skip
KEY_BODY = _j("MIIEow", "IBAAKCAQEA", "x7Kp" * 12)
# ai-api-key
OPENROUTER = _j("sk-", "or-v1-", "9f3a0c7e" * 8)
GROQ = _j("gs", "k_", "Qw7Er9Ty" * 6, "Ab12")
XAI = _j("xa", "i-", "Pl4Ok8Ij" * 10)
PERPLEXITY = _j("pp", "lx-", "Mn3Bv5Cx" * 6)
REPLICATE = _j("r8", "_", "Hg6Fd4Sa" * 4, "Z9x1Q")
TAVILY = _j("tv", "ly-", "dev-", "Kj2Hg7Fd" * 4)
LANGSMITH = _j("ls", "v2_pt_", "0a1b2c3d" * 4, "_", "9e8f7a6b5c")
PINECONE = _j("pc", "sk_", "4Xq9Z", "_", "Rt5Yu7Io" * 6)
# cloud-token
DIGITALOCEAN = _j("do", "p_v1_", "7c1e4b9a" * 8)
VAULT = _j("hv", "s.", "CAESIJ", "Lm4Nb6Vc" * 12)
DOPPLER = _j("dp", ".st.", "prd.", "Wq3Er5Ty" * 6)
SUPABASE = _j("sb", "p_", "3f9e2d1c" * 5)
SENTRY = _j("sn", "tryu_", "5a4b3c2d" * 8)
GRAFANA = _j("gl", "sa_", "Zx8Cv6Bn" * 4, "_", "1a2b3c4d")
NEWRELIC = _j("NR", "AK-", "Q7W8E9R0T1Y2U3I4O5P6A7S8D9F")
DATABRICKS = _j("da", "pi", "0f1e2d3c" * 4)
AZURE_AD = _j("k7P", "8Q~", "Yt6Re4Wq2-Lk9Jh7Gf5Ds3Aa1Zx0Cv.")
# saas-token
LINEAR = _j("li", "n_api_", "Ty6Ui8Op" * 5)
NOTION = _j("nt", "n_", "51234567890", "Ab3Cd5Ef" * 4, "Gh7")
NOTION_OLD = _j("sec", "ret_", "Ab3Cd5Ef7G" * 4, "h9I")
SHOPIFY = _j("sh", "pat_", "a1b2c3d4" * 4)
POSTMAN = _j("PM", "AK-", "64a1b2c3d4e5f6a7b8c9d0e1", "-", "0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e")
SENDGRID = _j("SG", ".", "Ab3Cd5Ef7Gh9Ij1Kl3Mn5P", ".", "Qr7St9Uv1Wx3Yz5Ab7Cd9Ef1Gh3Ij5Kl7Mn9Op1Qr3S")
GOOGLE_OAUTH = _j("GO", "CSPX-", "Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9s")
GOOGLE_ACCESS = _j("ya", "29.", "a0Af", "Hg6Fd4Sa-Jk2Lm9" * 5)
# age-secret-key
AGE_KEY = _j("AGE-", "SECRET-", "KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:74]
BEGIN, END, PRIV = "-----BEGIN ", "-----END ", _j("PRIV", "ATE KEY-----")
BASIC = base64.b64encode(_j("deploy:", PW1).encode()).decode()
DOCKER_AUTH = base64.b64encode(_j("ci-bot:", OPAQUE).encode()).decode()
SAS_SIG = _j("k3Jd8sLm2Qp", "Xz9WvB4nT6yHa1cE5fG7iK0oRuVbNq", "%2FM%3D")
AMZ_SIG = _j("a1b2c3d4e5f6", "0718293a4b5c6d7e" * 3, "8f90a1b2")
AMZ_SESSION = _j("IQoJb3JpZ2luX2Vj", "EJr//////////wEa", "CXVzLWVhc3QtMSJH" * 3)
GOOG_SIG = _j("0f1e2d3c", "4b5a6978" * 15)
DISCORD_HOOK = _j("https://discord.com/api/", "webhooks/", "112233445566778899", "/", "aB3dE_fG6hI-jK9l" * 4)
TELEGRAM = _j("7345", "12098", ":AA", "Hd9Qw_E4rTy7uIo0pAsDf", "GhJkLzXcVbN2")
SESSION_COOKIE = _j("s%3A", "9fK2mQ7xZ3", "pL8vN4", ".Hq5Rt1Yw")


class Positive(NamedTuple):
    """A text holding `secret`, which the guard must report under `rule`."""

    id: str
    text: str
    rule: str
    secret: str


POSITIVES: tuple[Positive, ...] = (
    # private-key-block
    Positive(
        "pem-openssh-in-shell",
        _j("$ cat ~/.ssh/id_ed25519\n", BEGIN, "OPENSSH ", PRIV, "\n", KEY_BODY, "\n",
           END, "OPENSSH ", PRIV, "\n$ ls"),
        "private-key-block",
        KEY_BODY,
    ),
    Positive(
        "pem-rsa-escaped-json",
        _j('{"key": "', BEGIN, "RSA ", PRIV, "\\n", KEY_BODY, "\\n", END, "RSA ", PRIV, '"}'),
        "private-key-block",
        KEY_BODY,
    ),
    Positive(
        "pem-ec-truncated-log",
        _j("loaded signing key: ", BEGIN, "EC ", PRIV, "\n", KEY_BODY, "\n(truncated)"),
        "private-key-block",
        KEY_BODY,
    ),
    Positive(
        "pem-pkcs8-env-paste",
        _j('TLS_KEY="', BEGIN, PRIV, "\n", KEY_BODY, "\n", END, PRIV, '"'),
        "private-key-block",
        KEY_BODY,
    ),
    # aws-secret-access-key
    Positive(
        "aws-secret-credentials-file",
        _j("[default]\nregion = eu-west-1\naws_secret_access_key = ", AWS_SECRET, "\n"),
        "aws-secret-access-key",
        AWS_SECRET,
    ),
    Positive(
        "aws-secret-configure-set",
        _j("aws configure set aws_secret_access_key ", AWS_SECRET, " --profile ci"),
        "aws-secret-access-key",
        AWS_SECRET,
    ),
    Positive(
        "aws-secret-sts-json",
        _j('{"Credentials": {"SecretAccessKey": "', AWS_SECRET, '", "Expiration": "2025"}}'),
        "aws-secret-access-key",
        AWS_SECRET,
    ),
    Positive(
        "aws-secret-export",
        _j("export AWS_SECRET_ACCESS_KEY=", AWS_SECRET),
        "aws-secret-access-key",
        AWS_SECRET,
    ),
    # basic-auth-url
    Positive(
        "url-git-clone",
        _j("git clone https://deploy:", PW1, "@git.example.com/org/repo.git"),
        "basic-auth-url",
        PW1,
    ),
    Positive(
        "url-postgres-log",
        _j("INFO connecting to postgres://app:", PW2, "@db.internal:5432/app"),
        "basic-auth-url",
        PW2,
    ),
    Positive(
        "url-redis-json-empty-user",
        _j('{"cache_url": "redis://:', PW3, '@cache:6379/0"}'),
        "basic-auth-url",
        PW3,
    ),
    Positive(
        "url-pip-index",
        _j("pip install --index-url https://__token__:", PW5, "@pypi.example.com/simple pkg"),
        "basic-auth-url",
        PW5,
    ),
    Positive(
        "url-at-sign-in-password",
        _j("git remote add origin https://deploy:", PW1, "@", PW2, "@git.example.com/org/repo.git"),
        "basic-auth-url",
        _j(PW1, "@", PW2),
    ),
    # signed-url
    Positive(
        "azure-sas-curl",
        _j("curl -o data.csv 'https://acct.blob.core.windows.net/exports/data.csv?sv=2022-11-02&ss=b&srt=o&sp=r",
           "&se=2026-12-31T00:00:00Z&sig=", SAS_SIG, "'"),
        "signed-url",
        SAS_SIG,
    ),
    Positive(
        "s3-presigned-get",
        _j("wget 'https://bucket.s3.amazonaws.com/build.tgz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261205T",
           "000000Z&X-Amz-Expires=3600&X-Amz-Signature=", AMZ_SIG, "&X-Amz-SignedHeaders=host'"),
        "signed-url",
        AMZ_SIG,
    ),
    Positive(
        "s3-session-token-param",
        _j("GET /k?X-Amz-Security-Token=", AMZ_SESSION, "&X-Amz-Algorithm=AWS4-HMAC-SHA256 HTTP/1.1"),
        "signed-url",
        AMZ_SESSION,
    ),
    Positive(
        "s3-session-token-header",
        _j("> X-Amz-Security-Token: ", AMZ_SESSION, "\n> Host: bucket.s3.amazonaws.com"),
        "signed-url",
        AMZ_SESSION,
    ),
    Positive(
        "gcs-signed-html",
        _j('<a href="https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&amp;X-Goog-Signature=',
           GOOG_SIG, '">download</a>'),
        "signed-url",
        GOOG_SIG,
    ),
    # user-flag
    Positive(
        "curl-user-flag",
        _j("curl -fsS -u deploy:", PW1, " https://api.example.com/v1/releases"),
        "user-flag",
        PW1,
    ),
    Positive(
        "curl-user-long-equals",
        _j("curl --user=ci:", OPAQUE, " -X POST https://ci.example.com/hook"),
        "user-flag",
        OPAQUE,
    ),
    Positive(
        "curl-user-quoted",
        _j('$ curl -s -u "svc-bot:', PW5, '" https://registry.example.com/v2/'),
        "user-flag",
        PW5,
    ),
    Positive(
        "curl-user-after-a-query-and-a-header",
        _j("curl 'https://h.example.com/api?a=1&b=2' -H 'Content-Type: text/plain; charset=utf-8' -u admin:", PW1),
        "user-flag",
        PW1,
    ),
    Positive("curl-user-glued", _j("curl -sS -uadmin:", PW1, " api.internal.example.com/x"), "user-flag", PW1),
    Positive("curl-proxy-user", _j("curl -x proxy:3128 --proxy-user ops:", PW2, " https://h.example.com"), "user-flag",
             PW2),
    Positive("curl-proxy-user-short", _j("curl -U ops:", PW1, " -x proxy:3128 https://h.example.com"), "user-flag",
             PW1),
    Positive("curl-oauth2-bearer", _j("curl --oauth2-bearer ", OPAQUE, " https://api.example.com/me"), "user-flag",
             OPAQUE),
    # password-flag
    Positive("sshpass", _j("sshpass -p ", PW1, " ssh deploy@10.0.0.5 'systemctl restart app'"), "password-flag", PW1),
    Positive("sshpass-glued", _j("sshpass -p", PW2, " scp build.tgz deploy@h:/srv"), "password-flag", PW2),
    Positive("mysql-glued", _j("mysql -h db1 -u root -p", PW1, " app_production -e 'select 1'"), "password-flag",
             PW1),
    Positive("mysqldump-quoted", _j("mysqldump -u root -p'", PW2, "' app > dump.sql"), "password-flag", PW2),
    Positive("docker-login", _j("docker login -u bot -p ", PW1, " registry.example.com"), "password-flag", PW1),
    Positive("podman-login", _j("podman login registry.example.com --username bot -p=", PW2), "password-flag", PW2),
    Positive("redis-cli", _j("redis-cli -h cache1 -p 6380 -a ", PW1, " ping"), "password-flag", PW1),
    Positive("redis-cli-pass", _j("redis-cli --pass ", PW2, " ping"), "password-flag", PW2),
    Positive("mysql-after-a-quoted-query", _j("created the db: mysql -u root -e 'CREATE DATABASE app' -p", PW1),
             "password-flag", PW1),
    Positive("mysql-after-a-query-of-two-lines", _j("mysql -u root -e 'SELECT id\nFROM users' -p", PW2, " app"),
             "password-flag", PW2),
    Positive("docker-login-quoted-user", _j('docker login -u "my bot" -p ', PW2, " reg.example.com"), "password-flag",
             PW2),
    Positive("redis-cli-cluster", _j("redis-cli --cluster create h1:7000 h2:7000 -a ", PW1), "password-flag", PW1),
    Positive("docker-login-glued", _j("docker login -u me -p", PW1, " registry.example.com"), "password-flag", PW1),
    Positive("docker-login-global-option", _j("docker --config /tmp/cfg login -u me -p ", PW2, " reg.example.com"),
             "password-flag", PW2),
    Positive("curl-user-tab", _j("ran: curl -u\tadmin:", PW1, " api.internal.example.com/x"), "user-flag", PW1),
    Positive("curl-cookie-tab", _j("curl -b\tconnect.sid=", SESSION_COOKIE, " app.example.com/me"),
             "user-flag", SESSION_COOKIE),
    Positive(
        "curl-cookie-flag-quoted",
        _j("curl -sS -b 'theme=dark; sid=", SESSION_COOKIE, "' https://app.example.com/api/me"),
        "user-flag",
        SESSION_COOKIE,
    ),
    Positive(
        "curl-cookie-long-unquoted",
        _j("curl --cookie connect.sid=", SESSION_COOKIE, " https://app.example.com/api/me"),
        "user-flag",
        SESSION_COOKIE,
    ),
    Positive(
        "curl-cookie-flag-after-header",
        _j('curl -H "Accept: application/json" -b "session=', SESSION_COOKIE, '" -X DELETE https://h.example.com/x'),
        "user-flag",
        SESSION_COOKIE,
    ),
    Positive(
        "curl-user-continued-line",
        _j("CURL https://h.example.com/api \\\n  -X POST \\\n  -u admin:", PW2),
        "user-flag",
        PW2,
    ),
    # aws-access-key-id
    Positive(
        "aws-id-log",
        _j("Using credentials ", AWS_ID, " from profile default"),
        "aws-access-key-id",
        AWS_ID,
    ),
    Positive(
        "aws-id-sts-json",
        _j('{"AccessKeyId": "', AWS_TEMP_ID, '"}'),
        "aws-access-key-id",
        AWS_TEMP_ID,
    ),
    Positive(
        "aws-id-export",
        _j("export AWS_ACCESS_KEY_ID=", AWS_ID),
        "aws-access-key-id",
        AWS_ID,
    ),
    # github-token
    Positive(
        "github-remote-url",
        _j("git remote set-url origin https://x-access-token:", GH_SERVER, "@github.com/o/r.git"),
        "github-token",
        GH_SERVER,
    ),
    Positive(
        "github-dotenv",
        _j("export GITHUB_TOKEN=", GH_PAT),
        "github-token",
        GH_PAT,
    ),
    Positive(
        "github-log",
        _j("gh auth status: logged in to github.com with ", GH_PAT, " (keyring)"),
        "github-token",
        GH_PAT,
    ),
    Positive(
        "github-fine-grained-json",
        _j('{"token": "', GH_FINE, '", "scopes": []}'),
        "github-token",
        GH_FINE,
    ),
    # gitlab-token
    Positive(
        "gitlab-curl-header",
        _j('curl --header "PRIVATE-TOKEN: ', GL_PAT, '" https://gitlab.example.com/api/v4'),
        "gitlab-token",
        GL_PAT,
    ),
    Positive("gitlab-dotenv", _j("GITLAB_TOKEN=", GL_PAT), "gitlab-token", GL_PAT),
    Positive(
        "gitlab-runner-log",
        _j("Registering runner... succeeded runner=", GL_RUNNER),
        "gitlab-token",
        GL_RUNNER,
    ),
    # slack-webhook
    Positive(
        "slack-webhook-curl",
        _j("curl -X POST -d '{\"text\":\"deploy done\"}' ", SLACK_HOOK),
        "slack-webhook",
        SLACK_HOOK,
    ),
    Positive(
        "slack-webhook-dotenv",
        _j("SLACK_WEBHOOK_URL=", SLACK_HOOK),
        "slack-webhook",
        SLACK_HOOK,
    ),
    Positive(
        "slack-webhook-json",
        _j('{"notify": {"webhook": "', SLACK_HOOK, '"}}'),
        "slack-webhook",
        SLACK_HOOK,
    ),
    # slack-token
    Positive("slack-bot-dotenv", _j("export SLACK_BOT_TOKEN=", SLACK_BOT), "slack-token", SLACK_BOT),
    Positive(
        "slack-user-log",
        _j("posting to #deploys as ", SLACK_USER),
        "slack-token",
        SLACK_USER,
    ),
    Positive(
        "slack-bot-json",
        _j('{"bot_token": "', SLACK_BOT, '"}'),
        "slack-token",
        SLACK_BOT,
    ),
    # anthropic-key
    Positive("anthropic-dotenv", _j("ANTHROPIC_API_KEY=", ANTHROPIC), "anthropic-key", ANTHROPIC),
    Positive(
        "anthropic-curl",
        _j('curl https://api.anthropic.com/v1/messages -H "x-api-key: ', ANTHROPIC, '"'),
        "anthropic-key",
        ANTHROPIC,
    ),
    Positive(
        "anthropic-python",
        _j('client = anthropic.Anthropic(api_key="', ANTHROPIC, '")'),
        "anthropic-key",
        ANTHROPIC,
    ),
    # openai-key
    Positive("openai-dotenv", _j("OPENAI_API_KEY=", OPENAI_PROJ), "openai-key", OPENAI_PROJ),
    Positive(
        "openai-log",
        _j("retrying request with key ", OPENAI_LEGACY, " (attempt 2)"),
        "openai-key",
        OPENAI_LEGACY,
    ),
    Positive(
        "openai-json",
        _j('{"llm": {"provider": "openai", "key": "', OPENAI_PROJ, '"}}'),
        "openai-key",
        OPENAI_PROJ,
    ),
    # stripe-key
    Positive("stripe-dotenv", _j("STRIPE_SECRET_KEY=", STRIPE_LIVE), "stripe-key", STRIPE_LIVE),
    Positive(
        "stripe-curl",
        _j("curl https://api.stripe.com/v1/charges -u ", STRIPE_RESTRICTED, ":"),
        "stripe-key",
        STRIPE_RESTRICTED,
    ),
    Positive(
        "stripe-webhook-json",
        _j('{"endpoint": "/hooks/stripe", "signing": "', STRIPE_WEBHOOK, '"}'),
        "stripe-key",
        STRIPE_WEBHOOK,
    ),
    # google-api-key
    Positive(
        "google-url-query",
        _j("GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key=", GOOGLE),
        "google-api-key",
        GOOGLE,
    ),
    Positive("google-dotenv", _j("GOOGLE_API_KEY=", GOOGLE), "google-api-key", GOOGLE),
    Positive(
        "google-json",
        _j('{"firebase": {"apiKey": "', GOOGLE, '", "projectId": "demo"}}'),
        "google-api-key",
        GOOGLE,
    ),
    # npm-token
    Positive(
        "npm-npmrc",
        _j("//registry.npmjs.org/:_authToken=", NPM),
        "npm-token",
        NPM,
    ),
    Positive("npm-dotenv", _j("export NPM_TOKEN=", NPM), "npm-token", NPM),
    Positive("npm-log", _j("npm notice publishing with ", NPM), "npm-token", NPM),
    # pypi-token
    Positive("pypi-pypirc", _j("[pypi]\nusername = __token__\npassword = ", PYPI), "pypi-token", PYPI),
    Positive(
        "pypi-twine",
        _j("twine upload -u __token__ -p ", PYPI, " dist/*"),
        "pypi-token",
        PYPI,
    ),
    Positive("pypi-dotenv", _j("UV_PUBLISH_TOKEN=", PYPI), "pypi-token", PYPI),
    # huggingface-token
    Positive(
        "hf-cli-login",
        _j("huggingface-cli login --token ", HF),
        "huggingface-token",
        HF,
    ),
    Positive("hf-dotenv", _j("HF_TOKEN=", HF), "huggingface-token", HF),
    Positive(
        "hf-python",
        _j('snapshot_download("org/model", token="', HF, '")'),
        "huggingface-token",
        HF,
    ),
    # jwt
    Positive(
        "jwt-cookie",
        _j('curl -H "Cookie: session=', JWT, '" https://app.example.com/me'),
        "jwt",
        JWT,
    ),
    Positive("jwt-log", _j("DEBUG decoded id_token=", JWT, " exp=1700000000"), "jwt", JWT),
    Positive("jwt-json", _j('{"jwt": "', JWT, '", "user": 42}'), "jwt", JWT),
    # ai-api-key
    Positive("openrouter-env", _j("export OPENROUTER_API_KEY ", OPENROUTER), "ai-api-key", OPENROUTER),
    Positive("groq-curl", _j('curl https://api.groq.com -H "x-key: ', GROQ, '"'), "ai-api-key", GROQ),
    Positive("xai-json", _j('{"provider": "xai", "key": "', XAI, '"}'), "ai-api-key", XAI),
    Positive("perplexity-log", _j("using ", PERPLEXITY, " for search"), "ai-api-key", PERPLEXITY),
    Positive("replicate-arg", _j("replicate run --token ", REPLICATE, " model"), "ai-api-key", REPLICATE),
    Positive("tavily-yaml", _j("tavily:\n  key: ", TAVILY, "\n"), "ai-api-key", TAVILY),
    Positive("langsmith-output", _j("LangSmith key ", LANGSMITH, " set"), "ai-api-key", LANGSMITH),
    Positive("pinecone-python", _j("Pinecone(", '"', PINECONE, '")'), "ai-api-key", PINECONE),
    # cloud-token
    Positive("digitalocean-doctl", _j("doctl auth init -t ", DIGITALOCEAN), "cloud-token", DIGITALOCEAN),
    Positive("vault-login", _j("Success! token ", VAULT, " policies [default]"), "cloud-token", VAULT),
    Positive("doppler-run", _j("doppler run --token ", DOPPLER, " -- make"), "cloud-token", DOPPLER),
    Positive("supabase-cli", _j("supabase login --token ", SUPABASE), "cloud-token", SUPABASE),
    Positive("sentry-cli", _j("sentry-cli --auth-token ", SENTRY, " releases new"), "cloud-token", SENTRY),
    Positive("grafana-header", _j("X-Grafana-Key: ", GRAFANA), "cloud-token", GRAFANA),
    Positive("newrelic-json", _j('{"apiKey": "', NEWRELIC, '"}'), "cloud-token", NEWRELIC),
    Positive("databricks-cfg", _j("[DEFAULT]\nhost = https://x.cloud.databricks.com\ndb ", DATABRICKS, "\n"),
             "cloud-token", DATABRICKS),
    Positive("azure-ad-secret", _j("az ad sp credential reset: ", AZURE_AD, " (shown once)"), "cloud-token",
             AZURE_AD[4:]),
    # saas-token
    Positive("linear-graphql", _j("curl https://api.linear.app/graphql -H 'x: ", LINEAR, "'"), "saas-token", LINEAR),
    Positive("notion-client", _j("Client(auth=", '"', NOTION, '")'), "saas-token", NOTION),
    Positive("notion-internal", _j("NOTION_KEY ", NOTION_OLD), "saas-token", NOTION_OLD),
    Positive("shopify-admin", _j("X-Shopify-Access-Token: ", SHOPIFY), "saas-token", SHOPIFY),
    Positive("postman-newman", _j("newman run https://api.getpostman.com/x?k=", POSTMAN), "saas-token", POSTMAN),
    Positive("sendgrid-env-file", _j("SENDGRID_KEY ", SENDGRID, "\n"), "saas-token", SENDGRID),
    Positive("google-oauth-client", _j('{"installed": {"client_id": "1.apps", "c": "', GOOGLE_OAUTH, '"}}'),
             "saas-token", GOOGLE_OAUTH),
    Positive("google-access-token", _j("gcloud auth print-access-token\n", GOOGLE_ACCESS, "\n"), "saas-token",
             GOOGLE_ACCESS),
    # age-secret-key
    Positive("age-keygen", _j("# created: 2026-12-05\n# public key: age1xyz\n", AGE_KEY, "\n"), "age-secret-key",
             AGE_KEY),
    Positive("age-sops-env", _j("SOPS_AGE_KEY ", AGE_KEY), "age-secret-key", AGE_KEY),
    Positive("age-json", _j('{"identity": "', AGE_KEY, '"}'), "age-secret-key", AGE_KEY),
    # discord-webhook
    Positive("discord-webhook-curl", _j("curl -X POST -d '{\"content\": \"deployed\"}' ", DISCORD_HOOK),
             "discord-webhook", DISCORD_HOOK),
    Positive("discord-webhook-env", _j("export DISCORD_HOOK_ENDPOINT=", DISCORD_HOOK), "discord-webhook",
             DISCORD_HOOK),
    Positive("discord-webhook-json", _j('{"notify": {"url": "', DISCORD_HOOK, '"}}'), "discord-webhook",
             DISCORD_HOOK),
    Positive("discord-webhook-upper-case-host", _j("POST ", DISCORD_HOOK.replace("https://discord.com", "HTTPS://Discord.COM")),
             "discord-webhook", DISCORD_HOOK.replace("https://discord.com", "HTTPS://Discord.COM")),
    Positive("discord-webhook-cased-canary-v10",
             _j("hook: ", DISCORD_HOOK.replace("https://discord.com/api/", "Https://Canary.DiscordApp.Com/API/v10/")),
             "discord-webhook",
             DISCORD_HOOK.replace("https://discord.com/api/", "Https://Canary.DiscordApp.Com/API/v10/")),
    # telegram-bot-token
    Positive("telegram-api-url", _j("curl https://api.telegram.org/bot", TELEGRAM, "/getUpdates"),
             "telegram-bot-token", TELEGRAM),
    Positive("telegram-env", _j("export TG_BOT=", TELEGRAM), "telegram-bot-token", TELEGRAM),
    Positive("telegram-yaml", _j("telegram:\n  bot: ", TELEGRAM, "\n  chat: -100123"), "telegram-bot-token",
             TELEGRAM),
    # auth-header
    Positive("proxy-authorization-basic", _j('curl -x proxy:3128 -H "Proxy-Authorization: Basic ', BASIC, '" h/x'),
             "auth-header", BASIC),
    Positive("x-authorization-basic", _j("X-Authorization: Basic ", BASIC), "auth-header", BASIC),
    Positive(
        "docker-config-auth",
        _j('{"auths": {"ghcr.io": {"auth": "', DOCKER_AUTH, '"}}}'),
        "auth-header",
        DOCKER_AUTH,
    ),
    Positive(
        "dockerconfig-yaml",
        _j("registry:\n  ghcr.io:\n    auth: ", DOCKER_AUTH, "\n"),
        "auth-header",
        DOCKER_AUTH,
    ),
    Positive(
        "npmrc-auth",
        _j("//registry.example.com/:_auth=", DOCKER_AUTH, "\nalways-auth=true\n"),
        "auth-header",
        DOCKER_AUTH,
    ),
    Positive(
        "dockerconfig-escaped-json",
        _j('{"stdout": "{\\"auths\\":{\\"ghcr.io\\":{\\"auth\\":\\"', DOCKER_AUTH, '\\"}}}"}'),
        "auth-header",
        DOCKER_AUTH,
    ),
    # cookie-header
    Positive(
        "cookie-curl",
        _j('curl -H "Cookie: connect.sid=', SESSION_COOKIE, '; theme=dark" http://localhost:3000/api/me'),
        "cookie-header",
        SESSION_COOKIE,
    ),
    Positive(
        "set-cookie-log",
        _j("< HTTP/1.1 302 Found\n< Set-Cookie: sessionid=", SESSION_COOKIE, "; HttpOnly; Path=/\n"),
        "cookie-header",
        SESSION_COOKIE,
    ),
    Positive(
        "cookie-json-header",
        _j('{"headers": {"Cookie": "sid=', SESSION_COOKIE, '"}}'),
        "cookie-header",
        SESSION_COOKIE,
    ),
    Positive(
        "auth-bearer-curl",
        _j('curl -H "Authorization: Bearer ', OPAQUE, '" https://api.example.com/v1/items'),
        "auth-header",
        OPAQUE,
    ),
    Positive(
        "auth-basic-log",
        _j("> GET /private HTTP/1.1\n> Authorization: Basic ", BASIC, "\n> Accept: */*"),
        "auth-header",
        BASIC,
    ),
    Positive(
        "auth-token-python",
        _j('headers = {"Authorization": "token ', OPAQUE, '"}'),
        "auth-header",
        OPAQUE,
    ),
    Positive(
        "auth-bearer-log",
        _j("request failed (401) with bearer ", OPAQUE),
        "auth-header",
        OPAQUE,
    ),
    # dotenv-line
    Positive(
        "dotenv-paste",
        _j("DEBUG=true\nDB_PASSWORD=", PW1, "\nPORT=8080\n"),
        "dotenv-line",
        PW1,
    ),
    Positive("dotenv-export-quoted", _j('export API_TOKEN="', PW2, '"'), "dotenv-line", PW2),
    Positive(
        "dotenv-docker-run",
        _j("docker run -e DATABASE_PASSWORD=", PW3, " -p 5432:5432 postgres:16"),
        "dotenv-line",
        PW3,
    ),
    Positive(
        "dotenv-secret-key-base",
        _j("SECRET_KEY_BASE=", PW4, "0f9e8d7c6b5a"),
        "dotenv-line",
        _j(PW4, "0f9e8d7c6b5a"),
    ),
    Positive(
        "dotenv-credentials-single-quoted",
        _j("SERVICE_CREDENTIALS='", PW1, "'"),
        "dotenv-line",
        PW1,
    ),
    # password-assignment
    Positive(
        "pw-mysql-flag",
        _j("mysql -u root --password=", PW1, " app < dump.sql"),
        "password-assignment",
        PW1,
    ),
    Positive(
        "pw-json-body",
        _j('{"username": "admin", "password": "', PW2, '"}'),
        "password-assignment",
        PW2,
    ),
    Positive(
        "pw-yaml",
        _j("database:\n  user: app\n  password: ", PW3, "\n  host: db\n"),
        "password-assignment",
        PW3,
    ),
    Positive(
        "pw-python-kwarg",
        _j('client = Client(api_key="', PW4, '")'),
        "password-assignment",
        PW4,
    ),
    Positive(
        "pw-query-string",
        _j("GET /export?access_token=", PW1, "&page=2 HTTP/1.1"),
        "password-assignment",
        PW1,
    ),
    Positive(
        "pw-cli-flag-space",
        _j("deploy-tool push --api-key ", PW2, " --env prod"),
        "password-assignment",
        PW2,
    ),
    Positive(
        "pw-escaped-json",
        _j('{"body": "{\\"password\\": \\"', PW3, '\\"}"}'),
        "password-assignment",
        PW3,
    ),
    Positive(
        "pw-python-annotated",
        _j('    db_password: str = "', PW4, '"'),
        "password-assignment",
        PW4,
    ),
    Positive(
        "pw-camel-case-js",
        _j("const clientSecret = '", PW1, "';"),
        "password-assignment",
        PW1,
    ),
    Positive(
        "pw-lowercase-pwd",
        _j("connect(host='db', user='app', pwd='", PW2, "')"),
        "password-assignment",
        PW2,
    ),
)

NEGATIVES: tuple[str, ...] = (
    # flags that look like password flags and are none: `-p` then a space prompts in mysql (the word after it is a
    # database), ports, `mkdir -p`, a password from a variable or a file, curl's other `-u...` options
    "mysql -u root -p production_db2",
    "mysql -u root -p",
    "docker run -p 8080:80 img",
    "mkdir -p build2024abcdef && cd build2024abcdef",
    "redis-cli -h host -p 6379",
    "sshpass -f /home/u/.pw123 ssh host",
    "docker login -u bob --password-stdin registry1.io",
    "mysql -p$MYSQL_PWD db",
    'sshpass -p "$PASS" ssh h',
    "curl --unix-socket /var/run/docker.sock http://localhost/v1.43/info",
    "docker login -u bob -p xxxxxxxx registry.example.com",
    "helm registry login r.example.com -u a -p $TOKEN",
    "docker compose -p project1234 up -d",
    "pip install mysql-connector-python==8.0.33",
    "curl -u $USER:$PASS https://h.example.com",
    "curl -uuser:$(cat pw.txt) https://h.example.com",
    # another command's `-p` in the same line: a port mapping, a path, a remote command's flag, a second command
    "started db: docker run -d --name mysql -p3306:3306 mysql:8",
    "docker run --name mysql -p127.0.0.1:3306:3306 -d mysql:8.0",
    "sshpass -e ssh deploy@host 'mkdir -p /var/www/releases/2024'",
    "sshpass -f ~/.pw ssh host mkdir -p /opt/app/v2",
    "docker login ghcr.io, then docker run -p 8080:8080 app",
    "mysqldump --single-transaction -h db -u backup -p/etc/mysql/pw.cnf",
    "podman login quay.io && podman run -p 127.0.0.1:5432:5432 postgres16",
    "copied the build: sshpass -e scp -p build2024.tar.gz deploy@host:/srv/",
    "sshpass -e rsync -avz -p dist2024/ host:",
    "redis-cli ping && tar -a archive2024.tar.gz",
    # signed URLs' other parameters, placeholders and words
    "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z",
    "curl \"https://acct.blob.core.windows.net/c/f?$SAS\" and ?sig=${SAS_SIG}",
    "set ?signature=required_when_public in the form",
    "X-Amz-Security-Token: <session token>",
    "the X-Amz-Signature= parameter is checked first",
    # cookies with no long value holding a digit (dates, ages and short ids are none), and prose about the header
    "Set-Cookie: theme=dark; Max-Age=31536000",
    "Set-Cookie: lang=en-US; Path=/; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
    "Set-Cookie: __Host-ID=123; Secure; Path=/",
    "< set-cookie: _gh_sess=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT",
    "Cookie: _ga=GA1.1.123; _gid=GA1.1.456",
    "Cookie: theme=dark; lang=en-US",
    "the Cookie: header is sent on every request",
    "cookie: 2 cookies were set",
    "Set-Cookie: flash=saved; Path=/",
    # `auth` keys that hold no base64 pair
    "auth: none",
    "auth: BasicAuthentication",
    "auth: ServicePrincipal",
    "auth: UsernamePassword",
    "auth: AuthenticationFailed",
    '{"auth": "oauth2ProviderGoogle"}',
    "new Octokit({ auth: authenticateUser, baseUrl })",
    "app.use({ auth: passportStrategy })",
    '{"auth": "oauth2", "author": "QUJDREVGR0hJSktMTU5PUA=="}',
    "oauth: QUJDREVGR0hJSktMTU5PUA==",
    # discord and telegram: no token
    "https://discord.com/api/webhooks/112233445566778899",
    "see discord.com/api/webhooks for the docs",
    "at 12:30:AA the build ran",
    "ratio 1234567:AAbbccddeeffgghhiijjkkllmmnnooppqq-too-long",
    # an at sign after the host (a path or a scoped package)
    "https://registry.example.com/@scope/pkg@1.2.3",
    "https://user:password@example.com/path@v2",
    # -u and --user that carry no password, or a placeholder
    "git push -u origin main && curl https://example.com",
    "docker run -u 1000:1000 alpine sh -c 'curl -fsS https://example.com'",
    "curl -u admin:$API_PASSWORD https://example.com",
    'curl -u "$USER:$PASS" https://example.com',
    "curl -u admin:*** https://example.com",
    "curl --user admin:changeme https://example.com",
    "curl -u {{ user }}:{{ password }} https://example.com",
    # curl's -b with a cookie file, a short cookie or a placeholder: no cookie value to hide; an unquoted one whose
    # long run with a digit is only a later word of the line (a redacted value, then another command)
    "curl --cookie sid=[REDACTED:user-flag] https://example.com/me$ cat ~/.ssh/id_ed25519",
    "curl -b cookies.txt -c cookies.txt https://example.com/login",
    "curl -b 'theme=dark; lang=en-US' https://example.com",
    'curl --cookie "sid=$SESSION_ID" https://example.com',
    "curl -b ~/.config/app/cookie-jar-2026-12-06.txt https://example.com",
    # a user and a group, in a text that names no curl (assembled: this file names curl)
    _j("docker exec -u postgres", ":postgres15 db psql -f migrate.sql"),
    _j("kubectl exec -u root", ":wheel123 web-0 -- sh"),
    # placeholders and references in assignments
    "password=",
    'password=""',
    "password=$DB_PASSWORD",
    "password=${DB_PASSWORD}",
    "export API_TOKEN=${API_TOKEN:-}",
    "export OPENAI_API_KEY=$(pass show openai)",
    "set API_KEY=%API_KEY%",
    "api_key=<your-key>",
    'api_key: "<YOUR_API_KEY>"',
    "password: ***",
    "password: ********",
    "token=xxx",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxx",
    "password=None",
    "token: null",
    "secret=true",
    "auth_token: false",
    "password=changeme",
    "DB_PASSWORD=redacted",
    "password=[REDACTED:password-assignment]",
    'API_TOKEN="[REDACTED:dotenv-line]"',
    "Authorization: Bearer [REDACTED:auth-header]",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'token = os.getenv("GITHUB_TOKEN")',
    "api_key=settings.API_KEY",
    "token = get_token()",
    "password = make_password(raw_password)",
    "password=password",
    "api_key = api_key",
    "login(username=username, password=password)",
    "token = self.token",
    "pwd=abc",
    "password=hunt",
    "client_secret: ${{ secrets.CLIENT_SECRET }}",
    'password: "{{ vault_db_password }}"',
    "password: !vault |",
    "secret: /run/secrets/db_password",
    "PWD=/home/dev/project",
    "GITHUB_TOKEN_FILE=/run/secrets/gh",
    "TOKEN_URL=https://oauth2.googleapis.com/token",
    "TOKENIZERS_PARALLELISM=false",
    "MAX_TOKENS=4096",
    "PASSWORD_MIN_LENGTH=12",
    "ACCESS_TOKEN_TTL=3600",
    # code
    "def login(password: str) -> bool:",
    "def verify(token: str, *, leeway: int = 0) -> Claims:",
    "api_key: Optional[str] = None",
    "password: str = Field(..., min_length=8)",
    'if password == "":',
    "assert token != expected_token",
    "parser.add_argument('--password', help='database password')",
    "headers = {'Authorization': f'Bearer {token}'}",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "const token = await getToken();",
    "token = Punctuation",
    'Token:              "#cccccc",',
    "ResourceEndpoint.__init__(self, default_token='Bearer')",
    "spwd: 3.0-3.12",
    "- POSTGRES_PASSWORD=postgres",
    "password = var.db_password",
    'SECRET_KEY = env("DJANGO_SECRET_KEY")',
    "with open(token_path) as f: token = f.read().strip()",
    "  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "WWW-Authenticate: Bearer error=\"invalid_token\"",
    "x-api-key: {{apiKey}}",
    "client_secret=CLIENT_SECRET",
    "ghp_ prefixed tokens are personal access tokens",
    "the JWT header starts with eyJhbGciOi",
    "secret = secrets.token_hex(32)",
    "max_tokens=4096",
    "response = model.generate(prompt, max_tokens=1024, temperature=0.2)",
    "tokenizer = AutoTokenizer.from_pretrained('gpt2')",
    "count_tokens(text) returned 1200",
    "from sklearn.model_selection import train_test_split  # sk-learn",
    "pip install scikit-learn numpy",
    # prose, logs, commit messages
    "password reset flow sends a one-time link",
    "the api_key parameter is optional when using OAuth",
    "token count: 1200",
    "token: expired",
    "error: token: invalid signature",
    "Password: required",
    "Bearer token authentication is described in RFC 6750",
    "fix(auth): refresh the access token before it expires",
    "feat: rotate the signing secret every 90 days",
    "docs: explain how to set GITHUB_TOKEN in CI",
    "We store credentials in the OS keyring, never in .env files.",
    # pytest output
    "tests/unit/test_auth.py::test_token_refresh PASSED                        [ 42%]",
    "FAILED tests/test_api.py::test_secret_rotation - KeyError: 'SECRET_KEY'",
    "E       AssertionError: assert 'abc' == 'abd'",
    "===== 12 passed, 1 skipped in 0.42s =====",
    # paths, URLs, hashes, ids
    "src/auth/password_reset.py:42: in reset_password",
    "~/.ssh/id_ed25519.pub",
    "https://github.com/owner/repo/pull/123",
    "git@github.com:owner/repo.git",
    "https://user@gitlab.com/org/repo.git",
    "http://localhost:8000/api/items?page=2&token_count=5",
    "http://[::1]:8080/health",
    _j("postgres://postgres:", "postgres@localhost:5432/app"),
    _j("https://user:", "password@example.com"),
    "commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request_id=123e4567-e89b-12d3-a456-426614174000",
    "aGVsbG8gd29ybGQ=",
    "ssh-keygen -t ed25519 -C dev@example.com",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx7 dev@laptop",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
    _j("grep -r 'BEGIN RSA ", "PRIVATE KEY' ."),
    _j('_SK_START = b"', BEGIN, "OPENSSH ", PRIV, '"'),
    # config keys without values
    "api_key:",
    "auth.token_ttl: 3600",
    '"token_type": "bearer", "expires_in": 3600',
    '{"access_token": "", "refresh_token": null}',
    "secret_name: prod/db/credentials",
    "AWS_ACCESS_KEY_ID=",
    "docker run -e API_TOKEN -e DB_PASSWORD app:latest",
    "npm config get registry",
    "hf_hub_download(repo_id='gpt2', filename='config.json')",
    # the new token rules' prefixes in ordinary text
    "model = 'xai-grok-2-vision-1212'; fallback = 'pplx-70b-online'",
    "see RFC-9110 and msg.SG.value; rfc-0123456789abcdef0123456789abcdef",
    "hvs.reshape_to_something_long_enough_to_matter(x)",
    "rnd_" + "a1B2c3D4" * 4 + " and secret_keyforthetestsuitethatisverylongnamexx",
    "tvly-search, e2b_sandbox_template_id, dapi_version, pul-request, sha256~ of x",
    "Q~ and abc1Q~short; v1.0-beta; v1.0-" + "0a" * 12 + "; ya29.x; ATBB; lin_api_ is Linear's prefix",
    "docker image sha256:" + "0a" * 32,
    "a1Q~" * 40,
    "data:image/png;base64,iVBORw0KGgo/ABSK" + "Qw8+" * 40,
)


def _positive_params() -> list[object]:
    """The positives as pytest params with readable ids."""
    return [pytest.param(case, id=case.id) for case in POSITIVES]


@pytest.mark.parametrize("case", _positive_params())
def test_positive_is_caught_by_expected_rule(case: Positive) -> None:
    """Every positive is found, and the first rule reported is the expected one."""
    assert case.secret in case.text
    assert find_secret(case.text) == case.rule


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative_is_not_flagged(text: str) -> None:
    """Ordinary developer text is never flagged and redaction leaves it unchanged."""
    assert find_secret(text) is None
    assert redact_text(text) == (text, ())


@pytest.mark.parametrize("case", _positive_params())
def test_redaction_removes_the_secret_value(case: Positive) -> None:
    """Redaction leaves no part of the value, marks it with its rule, and finds nothing after."""
    out, rules = redact_text(case.text)
    assert case.secret not in out
    assert case.secret[:8] not in out
    assert case.secret[-8:] not in out
    assert f"[REDACTED:{case.rule}]" in out
    assert rules[0] == case.rule
    assert find_secret(out) is None


@pytest.mark.parametrize("case", _positive_params())
def test_redaction_is_idempotent(case: Positive) -> None:
    """Redacting already-redacted text changes nothing and applies no rule."""
    once, _ = redact_text(case.text)
    assert redact_text(once) == (once, ())


def test_assignments_keep_key_and_separator() -> None:
    """Assignment rules replace only the value: the key and `=` stay readable."""
    assert redact_text(_j("password=", PW1)) == (
        "password=[REDACTED:password-assignment]",
        ("password-assignment",),
    )
    assert redact_text(_j('DB_PASSWORD="', PW2, '"'))[0] == 'DB_PASSWORD="[REDACTED:dotenv-line]"'


@pytest.mark.parametrize("after_host", ["/path@v2", "/@scope/pkg@1.2.3", "?ref=user@example.com"])
def test_a_url_password_ends_at_the_authority_whatever_at_signs_follow(after_host: str) -> None:
    """The password runs to the last `@` before the host, never past the authority: what follows the host (a path,
    a query holding an `@`) stays as written."""
    text = _j("https://deploy:", PW1, "@example.com", after_host)
    assert redact_text(text) == (f"https://deploy:[REDACTED:basic-auth-url]@example.com{after_host}",
                                 ("basic-auth-url",))
    glued = _j("https://deploy:", PW1, "@", PW2, "@example.com", after_host)  # an `@` in the password itself
    assert redact_text(glued) == (f"https://deploy:[REDACTED:basic-auth-url]@example.com{after_host}",
                                  ("basic-auth-url",))


def test_rules_applied_are_in_order_of_first_appearance() -> None:
    """The rule names applied come in order of first appearance, without repeats."""
    text = _j("a ", AWS_ID, " b ", GH_PAT, " c ", AWS_TEMP_ID, " d password=", PW1)
    out, rules = redact_text(text)
    assert rules == ("aws-access-key-id", "github-token", "password-assignment")
    assert out.count("[REDACTED:aws-access-key-id]") == 2


def test_adjacent_secrets_are_all_redacted() -> None:
    """Secrets with nothing between them are all redacted, even when one hides the next."""
    out, rules = redact_text(_j(AWS_ID, GH_PAT))
    assert AWS_ID not in out
    assert GH_PAT[4:] not in out
    assert set(rules) == {"aws-access-key-id", "github-token"}
    assert find_secret(out) is None


_TOKEN_CASES = tuple(case for case in POSITIVES
                     if case.rule in guard._TOKEN_NAMES and find_secret(case.secret) == case.rule)


@pytest.mark.parametrize("prefix", ["team-", "ttl-", "KEY_", "-", "_", "a-b_", "x.y-"])
def test_a_token_after_a_hyphen_or_an_underscore_is_caught(prefix: str) -> None:
    """A name glued to a token by `-` or `_` (`team-xoxb-...`, `KEY_sk-ant-...`) hides none of it: every token
    rule's samples are reported under their rule and redacted whole, the prefix kept."""
    assert {case.rule for case in _TOKEN_CASES} == guard._TOKEN_NAMES  # a sample of every token rule
    for case in _TOKEN_CASES:
        text = prefix + case.secret
        assert find_secret(text) == case.rule, case.id
        assert redact_text(text) == (f"{prefix}[REDACTED:{case.rule}]", (case.rule,)), case.id


@pytest.mark.parametrize("first", [GH_PAT, GH_FINE, GL_PAT, SLACK_BOT, ANTHROPIC, OPENAI_PROJ, OPENAI_LEGACY,
                                   PYPI, HF, GROQ, VAULT, GOOGLE_ACCESS], ids=lambda text: text[:6])
def test_a_token_glued_to_the_end_of_another_leaves_nothing_of_either(first: str) -> None:
    """A token written right after one whose rule takes any length (`ghp_...xoxb-1-...`: the first rule stops where
    its alphabet does, in the second's body) leaves no part of the second's body behind."""
    for case in _TOKEN_CASES:
        out, rules = redact_text(first + case.secret)
        assert find_secret(out) is None, (case.id, out)
        assert first[-10:] not in out and case.secret[-10:] not in out, (case.id, out)
        assert rules[0] == find_secret(first), case.id


def test_rule_names_are_stable_kebab_case() -> None:
    """RULE_NAMES lists each rule once, in kebab-case."""
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name) for name in RULE_NAMES)


def test_every_rule_has_three_positives() -> None:
    """The corpus holds at least three realistic positives for every rule."""
    for name in RULE_NAMES:
        assert sum(case.rule == name for case in POSITIVES) >= 3, name
    assert {case.rule for case in POSITIVES} <= set(RULE_NAMES)
    assert len(NEGATIVES) >= 40


def test_guard_sources_hold_no_secret() -> None:
    """Neither the guard nor this corpus holds a literal the guard would flag."""
    for path in (Path(guard.__file__), Path(__file__)):
        assert find_secret(path.read_text(encoding="utf-8")) is None, path


_PIECES = [case.text for case in POSITIVES] + list(NEGATIVES)
_FILLER = st.text(
    alphabet=st.sampled_from([*"aAzZ09_-.:=/@'\" \n\t\\[]{}()$%*!~#", "é", "\u2022"]),
    max_size=12,
)
# Corpus pieces and filler, joined by a glue: the texts the property tests below are given.
_PARTS = st.lists(st.one_of(st.sampled_from(_PIECES), _FILLER), min_size=1, max_size=8)
_GLUES = st.sampled_from(["", " ", "\n", "=", ":", '"', "_"])


@settings(max_examples=300, deadline=None)
@given(
    parts=_PARTS,
    glue=_GLUES,
)
def test_redacted_output_never_matches(parts: list[str], glue: str) -> None:
    """For any mix of corpus pieces and filler, redacted output holds no match and is stable."""
    out, _ = redact_text(glue.join(parts))
    assert find_secret(out) is None
    assert redact_text(out) == (out, ())


_MUTATIONS = st.sampled_from([str.upper, str.lower, str.title, lambda text: text])


@settings(max_examples=400, deadline=None)
@given(
    parts=_PARTS,
    glue=_GLUES,
    mutate=_MUTATIONS,
)
def test_prefilter_never_hides_a_match(parts: list[str], glue: str, mutate: object) -> None:
    """Whenever the full pattern matches, the cheap prefilter says the text might hold one (user-flag counts only in
    a text that names curl or wget: docker's `-u user:group` is no password)."""
    text = mutate(glue.join(parts))  # type: ignore[operator]
    fetched = "curl" in text.lower() or "wget" in text.lower()
    rules = tuple(index for index in guard._ALL_RULES if fetched or guard._RULES[index][0] != "user-flag")
    if guard._pattern(rules).search(text) is not None:
        assert guard.might_hold_secret(text)


_SINGLE = [re.compile(f"{first}(?P<{name.replace('-', '_')}>{rest})") for name, first, rest in guard._RULES]


@settings(max_examples=400, deadline=None)
@given(
    parts=_PARTS,
    glue=_GLUES,
    mutate=_MUTATIONS,
)
def test_each_rule_is_compiled_whenever_it_can_match(parts: list[str], glue: str, mutate: object) -> None:
    """Only the rules whose words a text holds are compiled and scanned for: every rule that matches the text on
    its own is among them (a rule left out would let its secret through); user-flag where the text names curl or
    wget (the one rule that looks at the whole text)."""
    text = mutate(glue.join(parts))  # type: ignore[operator]
    chosen = guard._rules_in(text)
    fetched = "curl" in text.lower() or "wget" in text.lower()
    for index, single in enumerate(_SINGLE):
        if single.search(text) is not None and (fetched or guard._RULES[index][0] != "user-flag"):
            assert index in chosen, (guard._RULES[index][0], text)


@settings(max_examples=300, deadline=None)
@given(
    parts=_PARTS,
    glue=_GLUES,
)
def test_the_rules_a_text_needs_find_what_every_rule_finds(parts: list[str], glue: str) -> None:
    """Scanning with the rules whose words a text holds finds and redacts exactly what scanning with every rule
    does (the same rule names, the same output); every rule but user-flag where the text names no curl or wget,
    the one rule that looks at the whole text (docker's `-u user:group` is no password)."""
    text = glue.join(parts)
    chosen_only = (find_secret(text), redact_text(text))
    original = guard._rules_in
    flag = [name for name, _, _ in guard._RULES].index("user-flag")

    def every_rule(seen: str) -> tuple[int, ...]:
        if not original(seen):
            return ()
        fetched = "curl" in seen.lower() or "wget" in seen.lower()
        return tuple(index for index in guard._ALL_RULES if fetched or index != flag)

    guard._rules_in = every_rule  # type: ignore[assignment]
    try:
        every_rule = (find_secret(text), redact_text(text))
    finally:
        guard._rules_in = original  # type: ignore[assignment]
    assert chosen_only == every_rule


def test_a_url_alone_compiles_only_the_url_rule() -> None:
    """A line with a URL and no other rule's words compiles one rule, not the whole pattern (about 10 ms on the
    hook path)."""
    chosen = guard._rules_in("curl -s https://example.com/api/v1/items | jq .")
    assert [guard._RULES[index][0] for index in chosen] == ["basic-auth-url"]
    assert guard._rules_in("edited the parser") == ()


@pytest.mark.parametrize("case", _positive_params())
def test_prefilter_lets_every_positive_through(case: Positive) -> None:
    """Every positive in the corpus passes the prefilter (so the regex sees it)."""
    assert guard.might_hold_secret(case.text)


#: Characters JSON writes as an escape ending in a letter or a hex digit (`\\n`, `\\u001b`), and two it writes as
#: `\\"` and `\\\\`; before a key, each left `sk-` after a letter in the encoded event, and the write path's first
#: check on that text let `<line break>sk-ant-...` through unscanned.
ESCAPED = ["\n", "\t", "\r", "\b", "\f", "\x00", "\x1b", "\x7f", "\\", '"']


@pytest.mark.parametrize("case", _positive_params())
def test_prefilter_on_the_encoded_event_lets_every_positive_through_after_any_escaped_character(
        case: Positive) -> None:
    """What the write paths check first is the event's JSON (msgspec's, or the plain path's json): every positive
    after any character JSON escapes still passes, in both encoders' text."""
    import json

    import msgspec

    checked = 0
    for before in ESCAPED:
        for field in (f"x{before}{case.text}", f"{before}{case.text}",
                      case.text.replace(case.secret, f"{before}{case.secret}"), f"x{before}{case.secret}"):
            if find_secret(field) is None:  # the character broke what the rule needs around the secret
                continue
            checked += 1
            for encoded in (msgspec.json.encode({"message": field}).decode(),
                            json.dumps({"message": field}, ensure_ascii=False)):
                assert guard.might_hold_secret(encoded), (before, encoded)
    assert checked >= len(ESCAPED)


@pytest.mark.parametrize("case", _positive_params())
def test_prefilter_on_the_encoded_event_lets_every_positive_through_with_its_spaces_as_tabs(case: Positive) -> None:
    """A tab where a positive has a space (`curl -u<tab>admin:...`) is `\\t` in the encoded event: the words the
    rules need were looked for as written, and an event whose only rule word held the tab was stored unscanned."""
    import json

    import msgspec

    tabbed = case.text.replace(" ", "\t")
    if find_secret(tabbed) is None:  # the rule wants a space there (prose around a key)
        return
    for encoded in (msgspec.json.encode({"message": tabbed}).decode(),
                    json.dumps({"message": tabbed}, ensure_ascii=False)):
        assert guard.might_hold_secret(encoded), encoded


def test_plain_work_log_text_skips_the_pattern() -> None:
    """Ordinary work-log lines do not even need the pattern compiled."""
    for text in ("edited the parser", "48 passed in 2.1s", "refactor order totals", "src/app/models.py",
                 "task task-1f2e3d4c5b: queued -> completed", "desk-check the mask-file", "ask-me"):
        assert not guard.might_hold_secret(text)


def test_the_key_prefix_counts_only_where_a_key_can_start() -> None:
    """`sk-` counts at the start, after a space, a quote, `_`, `-` or non-ASCII; never after an ASCII letter or
    digit (`task-1`, `desk-`)."""
    for text in ("sk-abc", "key sk-abc", '"sk-abc', "=sk-abc", "\u212ask-abc", "\u00e9sk-abc", "task-1 sk-2",
                 "_sk-abc", "-sk-abc", "team-sk-abc"):
        assert guard.might_hold_secret(text), text
    for text in ("task-1", "Xsk-abc", "9sk-abc", "SK-abc", "desk-abc"):
        assert not guard.might_hold_secret(text), text


@pytest.mark.parametrize("case", _positive_params())
def test_a_cut_moved_by_unsplit_never_splits_a_secret(case: Positive) -> None:
    """Text cut at `unsplit(text, index)` keeps a secret whole or none of it, wherever the index falls."""
    start = case.text.index(case.secret)
    end = start + len(case.secret)
    for index in range(len(case.text) + 1):
        cut = guard.unsplit(case.text, index)
        assert cut <= index
        assert cut <= start or cut >= end, (index, cut)


def test_unsplit_leaves_a_cut_outside_secrets_where_it_is() -> None:
    """A cut that splits nothing (no secret, or one wholly before it) stays put."""
    assert guard.unsplit("edited the parser", 6) == 6
    text = _j("push ", GH_PAT, " done and more words")
    assert guard.unsplit(text, len(text) - 3) == len(text) - 3
    assert guard.unsplit(text, 9) == 5


def test_case_folded_spellings_choose_their_rules() -> None:
    """The rules' case-insensitive parts take `ſ` for s and `ı` for i: their words are looked for so spelled too."""
    assert find_secret(_j("AWS_\u017fECRET_ACCESS_KEY=", AWS_SECRET)) == "aws-secret-access-key"
    assert find_secret("Author\u0131zation: token ab12cd34ef56gh78ij90") == "auth-header"


def test_a_run_of_azure_like_fragments_is_redacted_in_one_round() -> None:
    """`a1Q~` repeated matched once per round, past the rounds' limit, in seconds for 100 kB."""
    out, rules = redact_text("a1Q~" * 25_000)
    assert rules == () and find_secret(out) is None


def test_a_long_token_glued_to_another_goes_whole() -> None:
    """A 7 kB JWT glued to an AWS key id: a cap on what is read past a token's end (4 kB, one version) left the
    JWT's last 3 kB, its signature with it, in clear."""
    jwt = _j("eyJhbGciOiJIUzI1NiJ9.", "eyJ", "a1B2" * 1750, ".", "sIg9" * 10)
    out, rules = redact_text(_j("note ", AWS_ID, jwt, " end"))
    assert (out, rules) == ("note [REDACTED:aws-access-key-id][REDACTED:jwt] end", ("aws-access-key-id", "jwt"))
