"""Hard negatives for the world corpus: text full of numbers and codes that look like IDs,
phone numbers, cards or keys and are none of them (expected: nothing).

Every candidate is screened with independent implementations before it is kept: python-stdnum
for the identity numbers and Luhn, the `phonenumbers` port of libphonenumber for anything
written as a phone number.
A candidate that any of them accepts is drawn again, so a "negative" is never a real value.
"""
import re
import string

import phonenumbers
from stdnum import luhn
from stdnum.be import nn as be_nn
from stdnum.br import cpf as br_cpf
from stdnum.cl import rut as cl_rut
from stdnum.cn import ric as cn_ric
from stdnum.es import dni as es_dni
from stdnum.es import nie as es_nie
from stdnum.fi import hetu as fi_hetu
from stdnum.fr import nir as fr_nir

from stdnum.ie import pps as ie_pps
from stdnum.it import codicefiscale as it_cf
from stdnum.kr import rrn as kr_rrn
from stdnum.mx import curp as mx_curp
from stdnum.za import idnr as za_idnr

# Formats a default filter may redact without a document label.
UNLABELLED = [be_nn, br_cpf, cl_rut, cn_ric, es_dni, es_nie, fi_hetu, fr_nir, ie_pps,
              it_cf, kr_rrn, mx_curp, za_idnr]
REGIONS = ["US", "GB", "DE", "FR", "JP", "CN", "KR", "IN", "BR", "MX", "RU", "ES", "IT", "AU"]


def _is_something(text):
    for token in re.findall(r"[0-9A-Za-z][0-9A-Za-z.\-/() ]*[0-9A-Za-z)]", text):
        compact = re.sub(r"[\s.\-/()]", "", token)
        for module in UNLABELLED:
            try:
                if module.is_valid(token) or module.is_valid(compact):
                    return f"{module.__name__} {token!r}"
            except Exception:
                pass
        for run in re.findall(r"\d[\d \-]{10,22}\d", token):
            digits = re.sub(r"\D", "", run)
            if 12 <= len(digits) <= 19 and luhn.is_valid(digits):
                return f"luhn {run!r}"
    # A phone number written as one (NANP layout, or international with +): libphonenumber's
    # matcher also "finds" invoice and part numbers, which no reader takes for phones.
    for run in re.findall(r"\+\d[\d \-]{6,18}\d|\(?\d{3}\)?[ .\-]\d{3}[ .\-]\d{4}", text):
        for region in REGIONS:
            try:
                if phonenumbers.is_valid_number(phonenumbers.parse(run, region)):
                    return f"phone {region} {run!r}"
            except phonenumbers.NumberParseException:
                pass
    return None


def _digits(rng, n, first=None):
    head = first if first is not None else str(rng.randint(1, 9))
    return head + "".join(rng.choice(string.digits) for _ in range(n - 1))


def _hex(rng, n):
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _templates():
    return [
        # order, invoice and ticket numbers
        lambda r: f"Order #{_digits(r, r.randint(8, 12))} has shipped.",
        lambda r: f"Invoice INV-{r.randint(2019, 2026)}-{_digits(r, 6, '0')} is due on Friday.",
        lambda r: f"Ticket {_digits(r, 5)} was closed as a duplicate of {_digits(r, 5)}.",
        lambda r: f"订单号 {_digits(r, 15)} 已发货。",
        lambda r: f"注文番号：{_digits(r, 4)}-{_digits(r, 4)}-{_digits(r, 4)}。",
        lambda r: f"주문 번호 {_digits(r, 10)} 배송이 시작되었습니다.",
        lambda r: f"หมายเลขคำสั่งซื้อ {_digits(r, 8)} จัดส่งแล้ว",
        lambda r: f"رقم الطلب {_digits(r, 9)} قيد الشحن",
        lambda r: f"Номер заказа {_digits(r, 8)} передан в доставку.",
        lambda r: f"Tracking: 1Z{_digits(r, 3)}AA1{_digits(r, 8)}",
        # timestamps and dates
        lambda r: f"Deployed at {r.randint(2020, 2026)}-{r.randint(1, 12):02}-{r.randint(1, 28):02} {r.randint(0, 23):02}:{r.randint(0, 59):02}:{r.randint(0, 59):02} UTC.",
        lambda r: f"epoch {r.randint(1500000000, 1799999999)} (ms {r.randint(1500000000000, 1799999999999)})",
        lambda r: f"snapshot-{r.randint(2020, 2026)}{r.randint(1, 12):02}{r.randint(1, 28):02}T{r.randint(0, 23):02}{r.randint(0, 59):02}{r.randint(0, 59):02}Z.tar.gz",
        lambda r: f"ログ {r.randint(2020, 2026)}年{r.randint(1, 12)}月{r.randint(1, 28)}日 {r.randint(0, 23):02}:{r.randint(0, 59):02}",
        # hashes and identifiers
        lambda r: f"commit {_hex(r, 40)} fixed it",
        lambda r: f"sha256:{_hex(r, 64)}",
        lambda r: f"md5 {_hex(r, 32)}  file.iso",
        lambda r: f"request id {_hex(r, 8)}-{_hex(r, 4)}-4{_hex(r, 3)}-a{_hex(r, 3)}-{_hex(r, 12)}",
        lambda r: f"cherry-picked {_hex(r, 7)} and {_hex(r, 7)}",
        # versions and builds
        lambda r: f"Upgrade to v{r.randint(1, 30)}.{r.randint(0, 40)}.{r.randint(0, 99)} before build {_digits(r, 8)}.{r.randint(1, 9)}.",
        lambda r: f"Chromium {r.randint(100, 160)}.0.{r.randint(1000, 8999)}.{r.randint(10, 199)} crashed",
        lambda r: f"kernel {r.randint(4, 6)}.{r.randint(0, 19)}.{r.randint(0, 200)}-{r.randint(1, 40)}-amd64",
        # coordinates, sizes, money, addresses
        lambda r: f"Meet at {r.uniform(-80, 80):.4f}, {r.uniform(-170, 170):.4f} at noon.",
        lambda r: f"lat {r.uniform(-80, 80):.6f} lon {r.uniform(-170, 170):.6f}",
        lambda r: f"Screen {r.choice(['1920x1080', '2560x1440', '1080x2340'])}, {r.randint(300, 560)} dpi",
        lambda r: f"Total: €{r.randint(1, 999)}.{r.randint(100, 999)}.{r.randint(100, 999)},{r.randint(10, 99)}",
        lambda r: f"合计 ¥{r.randint(1000, 99999)}，税込",
        lambda r: f"host 10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}:{r.randint(1024, 65535)}",
        lambda r: f"MAC {':'.join(_hex(r, 2) for _ in range(6))}",
        # IBAN-shaped strings with a wrong check (not IBANs, not IDs)
        lambda r: f"Ref DE00 {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 2)}",
        lambda r: f"ISBN 978-{r.randint(0, 9)}-{_digits(r, 3)}-{_digits(r, 5)}-{r.randint(0, 9)}",
        # measurements and counts with many digits
        lambda r: f"Downloaded {r.randint(1000000, 99999999)} bytes in {r.randint(2, 90)} s",
        lambda r: f"Part no. {_digits(r, 4)}-{_digits(r, 3)}-{_digits(r, 3)}-{_digits(r, 2)}",
        lambda r: f"Серийный номер {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)}",
    ]


def cases(rng):
    out = []
    templates = _templates()
    for index in range(4 * len(templates)):
        template = templates[index % len(templates)]
        for _ in range(50):
            text = template(rng)
            if _is_something(text) is None:
                out.append({"text": text, "expected": []})
                break
        else:
            raise AssertionError(f"template {index % len(templates)} never drew a clean negative")
    return out
