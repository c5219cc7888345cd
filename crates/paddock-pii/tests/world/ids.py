"""ID_NUMBER cases of the world corpus: national identity numbers of 17 more regions.

`cases(rng)` returns a list of {"text": str, "expected": [{"label": "ID_NUMBER", "value": str}]}
dicts, `value` being the exact substring to redact (an empty list for a negative).

Every value is built here by construction, from the rules the issuing authorities publish, and
is then checked with python-stdnum (`pip install python-stdnum`): each positive must pass the
stdnum validator of its document and each corrupted value (a wrong check digit or letter, an
impossible date or place code) must fail it. Paddock's detectors are never run here, so the
corpus measures them rather than echoing them.

Three documents have no stdnum module, and their values are checked with the algorithm their
issuing authority publishes, written out below (and tested on the authority's own sample):
Singapore NRIC/FIN (ICA), Hong Kong HKID (Immigration Department, sample `A123456(3)`) and
Taiwan national ID / resident certificate (Ministry of the Interior, sample `A123456789`).
Colombian cédulas carry no check digit at all (the Registraduría issues 6 to 10 digits); the
Colombian NIT, which is a person's cédula plus a DIAN check digit, is checked with
stdnum.co.nit.

Formats that the detector may only redact next to a document label (purely numeric shapes that
order numbers and timestamps share) are always embedded with a label here; distinctive
alphanumeric or punctuated shapes also appear without one. Sentences are in English, the
region's language, Chinese and Japanese (values glued to the text, after a full-width colon),
Thai, Arabic and Russian. Besides the sections per format there are texts holding two values,
labels in other scripts and prose for existing documents (CN, JP, KR, US, checked with stdnum as
well), and about thirty ID-shaped negatives: order numbers, timestamps, versions and serials
with the right digit count and no label or a failing check.
"""

import datetime

from stdnum import luhn
from stdnum.ar import cuit, dni
from stdnum.be import nn
from stdnum.cl import rut
from stdnum.co import nit
from stdnum.dk import cpr
from stdnum.fi import hetu
from stdnum.ie import pps
from stdnum.il import idnr as il_idnr
from stdnum.mx import curp
from stdnum.my import nric as my_nric
from stdnum.no import fodselsnummer
from stdnum.pt import nif
from stdnum.tr import tckimlik
from stdnum.za import idnr as za_idnr
from stdnum.cn import ric
from stdnum.jp import in_ as jp_in
from stdnum.kr import rrn
from stdnum.us import ssn

ID = "ID_NUMBER"
PER_FORMAT = 40
WRONG_PER_FORMAT = 15


def positive(text, value):
    assert text.count(value) == 1, (value, text)
    return {"text": text, "expected": [{"label": ID, "value": value}]}


def negative(text):
    return {"text": text, "expected": []}


def digits(rng, n):
    return "".join(rng.choice("0123456789") for _ in range(n))


def birth_date(rng, first_year, last_year):
    start = datetime.date(first_year, 1, 1).toordinal()
    end = datetime.date(last_year, 12, 31).toordinal()
    return datetime.date.fromordinal(rng.randint(start, end))


def other_char(rng, alphabet, char):
    return rng.choice([c for c in alphabet if c != char])


# Sentences around a labelled value, in several languages and scripts. The label stands right
# before the value or a few words before it; `{v}` is glued to CJK and Thai text in some.
LABELLED = [
    "My {label} is {v}, please keep it private.",
    "Please confirm the {label}: {v}",
    "{label}：{v}",
    "我的{label}是{v}。",
    "{label}：{v}です。",
    "お客様の{label}は {v} です",
    "หมายเลข {label} ของฉันคือ {v}",
    "{label}：{v} ครับ",
    "رقم {label} الخاص بي هو {v}",
    "Мой {label}: {v}, не передавайте его.",
    "Номер документа ({label}) {v}",
    '{{"{label}": "{v}"}}',
    "{v} ({label})",
    "| {label} | {v} |",
    "<tr><th>{label}</th><td>{v}</td></tr>",
]

# Sentences for values whose shape stands on its own.
BARE = [
    "The scanned card shows {v} on the front.",
    "申请人 {v} 已通过审核。",
    "登録番号は{v}です。",
    "ผู้สมัคร {v} ผ่านการตรวจสอบแล้ว",
    "تم قبول الطلب {v} اليوم",
    "Данные с карты: {v}.",
    "Applicant: {v}",
    "(see {v})",
    "<td>{v}</td>",
    "ids = ['{v}']",
]


def render(rng, native, labels, value, bare=False):
    """A sentence holding `value`: one of the region's own sentences, a labelled sentence in
    another language, or (for values that stand alone) a sentence without a label."""
    pick = rng.random()
    if bare and pick < 0.3:
        template = rng.choice(BARE)
    elif pick < 0.6:
        template = rng.choice(native)
    else:
        template = rng.choice(LABELLED)
    return template.format(label=rng.choice(labels), v=value)


def section(rng, name, make, corrupt, validate, native, labels, bare=lambda v: False):
    """PER_FORMAT positives and WRONG_PER_FORMAT corrupted negatives of one format.

    `make(rng)` returns (compact, written) forms, `corrupt(rng, compact)` returns a corrupted
    (compact, written) pair; `validate` is the stdnum (or published-algorithm) check."""
    out = []
    for _ in range(PER_FORMAT):
        compact, written = make(rng)
        assert validate(compact), (name, compact)
        out.append(positive(render(rng, native, labels, written, bare(written)), written))
    for _ in range(WRONG_PER_FORMAT):
        compact, written = make(rng)
        wrong_compact, wrong = corrupt(rng, compact)
        assert not validate(wrong_compact), (name, wrong_compact)
        out.append(negative(render(rng, native, labels, wrong)))
    return out


# ---------------------------------------------------------------- Finland: henkilötunnus
HETU_CHECK = "0123456789ABCDEFHJKLMNPRSTUVWXY"


def make_hetu(rng):
    born = birth_date(rng, 1890, 2023)
    if born.year < 1900:
        sign = "+"
    elif born.year < 2000:
        sign = rng.choice("------YXWVU")
    else:
        sign = rng.choice("AAAAABCDEF")
    individual = rng.randint(2, 899)
    base = f"{born:%d%m%y}{individual:03d}"
    value = f"{born:%d%m%y}{sign}{individual:03d}{HETU_CHECK[int(base) % 31]}"
    return value, value


def corrupt_hetu(rng, value):
    wrong = value[:-1] + other_char(rng, HETU_CHECK, value[-1])
    return wrong, wrong


def hetu_stands_alone(value):
    return not (value[6] in "+-" and value[-1].isdigit())


# ---------------------------------------------------------------- Norway: fødselsnummer
def make_fodselsnummer(rng):
    while True:
        born = birth_date(rng, 1940, 2020)
        if born.year >= 2000:
            individual = rng.randint(500, 999)
        else:
            individual = rng.randint(0, 499)
        day = born.day + (40 if rng.random() < 0.2 else 0)  # D-number
        nine = f"{day:02d}{born:%m%y}{individual:03d}"
        k1 = -sum(w * int(c) for w, c in zip((3, 7, 6, 1, 8, 9, 4, 5, 2), nine)) % 11
        if k1 == 10:
            continue
        ten = nine + str(k1)
        k2 = -sum(w * int(c) for w, c in zip((5, 4, 3, 2, 7, 6, 5, 4, 3, 2), ten)) % 11
        if k2 == 10:
            continue
        value = ten + str(k2)
        written = value if rng.random() < 0.7 else value[:6] + " " + value[6:]
        return value, written


def corrupt_last_digit(rng, value):
    wrong = value[:-1] + other_char(rng, "0123456789", value[-1])
    return wrong, wrong


# ---------------------------------------------------------------- Denmark: CPR
def cpr_digit7(rng, year):
    if year >= 2000:
        return "4"  # 4 with a year below 37: 2000–2036
    return rng.choice("0123")


def make_cpr(rng):
    born = birth_date(rng, 1940, 2020)
    value = f"{born:%d%m%y}{cpr_digit7(rng, born.year)}{digits(rng, 3)}"
    written = value[:6] + "-" + value[6:] if rng.random() < 0.7 else value
    return value, written


def corrupt_cpr(rng, value):
    # No check digit since 2007: an impossible date is what makes a CPR number invalid.
    day, month = int(value[:2]), int(value[2:4])
    if rng.random() < 0.5:
        day = rng.randint(32, 39)
    else:
        month = rng.randint(13, 19)
    wrong = f"{day:02d}{month:02d}{value[4:]}"
    return wrong, wrong[:6] + "-" + wrong[6:]


# ---------------------------------------------------------------- Singapore: NRIC / FIN
# No stdnum module: ICA's published algorithm. Weights 2 7 6 5 4 3 2 over the digits, 4 added
# for the T and G series, 3 for the M series (2022); the remainder mod 11 picks the letter.
def nric_letter(prefix, seven):
    total = sum(w * int(c) for w, c in zip((2, 7, 6, 5, 4, 3, 2), seven))
    total += {"T": 4, "G": 4, "M": 3}.get(prefix, 0)
    remainder = total % 11
    if prefix in "ST":
        return "JZIHGFEDCBA"[remainder]
    if prefix in "FG":
        return "XWUTRQPNMLK"[remainder]
    # M series: P = 11 - remainder, and the letter is the P-th of K L J N P Q R T U W X.
    return "KLJNPQRTUWX"[11 - remainder - 1]


assert nric_letter("S", "1234567") == "D"  # ICA's worked example S1234567D


def nric_valid(value):
    return (
        len(value) == 9
        and value[0] in "STFGM"
        and value[1:8].isdigit()
        and nric_letter(value[0], value[1:8]) == value[8]
    )


def make_nric(rng):
    prefix = rng.choice("SSSTTFGM")
    seven = digits(rng, 7)
    value = prefix + seven + nric_letter(prefix, seven)
    return value, value


def corrupt_nric(rng, value):
    table = "JZIHGFEDCBA" if value[0] in "ST" else "XWUTRQPNMLK" if value[0] in "FG" else "KLJNPQRTUWX"
    wrong = value[:-1] + other_char(rng, table, value[-1])
    return wrong, wrong


# ---------------------------------------------------------------- Malaysia: MyKad
MY_PLACES = (
    [f"{n:02d}" for n in range(1, 17)]
    + [f"{n:02d}" for n in range(21, 69)]
    + ["71", "72"]
    + [f"{n:02d}" for n in range(74, 80)]
    + [f"{n:02d}" for n in range(82, 94)]
    + ["98", "99"]
)
MY_NOT_PLACES = ["00", "17", "18", "19", "20", "69", "70", "73", "80", "81", "94", "95", "96", "97"]


def make_mykad(rng):
    born = birth_date(rng, 1950, 2012)
    value = f"{born:%y%m%d}{rng.choice(MY_PLACES)}{digits(rng, 4)}"
    if rng.random() < 0.75:
        return value, f"{value[:6]}-{value[6:8]}-{value[8:]}"
    return value, value


def corrupt_mykad(rng, value):
    wrong = value[:6] + rng.choice(MY_NOT_PLACES) + value[8:]
    return wrong, f"{wrong[:6]}-{wrong[6:8]}-{wrong[8:]}"


# ---------------------------------------------------------------- Hong Kong: HKID
# No stdnum module: the Immigration Department's check digit. Letters count A=10 … Z=35, a
# missing second letter counts 36; weights 9 to 2; the check is 11 minus the remainder mod 11,
# 10 written as A and 11 as 0.
def hkid_check(prefix, six):
    values = ([36] if len(prefix) == 1 else []) + [ord(c) - 55 for c in prefix]
    values += [int(c) for c in six]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1)))
    check = (11 - total % 11) % 11
    return "A" if check == 10 else str(check)


assert hkid_check("A", "123456") == "3"  # the department's sample A123456(3)


def hkid_valid(compact):
    prefix = compact[:-7]
    return (
        len(prefix) in (1, 2)
        and prefix.isalpha()
        and compact[-7:-1].isdigit()
        and hkid_check(prefix, compact[-7:-1]) == compact[-1]
    )


def make_hkid(rng):
    prefix = rng.choice("ABCDEGHKMPRVYZ") if rng.random() < 0.8 else rng.choice(["WX", "XA", "XB", "XC"])
    six = digits(rng, 6)
    compact = prefix + six + hkid_check(prefix, six)
    if rng.random() < 0.8:
        return compact, f"{prefix}{six}({compact[-1]})"
    return compact, compact


def corrupt_hkid(rng, compact):
    wrong = compact[:-1] + other_char(rng, "0123456789A", compact[-1])
    return wrong, f"{wrong[:-1]}({wrong[-1]})"


# ---------------------------------------------------------------- Taiwan: national ID / ARC
# No stdnum module: the Ministry of the Interior's checksum. The area letter becomes two digits
# (A=10 … in the order below), weights 1 9 8 7 6 5 4 3 2 1 1, total divisible by 10. New-style
# resident certificates (2021) use 8/9 as the second digit and the same checksum.
TW_LETTERS = "ABCDEFGHJKLMNPQRSTUVXYWZIO"


def tw_check(letter, eight):
    code = TW_LETTERS.index(letter) + 10
    total = code // 10 + (code % 10) * 9
    total += sum(int(c) * w for c, w in zip(eight, (8, 7, 6, 5, 4, 3, 2, 1)))
    return str(-total % 10)


assert tw_check("A", "12345678") == "9"  # the ministry's sample A123456789


def tw_valid(value):
    return (
        len(value) == 10
        and value[0] in TW_LETTERS
        and value[1] in "1289"
        and value[1:].isdigit()
        and tw_check(value[0], value[1:9]) == value[9]
    )


def make_taiwan(second_digits):
    def make(rng):
        eight = rng.choice(second_digits) + digits(rng, 7)
        value = (letter := rng.choice(TW_LETTERS)) + eight + tw_check(letter, eight)
        return value, value

    return make


# ---------------------------------------------------------------- Mexico: CURP
MX_STATES = (
    "AS BC BS CC CL CM CS CH DF DG GT GR HG JC MC MN MS NT NL OC PL QT QR SP SL SR TC TS TL VZ YN "
    "ZS NE"
).split()
CURP_ALPHABET = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ"
CONSONANTS = "BCDFGHJKLMNPQRSTVWXYZ"


def curp_check(first17):
    total = sum(CURP_ALPHABET.index(c) * (18 - i) for i, c in enumerate(first17))
    return str(-total % 10)


def make_curp(rng):
    while True:
        born = birth_date(rng, 1940, 2015)
        names = rng.choice(CONSONANTS) + rng.choice("AEIOU") + rng.choice(CONSONANTS) + rng.choice("AEIOU")
        differentiator = rng.choice("0123456789") if born.year < 2000 else rng.choice("ABCDEFGH")
        body = (
            f"{names}{born:%y%m%d}{rng.choice('HM')}{rng.choice(MX_STATES)}"
            + "".join(rng.choice(CONSONANTS) for _ in range(3))
            + differentiator
        )
        value = body + curp_check(body)
        if curp.is_valid(value):  # avoids the words the registry replaces
            return value, value


def corrupt_curp(rng, value):
    wrong = value[:-1] + other_char(rng, "0123456789", value[-1])
    return wrong, wrong


# ---------------------------------------------------------------- Argentina: DNI, CUIL/CUIT
def make_dni(rng):
    number = str(rng.randint(1_000_000, 49_999_999))
    if rng.random() < 0.6:
        return number, f"{number[:-6]}.{number[-6:-3]}.{number[-3:]}"
    return number, number


def corrupt_dni(rng, number):
    # No check digit: the wrong values are the impossible lengths.
    wrong = str(rng.randint(100_000_000, 999_999_999) if rng.random() < 0.5 else rng.randint(10_000, 99_999))
    return wrong, wrong


def make_cuit(rng):
    while True:
        body = rng.choice(["20", "20", "23", "24", "27", "27", "30", "33", "34"]) + str(
            rng.randint(10_000_000, 49_999_999)
        )
        remainder = sum(w * int(c) for w, c in zip((5, 4, 3, 2, 7, 6, 5, 4, 3, 2), body)) % 11
        if remainder == 1:
            continue  # AFIP re-issues these under prefix 23
        value = body + str((11 - remainder) % 11)
        if rng.random() < 0.7:
            return value, f"{value[:2]}-{value[2:10]}-{value[10]}"
        return value, value


def corrupt_cuit(rng, value):
    wrong = value[:-1] + other_char(rng, "0123456789", value[-1])
    return wrong, f"{wrong[:2]}-{wrong[2:10]}-{wrong[10]}"


# ---------------------------------------------------------------- Chile: RUT / RUN
def rut_check(body):
    total = sum(int(c) * (2 + i % 6) for i, c in enumerate(reversed(body)))
    return {11: "0", 10: "K"}.get(11 - total % 11, str(11 - total % 11))


def rut_written(body, check, dotted):
    if dotted:
        return f"{body[:-6]}.{body[-6:-3]}.{body[-3:]}-{check}"
    return f"{body}-{check}"


def make_rut(rng):
    body = str(rng.randint(3_000_000, 26_000_000))
    check = rut_check(body)
    return body + check, rut_written(body, check, rng.random() < 0.6)


def corrupt_rut(rng, value):
    check = other_char(rng, "0123456789K", value[-1])
    return value[:-1] + check, rut_written(value[:-1], check, rng.random() < 0.5)


def rut_stands_alone(written):
    return "." in written


# ---------------------------------------------------------------- Colombia: cédula, NIT
def make_cedula(rng):
    number = str(rng.choice([rng.randint(100_000, 9_999_999), rng.randint(10_000_000, 99_999_999),
                             rng.randint(1_000_000_000, 1_299_999_999)]))
    if rng.random() < 0.5:
        groups = []
        rest = number
        while len(rest) > 3:
            groups.insert(0, rest[-3:])
            rest = rest[:-3]
        groups.insert(0, rest)
        return number, ".".join(groups)
    return number, number


def cedula_valid(number):
    # The Registraduría issues 6 to 10 digits; there is no check digit to verify.
    return number.isdigit() and 6 <= len(number) <= 10 and number[0] != "0"


def corrupt_cedula(rng, number):
    # No check digit: the wrong values are the lengths the Registraduría never issues.
    wrong = str(rng.randint(10_000, 99_999) if rng.random() < 0.5 else rng.randint(10**10, 10**11 - 1))
    return wrong, wrong


def make_nit(rng):
    base = str(rng.randint(10_000_000, 1_199_999_999))
    value = base + nit.calc_check_digit(base)
    assert nit.is_valid(value)
    written = f"{base}-{value[-1]}"
    if rng.random() < 0.5 and len(base) == 9:
        written = f"{base[:3]}.{base[3:6]}.{base[6:]}-{value[-1]}"
    return value, written


def corrupt_nit(rng, value):
    wrong = value[:-1] + other_char(rng, "0123456789", value[-1])
    return wrong, f"{wrong[:-1]}-{wrong[-1]}"


# ---------------------------------------------------------------- Turkey: T.C. Kimlik No
def make_tckimlik(rng):
    nine = str(rng.randint(1, 9)) + digits(rng, 8)
    odd = sum(int(c) for c in nine[0::2])
    even = sum(int(c) for c in nine[1::2])
    ten = nine + str((7 * odd - even) % 10)
    value = ten + str(sum(int(c) for c in ten) % 10)
    return value, value


# ---------------------------------------------------------------- South Africa: ID number
def luhn_complete(partial):
    return partial + luhn.calc_check_digit(partial)


def make_za(rng):
    born = birth_date(rng, 1940, 2005)
    value = luhn_complete(f"{born:%y%m%d}{digits(rng, 4)}{rng.choice('0001')}8")
    if rng.random() < 0.2:
        return value, f"{value[:6]} {value[6:10]} {value[10:]}"
    return value, value


# ---------------------------------------------------------------- Israel: Teudat Zehut
def make_teudat_zehut(rng):
    value = luhn_complete(str(rng.randint(1, 4)) + digits(rng, 7))
    if rng.random() < 0.2:
        return value, f"{value[:8]}-{value[8]}"
    return value, value


# ---------------------------------------------------------------- Belgium: national register number
def be_checks(base):
    return {97 - int(base) % 97, 97 - int("2" + base) % 97}


def make_belgian(rng):
    born = birth_date(rng, 1930, 2020)
    base = f"{born:%y%m%d}{rng.randint(1, 997):03d}"
    key = 97 - int(("2" if born.year >= 2000 else "") + base) % 97
    value = f"{base}{key:02d}"
    if rng.random() < 0.6:
        return value, f"{value[:2]}.{value[2:4]}.{value[4:6]}-{value[6:9]}.{value[9:]}"
    return value, value


def corrupt_belgian(rng, value):
    base = value[:9]
    key = rng.choice([k for k in range(1, 98) if k not in be_checks(base)])
    wrong = f"{base}{key:02d}"
    return wrong, f"{wrong[:2]}.{wrong[2:4]}.{wrong[4:6]}-{wrong[6:9]}.{wrong[9:]}"


def belgian_stands_alone(written):
    return "." in written


# ---------------------------------------------------------------- Portugal: NIF
def make_nif(rng):
    eight = rng.choice("123") + digits(rng, 7)
    total = sum((9 - i) * int(c) for i, c in enumerate(eight))
    value = eight + str(-total % 11 % 10)
    if rng.random() < 0.2:
        return value, f"{value[:3]} {value[3:6]} {value[6:]}"
    return value, value


# ---------------------------------------------------------------- Ireland: PPS number
PPS_LETTERS = "WABCDEFGHIJKLMNOPQRSTUV"


def make_pps(rng):
    seven = digits(rng, 7)
    second = rng.choice(["", "", "A", "B", "W", "H"])
    total = sum((8 - i) * int(c) for i, c in enumerate(seven))
    total += 9 * (PPS_LETTERS.index(second) if second in ("A", "B", "H") else 0)
    value = seven + PPS_LETTERS[total % 23] + second
    return value, value


def corrupt_pps(rng, value):
    wrong = value[:7] + other_char(rng, PPS_LETTERS, value[7]) + value[8:]
    return wrong, wrong


# ---------------------------------------------------------------- the sections
def regions():
    """(name, make, corrupt, validate, native sentences, labels, stands-alone test)."""
    return [
        ("FI hetu", make_hetu, corrupt_hetu, hetu.is_valid,
         ["Henkilötunnus: {v}", "Hetu {v}, kiitos.", "Min personbeteckning är {v}.",
          "Asiakkaan henkilötunnus on {v}"],
         ["henkilötunnus", "hetu", "HETU", "personbeteckning"], hetu_stands_alone),
        ("NO fødselsnummer", make_fodselsnummer, corrupt_last_digit, fodselsnummer.is_valid,
         ["Fødselsnummer: {v}", "Mitt fødselsnummer er {v}.", "personnummer {v}"],
         ["fødselsnummer", "Fødselsnummer", "personnummer"], None),
        ("DK CPR", make_cpr, corrupt_cpr, cpr.is_valid,
         ["CPR-nr.: {v}", "Mit CPR-nummer er {v}", "CPR {v} er registreret."],
         ["CPR", "CPR-nr", "CPR-nummer"], None),
        ("SG NRIC/FIN", make_nric, corrupt_nric, nric_valid,
         ["My NRIC is {v}.", "FIN {v}", "NRIC No: {v}"],
         ["NRIC", "NRIC number"], lambda v: True),
        ("MY MyKad", make_mykad, corrupt_mykad, my_nric.is_valid,
         ["No. K/P: {v}", "MyKad {v}", "No. IC: {v}", "Nombor MyKad saya ialah {v}."],
         ["MyKad", "No. K/P", "NRIC"], lambda v: "-" in v),
        ("HK HKID", make_hkid, corrupt_hkid, hkid_valid,
         ["HKID: {v}", "香港身份證號碼：{v}", "身份證號碼 {v}", "HKID card {v}"],
         ["HKID", "身份證", "香港身份證"], lambda v: "(" in v),
        ("TW national ID", make_taiwan("12"), corrupt_last_digit, tw_valid,
         ["身分證字號：{v}", "我的身分證是{v}", "國民身分證統一編號 {v}"],
         ["身分證", "身分證字號"], lambda v: True),
        ("TW resident certificate", make_taiwan("89"), corrupt_last_digit, tw_valid,
         ["居留證統一證號：{v}", "統一證號 {v}", "ARC number {v}"],
         ["統一證號", "居留證"], lambda v: True),
        ("MX CURP", make_curp, corrupt_curp, curp.is_valid,
         ["CURP: {v}", "Mi CURP es {v}.", "Clave Única de Registro de Población {v}"],
         ["CURP"], lambda v: True),
        ("AR DNI", make_dni, corrupt_dni, dni.is_valid,
         ["DNI {v}", "Mi DNI es {v}.", "D.N.I. N° {v}"],
         ["DNI", "D.N.I."], None),
        ("AR CUIL/CUIT", make_cuit, corrupt_cuit, cuit.is_valid,
         ["CUIL: {v}", "CUIT {v}", "Mi número de CUIL es {v}"],
         ["CUIL", "CUIT"], lambda v: "-" in v),
        ("CL RUT", make_rut, corrupt_rut, rut.is_valid,
         ["RUT: {v}", "Mi RUT es {v}.", "R.U.T. {v}"],
         ["RUT", "R.U.T."], rut_stands_alone),
        ("CO cédula", make_cedula, corrupt_cedula, cedula_valid,
         ["C.C. {v}", "cédula de ciudadanía No. {v}", "CC {v} de Bogotá", "Mi cédula es {v}"],
         ["cédula", "C.C.", "cédula de ciudadanía"], None),
        ("CO NIT", make_nit, corrupt_nit, nit.is_valid,
         ["NIT {v}", "NIT: {v} (persona natural)", "Número de NIT {v}"],
         ["NIT"], None),
        ("TR TC Kimlik", make_tckimlik, corrupt_last_digit, tckimlik.is_valid,
         ["T.C. Kimlik No: {v}", "TC Kimlik numaram {v}", "kimlik no {v}"],
         ["TC Kimlik", "T.C. Kimlik No", "kimlik no"], None),
        ("ZA ID", make_za, corrupt_last_digit, za_idnr.is_valid,
         ["ID number: {v}", "My identity number is {v}.", "ID-nommer: {v}"],
         ["ID number", "identity number"], None),
        ("IL Teudat Zehut", make_teudat_zehut, corrupt_last_digit, il_idnr.is_valid,
         ["ת.ז. {v}", "מספר תעודת זהות: {v}", "teudat zehut {v}"],
         ["ת.ז", "תעודת זהות", "teudat zehut"], None),
        ("BE national number", make_belgian, corrupt_belgian, nn.is_valid,
         ["Rijksregisternummer: {v}", "Numéro de registre national : {v}", "NISS {v}"],
         ["rijksregisternummer", "numéro de registre national", "NISS"], belgian_stands_alone),
        ("PT NIF", make_nif, corrupt_last_digit, nif.is_valid,
         ["NIF: {v}", "Número de contribuinte {v}", "contribuinte n.º {v}"],
         ["NIF", "contribuinte"], None),
        ("IE PPS", make_pps, corrupt_pps, pps.is_valid,
         ["PPS number: {v}", "PPSN {v}", "Uimhir PPS: {v}"],
         ["PPS", "PPSN"], lambda v: True),
    ]


# Existing documents with labels in other scripts and prose, values checked with stdnum too.
def existing_documents(rng):
    out = []
    for _ in range(10):
        area = rng.choice(["110105", "310104", "110101"])
        born = birth_date(rng, 1950, 2005)
        body = f"{area}{born:%Y%m%d}{digits(rng, 3)}"
        value = body + ric.calc_check_digit(body + "0")
        assert ric.is_valid(value), value
        template = rng.choice(["身份证：{v}", "身份证号{v}", "身份證 {v}", "公民身份号码：{v}。"])
        out.append(positive(template.format(v=value), value))
    for _ in range(10):
        eleven = digits(rng, 11)
        value = eleven + jp_in.calc_check_digit(eleven)
        assert jp_in.is_valid(value), value
        written = f"{value[:4]} {value[4:8]} {value[8:]}"
        template = rng.choice(["マイナンバー：{v}", "個人番号は{v}です", "マイナンバー {v} を登録しました"])
        out.append(positive(template.format(v=written), written))
    for _ in range(10):
        born = birth_date(rng, 1950, 1999)
        twelve = f"{born:%y%m%d}{rng.choice('12')}{digits(rng, 5)}"
        value = twelve + rrn.calc_check_digit(twelve)
        if not rrn.is_valid(value):
            continue
        written = f"{value[:6]}-{value[6:]}"
        template = rng.choice(["주민등록번호: {v}", "주민등록번호는 {v}입니다", "주민등록번호：{v}"])
        out.append(positive(template.format(v=written), written))
    for _ in range(10):
        while True:
            value = f"{rng.randint(1, 665):03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
            if ssn.is_valid(value):
                break
        template = rng.choice(["my social is {v}", "SSN# {v}", "SS# {v}", "social security no. {v}",
                               "Her social security no {v}", "the social is {v}"])
        out.append(positive(template.format(v=value), value))
    return out


# Numbers shaped like the new IDs, with no label and no valid check: order numbers,
# timestamps, versions, invoices. None of them is personal data.
NEGATIVES = [
    "Order 2023110412 shipped on Friday.",
    "Event logged at 1699999999999 by the collector.",
    "Build 20231104.1523 is live.",
    "Upgrade to version 12.345.678 before Monday.",
    "Invoice 900123456-0 is overdue.",
    "Ticket 131052-3081 was closed.",
    "Ref 85.07.30-033.29 was archived.",
    "Tracking number 1Z999AA10123456784 left the depot.",
    "SKU A123456(4) is out of stock.",
    "Batch 20-12345678-0 passed QA.",
    "Item 12.345.678-0 was returned.",
    "The request took 1712345678901 ns end to end.",
    "Snapshot 20231104123045 restored.",
    "Container v1.2.3456789 pulled.",
    "Order number 300123456 is ready.",
    "Lot 850730-033-28 expires soon.",
    "Shipment 0101901234 arrived.",
    "Quote 44051401358 accepted.",
    "Case 8001015009088 reopened.",
    "Record 123456783 updated.",
    "Part S1234567A ordered.",
    "Model A123456788 discontinued.",
    "Serial GOMC850101HDFRRR08 registered.",
    "Voucher 1234567A redeemed.",
    "Receipt 12345678-3 printed.",
    "Session 231304-10-0042 ended.",
    "Job 20231104-1 finished in 42 s.",
    "Commit 1a2b3c4 deployed; checksum 987654321.",
    "注文番号 2023110412 を発送しました。",
    "หมายเลขคำสั่งซื้อ 300123456 จัดส่งแล้ว",
    "رقم الطلب 2023110412 تم شحنه",
    "Номер заказа 131052-3081 закрыт.",
]


def pairs(rng, sections):
    """Texts holding two values of different regions, each with its own label."""
    out = []
    makers = [(name, make, native) for name, make, _, _, native, _, _ in sections]
    for _ in range(20):
        (_, make_a, native_a), (_, make_b, native_b) = rng.sample(makers, 2)
        a, b = make_a(rng)[1], make_b(rng)[1]
        if a == b:
            continue
        text = rng.choice(native_a).format(v=a) + "; " + rng.choice(native_b).format(v=b)
        if text.count(a) != 1 or text.count(b) != 1:
            continue
        out.append({"text": text, "expected": [{"label": ID, "value": a}, {"label": ID, "value": b}]})
    return out


# The negatives above whose shape would stand alone without a label fail their check.
WRONG_STANDALONE_SHAPES = [
    (nn.is_valid, "85073003329"),
    (hkid_valid, "A1234564"),
    (cuit.is_valid, "20123456780"),
    (rut.is_valid, "12.345.678-0"),
    (nric_valid, "S1234567A"),
    (tw_valid, "A123456788"),
    (curp.is_valid, "GOMC850101HDFRRR08"),
    (pps.is_valid, "1234567A"),
    (my_nric.is_valid, "231304100042"),
    (za_idnr.is_valid, "8001015009088"),
]


def cases(rng):
    for validate, value in WRONG_STANDALONE_SHAPES:
        assert not validate(value), value
    out = []
    for name, make, corrupt, validate, native, labels, stands_alone in regions():
        out += section(rng, name, make, corrupt, validate, native, labels,
                       stands_alone or (lambda v: False))
    out += pairs(rng, regions())
    out += existing_documents(rng)
    out += [negative(text) for text in NEGATIVES]
    rng.shuffle(out)
    return out
