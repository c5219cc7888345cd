"""Keys cases of the world corpus: vendor API keys, passwords in prose, secrets inside URLs and
connection strings, and strings that only look like keys.

`cases(rng)` returns a list of {"text": str, "expected": [{"label": ..., "value": str}],
"keep": [str, ...]} dicts. `value` is the exact substring that must be redacted (an empty list
for a negative); `keep` lists substrings that must survive redaction unchanged: the host, port,
path and query names of a URL whose password or token is redacted, the label before a prose
password, the server of a connection string. Labels are `API_KEY` (a recognised vendor key),
`PASSWORD` (a URL's or connection string's password, a password after a prose label) and
`CREDENTIAL` (any other secret-named value, such as `?token=`).

Every value is built here from its vendor's documented format, never by running Paddock's
detectors, so the corpus measures them rather than echoing them:

- Hugging Face user access tokens: `hf_` and 34 letters (huggingface.co/docs/hub/security-tokens;
  the organisation tokens of the deprecated API were `api_org_` and 34 letters).
- Anthropic Admin API keys: `sk-ant-admin01-`, 93 base64url characters and `AA`
  (docs.anthropic.com, Admin API; the `AA` tail as in the `sk-ant-api03-` keys).
- OpenAI project, service-account and admin keys: `sk-proj-`, `sk-svcacct-`, `sk-admin-`, then
  58 or 74 base64url characters, `T3BlbkFJ` (base64 of "OpenAI") and as many again.
- GitHub fine-grained personal access tokens: `github_pat_`, 22 base62 characters, `_`, 59 base62
  characters (github.blog, "Introducing fine-grained personal access tokens").
- Google OAuth 2.0 refresh tokens: `1//0` and about a hundred base64url characters
  (developers.google.com/identity/protocols/oauth2).
- Azure Storage account keys: 64 random bytes in base64 (88 characters, `==`), in a
  `DefaultEndpointsProtocol=…;AccountKey=…` connection string; Service Bus `SharedAccessKey`
  (32 bytes, 44 characters); SAS tokens whose `sig` is a base64 HMAC-SHA256, URL-encoded
  (learn.microsoft.com, "Create a service SAS", "Configure Azure Storage connection strings").
- Databricks personal access tokens: `dapi` and 32 hex digits, newer ones with a `-2` suffix
  (docs.databricks.com, "Authentication using Databricks personal access tokens").
- Vercel: `vcp_` (personal), `vci_` (integration), `vca_`/`vcr_` (app access/refresh), `vck_`
  (API key) prefixes (vercel.com/changelog/new-token-formats-and-secret-scanning), followed here by
  56 base62 characters; Vercel Blob read-write tokens `vercel_blob_rw_<store id>_<secret>`.
- Supabase personal access tokens `sbp_` and 40 hex digits; secret API keys `sb_secret_…`
  (supabase.com/docs/guides/api/api-keys); publishable keys `sb_publishable_…` are public and are
  negatives here.
- Linear personal API keys: `lin_api_` and 40 base62 characters (linear.app/developers).
- Postmark server and account tokens: UUIDs, only ever with their label
  (`X-Postmark-Server-Token`, `X-Postmark-Account-Token`, `POSTMARK_API_TOKEN`;
  postmarkapp.com/developer/api/overview).
- Mailgun private API keys: `key-` and 32 lower-case base36 characters
  (documentation.mailgun.com, "Authentication"; the dashboard's legacy key format).

Passwords after prose labels cover twelve languages; their negatives are the phrases prose
writes after the same labels ("the password is incorrect", "Passwort: falsch", masks,
placeholders). URL cases cover database, cache, queue and git URLs, query parameters, webhooks
and ADO.NET, JDBC and Azure connection strings; each expects only the secret and keeps the rest.
"""

import base64
import string
import urllib.parse
import uuid

ALNUM = string.ascii_letters + string.digits
LETTERS = string.ascii_letters
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
BASE36 = string.ascii_lowercase + string.digits


def rand(rng, chars, n):
    return "".join(rng.choice(chars) for _ in range(n))


def case(text, expected=(), keep=()):
    for _, value in expected:
        assert value in text, (value, text)
    for kept in keep:
        assert kept in text, (kept, text)
    return {
        "text": text,
        "expected": [{"label": label, "value": value} for label, value in expected],
        "keep": list(keep),
    }


# ------------------------------------------------------------------ vendor keys

def hugging_face(rng):
    return "hf_" + rand(rng, LETTERS, 34)


def hugging_face_org(rng):
    return "api_org_" + rand(rng, LETTERS, 34)


def anthropic_admin(rng):
    return "sk-ant-admin01-" + rand(rng, B64URL, 93) + "AA"


def openai(rng, kind):
    half = rng.choice([58, 74])
    return f"sk-{kind}-" + rand(rng, B64URL, half) + "T3BlbkFJ" + rand(rng, B64URL, half)


def github_fine_grained(rng):
    return "github_pat_" + rand(rng, ALNUM, 22) + "_" + rand(rng, ALNUM, 59)


def google_refresh(rng):
    return "1//0" + rand(rng, B64URL, rng.randint(95, 100))


def azure_account_key(rng):
    return base64.b64encode(rng.randbytes(64)).decode()


def azure_shared_access_key(rng):
    return base64.b64encode(rng.randbytes(32)).decode()


def azure_sas_signature(rng):
    return urllib.parse.quote(base64.b64encode(rng.randbytes(32)).decode(), safe="")


def databricks(rng):
    return "dapi" + rand(rng, HEX, 32) + rng.choice(["", "-2"])


def vercel(rng):
    return rng.choice(["vcp", "vci", "vca", "vcr", "vck"]) + "_" + rand(rng, ALNUM, 56)


def vercel_blob(rng):
    return "vercel_blob_rw_" + rand(rng, ALNUM, 16) + "_" + rand(rng, ALNUM, 30)


def supabase_pat(rng):
    return "sbp_" + rand(rng, HEX, 40)


def supabase_secret(rng):
    return "sb_secret_" + rand(rng, B64URL, 22) + "_" + rand(rng, ALNUM, 8)


def linear(rng):
    return "lin_api_" + rand(rng, ALNUM, 40)


def mailgun(rng):
    return "key-" + rand(rng, BASE36, 32)


# Contexts a key turns up in; `{k}` is the key, `{v}` an environment variable name.
KEY_CONTEXTS = [
    "export {v}={k}",
    "{v}={k} python train.py --epochs 3",
    "mytool deploy --token {k} --region eu-west-1",
    '{{"name": "ci", "api_key": "{k}"}}',
    "config:\n  auth:\n    token: {k}\n",
    "Here is the key you asked for: {k} (rotate it after the demo).",
    "curl -s -H 'Authorization: Bearer {k}' https://api.example.com/v1/me",
    "使用するキーは{k}です",
    "密钥{k}已经过期了吗？",
    "os.environ[\"{v}\"] = \"{k}\"",
    "Paste this into the settings page: `{k}`",
    "- name: Deploy\n  env:\n    {v}: {k}\n",
    "Authorization: token {k}",
    "GET https://api.example.com/v1/items?access_token={k}&limit=50",
    "| prod | {k} | rotated 2024-05 |",
    "{v}=\"{k}\"",
    "token = '{k}'",
    "토큰:{k}",
    "令牌：{k}",
    "ключ доступа: {k}.",
    "(the old one was {k})",
]


def key_section(rng, name, make, variable, count=12):
    out = []
    contexts = list(KEY_CONTEXTS)
    rng.shuffle(contexts)
    for i in range(count):
        key = make(rng)
        template = contexts[i % len(contexts)]
        out.append(case(template.format(k=key, v=variable), [("API_KEY", key)]))
    return out


def hugging_face_cli(rng):
    out = []
    for template in [
        "huggingface-cli login --token {k}",
        "huggingface-cli login --token {k} --add-to-git-credential",
        "hf auth login --token {k}",
        "HF_TOKEN={k} python app.py",
        "docker run -e HF_TOKEN={k} ghcr.io/acme/infer:latest",
        "from huggingface_hub import login\nlogin(token=\"{k}\")",
    ]:
        key = hugging_face(rng)
        out.append(case(template.format(k=key), [("API_KEY", key)]))
    return out


def azure_sections(rng):
    out = []
    for _ in range(10):
        account = rand(rng, string.ascii_lowercase, rng.randint(5, 12))
        key = azure_account_key(rng)
        text = rng.choice([
            "DefaultEndpointsProtocol=https;AccountName={a};AccountKey={k};EndpointSuffix=core.windows.net",
            "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName={a};AccountKey={k};EndpointSuffix=core.windows.net\"",
            "conn = 'DefaultEndpointsProtocol=https;AccountName={a};AccountKey={k}'",
        ]).format(a=account, k=key)
        out.append(case(text, [("API_KEY", key)], [f"AccountName={account}"]))
    for _ in range(10):
        namespace = rand(rng, string.ascii_lowercase, 8)
        key = azure_shared_access_key(rng)
        text = (f"Endpoint=sb://{namespace}.servicebus.windows.net/;"
                f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}")
        out.append(case(text, [("API_KEY", key)],
                        [f"{namespace}.servicebus.windows.net", "SharedAccessKeyName=RootManageSharedAccessKey"]))
    for i in range(10):
        account = rand(rng, string.ascii_lowercase, 8)
        sig = azure_sas_signature(rng)
        query = f"sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https&sig={sig}"
        if i % 2 == 0:
            text = f"https://{account}.blob.core.windows.net/reports/q3.pdf?{query}"
            keep = [f"{account}.blob.core.windows.net/reports/q3.pdf", "sv=2022-11-02", "&sig="]
        else:
            text = f"BlobEndpoint=https://{account}.blob.core.windows.net/;SharedAccessSignature={query}"
            keep = [f"BlobEndpoint=https://{account}.blob.core.windows.net/", "SharedAccessSignature=sv=2022-11-02"]
        out.append(case(text, [("API_KEY", sig)], keep))
    return out


def postmark(rng):
    out = []
    templates = [
        'curl "https://api.postmarkapp.com/email" -H "X-Postmark-Server-Token: {u}"',
        "X-Postmark-Account-Token: {u}",
        "POSTMARK_API_TOKEN={u}",
        "export POSTMARK_SERVER_TOKEN={u}",
        'const client = new postmark.ServerClient("{u}");',
        "postmark_server_token: \"{u}\"",
        '{{"PostmarkServerToken": "{u}"}}',
        "headers = {{'X-Postmark-Server-Token': '{u}'}}",
        "POSTMARK_API_KEY: {u}",
        "set POSTMARK_TOKEN={u}",
    ]
    for template in templates:
        token = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out.append(case(template.format(u=token), [("API_KEY", token)]))
    return out


# ------------------------------------------------------------------ prose passwords

WORDS = ["Sommer", "Winter", "tiger", "Blue", "Sonne", "luna", "Falcon", "gato", "Praia",
         "Kotek", "Fiets", "Sakura", "dragon", "Mango", "Rosa", "Orion"]


def password(rng):
    shape = rng.randrange(4)
    if shape == 0:
        return rng.choice(WORDS) + str(rng.randint(10, 9999)) + rng.choice("!#$%&*@")
    if shape == 1:
        return rand(rng, ALNUM, rng.randint(10, 16))
    if shape == 2:
        return rng.choice(WORDS) + rng.choice("_-.") + rng.choice(WORDS).lower() + str(rng.randint(1, 99))
    return rand(rng, ALNUM + "!#$%&*@", rng.randint(8, 14))


PROSE = {
    "en": ["my password is {p}", "The password is {p}.", "password: {p}",
           "Password: {p} (don't share it)", "pw: {p}", "passcode: {p}",
           "Here's the wifi password: {p}", "my new password is {p}, remember it",
           "Hi Bob, the guest wifi password is {p} - see you at 10",
           "Username: jdoe\nPassword: {p}\n", "(password: {p}).", "**Password:** {p}"],
    "de": ["Mein Passwort ist {p}.", "Passwort: {p}", "Das Kennwort lautet {p}", "Kennwort: {p}",
           "Das neue Passwort ist {p}, bitte nicht weitergeben."],
    "fr": ["Mon mot de passe est {p}.", "mot de passe : {p}", "Le mot de passe est {p}",
           "Mot de passe: {p}", "Voici le mot de passe : {p} merci"],
    "es": ["Mi contraseña es {p}.", "contraseña: {p}", "La contraseña es {p}", "Contraseña: {p}",
           "la nueva contraseña es {p}, no la compartas"],
    "pt": ["Minha senha é {p}.", "senha: {p}", "A senha é {p}", "Senha: {p}",
           "a nova senha é {p}, não compartilhe"],
    "ru": ["Мой пароль: {p}", "пароль: {p}", "Пароль — {p}", "Новый пароль: {p}.",
           "логин admin, пароль: {p}"],
    "ja": ["パスワードは{p}です", "パスワード：{p}", "パスワード: {p}", "新しいパスワードは「{p}」です",
           "ログイン情報 パスワード：{p}。"],
    "zh": ["我的密码是{p}", "密码：{p}", "密码: {p}", "新密码是{p}。", "WiFi密码：{p}"],
    "ko": ["비밀번호는 {p}입니다", "비밀번호: {p}", "비밀번호：{p}", "새 비밀번호는 {p}", "와이파이 비밀번호: {p}"],
    "nl": ["Mijn wachtwoord is {p}.", "wachtwoord: {p}", "Het wachtwoord is {p}", "Wachtwoord: {p}",
           "het nieuwe wachtwoord is {p}, niet delen"],
    "it": ["La mia password è {p}.", "password: {p}", "La password è {p}", "Password: {p}",
           "la nuova password è {p}, non condividerla"],
    "pl": ["Moje hasło to {p}.", "hasło: {p}", "Hasło: {p}", "Nowe hasło to {p}", "Hasło to {p}, nie udostępniaj"],
}

# What prose writes after a password label that is not a password.
PROSE_NEGATIVES = [
    "The password is incorrect.",
    "Password is required.",
    "password: ******",
    "password: <redacted>",
    "Your password is too short.",
    "Password: must contain at least 8 characters",
    "The password was reset yesterday.",
    "password is case-sensitive",
    "Password: [REDACTED]",
    "password: (none)",
    "Password: N/A",
    "password: ${DB_PASSWORD}",
    "Forgot your password? Click here to reset it.",
    "Passwort: falsch",
    "Das Passwort ist ungültig.",
    "Le mot de passe est incorrect.",
    "mot de passe : obligatoire",
    "La contraseña es incorrecta.",
    "contraseña: obligatoria",
    "A senha é obrigatória.",
    "senha: incorreta",
    "Пароль: неверный",
    "パスワードが間違っています",
    "密码错误，请重试",
    "비밀번호가 틀렸습니다",
    "Het wachtwoord is onjuist.",
    "La password è errata.",
    "Hasło: wymagane",
    "Choose a password with letters and digits.",
    "Password managers generate random passwords for you.",
    "password: •••••••",
    "The passcode is sent by SMS.",
    "Enter your password:",
    "Password: see 1Password",
    "Password: same as before",
    "The password for the vault is in 1Password.",
    "Passwort vergessen?",
    "Mot de passe oublié ?",
    "¿Olvidaste tu contraseña?",
    "Esqueceu sua senha?",
    "Забыли пароль?",
    "パスワードを忘れた場合",
    "忘记密码",
    "비밀번호를 잊으셨나요?",
    "password: (see the vault)",
    "pwd: /home/deploy/app",
    "password = self.password",
    "if password == confirm_password:",
]


def prose_section(rng):
    out = []
    for language, templates in PROSE.items():
        for i in range(max(6, len(templates))):
            value = password(rng)
            template = templates[i % len(templates)]
            text = template.format(p=value)
            label_part = template.split("{p}")[0].strip()
            keep = [label_part] if label_part else []
            out.append(case(text, [("PASSWORD", value)], keep))
    out += [case(text) for text in PROSE_NEGATIVES]
    out.append(case("Password reset emails come from noreply@example.com.",
                    [("EMAIL", "noreply@example.com")]))
    return out


# ------------------------------------------------------------------ URLs and connection strings

def host(rng):
    return rng.choice(["db", "cache-01", "mq", "primary", "replica-2"]) + "." + rng.choice(
        ["internal.example", "prod.example.net", "eu-west-1.example.com", "svc.cluster.local"])


def url_section(rng):
    out = []
    for scheme, port, path in [
        ("postgres", 5432, "/app"), ("postgresql", 5432, "/billing?sslmode=require"),
        ("mysql", 3306, "/shop"), ("redis", 6379, "/0"), ("rediss", 6380, "/1"),
        ("mongodb", 27017, "/admin?authSource=admin"), ("amqp", 5672, "/vhost"),
        ("amqps", 5671, "/"), ("ftp", 21, "/pub/releases"), ("smtp", 587, ""),
    ]:
        for user in ["app", ""]:
            pw = password(rng).replace("@", "").replace("/", "").replace("#", "").replace("?", "")
            h = host(rng)
            text = f"{scheme}://{user}:{pw}@{h}:{port}{path}"
            if rng.random() < 0.5:
                text = f"DATABASE_URL={text}" if scheme.startswith(("postgres", "mysql")) else f"url = \"{text}\""
            out.append(case(text, [("PASSWORD", pw)], [f"@{h}:{port}{path}", f"{scheme}://{user}:"]))
    for _ in range(4):
        pw = rand(rng, ALNUM, 14)
        cluster = "cluster0." + rand(rng, string.ascii_lowercase + string.digits, 5) + ".mongodb.net"
        text = f"mongodb+srv://svc_reader:{pw}@{cluster}/analytics?retryWrites=true&w=majority"
        out.append(case(text, [("PASSWORD", pw)], [f"@{cluster}/analytics?retryWrites=true&w=majority", "svc_reader"]))
    # Git remotes with a token as the password or as the whole userinfo.
    for _ in range(4):
        token = "ghs_" + rand(rng, ALNUM, 36)
        text = f"git clone https://x-access-token:{token}@github.com/acme/repo.git"
        out.append(case(text, [("API_KEY", token)], ["https://x-access-token:", "@github.com/acme/repo.git"]))
    for _ in range(2):
        token = "ghp_" + rand(rng, ALNUM, 36)
        text = f"git remote set-url origin https://{token}@github.com/acme/tools.git"
        out.append(case(text, [("API_KEY", token)], ["https://", "@github.com/acme/tools.git"]))
    for _ in range(2):
        token = "glpat-" + rand(rng, B64URL, 20)
        text = f"https://oauth2:{token}@gitlab.example.com/group/project.git"
        out.append(case(text, [("API_KEY", token)], ["https://oauth2:", "@gitlab.example.com/group/project.git"]))
    for _ in range(2):
        pw = rand(rng, ALNUM, 20)
        text = f"https://x-access-token:{pw}@github.com/acme/repo.git"
        out.append(case(text, [("PASSWORD", pw)], ["https://x-access-token:", "@github.com/acme/repo.git"]))
    # Query parameters: the values of secret-named ones, never the names or the others.
    for _ in range(3):
        token = rand(rng, ALNUM, 24)
        key = rand(rng, ALNUM, 20)
        text = f"GET https://api.example.com/v2/reports?access_token={token}&format=csv&api_key={key}&page=3"
        out.append(case(text, [("CREDENTIAL", token), ("CREDENTIAL", key)],
                        ["https://api.example.com/v2/reports?access_token=", "&format=csv&api_key=", "&page=3"]))
    for _ in range(3):
        signature = rand(rng, HEX, 64)
        text = ("https://bucket.s3.amazonaws.com/exports/data.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={signature}")
        out.append(case(text, [("CREDENTIAL", signature)],
                        ["https://bucket.s3.amazonaws.com/exports/data.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256", "&X-Amz-Signature="]))
    for _ in range(2):
        pw = rand(rng, ALNUM, 12)
        text = f"jdbc:mysql://db.internal.example:3306/shop?user=app&password={pw}&useSSL=true"
        out.append(case(text, [("PASSWORD", pw)], ["jdbc:mysql://db.internal.example:3306/shop?user=app&password=", "&useSSL=true"]))
    # Webhooks: the secret is the last path segment.
    for _ in range(3):
        team, bot, secret = "T" + rand(rng, string.ascii_uppercase + string.digits, 10), "B" + rand(rng, string.ascii_uppercase + string.digits, 10), rand(rng, ALNUM, 24)
        text = f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{team}/{bot}/{secret}"
        out.append(case(text, [("API_KEY", secret)], [f"https://hooks.slack.com/services/{team}/{bot}/"]))
    for _ in range(3):
        webhook_id, token = str(rng.randint(10**17, 10**18 - 1)), rand(rng, B64URL, 68)
        text = f"post alerts to https://discord.com/api/webhooks/{webhook_id}/{token} please"
        out.append(case(text, [("API_KEY", token)], [f"https://discord.com/api/webhooks/{webhook_id}/", " please"]))
    # ADO.NET and ODBC connection strings.
    for _ in range(3):
        pw = password(rng).replace(";", "")
        text = f"Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog=orders;User Id=app;Password={pw};Encrypt=True;"
        out.append(case(text, [("PASSWORD", pw)], ["Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog=orders;User Id=app;Password=", ";Encrypt=True;"]))
    for _ in range(2):
        pw = rand(rng, ALNUM, 12)
        text = f"Driver={{ODBC Driver 18 for SQL Server}};Server=db01;Database=hr;Uid=report;Pwd={pw};"
        out.append(case(text, [("PASSWORD", pw)], ["Server=db01;Database=hr;Uid=report;Pwd="]))
    for _ in range(2):
        pw = rand(rng, ALNUM, 12)
        text = f"curl -u deploy:{pw} https://ci.example.com/job/build/api/json"
        out.append(case(text, [("PASSWORD", pw)], ["curl -u deploy:", " https://ci.example.com/job/build/api/json"]))
    return out


# ------------------------------------------------------------------ look-alikes

def negatives(rng):
    texts = [
        "Fixed in commit " + rand(rng, HEX, 40) + ".",
        "git checkout " + rand(rng, HEX, 7),
        "Request id " + str(uuid.UUID(int=rng.getrandbits(128), version=4)) + " failed.",
        "trace_id=" + str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "sha256:" + rand(rng, HEX, 64),
        "docker pull nginx@sha256:" + rand(rng, HEX, 64),
        "MD5 (release.tar.gz) = " + rand(rng, HEX, 32),
        '"integrity": "sha512-' + base64.b64encode(rng.randbytes(64)).decode() + '"',
        "<img src=\"data:image/png;base64," + base64.b64encode(rng.randbytes(180)).decode() + "\">",
        "Upgrade to version 2.31.0 or v3.0.0-rc.2.",
        "Build 20240315.4 of hf-transformers 4.41.2 passed.",
        "from huggingface_hub import hf_hub_download",
        "Use sk-learn's pipeline for the sk-ant-like naming scheme.",
        "a task-force of risk-averse desk-bound people",
        "Store it in a key-value map with key-based routing.",
        "const publishable = \"sb_publishable_" + rand(rng, B64URL, 31) + "\"",
        "Stripe publishable key pk_live_" + rand(rng, ALNUM, 24) + " goes in the browser.",
        "The rapidapi" + rand(rng, HEX, 32) + " endpoint",
        "Token prefixes: hf_, sk-proj-, github_pat_, dapi, vcp_, sbp_, lin_api_ and key-.",
        "github_pat_expiration_policy_for_the_organisation",
        "vercel_project_settings_for_the_team",
        "hf_" + "x" * 34 + " is a placeholder",
        "Set HF_TOKEN to your token before running.",
        "The Ethereum address 0x" + rand(rng, HEX, 40) + " received funds.",
        "MAC 3c:22:fb:" + rand(rng, HEX, 2) + ":" + rand(rng, HEX, 2) + ":" + rand(rng, HEX, 2),
        "Pod web-" + rand(rng, HEX, 9) + "-" + rand(rng, string.ascii_lowercase + string.digits, 5) + " restarted",
        "ETag: \"" + rand(rng, HEX, 32) + "\"",
        "YouTube video id " + rand(rng, B64URL, 11),
        "Slack channel C" + rand(rng, string.ascii_uppercase + string.digits, 10) + " and user U" + rand(rng, string.ascii_uppercase + string.digits, 10),
        "See https://github.com/acme/repo/blob/" + rand(rng, HEX, 40) + "/README.md",
        "ssh://git@github.com/acme/repo.git",
        "https://example.com:8443/path?page=2&sort=asc",
        "https://maps.example.com/search?q=coffee&key=value",
        "postgres://localhost:5432/app",
        "Connect with psql -h db.internal -U app app",
        "x = 1//0 + 2  # floor division by zero",
        "AccountName=acme;EndpointSuffix=core.windows.net",
        "Visit https://hooks.slack.com/ for the docs.",
        "https://api.example.com/reset?token=${RESET_TOKEN}",
        "http://localhost:3000/callback?code=4/0AfJohXk&state=xyz",
        "https://user@example.com/path",
        "docker login --password-stdin < token.txt",
        "gh auth login --with-token < mytoken.txt",
        "curl -u admin: https://ci.example.com",
        "The dapi prefix marks Databricks tokens.",
        "PGP fingerprint " + " ".join(rand(rng, "0123456789ABCDEF", 4) for _ in range(10)),
    ]
    return [case(text) for text in texts]


def cases(rng):
    out = []
    out += key_section(rng, "hugging face", hugging_face, "HF_TOKEN")
    out += key_section(rng, "hugging face org", hugging_face_org, "HUGGINGFACEHUB_API_TOKEN", 4)
    out += hugging_face_cli(rng)
    out += key_section(rng, "anthropic admin", anthropic_admin, "ANTHROPIC_ADMIN_KEY")
    out += key_section(rng, "openai project", lambda r: openai(r, "proj"), "OPENAI_API_KEY")
    out += key_section(rng, "openai service account", lambda r: openai(r, "svcacct"), "OPENAI_API_KEY")
    out += key_section(rng, "openai admin", lambda r: openai(r, "admin"), "OPENAI_ADMIN_KEY")
    out += key_section(rng, "github fine-grained", github_fine_grained, "GH_TOKEN")
    out += key_section(rng, "google refresh", google_refresh, "GOOGLE_REFRESH_TOKEN")
    out += key_section(rng, "databricks", databricks, "DATABRICKS_TOKEN")
    out += key_section(rng, "vercel", vercel, "VERCEL_TOKEN")
    out += key_section(rng, "vercel blob", vercel_blob, "BLOB_READ_WRITE_TOKEN", 4)
    out += key_section(rng, "supabase pat", supabase_pat, "SUPABASE_ACCESS_TOKEN")
    out += key_section(rng, "supabase secret", supabase_secret, "SUPABASE_SECRET_KEY")
    out += key_section(rng, "linear", linear, "LINEAR_API_KEY")
    out += key_section(rng, "mailgun", mailgun, "MAILGUN_API_KEY")
    out += azure_sections(rng)
    out += postmark(rng)
    out += prose_section(rng)
    out += url_section(rng)
    out += negatives(rng)
    rng.shuffle(out)
    return out
