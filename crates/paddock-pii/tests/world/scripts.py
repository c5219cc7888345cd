"""Labelled cases for the world corpus: values among non-Latin scripts and full-width forms.

`cases(rng)` returns a list of {"text": str, "expected": [{"label": ..., "value": ...}]},
where each value is the exact substring of text that must be redacted. The cases cover
- e-mail addresses and phone numbers written right against CJK, Hangul, Thai, Arabic and
  Cyrillic text, after full-width colons and commas and inside CJK brackets;
- values in full-width forms (`０３－７６０９－２２７９`, `ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ`) and with
  zero-width characters or soft hyphens inside them;
- phone labels in seventeen languages (Japanese, Simplified and Traditional Chinese, Korean,
  Spanish, French, German, Portuguese, Russian, Arabic, Thai, Italian, Greek, Turkish,
  Vietnamese, Hebrew, Hindi, and the English `Tel.`/`Mob.`/`WhatsApp`), each followed by a
  national number of one of the label's regions;
- negatives in those scripts that look like phone numbers: order numbers, timestamps,
  versions, coordinates, prices.

Every phone number is built from the region's example number with random digits and checked
with the `phonenumbers` package (the Python port of libphonenumber) for the region it was built
for, never with Paddock's own code, so the cases measure the detectors rather than echo them.
"""
import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType

ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]

# ASCII `!`..`~` to their full-width forms U+FF01..U+FF5E.
FULL_WIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}


def full_width(text, only_digits=False):
    return "".join(
        FULL_WIDTH.get(c, c) if (c.isdigit() or not only_digits) else c for c in text
    ).replace(" ", "\u3000" if not only_digits else " ")


def with_zero_width(rng, value, count=2):
    """`value` with `count` invisible characters inserted strictly inside it."""
    chars = list(value)
    for _ in range(count):
        at = rng.randint(1, len(chars) - 1)
        chars.insert(at, rng.choice(ZERO_WIDTH))
    return "".join(chars)


def phone(rng, region, kind=PhoneNumberType.FIXED_LINE):
    """A random valid number of `region`, as a `phonenumbers.PhoneNumber`."""
    example = phonenumbers.example_number_for_type(region, kind)
    national = phonenumbers.national_significant_number(example)
    for _ in range(1000):
        keep = max(1, len(national) - rng.randint(3, 6))
        digits = national[:keep] + "".join(
            rng.choice("0123456789") for _ in range(len(national) - keep)
        )
        number = phonenumbers.parse("+%d%s" % (example.country_code, digits))
        if phonenumbers.is_valid_number(number) and phonenumbers.region_code_for_number(
            number
        ) == region:
            return number
    raise AssertionError("no valid number for %s" % region)


def national(number):
    return phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)


def international(number):
    return phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)


def compact(text):
    return "".join(c for c in text if c.isdigit() or c == "+")


def check_phone(shown, region):
    """`shown` (possibly full-width or with invisible characters) is a valid `region` number."""
    clean = "".join(c for c in shown if c not in ZERO_WIDTH)
    number = phonenumbers.parse(clean, region)
    assert phonenumbers.is_valid_number(number), (shown, region)
    assert phonenumbers.region_code_for_number(number) == region, (shown, region)


def case(text, *expected):
    for label, value in expected:
        assert value in text, (value, text)
    return {"text": text, "expected": [{"label": l, "value": v} for l, v in expected]}


# ---------------------------------------------------------------- e-mail

LOCAL_PARTS = [
    "4716957890", "taro.yamada", "hanako_s", "li.wei", "zhang.san88", "kim.minsu", "lee_jieun",
    "somchai.k", "ahmed.ali", "ivan.petrov", "olga_k", "support", "info", "sales-team", "m.tanaka",
]
DOMAINS = [
    "qq.com", "163.com", "example.co.jp", "example.jp", "mail.example.cn", "naver.com",
    "example.co.kr", "example.co.th", "example.com.sa", "example.ae", "yandex.ru", "mail.ru",
    "example.com.tw", "example.hk", "example.com",
]

# {e} is right against the surrounding script wherever the language writes no space.
EMAIL_TEMPLATES = [
    "連絡先：{e} まで",
    "メールは{e}までお送りください。",
    "お問い合わせ：{e}（担当：田中）",
    "请发邮件到{e}，谢谢。",
    "我的邮箱是{e}，有事联系。",
    "邮箱：{e}",
    "請寄信到{e}，謝謝！",
    "【メール】{e}",
    "「{e}」に連絡してください。",
    "이메일: {e}로 보내 주세요.",
    "이메일은{e}입니다.",
    "문의는 {e}으로 해주세요",
    "อีเมล: {e} ครับ",
    "ติดต่อได้ที่{e}ค่ะ",
    "البريد الإلكتروني: {e}",
    "راسلني على {e} من فضلك",
    "Пишите на {e}.",
    "почта:{e}, звоните днём",
    "Мой адрес {e}",
    "E-mail：{e}、よろしくお願いします",
    "邮件地址（{e}）已更新",
    "送信先、{e}。",
]


def email_cases(rng):
    out = []
    for i in range(3 * len(EMAIL_TEMPLATES)):
        template = EMAIL_TEMPLATES[i % len(EMAIL_TEMPLATES)]
        address = "%s@%s" % (rng.choice(LOCAL_PARTS), rng.choice(DOMAINS))
        variant = i // len(EMAIL_TEMPLATES)
        if variant == 1:
            # Full-width address, wholly or in part.
            address = full_width(address) if i % 2 else address.replace("@", "＠").replace(".", "．")
        elif variant == 2:
            address = with_zero_width(rng, address, rng.randint(1, 3))
        out.append(case(template.format(e=address), ("EMAIL", address)))
    return out


# ---------------------------------------------------------------- phones with labels

# Language: (regions the numbers are built for, templates with {p}).
LABELLED = {
    "ja": (["JP"], [
        "電話：{p}", "電話番号：{p}", "TEL：{p}", "携帯：{p}", "お問い合わせは電話{p}まで",
        "電話番号は{p}です。", "【電話】{p}", "連絡先電話：{p}（平日のみ）",
    ]),
    "zh-Hans": (["CN"], [
        "电话：{p}", "联系电话：{p}", "手机：{p}", "手机号：{p}", "电话号码是{p}。",
        "请拨打电话{p}，谢谢", "我的手机号码为{p}", "电话 {p}",
    ]),
    "zh-Hant": (["TW", "HK"], [
        "電話：{p}", "聯絡電話：{p}", "手機：{p}", "電話號碼是{p}。", "請撥電話{p}，謝謝",
    ]),
    "ko": (["KR"], [
        "전화: {p}", "전화번호: {p}", "전화번호는 {p}입니다.", "휴대폰: {p}", "연락처: {p}",
        "전화 {p}로 연락 주세요",
    ]),
    "es": (["ES", "MX", "AR", "CO", "CL"], [
        "Teléfono: {p}", "Tel.: {p}", "Mi teléfono es {p}", "Móvil: {p}", "Celular: {p}",
        "Llame al teléfono {p}, por favor.", "TELÉFONO {p}",
    ]),
    "fr": (["FR", "BE", "CH"], [
        "Téléphone : {p}", "Tél. : {p}", "Tél : {p}", "Mon téléphone est le {p}",
        "Portable : {p}", "TÉLÉPHONE {p}",
    ]),
    "de": (["DE", "AT", "CH"], [
        "Telefon: {p}", "Tel.: {p}", "Telefonnummer: {p}", "Handy: {p}", "Mobil: {p}",
        "Meine Handynummer ist {p}", "erreichbar unter Tel. {p}",
    ]),
    "pt": (["BR", "PT"], [
        "Telefone: {p}", "Celular: {p}", "Tel.: {p}", "Meu telefone é {p}", "Telemóvel: {p}",
    ]),
    "ru": (["RU", "UA"], [
        "Телефон: {p}", "тел.: {p}", "Тел. {p}", "Мой телефон {p}", "Номер телефона: {p}",
        "моб. {p}", "Телефон для связи: {p}",
    ]),
    "ar": (["SA", "AE", "EG"], [
        "هاتف: {p}", "رقم الهاتف: {p}", "الهاتف {p}", "جوال: {p}", "للتواصل هاتف {p}",
    ]),
    "th": (["TH"], [
        "โทร {p}", "โทร. {p}", "โทรศัพท์: {p}", "เบอร์โทร {p}", "มือถือ: {p}", "ติดต่อโทร{p}ค่ะ",
    ]),
    "it": (["IT"], [
        "Telefono: {p}", "Tel. {p}", "Cellulare: {p}", "Il mio telefono è {p}",
    ]),
    "el": (["GR", "CY"], [
        "Τηλ.: {p}", "Τηλέφωνο: {p}", "Κινητό: {p}", "ΤΗΛ. {p}",
    ]),
    "tr": (["TR"], [
        "Telefon: {p}", "Cep: {p}", "Cep telefonu: {p}", "Telefon numarası: {p}",
    ]),
    "vi": (["VN"], [
        "Điện thoại: {p}", "ĐT: {p}", "SĐT: {p}", "Số điện thoại: {p}",
    ]),
    "he": (["IL"], [
        "טלפון: {p}", "נייד: {p}", "טלפון נייד {p}",
    ]),
    "hi": (["IN"], [
        "फ़ोन: {p}", "मोबाइल: {p}", "फोन नंबर: {p}", "\u095eोन {p}",
    ]),
    "en": (["GB", "AU", "IN", "SG", "IE", "NZ"], [
        "WhatsApp: {p}", "Mob. {p}", "Tel. {p}", "Tel.: {p}", "whatsapp me on {p}",
    ]),
}

KINDS = [PhoneNumberType.FIXED_LINE, PhoneNumberType.MOBILE]


# The regions Paddock tries after a label that names no language (`Tel.`, `Mob.`, `WhatsApp`):
# a label like that in a Spanish sentence does not say the number is Spanish, so it is paired
# only with numbers of these regions.
COMMON_REGIONS = {
    "US", "GB", "DE", "FR", "ES", "IT", "NL", "BR", "CN", "IN", "KR", "JP", "AU", "SE", "PL",
    "CH", "AT", "BE", "IE", "MX", "PT", "DK", "NO", "FI", "NZ", "SG", "HK", "ZA",
}
GENERIC_LABELS = ("Tel.", "TEL", "Mob.", "WhatsApp", "whatsapp")


def labelled_cases(rng, per_language=18):
    out = []
    for language, (regions, templates) in LABELLED.items():
        for i in range(per_language):
            region = regions[i % len(regions)]
            layout = (i // 2) % 6
            while True:
                number = phone(rng, region, KINDS[i % 2])
                shown = national(number)
                if layout == 1:
                    shown = compact(shown)
                elif layout == 3:
                    shown = full_width(shown)
                elif layout == 5:
                    shown = with_zero_width(rng, shown, 1)
                try:
                    check_phone(shown, region)
                    break
                except (AssertionError, phonenumbers.NumberParseException):
                    continue
            candidates = [
                t for t in templates
                if region in COMMON_REGIONS or not any(g in t for g in GENERIC_LABELS)
            ]
            template = candidates[i % len(candidates)]
            out.append(case(template.format(p=shown), ("PHONE", shown)))
    return out


# ---------------------------------------------------------------- international numbers

INTERNATIONAL_TEMPLATES = [
    "请致电{p}，谢谢。", "お電話は{p}までお願いします", "연락처는{p}입니다", "โทรมาที่{p}ได้เลย",
    "اتصل بي على {p}", "Звоните {p} в любое время", "番号：{p}", "（{p}）", "总部{p}、分部另行通知",
]
INTERNATIONAL_REGIONS = ["JP", "CN", "KR", "TH", "SA", "RU", "TW", "US", "GB", "DE", "FR", "BR"]


def international_cases(rng):
    out = []
    for i in range(3 * len(INTERNATIONAL_TEMPLATES)):
        region = INTERNATIONAL_REGIONS[i % len(INTERNATIONAL_REGIONS)]
        number = phone(rng, region, KINDS[i % 2])
        shown = international(number)
        variant = i // len(INTERNATIONAL_TEMPLATES)
        if variant == 1:
            shown = full_width(shown).replace("\u3000", rng.choice([" ", "\u3000"]))
        elif variant == 2:
            shown = with_zero_width(rng, shown, 2)
        check_phone(shown, region)
        template = INTERNATIONAL_TEMPLATES[i % len(INTERNATIONAL_TEMPLATES)]
        out.append(case(template.format(p=shown), ("PHONE", shown)))
    # The seeded values of the issue, and North American layouts right against CJK text.
    out.append(case("電話：03-7609-2279", ("PHONE", "03-7609-2279")))
    out.append(case("请发邮件到4716957890@qq.com，", ("EMAIL", "4716957890@qq.com")))
    out.append(case("連絡先：name@example.co.jp まで", ("EMAIL", "name@example.co.jp")))
    for i in range(6):
        number = phone(rng, "US", PhoneNumberType.FIXED_LINE)
        digits = phonenumbers.national_significant_number(number)
        shown = ["(%s) %s-%s", "%s-%s-%s", "%s.%s.%s"][i % 3] % (digits[:3], digits[3:6], digits[6:])
        if i >= 3:
            shown = full_width(shown).replace("\u3000", " ")
        check_phone(shown, "US")
        out.append(case(["美国办公室：%s，", "米国オフィス%sまで", "미국 사무실%s입니다"][i % 3] % shown, ("PHONE", shown)))
    return out


# ---------------------------------------------------------------- cards

def luhn_digit(body):
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def card_cases(rng):
    out = []
    templates = ["卡号：{c}", "カード番号は{c}です", "카드번호: {c}", "หมายเลขบัตร{c}", "номер карты:{c}"]
    for i in range(10):
        body = "4" + "".join(rng.choice("0123456789") for _ in range(14))
        digits = body + luhn_digit(body)
        shown = " ".join(digits[k:k + 4] for k in range(0, 16, 4))
        if i % 2:
            shown = full_width(shown, only_digits=True)
        else:
            shown = with_zero_width(rng, shown, 2)
        out.append(case(templates[i % len(templates)].format(c=shown), ("CARD", shown)))
    return out


# ---------------------------------------------------------------- negatives

def negative_cases(rng):
    def d(n):
        return "".join(rng.choice("0123456789") for _ in range(n))

    def date():
        return "20%02d-%02d-%02d" % (rng.randint(10, 29), rng.randint(1, 12), rng.randint(1, 28))

    def time():
        return "%02d:%02d:%02d" % (rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))

    def version():
        return "%d.%d.%d" % (rng.randint(0, 20), rng.randint(0, 40), rng.randint(0, 99))

    def coordinate():
        return "%d.%04d" % (rng.randint(1, 89), rng.randint(0, 9999))

    makers = [
        lambda: "订单号：%s，请查收。" % d(10),
        lambda: "注文番号：%s-%s" % (d(4), d(6)),
        lambda: "주문번호 %s 확인 부탁드립니다" % d(9),
        lambda: "เลขที่คำสั่งซื้อ %s" % d(10),
        lambda: "رقم الطلب: %s" % d(9),
        lambda: "Номер заказа: %s" % d(10),
        lambda: "时间：%s %s" % (date(), time()),
        lambda: "日時：%s %s（日本時間）" % (date(), time()),
        lambda: "%s년 %d월 %d일 %s에 배송" % (d(4), rng.randint(1, 12), rng.randint(1, 28), time()),
        lambda: "วันที่ %s เวลา %s น." % (date(), time()),
        lambda: "التاريخ %s الساعة %s" % (date(), time()),
        lambda: "Дата: %s, время %s" % (date(), time()),
        lambda: "版本 %s 修复了问题" % version(),
        lambda: "バージョン%sをリリースしました" % version(),
        lambda: "버전 %s 업데이트" % version(),
        lambda: "เวอร์ชัน %s" % version(),
        lambda: "الإصدار %s" % version(),
        lambda: "Версия %s вышла" % version(),
        lambda: "坐标：北纬%s，东经%s" % (coordinate(), coordinate()),
        lambda: "座標は%s, %sです" % (coordinate(), coordinate()),
        lambda: "위치 %s, %s" % (coordinate(), coordinate()),
        lambda: "พิกัด %s, %s" % (coordinate(), coordinate()),
        lambda: "الإحداثيات %s، %s" % (coordinate(), coordinate()),
        lambda: "Координаты: %s, %s" % (coordinate(), coordinate()),
        lambda: "价格：¥%d,%03d，数量%d" % (rng.randint(1, 99), rng.randint(0, 999), rng.randint(1, 9)),
        lambda: "合計 %d,%03d 円（税込）" % (rng.randint(1, 99), rng.randint(0, 999)),
        lambda: "快递单号 1%s %s %s" % (d(3), d(4), d(4)),
        lambda: "電話会議は%s %sから" % (date(), time()[:5]),
        lambda: "电话会议 %s，议程见附件" % date(),
        lambda: "내선 %s번, 회의실 %s호" % (d(3), d(3)),
        lambda: "Телефон сломался %s, ремонт %s" % (date(), d(3)),
        lambda: "ตั๋วหมายเลข %s-%s" % (d(3), d(5)),
        lambda: "قطعة رقم %s-%s-%s" % (d(3), d(3), d(2)),
        lambda: "注文番号：%s－%s" % (full_width(d(4)), full_width(d(6))),
        lambda: "版本号：%s" % full_width(version()),
        lambda: "ID\u200b%s\u200b-%s" % (d(5), d(4)),
    ]
    out = []
    for i in range(2 * len(makers)):
        text = makers[i % len(makers)]()
        out.append(case(text))
    return out


def cases(rng):
    out = []
    out += email_cases(rng)
    out += labelled_cases(rng)
    out += international_cases(rng)
    out += card_cases(rng)
    out += negative_cases(rng)
    return out
