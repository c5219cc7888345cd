#!/usr/bin/env python3
"""Generates tests/corpus.jsonl: labelled cases for the default PII filters.

Each line is {"text": ..., "expected": [{"label": CATEGORY, "value": ...}]}, where value is
the exact substring that must be redacted (for keys that keep their scheme or key name, only
the secret part). Values are built by construction — checksums computed here, phone numbers
checked with the independent Python port of libphonenumber (`phonenumbers`) — never by
running Paddock's detectors, so the corpus measures them rather than echoing them.

Run: python3 tests/corpus/generate.py > tests/corpus.jsonl (needs `phonenumbers`).
"""
import base64
import json
import random
import string
import sys

import phonenumbers

rng = random.Random(20261103)
cases = []


def case(text, *expected):
    for label, value in expected:
        assert value in text, (value, text)
    cases.append({"text": text, "expected": [{"label": l, "value": v} for l, v in expected]})


def rand(chars, n):
    return "".join(rng.choice(chars) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"


def mixed(n):
    while True:
        s = rand(ALNUM, n)
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s


# ---------------------------------------------------------------- keys
PROSE = [
    "Here is the config you asked for:",
    "Deploy failed again, logs below.",
    "I pasted this from the runbook.",
    "Can you check why this breaks?",
    "Temporary values for staging:",
    "FYI, rotating these tomorrow.",
]

api_keys = [
    lambda: "AKIA" + rand(string.ascii_uppercase + "234567", 16),
    lambda: "ghp_" + rand(ALNUM, 36),
    lambda: "gho_" + rand(ALNUM, 36),
    lambda: "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
    lambda: "glpat-" + rand(B64URL, 20),
    lambda: "xoxb-" + rand(string.digits, 12) + "-" + rand(string.digits, 13) + "-" + rand(ALNUM, 24),
    lambda: "sk_live_" + rand(ALNUM, 24),
    lambda: "rk_test_" + rand(ALNUM, 24),
    lambda: "AIza" + rand(B64URL, 35),
    lambda: "sk-ant-api03-" + rand(B64URL, 93) + "AA",
    lambda: "sk-proj-" + mixed(48),
    lambda: "sk-" + mixed(48),
    lambda: "npm_" + rand(ALNUM, 36),
    lambda: "pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 60),
    lambda: "hf_" + mixed(34),
    lambda: "SK" + rand("0123456789abcdef", 32),
    lambda: "SG." + rand(B64URL, 22) + "." + rand(B64URL, 43),
    lambda: "vch_" + rand(B64URL, 42) + rng.choice(ALNUM),
]
api_templates = [
    "{p} key: {k}",
    "{p}\nexport TOKEN_VALUE={k}\n",
    "use {k} for the CI job",
    "{p} `{k}`",
    "curl -H 'X-Api-Key: {k}' https://api.example.com/v1/items",
]
for i, make in enumerate(api_keys):
    for j in range(2):
        k = make()
        t = api_templates[(i + j) % len(api_templates)]
        case(t.format(p=rng.choice(PROSE), k=k), ("API_KEY", k))


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


for i in range(10):
    jwt = b64({"alg": "HS256", "typ": "JWT"}) + "." + b64({"sub": str(rng.randint(1, 10**6)), "iat": 1700000000 + i}) + "." + rand(B64URL, 43)
    t = ["session cookie was {j}", "decode this: {j} please", "id_token\n{j}\n", "jwt={j}"][i % 4]
    text = t.format(j=jwt)
    # `jwt=` is not a credential key, so the token is reported as a JWT only.
    case(text, ("JWT", jwt))

for i in range(12):
    cred = rand(ALNUM, rng.randint(20, 40))
    basic = base64.b64encode(f"user{i}:{rand(ALNUM, 10)}".encode()).decode()
    t = [
        ("Authorization: Bearer {c}", cred),
        ("curl -H \"Authorization: Bearer {c}\" https://api.example.com", cred),
        ("authorization: token {c}", cred),
        ("Authorization: Basic {c}", basic),
        ("headers = {{'Authorization': 'Bearer {c}'}}", cred),
        ("Proxy-Authorization: Basic {c}", basic),
    ][i % 6]
    case(t[0].format(c=t[1]), ("AUTHORIZATION", t[1]))

for i in range(16):
    pw = rng.choice(["hunter2!", "S3cure#Pass", "correct-horse-9", "Tr0ub4dor&3", "p@ssw0rd2024", "letmein" + str(i)])
    t = [
        ("DB_PASSWORD={v}", pw),
        ("password: {v}", pw),
        ('{{"password": "{v}"}}', pw),
        ("spring.datasource.password={v}", pw),
        ("Server=db;User Id=app;Password={v};", pw),
        ("postgres://app:{v}@db.internal:5432/main", pw),
        ("mysql://root:{v}@127.0.0.1/test", pw),
        ("curl -u admin:{v} https://ci.example.com", pw),
    ][i % 8]
    case(t[0].format(v=t[1]), ("PASSWORD", t[1]))

for i in range(16):
    v = rand(ALNUM, rng.randint(16, 40))
    t = [
        "client_secret = \"{v}\"",
        "\"api_key\": \"{v}\"",
        "AWS_SECRET_ACCESS_KEY={v}",
        "SLACK_SIGNING_SECRET={v}",
        "apiKey: '{v}'",
        "PADDOCK_DAEMON_HTTP_TOKEN={v}",
        "refresh_token: {v}",
        "webhook secret: {v}",
    ][i % 8]
    case(t.format(v=v), ("CREDENTIAL", v))

for i in range(8):
    body = "\n".join(rand(string.ascii_letters + string.digits + "+/", 64) for _ in range(rng.randint(3, 8)))
    kind = ["RSA ", "OPENSSH ", "EC ", ""][i % 4]
    key = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    case(f"{rng.choice(PROSE)}\n{key}\nthanks", ("PRIVATE_KEY", key))

# ---------------------------------------------------------------- e-mail
first = ["jane", "john.smith", "a.b", "maria_garcia", "li.wei", "o.brien", "dev+alerts", "x"]
domains = ["example.com", "mail.example.co.uk", "corp.example.org", "example.io", "uni.example.edu", "example.de", "sub.domain.example.net"]
for i in range(30):
    e = f"{rng.choice(first)}{rng.randint(0, 99) if i % 3 else ''}@{rng.choice(domains)}"
    t = [
        "Contact {e} for access.",
        "mailto:{e}",
        "<{e}>",
        "Send the report to {e}, thanks!",
        "From: Jane Doe <{e}>",
        "{e}",
        "cc: {e}; bcc: nobody",
        "reach me at ({e}).",
    ][i % 8]
    case(t.format(e=e), ("EMAIL", e))

# ---------------------------------------------------------------- ID numbers


def luhn_digit(body):
    s = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        s += d
    return str((10 - s % 10) % 10)


def digits(n):
    return "".join(rng.choice(string.digits) for _ in range(n))


def ssn():
    while True:
        a, g, s = rng.randint(1, 899), rng.randint(1, 99), rng.randint(1, 9999)
        if a != 666:
            return f"{a:03d}-{g:02d}-{s:04d}"


def sin():
    b = str(rng.randint(1, 7)) + digits(7)
    n = b + luhn_digit(b)
    return f"{n[:3]} {n[3:6]} {n[6:]}"


def bsn():
    while True:
        b = str(rng.randint(1, 9)) + digits(7)
        s = sum(int(c) * w for c, w in zip(b, range(9, 1, -1)))
        c = s % 11
        if c < 10:
            return b + str(c)


def tfn():
    w = [1, 4, 3, 7, 5, 8, 6, 9, 10]
    while True:
        b = digits(8)
        for last in range(10):
            n = b + str(last)
            if sum(int(c) * x for c, x in zip(n, w)) % 11 == 0:
                return f"{n[:3]} {n[3:6]} {n[6:]}"


def steuer_id():
    while True:
        ds = rng.sample(range(10), 9)
        if ds[0] == 0:
            continue
        rep = rng.choice(ds)
        d = ds + [rep]
        rng.shuffle(d)
        if d[0] == 0:
            continue
        p = 10
        for x in d:
            s = (x + p) % 10 or 10
            p = s * 2 % 11
        return "".join(map(str, d)) + str((11 - p) % 10)


def pesel():
    y, m, d = rng.randint(1950, 2010), rng.randint(1, 12), rng.randint(1, 28)
    mm = m + (20 if y >= 2000 else 0)
    b = f"{y % 100:02d}{mm:02d}{d:02d}" + digits(4)
    w = [1, 3, 7, 9, 1, 3, 7, 9, 1, 3]
    return b + str((10 - sum(int(c) * x for c, x in zip(b, w)) % 10) % 10)


def cpf(formatted):
    while True:
        b = digits(9)
        if len(set(b)) > 1:
            break
    for n in (9, 10):
        s = sum(int(c) * (n + 1 - i) for i, c in enumerate(b))
        r = s * 10 % 11
        b += str(0 if r == 10 else r)
    return f"{b[:3]}.{b[3:6]}.{b[6:9]}-{b[9:]}" if formatted else b


def nir(spaced):
    sex, yy, mm, dep, com, order = rng.choice("12"), rng.randint(0, 99), rng.randint(1, 12), rng.randint(1, 95), rng.randint(1, 999), rng.randint(1, 999)
    if dep == 20:
        dep = 21
    body = f"{sex}{yy:02d}{mm:02d}{dep:02d}{com:03d}{order:03d}"
    key = f"{97 - int(body) % 97:02d}"
    if spaced:
        return f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key}"
    return body + key


VD = [[0,1,2,3,4,5,6,7,8,9],[1,2,3,4,0,6,7,8,9,5],[2,3,4,0,1,7,8,9,5,6],[3,4,0,1,2,8,9,5,6,7],[4,0,1,2,3,9,5,6,7,8],[5,9,8,7,6,0,4,3,2,1],[6,5,9,8,7,1,0,4,3,2],[7,6,5,9,8,2,1,0,4,3],[8,7,6,5,9,3,2,1,0,4],[9,8,7,6,5,4,3,2,1,0]]
VP = [[0,1,2,3,4,5,6,7,8,9],[1,5,7,6,2,8,3,0,9,4],[5,8,0,3,7,9,6,1,4,2],[8,9,1,6,0,4,3,5,2,7],[9,4,5,3,1,2,6,8,7,0],[4,2,8,6,5,7,3,9,0,1],[2,7,9,3,8,0,6,4,1,5],[7,0,4,6,9,1,3,2,5,8]]
VINV = [0,4,3,2,1,5,6,7,8,9]


def aadhaar():
    b = str(rng.randint(2, 9)) + digits(10)
    c = 0
    for i, x in enumerate(reversed(b)):
        c = VD[c][VP[(i + 1) % 8][int(x)]]
    n = b + str(VINV[c])
    return f"{n[:4]} {n[4:8]} {n[8:]}"


def my_number():
    b = digits(11)
    s = sum(int(c) * w for c, w in zip(b, [6, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2]))
    r = s % 11
    n = b + str(0 if r <= 1 else 11 - r)
    return f"{n[:4]} {n[4:8]} {n[8:]}"


def rrn():
    while True:
        yy, mm, dd = rng.randint(50, 99), rng.randint(1, 12), rng.randint(1, 28)
        b = f"{yy:02d}{mm:02d}{dd:02d}" + str(rng.choice([1, 2])) + digits(5)
        s = sum(int(c) * w for c, w in zip(b, [2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5]))
        return f"{b[:6]}-{b[6:]}{(11 - s % 11) % 10}"


def personnummer():
    yy, mm, dd = rng.randint(40, 99), rng.randint(1, 12), rng.randint(1, 28)
    b = f"{yy:02d}{mm:02d}{dd:02d}" + digits(3)
    return f"{b[:6]}-{b[6:]}{luhn_digit(b)}"


def china():
    area = rng.choice(["110105", "310104", "440305", "510107", "330106"])
    y, m, d = rng.randint(1950, 2005), rng.randint(1, 12), rng.randint(1, 28)
    b = f"{area}{y}{m:02d}{d:02d}" + digits(3)
    s = 0
    for c in b:
        s = (s + int(c)) * 2 % 11
    c = (12 - s % 11) % 11
    return b + ("X" if c == 10 else str(c))


def dni():
    n = rng.randint(10000000, 99999999)
    return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"


def nie():
    p = rng.choice("XYZ")
    n = rng.randint(1000000, 9999999)
    v = int(str("XYZ".index(p)) + str(n))
    return f"{p}{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[v % 23]}"


def nino():
    first = rng.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = rng.choice("ABCEGHJKLMNPRSTWXYZ")
    if first + second in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"):
        second = "A"
    d = digits(6)
    return f"{first}{second} {d[:2]} {d[2:4]} {d[4:]} {rng.choice('ABCD')}"


ODD = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23]


def codice_fiscale():
    b = rand(string.ascii_uppercase, 6) + digits(2) + rng.choice("ABCDEHLMPRST") + f"{rng.randint(1, 71):02d}" + rng.choice(string.ascii_uppercase) + digits(3)
    s = 0
    for i, c in enumerate(b):
        v = int(c) if c.isdigit() else ord(c) - 65
        s += ODD[v] if i % 2 == 0 else v
    return b + chr(65 + s % 26)


ids = [
    ("SSN: {v}", ssn), ("Social Security Number {v}", ssn), ("her SIN is {v}", sin), ("BSN {v}", bsn),
    ("burgerservicenummer: {v}", bsn), ("TFN {v}", tfn), ("Steuer-ID: {v}", steuer_id), ("IdNr {v}", steuer_id),
    ("PESEL {v}", pesel), ("CPF {v}", lambda: cpf(True)), ("cpf: {v}", lambda: cpf(False)), ("NIR {v}", lambda: nir(True)),
    ("numéro de sécurité sociale {v}", lambda: nir(False)), ("Aadhaar: {v}", aadhaar), ("My Number {v}", my_number),
    ("주민등록번호 {v}", rrn), ("personnummer {v}", personnummer), ("ID card {v}", china), ("DNI {v}", dni),
    ("NIE {v}", nie), ("NI number {v}", nino), ("codice fiscale {v}", codice_fiscale), ("passport holder, RRN {v}", rrn),
]
for i in range(3):
    for t, make in ids:
        v = make()
        case(f"{rng.choice(['Applicant', 'Customer', 'Patient'])} record. " + t.format(v=v) + rng.choice([".", "", " - verified", ", ok"]), ("ID_NUMBER", v))

# ---------------------------------------------------------------- phones


def valid_phone(raw, region=None):
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(raw, region))
    except phonenumbers.NumberParseException:
        return False


intl = [
    "+44 20 7946 0{d3}", "+1 415 555 {d4}", "+49 30 {d6}", "+33 1 42 68 {d2} {d2}", "+34 912 345 {d3}",
    "+39 06 6982 {d4}", "+31 20 123 {d4}", "+55 11 91234-{d4}", "+86 10 6552 {d4}", "+91 98765 4{d4}",
    "+82 2 312 {d4}", "+81 3-3224-{d4}", "+61 2 9374 {d4}", "+46 8 123 456 {d2}", "+48 22 123 {d2} {d2}",
    "+1 (212) 555-{d4}",
]
added = 0
for i in range(60):
    if added >= 30:
        break
    f = intl[i % len(intl)]
    p = f.replace("{d2}", "{}").format(*[digits(2) for _ in range(f.count("{d2}"))]) if "{d2}" in f else f
    p = p.replace("{d3}", digits(3)).replace("{d4}", digits(4)).replace("{d6}", digits(6))
    if not valid_phone(p):
        continue
    added += 1
    t = ["Call me on {p}.", "WhatsApp {p}", "office: {p}", "My number is {p}, evenings only.", "{p}"][i % 5]
    case(t.format(p=p), ("PHONE", p))

us = 0
while us < 14:
    a, e = rng.randint(201, 989), rng.randint(201, 989)
    n = f"{a}{e}{digits(4)}"
    if not valid_phone(n, "US"):
        continue
    fmt = [f"({n[:3]}) {n[3:6]}-{n[6:]}", f"{n[:3]}-{n[3:6]}-{n[6:]}", f"{n[:3]}.{n[3:6]}.{n[6:]}", f"1-{n[:3]}-{n[3:6]}-{n[6:]}"][us % 4]
    t = ["Ring {p} after 5pm", "Front desk {p}", "text {p}", "ph {p}"][us % 4]
    case(t.format(p=fmt), ("PHONE", fmt))
    us += 1

national = [("DE", "030 {d6}"), ("GB", "020 7946 0{d3}"), ("FR", "01 42 68 {d2} {d2}"), ("NL", "020 123 {d4}"), ("JP", "03-3224-{d4}"), ("AU", "(02) 9374 {d4}"), ("IT", "06 6982 {d4}")]
labels = ["Tel. {p}", "Telefon: {p}", "phone: {p}", "mobile {p}", "Téléphone : {p}"]
nat = 0
for i in range(80):
    if nat >= 16:
        break
    region, f = national[i % len(national)]
    p = f.replace("{d2}", "{}").format(*[digits(2) for _ in range(f.count("{d2}"))]) if "{d2}" in f else f
    p = p.replace("{d3}", digits(3)).replace("{d4}", digits(4)).replace("{d6}", digits(6))
    if not valid_phone(p, region):
        continue
    nat += 1
    case(labels[i % len(labels)].format(p=p), ("PHONE", p))

# ---------------------------------------------------------------- cards
iins = [("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16), ("65", 16), ("3530", 16), ("36", 14), ("62", 19), ("6759", 16)]
for i in range(32):
    prefix, length = iins[i % len(iins)]
    body = prefix + digits(length - len(prefix) - 1)
    n = body + luhn_digit(body)
    if length == 15:
        shown = [n, f"{n[:4]} {n[4:10]} {n[10:]}", f"{n[:4]}-{n[4:10]}-{n[10:]}"][i % 3]
    elif length == 14:
        shown = [n, f"{n[:4]} {n[4:10]} {n[10:]}"][i % 2]
    else:
        groups = [n[k:k + 4] for k in range(0, len(n), 4)]
        shown = [n, " ".join(groups), "-".join(groups)][i % 3]
    t = ["Card: {c}", "pay with {c} exp 04/29", "my visa {c}", "{c} (CVV on back)", "charged to card {c}."][i % 5]
    case(t.format(c=shown), ("CARD", shown))

# ---------------------------------------------------------------- mixed
for i in range(10):
    e = f"{rng.choice(first)}@{rng.choice(domains)}"
    body = "4" + digits(14)
    c = body + luhn_digit(body)
    k = "ghp_" + rand(ALNUM, 36)
    case(f"Hi, I'm at {e}, card {c}, and the token is {k}.", ("EMAIL", e), ("CARD", c), ("API_KEY", k))

# ---------------------------------------------------------------- hard negatives
negatives = [
    "Request id 550e8400-e29b-41d4-a716-446655440000 failed.",
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b.",
    "Merged 9a0364b9e99bb480dd25e1f0284c8555 into main",
    "Logged at 2024-03-15T14:22:31.123Z by the worker.",
    "timestamp 1710512551 and 1710512551123",
    "Order #100234567 shipped on 2024-03-15.",
    "Invoice 2024-000184-17 is due.",
    "ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2.",
    "Upgrade to version 1.24.3 or v2.0.0-rc.1.",
    "Price: $1,299.99 (was €1.499,00).",
    "Server at 192.168.100.200 and 10.0.0.1:8080.",
    "IPv6 2001:db8:85a3::8a2e:370:7334 is reachable.",
    "Card number 4111 1111 1111 1112 is not valid.",
    "Tracking 1234 5678 9012 3456 arrived.",
    "Account 123456789 was closed.",
    "Reference 12345678901 for your claim.",
    "Batch 9876543210 processed.",
    "Use icon@2x.png for retina screens.",
    "npm install @types/node@18.11.9 lodash@4.17.21",
    "Ping me @alice on Slack.",
    "Run sk-learn-tutorial-for-beginners-part-two notebooks.",
    "Set max_tokens: 4096 and temperature: 0.2.",
    "token_count = 1532 for this prompt",
    "Password: the one you chose at signup.",
    "password = self.password",
    "apiKey: process.env.API_KEY",
    "DB_PASSWORD=${DB_PASSWORD}",
    "token: <your-token-here>",
    "The secret is to keep going.",
    "Bearer tokens expire after an hour.",
    "Basic authentication is disabled.",
    "See https://example.com/docs/page?id=12345678901.",
    "Call the function with 3 arguments at 10:30.",
    "The meeting room is B-1204, floor 12.",
    "Temperature 36.6 and pressure 120/80.",
    "Coordinates 52.520008, 13.404954.",
    "Build 20240315.4 passed 1,024 tests in 12.5s.",
    "SKU AB-123456-XY is back in stock.",
    "Phone model: iPhone 15, 256 GB.",
    "Room 415 555 chairs were delivered.",
    "Error code 0x80070005 returned.",
    "Matrix size 1024x768 at 60 Hz.",
    "Sequence 1 2 3 4 5 6 7 8 9 10.",
    "Lottery numbers 07 14 21 28 35 42.",
    "Hex color #FF5733 and rgb(255, 87, 51).",
    "The year 1984 and the year 2001.",
    "Postal code 10115 Berlin, 75008 Paris.",
    "PR #4821 closes issue #4790.",
    "MD5 d41d8cd98f00b204e9800998ecf8427e of the empty file.",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Date 15.03.2024 and 03/15/2024.",
    "GTIN 00012345600012 on the box.",
    "Bank sort code 12-34-56.",
    "Read chapter 3.2.1 for details.",
    "Seed 8675309 gives the same output.",
    "Offset 0000000000001234 in the file.",
    "Duration PT1H30M and P3D.",
    "Latency p99 = 240ms over 86400 samples.",
    "Serial number SN-2024-0001938.",
    "Commit abc1234 reverted def5678.",
    "key = value pairs are parsed line by line.",
    "The token limit is 8192 per request.",
    "Order 4111111111111111111111 failed validation.",
    "Base64 aGVsbG8gd29ybGQ= decodes to hello world.",
    "user@localhost is not routable.",
    "The 100-200-3000 range is reserved.",
    "Pages 123-45-678 of the archive.",
    "Flight LH 400 departs gate 45.",
    "docker run -p 8080:80 -e LOG_LEVEL=debug nginx:1.25",
    "Kubernetes pod web-7d4b9c8f6-x2k9p restarted.",
    "The answer is 42, not 4,200,000.",
    "Zip 94105-1234 in San Francisco.",
    "Call count: 12 345 678 this month.",
    "Rows 1-100 of 2,345,678.",
    "Secret Santa is on Friday.",
    "A passphrase should be long.",
    "Credentials are rotated every 90 days.",
    "Set authorization: required in the policy file.",
    "Version 10.0.19045.3803 of Windows.",
]
for n in negatives:
    case(n)

for line in cases:
    sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
print(f"{len(cases)} cases", file=sys.stderr)
