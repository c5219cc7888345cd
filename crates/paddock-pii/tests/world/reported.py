"""The reported misses, and mixtures of what the other sections test one at a time, written
apart from the detectors' authors: each value in several scripts at once, in full-width form,
with invisible characters inside, and next to other values.

Identity numbers are drawn with python-stdnum's validators (a random candidate is kept only
when `is_valid` accepts it), phone numbers checked with `phonenumbers`.
"""
import string

import phonenumbers
from stdnum import luhn
from stdnum.cn import ric
from stdnum.es import dni
from stdnum.fi import hetu
from stdnum.mx import curp
from stdnum.us import ssn

FULL = {c: chr(ord(c) + 0xFEE0) for c in string.ascii_letters + string.digits + "@.-+:()"}
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


def full_width(value):
    return "".join(FULL.get(c, c) for c in value)


def sprinkle(rng, value):
    """`value` with one or two invisible characters between its characters."""
    chars = list(value)
    for _ in range(rng.randint(1, 2)):
        at = rng.randint(1, len(chars) - 1)
        chars.insert(at, rng.choice(INVISIBLE))
    return "".join(chars)


def draw(rng, make, valid):
    for _ in range(100000):
        value = make(rng)
        try:
            ok = valid(value)
        except Exception:  # stdnum raises on some birth places it has no county for
            ok = False
        if ok:
            return value
    raise AssertionError("no valid value drawn")


def digits(rng, n):
    return "".join(rng.choice(string.digits) for _ in range(n))


def china_id(rng):
    def make(r):
        body = f"{r.choice(['11', '31', '44', '51'])}{digits(r, 4)}{r.randint(1950, 2005)}{r.randint(1, 12):02}{r.randint(1, 28):02}{digits(r, 3)}"
        return body + r.choice(string.digits + "X")
    return draw(rng, make, ric.is_valid)


def spanish_dni(rng):
    return draw(rng, lambda r: digits(r, 8) + r.choice("TRWAGMYFPDXBNJZSQVHLCKE"), dni.is_valid)


def finnish_hetu(rng):
    def make(r):
        return f"{r.randint(1, 28):02}{r.randint(1, 12):02}{r.randint(50, 99):02}-{r.randint(2, 899):03}" + r.choice("0123456789ABCDEFHJKLMNPRSTUVWXY")
    return draw(rng, make, hetu.is_valid)


def mexican_curp(rng):
    def make(r):
        letters = "".join(r.choice("BCDFGHJKLMNPRSTVZ") if i != 1 else r.choice("AEIOU") for i in range(4))
        date = f"{r.randint(50, 99):02}{r.randint(1, 12):02}{r.randint(1, 28):02}"
        return (letters + date + r.choice("HM") + r.choice(["DF", "JC", "NL", "MC", "PL"])
                + "".join(r.choice("BCDFGHJKLMNPRSTVZ") for _ in range(3)) + "0" + r.choice(string.digits))
    return draw(rng, make, curp.is_valid)


def us_ssn(rng):
    def make(r):
        return f"{r.randint(1, 665):03}-{r.randint(1, 99):02}-{r.randint(1, 9999):04}"
    return draw(rng, make, ssn.is_valid)


def visa(rng):
    return draw(rng, lambda r: "4" + digits(r, 15), luhn.is_valid)


def phone(rng, region, make):
    def ok(value):
        try:
            return phonenumbers.is_valid_number(phonenumbers.parse(value, region))
        except phonenumbers.NumberParseException:
            return False
    return draw(rng, make, ok)


def tokyo(rng):
    return phone(rng, "JP", lambda r: f"03-{digits(r, 4)}-{digits(r, 4)}")


def beijing_mobile(rng):
    return phone(rng, "CN", lambda r: f"13{digits(r, 9)}")


def madrid(rng):
    return phone(rng, "ES", lambda r: f"91 {digits(r, 3)} {digits(r, 2)} {digits(r, 2)}")


def e164_de(rng):
    return phone(rng, "DE", lambda r: f"+49 30 {digits(r, 8)}")


def cases(rng):
    out = []

    def case(text, *expected, keep=()):
        out.append({"text": text, "expected": [{"label": l, "value": v} for l, v in expected],
                    "keep": list(keep)})

    # The misses as reported, with fresh values each time.
    for _ in range(8):
        user = rng.choice(["tanaka", "k.sato", "yui.m", "info"])
        mail = f"{user}@example.co.jp"
        case(f"連絡先：{mail} まで", ("EMAIL", mail))
        qq = f"{rng.randint(10000000, 9999999999)}@qq.com"
        case(f"请发邮件到{qq}，谢谢", ("EMAIL", qq))
        number = tokyo(rng)
        case(f"電話：{number}", ("PHONE", number))
        number = us_ssn(rng)
        case(f"fwiw my social is {number} if they ask", ("ID_NUMBER", number))
        number = madrid(rng)
        case(f"Teléfono: {number}", ("PHONE", number))
        number = beijing_mobile(rng)
        case(f"电话：{number}", ("PHONE", number))
    # Full-width forms: the original characters are what must go.
    for _ in range(10):
        number = tokyo(rng)
        case(f"お問い合わせ 電話：{full_width(number)}（平日）", ("PHONE", full_width(number)))
        mail = f"{rng.choice(['sales', 'hr', 'm.ito'])}@example.jp"
        case(f"メール：{full_width(mail)}", ("EMAIL", full_width(mail)))
        card = visa(rng)
        case(f"カード番号 {full_width(card)} で支払い", ("CARD", full_width(card)))
        number = china_id(rng)
        case(f"身份证号：{full_width(number)}。", ("ID_NUMBER", full_width(number)))
    # Invisible characters inside values.
    for _ in range(10):
        card = visa(rng)
        hidden = sprinkle(rng, card)
        case(f"card {hidden} exp 12/29", ("CARD", hidden))
        mail = f"{rng.choice(['ana', 'joe.k', 'ops'])}@example.org"
        hidden = sprinkle(rng, mail)
        case(f"write to {hidden} today", ("EMAIL", hidden))
        number = e164_de(rng)
        hidden = sprinkle(rng, number)
        case(f"Ruf an: {hidden}", ("PHONE", hidden))
        number = spanish_dni(rng)
        hidden = sprinkle(rng, number)
        case(f"DNI {hidden}", ("ID_NUMBER", hidden))
    # Several values of several kinds in one text of several scripts.
    for _ in range(15):
        number, mail, card = finnish_hetu(rng), f"mika{rng.randint(1, 99)}@example.fi", visa(rng)
        case(f"Henkilötunnus {number}, sähköposti {mail}; 카드 {card} 입니다",
             ("ID_NUMBER", number), ("EMAIL", mail), ("CARD", card))
        number, tel = mexican_curp(rng), madrid(rng)
        case(f"CURP：{number}　Teléfono {tel}。Спасибо!", ("ID_NUMBER", number), ("PHONE", tel))
        number, tel = china_id(rng), beijing_mobile(rng)
        case(f"ข้อมูล: 身份证 {number} โทร {tel} ครับ", ("ID_NUMBER", number), ("PHONE", tel))
    # Text around the values survives, byte for byte.
    for _ in range(10):
        mail = f"{rng.choice(['lee', 'park.j'])}@example.kr"
        case(f"담당자 이메일은 {mail}입니다. 감사합니다.", ("EMAIL", mail),
             keep=["담당자 이메일은 ", "입니다. 감사합니다."])
        number = tokyo(rng)
        case(f"【電話】{number}（受付 9:00〜18:00）", ("PHONE", number),
             keep=["【電話】", "（受付 9:00〜18:00）"])
    # Keys and URLs as reported: only the secret goes, the rest of the URL stays.
    alnum = string.ascii_letters + string.digits
    for _ in range(8):
        token = "hf_" + "".join(rng.choice(string.ascii_letters) for _ in range(34))
        case(f"huggingface-cli login --token {token} --add-to-git-credential", ("API_KEY", token),
             keep=["huggingface-cli login --token ", " --add-to-git-credential"])
        secret = "ghs_" + "".join(rng.choice(alnum) for _ in range(36))
        case(f"git clone https://x-access-token:{secret}@github.com/acme/repo.git", ("API_KEY", secret),
             keep=["https://x-access-token:", "@github.com/acme/repo.git"])
        team, bot = "T0" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(8)), "B0" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(8))
        hook = "".join(rng.choice(alnum) for _ in range(24))
        case(f"curl -X POST https://hooks.slack.com/services/{team}/{bot}/{hook} -d @msg.json",
             ("API_KEY", hook), keep=[f"https://hooks.slack.com/services/{team}/{bot}/", " -d @msg.json"])
        password = "".join(rng.choice(alnum) for _ in range(rng.randint(12, 20)))
        case(f"REDIS_URL=redis://:{password}@cache-01.internal.example:6379/0", ("PASSWORD", password),
             keep=["redis://:", "@cache-01.internal.example:6379/0"])
    return out
