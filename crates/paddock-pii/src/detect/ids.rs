//! National identity, social-security and personal tax numbers of 33 countries and regions.
//!
//! | region | document | layout | check | label required |
//! |---|---|---|---|---|
//! | US | Social Security number | `123-45-6789`, `123 45 6789`, 9 digits | area/group/serial rules | yes |
//! | UK | National Insurance number | `AB 12 34 56 C` | prefix and suffix rules | no |
//! | DE | Steuerliche Identifikationsnummer | 11 digits, `12 345 678 901` | ISO 7064 MOD 11,10 + digit counts | yes |
//! | FR | NIR (numéro de sécurité sociale) | 15 characters, spaced `1 85 05 78 006 084 36` | mod 97 key | spaced: no; plain: yes |
//! | ES | DNI / NIE | `12345678Z`, `X1234567L` | mod 23 letter | no |
//! | IT | Codice fiscale | `RSSMRA85T10A562S` | check character | no |
//! | NL | BSN | 9 digits, `1234.56.782` | 11-proof | yes |
//! | BR | CPF | `123.456.789-09`, 11 digits | two mod 11 digits | formatted: no; plain: yes |
//! | CN | Resident identity card | 18 characters, last may be `X`; first-generation 15 digits | ISO 7064 MOD 11-2 + birth date; 15 digits: birth date | 18: no; 15: yes |
//! | IN | Aadhaar | 12 digits, `2345 6789 0123` | Verhoeff | yes |
//! | KR | Resident registration number | `YYMMDD-GNNNNNN` | birth date + mod 11 | with valid check: no; otherwise yes |
//! | JP | My Number (個人番号) | 12 digits, `1234 5678 9012` | mod 11 | yes |
//! | CA | Social Insurance Number | `046 454 286`, `046-454-286` | Luhn | yes |
//! | AU | Tax File Number | 8–9 digits, `123 456 782` | weighted mod 11 | yes |
//! | SE | Personnummer / samordningsnummer | `YYMMDD-NNNC`, `YYYYMMDD-NNNC` | birth date + Luhn | yes |
//! | PL | PESEL | 11 digits | birth date + weighted check | yes |
//! | FI | Henkilötunnus | `DDMMYYCZZZQ`, century sign `+ - A–F U–Y` | birth date + mod 31 check character | with a letter (century or check): no; all digits: yes |
//! | NO | Fødselsnummer (also D- and H-numbers) | 11 digits, `DDMMYY NNNNN` | birth date + two mod 11 digits | yes |
//! | DK | CPR-nummer | `DDMMYY-SSSS`, 10 digits | birth date and century digit (no mod 11 since 2007) | yes |
//! | SG | NRIC / FIN | `S1234567D` (S T F G M) | weighted mod 11 letter per series | no (lower case: yes) |
//! | MY | MyKad | `YYMMDD-PB-NNNN`, 12 digits | birth date + place-of-birth code | dashed: no; otherwise yes |
//! | HK | HKID | `A123456(3)`, `AB123456(9)` | mod 11 check digit or `A` | in parentheses: no; bare: yes |
//! | TW | National ID / resident certificate | `A123456789` (second digit 1, 2, 8 or 9) | letter-value mod 10 | no (lower case: yes) |
//! | MX | CURP | 18 characters | birth date, sex, state + mod 10 over 37 characters | no (lower case: yes) |
//! | AR | DNI | 7–8 digits, `12.345.678` | none | yes |
//! | AR | CUIL / CUIT | `20-12345678-6`, 11 digits | type prefix + mod 11 | dashed: no; plain: yes |
//! | CL | RUT / RUN | `12.345.678-5`, `12345678-K` | mod 11 with `K` | dotted: no; plain: yes |
//! | CO | Cédula de ciudadanía | 6–10 digits, `1.020.304.050` | none | yes |
//! | CO | NIT (persons: cédula + check digit) | `79.123.456-0`, `900123456-8` | DIAN mod 11 | yes |
//! | TR | T.C. Kimlik No | 11 digits, first not 0 | two check digits | yes |
//! | ZA | Identity number | 13 digits, `YYMMDD SSSS CAZ` | birth date + citizenship digit + Luhn | spaced: no; plain: yes |
//! | IL | Teudat Zehut | 9 digits, `12345678-2` | Luhn | yes |
//! | BE | Rijksregisternummer / numéro national | `YY.MM.DD-XXX.CC`, 11 digits | mod 97 (with the leading `2` from 2000) | formatted: no; otherwise yes |
//! | PT | NIF | 9 digits, `123 456 789` | valid first digits + mod 11 | yes |
//! | IE | PPS number | `1234567T`, `1234567TA` | mod 23 check letter (second letter weight 9) | no (lower case: yes) |
//!
//! "Label required" means a document label ("SSN", "BSN", "PESEL", "身份证", …) must stand on
//! the same line, ending at most 40 bytes before the number or starting at most 16 bytes after
//! it: those layouts are plain digit strings that order numbers, timestamps and phone numbers
//! share, and a checksum alone passes one random number in ten or eleven (and some of these
//! documents have none). A few short labels that are also everyday abbreviations ("CC", "IC",
//! "TC", "FIN", "RUN") count only in capitals and right before the number. Labels written
//! against CJK, Thai or Hangul text, or followed by a full-width colon (`身份证：…`), count as
//! well: only a label edge in a script that separates words with spaces (Latin, Greek,
//! Cyrillic) needs a word boundary.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{Regex, RegexSet};

use crate::checksum::{
    all_same, decimal_value, iso7064_mod11_2, iso7064_mod11_10, luhn, two, valid_date, verhoeff,
    weighted_sum,
};
use crate::finding::{Category, Finding};
use crate::scan::{
    Deadline, Expired, NumericRun, ceil_char_boundary, collect_digits, floor_char_boundary,
    left_alone, numeric_runs, push_window, right_alone, widen_to_whitespace,
};

/// The most groups a numeric layout has (the spaced French NIR, `1 85 05 78 006 084 36`).
const MAX_GROUPS: usize = 7;

/// Digit counts of the numeric layouts: a Colombian cédula (6) to the NIR (15).
fn plausible_digit_count(count: usize) -> bool {
    matches!(count, 6..=13 | 15)
}

/// How far before and after a number a document label may stand.
const LABEL_BEFORE: usize = 40;
const LABEL_AFTER: usize = 16;

/// The documents that have labels: those whose numbers are ambiguous without one, and those
/// whose lower-case or bare forms need one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doc {
    UsSsn,
    DeSteuerId,
    FrNir,
    NlBsn,
    BrCpf,
    CnResident,
    InAadhaar,
    KrRrn,
    JpMyNumber,
    CaSin,
    AuTfn,
    SePersonnummer,
    PlPesel,
    FiHetu,
    NoFodselsnummer,
    DkCpr,
    SgNric,
    MyMykad,
    HkHkid,
    TwId,
    MxCurp,
    ArDni,
    ArCuit,
    ClRut,
    CoCedula,
    CoNit,
    TrKimlik,
    ZaId,
    IlTeudatZehut,
    BeNationalNumber,
    PtNif,
    IePps,
}

impl Doc {
    const ALL: [Doc; 32] = [
        Doc::UsSsn,
        Doc::DeSteuerId,
        Doc::FrNir,
        Doc::NlBsn,
        Doc::BrCpf,
        Doc::CnResident,
        Doc::InAadhaar,
        Doc::KrRrn,
        Doc::JpMyNumber,
        Doc::CaSin,
        Doc::AuTfn,
        Doc::SePersonnummer,
        Doc::PlPesel,
        Doc::FiHetu,
        Doc::NoFodselsnummer,
        Doc::DkCpr,
        Doc::SgNric,
        Doc::MyMykad,
        Doc::HkHkid,
        Doc::TwId,
        Doc::MxCurp,
        Doc::ArDni,
        Doc::ArCuit,
        Doc::ClRut,
        Doc::CoCedula,
        Doc::CoNit,
        Doc::TrKimlik,
        Doc::ZaId,
        Doc::IlTeudatZehut,
        Doc::BeNationalNumber,
        Doc::PtNif,
        Doc::IePps,
    ];

    /// Labels matched ASCII-case-insensitively (other characters as written, so a capitalised
    /// non-ASCII spelling is listed separately).
    fn labels(self) -> &'static [&'static str] {
        match self {
            Doc::UsSsn => &[
                "ssn",
                "ssn#",
                "ss#",
                "ss no",
                "social security",
                "social security number",
                "social security no",
                "social security no.",
                "soc sec",
                "my social is",
                "social is",
            ],
            Doc::DeSteuerId => &[
                "steuer-id",
                "steuerid",
                "steuer-idnr",
                "steuer-identifikationsnummer",
                "steueridentifikationsnummer",
                "steuerliche identifikationsnummer",
                "identifikationsnummer",
                "idnr",
                "tax id",
                "tin",
            ],
            Doc::FrNir => &[
                "nir",
                "numéro de sécurité sociale",
                "numero de securite sociale",
                "sécurité sociale",
                "securite sociale",
                "insee",
            ],
            Doc::NlBsn => &[
                "bsn",
                "burgerservicenummer",
                "sofinummer",
                "sofi-nummer",
                "citizen service number",
            ],
            Doc::BrCpf => &["cpf"],
            Doc::CnResident => &[
                "身份证",
                "身份证号",
                "身份证号码",
                "身份證",
                "公民身份号码",
                "居民身份证",
            ],
            Doc::InAadhaar => &["aadhaar", "aadhar", "uidai", "आधार"],
            Doc::KrRrn => &["rrn", "resident registration", "주민등록번호", "주민번호"],
            Doc::JpMyNumber => &[
                "my number",
                "mynumber",
                "マイナンバー",
                "個人番号",
                "kojin bango",
            ],
            Doc::CaSin => &[
                "sin",
                "social insurance",
                "social insurance number",
                "nas",
                "numéro d'assurance sociale",
            ],
            Doc::AuTfn => &["tfn", "tax file number", "tax file no"],
            Doc::SePersonnummer => &[
                "personnummer",
                "personnr",
                "person nr",
                "pnr",
                "samordningsnummer",
                "personal identity number",
            ],
            Doc::PlPesel => &["pesel"],
            Doc::FiHetu => &[
                "henkilötunnus",
                "henkilÖtunnus",
                "henkilotunnus",
                "hetu",
                "personbeteckning",
                "personal identity code",
            ],
            Doc::NoFodselsnummer => &[
                "fødselsnummer",
                "fØdselsnummer",
                "fodselsnummer",
                "fødselsnr",
                "fnr",
                "d-nummer",
                "personnummer",
            ],
            Doc::DkCpr => &[
                "cpr",
                "cpr-nr",
                "cpr-nr.",
                "cpr nr",
                "cpr-nummer",
                "cpr-nummeret",
                "personnummer",
                "personnr",
            ],
            Doc::SgNric => &["nric", "nric no", "nric number"],
            Doc::MyMykad => &[
                "mykad",
                "no. k/p",
                "no k/p",
                "k/p",
                "no. kp",
                "kad pengenalan",
                "nric",
                "i/c",
                "i/c no",
                "ic no",
                "ic number",
            ],
            Doc::HkHkid => &[
                "hkid",
                "hk id",
                "身份證",
                "香港身份證",
                "身份證號碼",
                "hong kong identity card",
            ],
            Doc::TwId => &["身分證", "身分證字號", "身份證", "統一證號", "居留證"],
            Doc::MxCurp => &["curp"],
            Doc::ArDni => &["dni", "d.n.i.", "documento nacional de identidad"],
            Doc::ArCuit => &["cuil", "cuit", "c.u.i.l.", "c.u.i.t."],
            Doc::ClRut => &[
                "rut",
                "r.u.t.",
                "r.u.n.",
                "rol único tributario",
                "rol unico tributario",
            ],
            Doc::CoCedula => &[
                "cédula",
                "cÉdula",
                "cedula",
                "c.c.",
                "cédula de ciudadanía",
                "cedula de ciudadania",
                "cédula de extranjería",
            ],
            Doc::CoNit => &["nit", "n.i.t."],
            Doc::TrKimlik => &[
                "tc kimlik",
                "t.c. kimlik",
                "t.c. kimlik no",
                "kimlik no",
                "kimlik numarası",
                "kİmlİk no",
                "tckn",
                "t.c. no",
            ],
            Doc::ZaId => &[
                "id number",
                "identity number",
                "id no",
                "id-nommer",
                "identiteitsnommer",
                "rsa id",
            ],
            Doc::IlTeudatZehut => &[
                "teudat zehut",
                "ת.ז",
                "ת\"ז",
                "ת״ז",
                "תעודת זהות",
                "מספר זהות",
            ],
            Doc::BeNationalNumber => &[
                "rijksregisternummer",
                "rijksregister",
                "numéro de registre national",
                "numero de registre national",
                "registre national",
                "national register number",
                "nationalregisternummer",
                "niss",
                "insz",
            ],
            Doc::PtNif => &[
                "nif",
                "nif/nipc",
                "contribuinte",
                "número de contribuinte",
                "numero de contribuinte",
            ],
            Doc::IePps => &[
                "pps",
                "ppsn",
                "pps no",
                "pps number",
                "personal public service",
            ],
        }
    }

    fn bit(self) -> u64 {
        1 << self as u32
    }
}

/// Short labels that are also everyday abbreviations ("CC" on an e-mail, "IC" for a chip,
/// "TC", "FIN", "RUN"): they count only written exactly so and right before the number.
const STRICT_LABELS: &[(&str, Doc)] = &[
    ("CC", Doc::CoCedula),
    ("IC", Doc::MyMykad),
    ("TC", Doc::TrKimlik),
    ("FIN", Doc::SgNric),
    ("RUN", Doc::ClRut),
];

/// Words that may stand between a strict label and its number ("CC No. 1234567").
const STRICT_FILLER: &[&str] = &["no", "nr", "n", "nº", "n°", "º", "°", "number", "is"];

/// A set of [`Doc`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct DocSet(u64);

impl DocSet {
    fn contains(self, doc: Doc) -> bool {
        self.0 & doc.bit() != 0
    }
}

/// What one pattern of the label automaton stands for.
#[derive(Debug)]
struct LabelPattern {
    docs: DocSet,
    /// For a strict label, the exact text it must have.
    strict: Option<&'static str>,
}

/// Every document label in one automaton, so a candidate costs one pass over the text around
/// it whichever documents it might be.
#[derive(Debug)]
struct Labels {
    automaton: AhoCorasick,
    patterns: Vec<LabelPattern>,
    /// The longest label, in bytes.
    longest: usize,
}

impl Labels {
    fn new() -> Option<Labels> {
        let mut keys: Vec<String> = Vec::new();
        let mut patterns: Vec<LabelPattern> = Vec::new();
        for doc in Doc::ALL {
            for label in doc.labels() {
                // Labels shared by documents ("personnummer", "身份證") are one pattern: the
                // automaton reports one match per place.
                let key = label.to_ascii_lowercase();
                match keys.iter().position(|k| *k == key) {
                    Some(index) => patterns[index].docs.0 |= doc.bit(),
                    None => {
                        keys.push(key);
                        patterns.push(LabelPattern {
                            docs: DocSet(doc.bit()),
                            strict: None,
                        });
                    }
                }
            }
        }
        for &(label, doc) in STRICT_LABELS {
            keys.push(label.to_ascii_lowercase());
            patterns.push(LabelPattern {
                docs: DocSet(doc.bit()),
                strict: Some(label),
            });
        }
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&keys)
            .ok()?;
        Some(Labels {
            automaton,
            patterns,
            longest: keys.iter().map(String::len).max().unwrap_or(0),
        })
    }

    /// The documents with a label on the same line ending at most [`LABEL_BEFORE`] bytes before
    /// `range` or starting at most [`LABEL_AFTER`] bytes after it (strict labels: only right
    /// before it). The distance is the gap, so a long label ("numéro de registre national")
    /// reaches as far as a short one.
    ///
    /// `run` is the stretch of digits and separators around `range`, which holds no label: a
    /// candidate deep inside a long run of numbers costs no search at all.
    fn near(&self, text: &str, range: &Range<usize>, run: &Range<usize>) -> DocSet {
        let bytes = text.as_bytes();
        let reach_before = range.start.saturating_sub(LABEL_BEFORE);
        let mut from = floor_char_boundary(text, reach_before.saturating_sub(self.longest));
        let before_end = range.start.min(run.start);
        if let Some(newline) = bytes
            .get(from..before_end)
            .and_then(|s| s.iter().rposition(|&b| b == b'\n'))
        {
            from += newline + 1;
        }
        let reach_after = range.end.saturating_add(LABEL_AFTER);
        let mut to = ceil_char_boundary(text, reach_after.saturating_add(self.longest));
        let after_start = range.end.max(run.end);
        if let Some(newline) = bytes
            .get(after_start..to)
            .and_then(|s| s.iter().position(|&b| b == b'\n'))
        {
            to = after_start + newline;
        }
        let mut found = DocSet::default();
        self.scan(text, from, before_end, |pattern, _, end| {
            let strict_ok = pattern
                .strict
                .is_none_or(|_| strict_gap(text, end, range.start));
            if end >= reach_before && strict_ok {
                found.0 |= pattern.docs.0;
            }
        });
        self.scan(text, after_start, to, |pattern, start, _| {
            if start <= reach_after && pattern.strict.is_none() {
                found.0 |= pattern.docs.0;
            }
        });
        found
    }

    /// Calls `visit` for every label standing on its own in `text[from..to]`.
    fn scan(
        &self,
        text: &str,
        from: usize,
        to: usize,
        mut visit: impl FnMut(&LabelPattern, usize, usize),
    ) {
        let Some(haystack) = text.get(from..to) else {
            return;
        };
        // Every label holds an ASCII letter or a non-ASCII character: the digits and spaces
        // around a number in a long run hold none, and cost no automaton pass.
        if !haystack
            .bytes()
            .any(|b| b.is_ascii_alphabetic() || !b.is_ascii())
        {
            return;
        }
        for m in self.automaton.find_iter(haystack) {
            let (start, end) = (from + m.start(), from + m.end());
            let Some(pattern) = self.patterns.get(m.pattern().as_usize()) else {
                continue;
            };
            let exact = pattern
                .strict
                .is_none_or(|label| text.get(start..end) == Some(label));
            if exact && label_stands_alone(text, start, end) {
                visit(pattern, start, end);
            }
        }
    }
}

/// Letters and digits of the scripts that separate words with spaces (Latin, Greek, Cyrillic).
fn spaced_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || (c.is_alphanumeric() && ('\u{00C0}'..='\u{052F}').contains(&c))
}

/// Whether the label at `start..end` is a word of its own. Only an edge in a script that
/// separates words with spaces needs a boundary there ("sin" is no label in "using"); CJK,
/// kana, Hangul, Thai and Hebrew labels and neighbours need none, since those scripts glue
/// words, particles and prefixes to each other (`身份证号：`, `주민등록번호는`, `כתעודת זהות`).
fn label_stands_alone(text: &str, start: usize, end: usize) -> bool {
    let (Some(label), Some(before), Some(after)) =
        (text.get(start..end), text.get(..start), text.get(end..))
    else {
        return false;
    };
    let edge_ok = |edge: Option<char>, neighbour: Option<char>| {
        !edge.is_some_and(spaced_word_char) || !neighbour.is_some_and(spaced_word_char)
    };
    edge_ok(label.chars().next(), before.chars().next_back())
        && edge_ok(label.chars().next_back(), after.chars().next())
}

/// Whether only punctuation and a few filler words stand between a strict label ending at
/// `end` and its number at `start`: `CC 1234567`, `CC No. 1234567`, `IC：900101-14-5678`.
fn strict_gap(text: &str, end: usize, start: usize) -> bool {
    let Some(gap) = text.get(end..start) else {
        return false;
    };
    gap.len() <= 12
        && gap
            .split(|c: char| {
                c.is_whitespace()
                    || matches!(
                        c,
                        ':' | '.' | '#' | '-' | '(' | ')' | ',' | '：' | '（' | '）'
                    )
            })
            .filter(|word| !word.is_empty())
            .all(|word| STRICT_FILLER.contains(&word.to_ascii_lowercase().as_str()))
        && !gap.contains('\n')
}

static LABELS: LazyLock<Option<Labels>> = LazyLock::new(Labels::new);

/// Identifier layouts that contain letters (or a `K` check), matched with regular expressions
/// inside windows around digits (every one of them contains at least one digit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Nino,
    Dni,
    Nie,
    CodiceFiscale,
    China,
    NirCorsica,
    Hetu,
    Nric,
    Hkid,
    Taiwan,
    Curp,
    Rut,
    Pps,
}

/// The patterns, in the order of the set. Word boundaries are ASCII ones (`(?-u:\b)`), and
/// the newer patterns have none and are checked with [`left_alone`]/[`right_alone`]: either
/// way a value written right against CJK text or a full-width colon (`身份证：…`) still stands
/// on its own, which a Unicode `\b` would deny.
const WRITTEN: [(Written, &str); 13] = [
    (
        Written::Nino,
        r"(?-u:\b)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D](?-u:\b)",
    ),
    (Written::Dni, r"(?-u:\b)[0-9]{8}-?[A-Z](?-u:\b)"),
    (Written::Nie, r"(?-u:\b)[XYZ]-?[0-9]{7}-?[A-Z](?-u:\b)"),
    (
        Written::CodiceFiscale,
        r"(?-u:\b)[A-Z]{6}[0-9LMNPQRSTUV]{2}[ABCDEHLMPRST][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z](?-u:\b)",
    ),
    (Written::China, r"(?-u:\b)[0-9]{17}[0-9Xx](?-u:\b)"),
    (
        Written::NirCorsica,
        r"(?-u:\b)[1-478] ?[0-9]{2} ?[0-9]{2} ?2[AB] ?[0-9]{3} ?[0-9]{3} ?[0-9]{2}(?-u:\b)",
    ),
    (
        Written::Hetu,
        r"[0-9]{6}[-+A-FU-Ya-fu-y][0-9]{3}[0-9A-FHJ-NPR-Ya-fhj-npr-y]",
    ),
    (Written::Nric, r"[STFGMstfgm][0-9]{7}[A-Za-z]"),
    (
        Written::Hkid,
        r"[A-Za-z]{1,2}[0-9]{6}(?:\([0-9Aa]\)|[0-9Aa])",
    ),
    (Written::Taiwan, r"[A-Za-z][1289][0-9]{8}"),
    (
        Written::Curp,
        r"[A-ZÑa-zñ]{4}[0-9]{6}[HMXhmx][A-ZÑa-zñ]{5}[0-9A-Za-z][0-9]",
    ),
    (
        Written::Rut,
        r"[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Kk]|[0-9]{7,8}-[0-9Kk]",
    ),
    (Written::Pps, r"[0-9]{7}[A-Wa-w][ABHWTXabhwtx]?"),
];

impl Written {
    /// Whether the pattern carries its own word boundaries. The others are checked with
    /// [`left_alone`]/[`right_alone`], which also refuse the middle of a dotted or dashed
    /// token (`v1.S1234567D`, `A123456(3).pdf`).
    fn has_boundaries(self) -> bool {
        matches!(
            self,
            Written::Nino
                | Written::Dni
                | Written::Nie
                | Written::CodiceFiscale
                | Written::China
                | Written::NirCorsica
        )
    }
}

struct Patterns {
    each: Vec<(Written, Regex)>,
    /// All of them in one automaton: one pass tells which of them occur in a window at all,
    /// so a window (a long run of digits, say) where none does costs one scan, not thirteen.
    any: RegexSet,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    let each = WRITTEN
        .iter()
        .map(|&(kind, pattern)| Regex::new(pattern).ok().map(|regex| (kind, regex)))
        .collect::<Option<Vec<_>>>()?;
    Some(Patterns {
        each,
        any: RegexSet::new(WRITTEN.iter().map(|&(_, pattern)| pattern)).ok()?,
    })
});

/// What a value that passed its checks needs to be redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Its shape and check stand on their own.
    Nothing,
    /// A label of this document near it.
    Label(Doc),
}

/// The verdict on a match of `kind`: `None` when it fails its checks.
fn judge_written(kind: Written, value: &str) -> Option<Needs> {
    let upper = !value.bytes().any(|b| b.is_ascii_lowercase());
    let alone_if = |ok: bool, doc: Doc| ok.then_some(Needs::Nothing).or(Some(Needs::Label(doc)));
    match kind {
        Written::Nino => nino_ok(value).then_some(Needs::Nothing),
        Written::Dni | Written::Nie => spanish_ok(value).then_some(Needs::Nothing),
        Written::CodiceFiscale => codice_fiscale_ok(value).then_some(Needs::Nothing),
        Written::China => china_ok(value).then_some(Needs::Nothing),
        Written::NirCorsica => {
            let compact: String = value.chars().filter(|c| *c != ' ').collect();
            nir_ok(&compact).then_some(Needs::Nothing)
        }
        Written::Hetu => {
            // `131052-3081` is as plain as an order number; a letter for the century or the
            // check (`131052A308T`) is not.
            let lettered = value.bytes().any(|b| b.is_ascii_alphabetic());
            hetu_ok(value)
                .then_some(())
                .and_then(|()| alone_if(upper && lettered, Doc::FiHetu))
        }
        Written::Nric => nric_ok(value)
            .then_some(())
            .and_then(|()| alone_if(upper, Doc::SgNric)),
        Written::Hkid => hkid_ok(value)
            .then_some(())
            .and_then(|()| alone_if(upper && value.ends_with(')'), Doc::HkHkid)),
        Written::Taiwan => taiwan_ok(value)
            .then_some(())
            .and_then(|()| alone_if(upper, Doc::TwId)),
        Written::Curp => curp_ok(value)
            .then_some(())
            .and_then(|()| alone_if(upper, Doc::MxCurp)),
        Written::Rut => rut_ok(value)
            .then_some(())
            .and_then(|()| alone_if(value.contains('.'), Doc::ClRut)),
        Written::Pps => pps_ok(value)
            .then_some(())
            .and_then(|()| alone_if(upper, Doc::IePps)),
    }
}

/// Group layouts of the numeric formats below, besides a single group: a candidate laid out
/// any other way cannot be one of them, and is not looked at closely. Each format checks its
/// own layout again, so a layout added here for one format lets no other one match it. A
/// `match` rather than a table: every group of a long run of numbers is tested against it.
fn plausible_layout(lengths: &[usize]) -> bool {
    matches!(
        lengths,
        [_]
            | [3, 2, 4]
            | [3, 3, 3]
            | [3, 3, 2]
            | [4, 2, 3]
            | [2, 3, 3, 3]
            | [3, 3, 3, 2]
            | [13, 2]
            | [1, 2, 2, 2, 3, 3, 2]
            | [4, 4, 4]
            | [6, 7]
            | [6, 4]
            | [8, 4]
            // NO fødselsnummer `DDMMYY NNNNN`.
            | [6, 5]
            // MY MyKad `YYMMDD-PB-NNNN`.
            | [6, 2, 4]
            // AR CUIL/CUIT `20-12345678-6`.
            | [2, 8, 1]
            // AR DNI and CO cédula in dotted thousands: `1.234.567`, `12.345.678`, `123.456`,
            // `1.020.304.050` (`123.456.789` is above).
            | [1, 3, 3]
            | [2, 3, 3]
            | [3, 3]
            | [1, 3, 3, 3]
            // BE national number `YY.MM.DD-XXX.CC`, `YYMMDD-XXX-CC`.
            | [2, 2, 2, 3, 2]
            | [6, 3, 2]
            // ZA identity number `YYMMDD SSSS CAZ`, `YYMMDD SSSS CA Z`.
            | [6, 4, 3]
            | [6, 4, 2, 1]
            // IL teudat zehut `12345678-2`; CO NIT with its check digit, plain or dotted.
            | [8, 1]
            | [9, 1]
            | [10, 1]
            | [2, 3, 3, 1]
            | [3, 3, 3, 1]
            | [1, 3, 3, 3, 1]
    )
}

/// Appends every identity number in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let Some(labels) = LABELS.as_ref() else {
        return Ok(());
    };
    let mut digits = Vec::with_capacity(20);
    let mut windows: Vec<Range<usize>> = Vec::new();
    numeric_runs(text, deadline, |run| {
        find_in_run(text, run, labels, &mut digits, out, deadline)?;
        if let (Some(first), Some(last)) = (run.groups.first(), run.groups.last())
            && may_be_written(text.as_bytes(), run, first.start, last.end)
        {
            // Letters of alphanumeric IDs sit right next to the digits.
            push_window(
                &mut windows,
                widen_to_whitespace(text, first.start.saturating_sub(4), last.end + 3, 16),
            );
        }
        Ok(())
    })?;
    // Windows are merged, so together they cover each byte at most once.
    if let Some(patterns) = PATTERNS.as_ref() {
        for window in windows {
            deadline.check()?;
            find_written(text, window, patterns, labels, out);
        }
    }
    Ok(())
}

/// Whether a run can be part of a [`WRITTEN`] value: those hold six digits or more in one
/// run (`AB 12 34 56 C`, `131052-308T`, `A123456(3)`), or have letters glued to their digits
/// (the codice fiscale's `RSSMRA85T10A562S`). The years and counts of ordinary prose are
/// neither, and cost no window.
fn may_be_written(bytes: &[u8], run: &NumericRun, start: usize, end: usize) -> bool {
    let glued = |at: Option<usize>| {
        at.and_then(|i| bytes.get(i))
            .is_some_and(u8::is_ascii_alphabetic)
    };
    glued(start.checked_sub(1))
        || glued(Some(end))
        || run.groups.iter().map(ExactSizeIterator::len).sum::<usize>() >= 6
}

fn find_written(
    text: &str,
    window: Range<usize>,
    patterns: &Patterns,
    labels: &Labels,
    out: &mut Vec<Finding>,
) {
    let Some(slice) = text.get(window.clone()) else {
        return;
    };
    let present = patterns.any.matches(slice);
    if !present.matched_any() {
        return;
    }
    let bytes = text.as_bytes();
    for index in present.iter() {
        let Some((kind, regex)) = patterns.each.get(index) else {
            continue;
        };
        for m in regex.find_iter(slice) {
            let range = window.start + m.start()..window.start + m.end();
            let stands_alone = kind.has_boundaries()
                || (left_alone(bytes, range.start) && right_alone(bytes, range.end));
            if !stands_alone {
                continue;
            }
            let found = match judge_written(*kind, m.as_str()) {
                Some(Needs::Nothing) => true,
                Some(Needs::Label(doc)) => labels.near(text, &range, &range).contains(doc),
                None => false,
            };
            if found {
                out.push(Finding {
                    range,
                    category: Category::IdNumber,
                });
            }
        }
    }
}

/// Each group is tried as the start of a number against at most [`MAX_GROUPS`] ends, and a
/// candidate is looked at closely only when its digit count and grouping fit a format, so a
/// run of any length costs a constant amount of work per group.
fn find_in_run(
    text: &str,
    run: &NumericRun,
    labels: &Labels,
    digits: &mut Vec<u8>,
    out: &mut Vec<Finding>,
    deadline: &Deadline,
) -> Result<(), Expired> {
    let bytes = text.as_bytes();
    let count = run.groups.len();
    let run_span = run.start()..run.groups.last().map_or(0, |g| g.end);
    let mut first = 0;
    while first < count {
        deadline.check()?;
        let starts_clean = first == 0 || run.separator(text, first - 1).contains(' ');
        let mut matched = None;
        if starts_clean {
            // Lengths of the groups a candidate starting here may span, and their running
            // digit counts, computed once for all its possible ends.
            let reach = run
                .groups
                .get(first..count.min(first + MAX_GROUPS))
                .unwrap_or(&[]);
            let mut lengths = [0usize; MAX_GROUPS];
            let mut digit_counts = [0usize; MAX_GROUPS];
            let mut total = 0;
            for (index, group) in reach.iter().enumerate() {
                lengths[index] = group.len();
                total += group.len();
                digit_counts[index] = total;
            }
            for spanned in (1..=reach.len()).rev() {
                let last = first + spanned - 1;
                if !plausible_digit_count(digit_counts[spanned - 1])
                    || !plausible_layout(&lengths[..spanned])
                {
                    continue;
                }
                let Some(groups) = run.groups.get(first..=last) else {
                    continue;
                };
                let ends_clean = last + 1 == count || run.separator(text, last).contains(' ');
                let (Some(start), Some(end)) = (
                    groups.first().map(|g| g.start),
                    groups.last().map(|g| g.end),
                ) else {
                    continue;
                };
                if !ends_clean || !stands_alone_within(bytes, run, first, last, start, end) {
                    continue;
                }
                collect_digits(text, run, first, last, digits);
                let shape = Shape::new(text, run, first, last, digits);
                if identify(&shape, labels, &(start..end), &run_span) {
                    matched = Some((last, start..end));
                    break;
                }
            }
        }
        match matched {
            Some((last, range)) => {
                out.push(Finding {
                    range,
                    category: Category::IdNumber,
                });
                first = last + 1;
            }
            None => first += 1,
        }
    }
    Ok(())
}

/// Inner group boundaries were checked by the caller; the run's outer edges must not be
/// glued to words, and a `+` prefix makes the run a phone number, not an ID.
fn stands_alone_within(
    bytes: &[u8],
    run: &NumericRun,
    first: usize,
    last: usize,
    start: usize,
    end: usize,
) -> bool {
    if first == 0 && run.plus {
        return false;
    }
    let left = first > 0 || left_alone(bytes, start);
    let right = last + 1 < run.groups.len() || right_alone(bytes, end);
    left && right
}

/// A candidate: groups `first..=last` of a run (at most [`MAX_GROUPS`]), their lengths, the
/// separators between them, and their digits.
struct Shape<'a> {
    lengths: [usize; MAX_GROUPS],
    separators: [&'a str; MAX_GROUPS],
    groups: usize,
    digits: &'a [u8],
    text: &'a str,
}

impl<'a> Shape<'a> {
    fn new(
        text: &'a str,
        run: &NumericRun,
        first: usize,
        last: usize,
        digits: &'a [u8],
    ) -> Shape<'a> {
        let mut lengths = [0; MAX_GROUPS];
        let mut separators = [""; MAX_GROUPS];
        let groups = run.groups.get(first..=last).unwrap_or(&[]);
        for (index, group) in groups.iter().take(MAX_GROUPS).enumerate() {
            lengths[index] = group.len();
            if first + index < last {
                separators[index] = run.separator(text, first + index);
            }
        }
        Shape {
            lengths,
            separators,
            groups: groups.len().min(MAX_GROUPS),
            digits,
            text,
        }
    }

    fn lengths(&self) -> &[usize] {
        &self.lengths[..self.groups]
    }

    fn separators(&self) -> &[&'a str] {
        &self.separators[..self.groups.saturating_sub(1)]
    }

    fn solid(&self) -> bool {
        self.groups == 1
    }

    /// One group, or groups of exactly `lengths` joined by one of `separators` used throughout.
    fn laid_out(&self, lengths: &[usize], separators: &[&str]) -> bool {
        self.solid() && self.lengths.first() == Some(&lengths.iter().sum::<usize>())
            || self.grouped(lengths, separators)
    }

    /// Groups of exactly `lengths` (more than one) joined by one of `separators` throughout.
    fn grouped(&self, lengths: &[usize], separators: &[&str]) -> bool {
        let seps = self.separators();
        self.groups > 1
            && self.lengths() == lengths
            && seps
                .first()
                .is_some_and(|first| separators.contains(first) && seps.iter().all(|s| s == first))
    }

    /// Groups of exactly `lengths` joined by exactly `separators`, in order.
    fn written(&self, lengths: &[usize], separators: &[&str]) -> bool {
        self.lengths() == lengths && self.separators() == separators
    }

    /// One group, or thousands separated by dots (`1.020.304`, `52.123.456`).
    fn solid_or_thousands(&self) -> bool {
        let lengths = self.lengths();
        self.solid()
            || (lengths.first().is_some_and(|&n| (1..=3).contains(&n))
                && lengths.iter().skip(1).all(|&n| n == 3)
                && self.separators().iter().all(|&s| s == "."))
    }

    /// `body-C`: a single check digit after a dash, the body plain or in dotted thousands.
    fn dash_check_digit(&self) -> bool {
        let (lengths, separators) = (self.lengths(), self.separators());
        let (Some((&1, body)), Some((&"-", body_separators))) =
            (lengths.split_last(), separators.split_last())
        else {
            return false;
        };
        body.len() == 1
            || (body.first().is_some_and(|&n| (1..=3).contains(&n))
                && body.iter().skip(1).all(|&n| n == 3)
                && body_separators.iter().all(|&s| s == "."))
    }
}

fn identify(shape: &Shape<'_>, labels: &Labels, range: &Range<usize>, run: &Range<usize>) -> bool {
    if all_same(shape.digits) {
        return false;
    }
    // Only formats of this many digits are judged (every check requires its own count), and
    // the text around the candidate is searched for labels at most once.
    let mut near: Option<DocSet> = None;
    candidates(shape.digits.len())
        .iter()
        .any(|&doc| match judge(doc, shape) {
            Some(Needs::Nothing) => true,
            Some(Needs::Label(doc)) => near
                .get_or_insert_with(|| labels.near(shape.text, range, run))
                .contains(doc),
            None => false,
        })
}

/// The numeric documents with this many digits.
fn candidates(count: usize) -> &'static [Doc] {
    match count {
        6 => &[Doc::CoCedula],
        7 => &[Doc::ArDni, Doc::CoCedula],
        8 => &[Doc::AuTfn, Doc::ArDni, Doc::CoCedula],
        9 => &[
            Doc::UsSsn,
            Doc::CaSin,
            Doc::NlBsn,
            Doc::AuTfn,
            Doc::IlTeudatZehut,
            Doc::PtNif,
            Doc::CoCedula,
            Doc::CoNit,
        ],
        10 => &[Doc::SePersonnummer, Doc::DkCpr, Doc::CoCedula, Doc::CoNit],
        11 => &[
            Doc::BrCpf,
            Doc::BeNationalNumber,
            Doc::ArCuit,
            Doc::DeSteuerId,
            Doc::PlPesel,
            Doc::NoFodselsnummer,
            Doc::TrKimlik,
            Doc::CoNit,
        ],
        12 => &[
            Doc::MyMykad,
            Doc::InAadhaar,
            Doc::JpMyNumber,
            Doc::SePersonnummer,
        ],
        13 => &[Doc::KrRrn, Doc::ZaId],
        15 => &[Doc::FrNir, Doc::CnResident],
        _ => &[],
    }
}

/// Whether a candidate has the layout and check of `doc`, and whether it then needs a label.
fn judge(doc: Doc, shape: &Shape<'_>) -> Option<Needs> {
    let d = shape.digits;
    let label = |ok: bool| ok.then_some(Needs::Label(doc));
    // A formatted layout that stands alone, a plain one that needs the label.
    let alone_or_label = |ok: bool, formatted: bool, plain: bool| {
        if !ok {
            None
        } else if formatted {
            Some(Needs::Nothing)
        } else {
            label(plain)
        }
    };
    match doc {
        Doc::UsSsn => label(shape.laid_out(&[3, 2, 4], &["-", " "]) && ssn_ok(d)),
        Doc::CaSin => label(shape.laid_out(&[3, 3, 3], &["-", " "]) && sin_ok(d)),
        Doc::NlBsn => label(shape.laid_out(&[4, 2, 3], &["."]) && bsn_ok(d)),
        Doc::AuTfn => label(
            (shape.laid_out(&[3, 3, 3], &[" ", "-"]) || shape.laid_out(&[3, 3, 2], &[" "]))
                && tfn_ok(d),
        ),
        Doc::DeSteuerId => label(shape.laid_out(&[2, 3, 3, 3], &[" "]) && steuer_id_ok(d)),
        Doc::PlPesel => label(shape.solid() && pesel_ok(d)),
        Doc::BrCpf => alone_or_label(
            cpf_ok(d),
            shape.written(&[3, 3, 3, 2], &[".", ".", "-"]),
            shape.solid(),
        ),
        Doc::FrNir => alone_or_label(
            nir_digits_ok(d),
            shape.grouped(&[1, 2, 2, 2, 3, 3, 2], &[" "]),
            shape.solid() || shape.lengths() == [13, 2],
        ),
        Doc::CnResident => label(shape.solid() && china_first_generation_ok(d)),
        Doc::InAadhaar => label(shape.laid_out(&[4, 4, 4], &[" ", "-"]) && aadhaar_ok(d)),
        Doc::JpMyNumber => label(shape.laid_out(&[4, 4, 4], &[" ", "-"]) && my_number_ok(d)),
        Doc::KrRrn => {
            // Numbers issued since October 2020 no longer carry a check digit, so without a
            // label a number must pass it and with a label the date and sex digit suffice.
            if shape.written(&[6, 7], &["-"]) && rrn_ok(d, true) {
                Some(Needs::Nothing)
            } else {
                label(shape.laid_out(&[6, 7], &["-"]) && rrn_ok(d, false))
            }
        }
        Doc::SePersonnummer => label(
            (shape.laid_out(&[6, 4], &["-", "+"]) || shape.laid_out(&[8, 4], &["-", "+"]))
                && personnummer_ok(d),
        ),
        Doc::NoFodselsnummer => label(shape.laid_out(&[6, 5], &[" "]) && fodselsnummer_ok(d)),
        Doc::DkCpr => label(shape.laid_out(&[6, 4], &["-", " "]) && cpr_ok(d)),
        // The dashed layout printed on the card, with a real birth date and a place-of-birth
        // code in use, is distinctive enough: no other common number is written 6-2-4.
        Doc::MyMykad => alone_or_label(
            mykad_ok(d),
            shape.grouped(&[6, 2, 4], &["-"]),
            shape.laid_out(&[6, 2, 4], &[" "]),
        ),
        Doc::ArDni => label(d.first() != Some(&0) && shape.solid_or_thousands()),
        Doc::ArCuit => alone_or_label(
            cuit_ok(d),
            shape.grouped(&[2, 8, 1], &["-"]),
            shape.laid_out(&[2, 8, 1], &[" "]),
        ),
        Doc::CoCedula => label(d.first() != Some(&0) && shape.solid_or_thousands()),
        Doc::CoNit => label(shape.dash_check_digit() && nit_ok(d)),
        Doc::TrKimlik => label(shape.solid() && tc_kimlik_ok(d)),
        // Written in its printed groups the number stands alone; plain 13 digits are also
        // millisecond timestamps and EAN-13 barcodes, so they need the label.
        Doc::ZaId => alone_or_label(
            za_id_ok(d),
            shape.grouped(&[6, 4, 3], &[" "]) || shape.grouped(&[6, 4, 2, 1], &[" "]),
            shape.solid(),
        ),
        Doc::IlTeudatZehut => {
            label((shape.solid() || shape.written(&[8, 1], &["-"])) && teudat_zehut_ok(d))
        }
        Doc::BeNationalNumber => alone_or_label(
            belgian_number_ok(d),
            shape.written(&[2, 2, 2, 3, 2], &[".", ".", "-", "."]),
            shape.laid_out(&[6, 3, 2], &["-", " "]),
        ),
        Doc::PtNif => label(shape.laid_out(&[3, 3, 3], &[" "]) && nif_ok(d)),
        Doc::FiHetu
        | Doc::SgNric
        | Doc::HkHkid
        | Doc::TwId
        | Doc::MxCurp
        | Doc::ClRut
        | Doc::IePps => None,
    }
}

/// The first-generation resident card (until 2013): 6-digit area code, `YYMMDD` in the 1900s
/// and a 3-digit sequence, no check digit.
fn china_first_generation_ok(d: &[u8]) -> bool {
    d.len() == 15 && (1..=8).contains(&d[0]) && valid_date(1900 + two(d, 6), two(d, 8), two(d, 10))
}

/// Norwegian fødselsnummer, D-number (day + 40) or H-number (month + 40): two mod 11 check
/// digits, and a birth date whose century the individual number gives.
fn fodselsnummer_ok(d: &[u8]) -> bool {
    if d.len() != 11 {
        return false;
    }
    // A remainder that would make the check digit 10 is never issued.
    let check = |body: &[u8], weights: &[u32]| {
        let rest = weighted_sum(body, weights) % 11;
        (rest != 1).then_some((11 - rest) % 11)
    };
    if check(&d[..9], &[3, 7, 6, 1, 8, 9, 4, 5, 2]) != Some(u32::from(d[9]))
        || check(&d[..10], &[5, 4, 3, 2, 7, 6, 5, 4, 3, 2]) != Some(u32::from(d[10]))
    {
        return false;
    }
    let (mut day, mut month, year) = (two(d, 0), two(d, 2), two(d, 4));
    if day > 40 {
        day -= 40;
    }
    if month > 40 {
        month -= 40;
    }
    let individual = decimal_value(&d[6..9]).unwrap_or(u64::MAX);
    let century = match (individual, year) {
        (0..=499, _) => 1900,
        (500..=749, 54..) => 1800,
        (500..=999, ..=39) => 2000,
        (900..=999, 40..) => 1900,
        _ => return false,
    };
    valid_date(century + year, month, day)
}

/// Danish CPR number: a birth date whose century the seventh digit gives. The mod 11 check
/// was dropped in 2007, so the date is all there is to check.
fn cpr_ok(d: &[u8]) -> bool {
    if d.len() != 10 {
        return false;
    }
    let year = two(d, 4);
    let century = match (d[6], year) {
        (0..=3, _) | (4 | 9, 37..) => 1900,
        (5..=8, 58..) => 1800,
        _ => 2000,
    };
    valid_date(century + year, two(d, 2), two(d, 0))
}

/// Malaysian MyKad: `YYMMDD`, a place-of-birth code the National Registration Department
/// uses (states 01–16 and 21–59, countries 60–93, unknown 98–99), and a serial.
fn mykad_ok(d: &[u8]) -> bool {
    if d.len() != 12 {
        return false;
    }
    let (year, month, day) = (two(d, 0), two(d, 2), two(d, 4));
    let dated = valid_date(1900 + year, month, day) || valid_date(2000 + year, month, day);
    dated
        && matches!(
            two(d, 6),
            1..=16 | 21..=68 | 71 | 72 | 74..=79 | 82..=93 | 98 | 99
        )
}

/// Argentine CUIL/CUIT: a type prefix (people 20, 23, 24, 27; companies 30, 33, 34), the DNI
/// and a mod 11 check digit (weights 5 4 3 2 7 6 5 4 3 2; a remainder of 1 gives 9).
fn cuit_ok(d: &[u8]) -> bool {
    if d.len() != 11 || !matches!(two(d, 0), 20 | 23 | 24 | 27 | 30 | 33 | 34) {
        return false;
    }
    let rest = weighted_sum(&d[..10], &[5, 4, 3, 2, 7, 6, 5, 4, 3, 2]) % 11;
    let check = match rest {
        0 => 0,
        1 => 9,
        rest => 11 - rest,
    };
    check == u32::from(d[10])
}

/// Colombian NIT: a cédula or company number and the DIAN check digit (prime weights from
/// the right, remainder mod 11; 0 and 1 stand for themselves, otherwise 11 minus it).
fn nit_ok(d: &[u8]) -> bool {
    const WEIGHTS: [u32; 10] = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43];
    let Some((&check, body)) = d.split_last() else {
        return false;
    };
    if !(8..=10).contains(&body.len()) {
        return false;
    }
    let rest = body
        .iter()
        .rev()
        .zip(WEIGHTS)
        .map(|(&digit, weight)| u32::from(digit) * weight)
        .sum::<u32>()
        % 11;
    let expected = if rest < 2 { rest } else { 11 - rest };
    expected == u32::from(check)
}

/// Turkish T.C. Kimlik No: no leading zero; the tenth digit is 7 × (odd-place digits) minus
/// the even-place ones, mod 10, and the eleventh the sum of the first ten, mod 10.
fn tc_kimlik_ok(d: &[u8]) -> bool {
    if d.len() != 11 || d[0] == 0 {
        return false;
    }
    let odd: u32 = [0, 2, 4, 6, 8].iter().map(|&i| u32::from(d[i])).sum();
    let even: u32 = [1, 3, 5, 7].iter().map(|&i| u32::from(d[i])).sum();
    let first_ten: u32 = d[..10].iter().map(|&x| u32::from(x)).sum();
    // 9 × even is −even mod 10.
    (7 * odd + 9 * even) % 10 == u32::from(d[9]) && first_ten % 10 == u32::from(d[10])
}

/// South African identity number: `YYMMDD`, a serial, the citizenship digit (0 citizen,
/// 1 permanent resident, 2 refugee), a digit and a Luhn check.
fn za_id_ok(d: &[u8]) -> bool {
    if d.len() != 13 || d[10] > 2 {
        return false;
    }
    let (year, month, day) = (two(d, 0), two(d, 2), two(d, 4));
    (valid_date(1900 + year, month, day) || valid_date(2000 + year, month, day)) && luhn(d)
}

/// Israeli Teudat Zehut: 9 digits whose check is Luhn's (weights 1 2 1 2 … from the left,
/// digit sums of the doubled ones).
fn teudat_zehut_ok(d: &[u8]) -> bool {
    d.len() == 9 && luhn(d)
}

/// Belgian national register number: `YYMMDD` (month and day 0 for unknown dates, the month
/// raised by 20 or 40 for BIS numbers), a serial and a mod 97 key over the first nine digits,
/// or over `2` and the nine digits for people born from 2000.
fn belgian_number_ok(d: &[u8]) -> bool {
    if d.len() != 11 || !matches!(two(d, 2), 0..=12 | 20..=32 | 40..=52) || two(d, 4) > 31 {
        return false;
    }
    let (Some(body), Some(key)) = (decimal_value(&d[..9]), decimal_value(&d[9..])) else {
        return false;
    };
    key == 97 - body % 97 || key == 97 - (2_000_000_000 + body) % 97
}

/// Portuguese NIF: a first digit in use (1–3 people, 45 non-residents, 5 companies,
/// 6 public bodies, 7x and 8 other entities, 9x irregular and temporary) and a mod 11 check
/// digit (weights 9 to 2; 10 becomes 0).
fn nif_ok(d: &[u8]) -> bool {
    if d.len() != 9 {
        return false;
    }
    let first_ok = matches!(d[0], 1 | 2 | 3 | 5 | 6 | 8)
        || matches!(
            two(d, 0),
            45 | 70 | 71 | 72 | 74 | 75 | 77 | 78 | 79 | 90 | 91 | 98 | 99
        );
    let rest = weighted_sum(&d[..8], &[9, 8, 7, 6, 5, 4, 3, 2]) % 11;
    first_ok && (11 - rest) % 11 % 10 == u32::from(d[8])
}

/// ASCII digit values of `bytes`, or `None` if one is not a digit.
fn digit_values<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if bytes.len() != N {
        return None;
    }
    for (slot, &b) in out.iter_mut().zip(bytes) {
        if !b.is_ascii_digit() {
            return None;
        }
        *slot = b - b'0';
    }
    Some(out)
}

/// Finnish henkilötunnus `DDMMYYCZZZQ`: the century sign (`+` 1800s; `-` and, since 2023,
/// `Y X W V U` 1900s; `A` and `B C D E F` 2000s), an individual number from 002, and the
/// check character of `DDMMYYZZZ` mod 31.
fn hetu_ok(value: &str) -> bool {
    const CHECK: &[u8; 31] = b"0123456789ABCDEFHJKLMNPRSTUVWXY";
    let bytes = value.as_bytes();
    if bytes.len() != 11 {
        return false;
    }
    let (Some(date), Some(individual)) = (
        digit_values::<6>(&bytes[..6]),
        digit_values::<3>(&bytes[7..10]),
    ) else {
        return false;
    };
    let century = match bytes[6].to_ascii_uppercase() {
        b'+' => 1800,
        b'-' | b'U'..=b'Y' => 1900,
        b'A'..=b'F' => 2000,
        _ => return false,
    };
    let (Some(date_value), Some(individual_value)) =
        (decimal_value(&date), decimal_value(&individual))
    else {
        return false;
    };
    let number = date_value * 1000 + individual_value;
    valid_date(century + two(&date, 4), two(&date, 2), two(&date, 0))
        && individual_value >= 2
        && usize::try_from(number % 31)
            .ok()
            .and_then(|index| CHECK.get(index))
            == Some(&bytes[10].to_ascii_uppercase())
}

/// Singapore NRIC/FIN: weights 2 7 6 5 4 3 2, plus 4 for the T and G series and 3 for the M
/// series; with `r` the remainder mod 11, the letter is the `r`-th of the series' table, and
/// for the M series (2022) the `(10 − r)`-th (ICA).
fn nric_ok(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(&prefix), Some(&letter)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    let Some(digits) = bytes.get(1..8).and_then(digit_values::<7>) else {
        return false;
    };
    let sum = weighted_sum(&digits, &[2, 7, 6, 5, 4, 3, 2]);
    let remainder = |offset: u32| ((sum + offset) % 11) as usize;
    let expected = match prefix.to_ascii_uppercase() {
        b'S' => b"JZIHGFEDCBA".get(remainder(0)),
        b'T' => b"JZIHGFEDCBA".get(remainder(4)),
        b'F' => b"XWUTRQPNMLK".get(remainder(0)),
        b'G' => b"XWUTRQPNMLK".get(remainder(4)),
        b'M' => b"KLJNPQRTUWX".get(10 - remainder(3)),
        _ => None,
    };
    bytes.len() == 9 && expected == Some(&letter.to_ascii_uppercase())
}

/// Hong Kong HKID `A123456(3)`: letters count A = 10 … Z = 35 and a missing second letter 36,
/// weights 9 to 2; the check is 11 minus the remainder mod 11, 10 written `A` and 11 `0`.
fn hkid_ok(value: &str) -> bool {
    // `A123456(3)` and `A1234563` alike: the parentheses carry nothing.
    let mut compact = [0u8; 9];
    let mut length = 0;
    for b in value.bytes().filter(|b| !matches!(b, b'(' | b')')) {
        let Some(slot) = compact.get_mut(length) else {
            return false;
        };
        *slot = b.to_ascii_uppercase();
        length += 1;
    }
    let Some((&check, body)) = compact.get(..length).and_then(<[u8]>::split_last) else {
        return false;
    };
    let letters = body.len().saturating_sub(6);
    let Some(digits) = body.get(letters..).and_then(digit_values::<6>) else {
        return false;
    };
    let letter = |b: &u8| b.is_ascii_uppercase().then(|| u32::from(b - b'A') + 10);
    let (Some(first), Some(second)) = (match body.get(..letters) {
        Some([only]) => (Some(36), letter(only)),
        Some([first, second]) => (letter(first), letter(second)),
        _ => (None, None),
    }) else {
        return false;
    };
    let sum = first * 9 + second * 8 + weighted_sum(&digits, &[7, 6, 5, 4, 3, 2]);
    let expected = match (11 - sum % 11) % 11 {
        10 => b'A',
        // Below 10 here, so the cast cannot truncate.
        digit => b'0' + digit as u8,
    };
    check == expected
}

/// Taiwanese national ID and resident certificate: the area letter becomes two digits
/// (A = 10, … in the ministry's order, I = 34, O = 35), weights 1 9 8 7 6 5 4 3 2 1 1, and
/// the total is divisible by 10.
fn taiwan_ok(value: &str) -> bool {
    const CODES: [u32; 26] = [
        10, 11, 12, 13, 14, 15, 16, 17, 34, 18, 19, 20, 21, 22, 35, 23, 24, 25, 26, 27, 28, 29, 32,
        30, 31, 33,
    ];
    let bytes = value.as_bytes();
    let Some(code) = bytes
        .first()
        .and_then(|b| CODES.get(usize::from(b.to_ascii_uppercase().wrapping_sub(b'A'))))
    else {
        return false;
    };
    let Some(digits) = bytes.get(1..).and_then(digit_values::<9>) else {
        return false;
    };
    let sum = code / 10 + code % 10 * 9 + weighted_sum(&digits, &[8, 7, 6, 5, 4, 3, 2, 1, 1]);
    matches!(digits[0], 1 | 2 | 8 | 9) && sum.is_multiple_of(10)
}

/// Mexican CURP: a birth date (the 17th character is a digit before 2000, a letter after),
/// sex `H`, `M` or `X`, a state code (or `NE`, born abroad), and a check digit: characters
/// valued by their place in `0–9 A–N Ñ O–Z`, weights 18 down to 2, 10 minus the sum mod 10.
fn curp_ok(value: &str) -> bool {
    const STATES: [&str; 33] = [
        "AS", "BC", "BS", "CC", "CL", "CM", "CS", "CH", "DF", "DG", "GT", "GR", "HG", "JC", "MC",
        "MN", "MS", "NT", "NL", "OC", "PL", "QT", "QR", "SP", "SL", "SR", "TC", "TS", "TL", "VZ",
        "YN", "ZS", "NE",
    ];
    let mut chars = ['\0'; 18];
    let mut count = 0;
    for c in value.chars() {
        let Some(slot) = chars.get_mut(count) else {
            return false;
        };
        *slot = if c == 'ñ' {
            'Ñ'
        } else {
            c.to_ascii_uppercase()
        };
        count += 1;
    }
    if count != 18 {
        return false;
    }
    let value_of = |c: char| match c {
        '0'..='9' => Some(u32::from(c) - u32::from('0')),
        'A'..='N' => Some(u32::from(c) - u32::from('A') + 10),
        'Ñ' => Some(24),
        'O'..='Z' => Some(u32::from(c) - u32::from('O') + 25),
        _ => None,
    };
    let number = |at: usize| {
        let tens = chars[at].to_digit(10)?;
        Some(tens * 10 + chars[at + 1].to_digit(10)?)
    };
    let century = if chars[16].is_ascii_digit() {
        1900
    } else {
        2000
    };
    let (Some(year), Some(month), Some(day)) = (number(4), number(6), number(8)) else {
        return false;
    };
    let state: String = chars[11..13].iter().collect();
    let mut sum = 0;
    for (index, &c) in chars[..17].iter().enumerate() {
        let Some(v) = value_of(c) else {
            return false;
        };
        // `index` is below 17, so the cast cannot truncate.
        sum += v * (18 - index as u32);
    }
    valid_date(century + year, month, day)
        && matches!(chars[10], 'H' | 'M' | 'X')
        && STATES.contains(&state.as_str())
        && chars[17].to_digit(10) == Some((10 - sum % 10) % 10)
}

/// Chilean RUT/RUN `12.345.678-5`: weights 2 to 7 from the right, repeating; the check is 11
/// minus the remainder mod 11, 11 written `0` and 10 `K`.
fn rut_ok(value: &str) -> bool {
    let Some((body, check)) = value.rsplit_once('-') else {
        return false;
    };
    let mut digits = [0u8; 8];
    let mut count = 0;
    for b in body.bytes().filter(|&b| b != b'.') {
        let Some(slot) = digits.get_mut(count) else {
            return false;
        };
        if !b.is_ascii_digit() {
            return false;
        }
        *slot = b - b'0';
        count += 1;
    }
    let digits = &digits[..count];
    if count < 7 || all_same(digits) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .zip([2, 3, 4, 5, 6, 7].iter().cycle())
        .map(|(&d, &w)| u32::from(d) * w)
        .sum();
    let expected = match 11 - sum % 11 {
        11 => b'0',
        10 => b'K',
        // Below 10 here, so the cast cannot truncate.
        digit => b'0' + digit as u8,
    };
    check.as_bytes() == [expected] || check.as_bytes() == [expected.to_ascii_lowercase()]
}

/// Irish PPS number `1234567T`, `1234567TA`: weights 8 to 2 over the digits and 9 over a
/// second letter `A`, `B` or `H` (`W`, `T`, `X` and none count 0); the remainder mod 23 picks
/// the check letter from `W A B C … V`.
fn pps_ok(value: &str) -> bool {
    const LETTERS: &[u8; 23] = b"WABCDEFGHIJKLMNOPQRSTUV";
    let bytes = value.as_bytes();
    let Some(digits) = bytes.get(..7).and_then(digit_values::<7>) else {
        return false;
    };
    if all_same(&digits) {
        return false;
    }
    let second = match bytes.get(8).map(u8::to_ascii_uppercase) {
        None | Some(b'W' | b'T' | b'X') => 0,
        Some(b'A') => 1,
        Some(b'B') => 2,
        Some(b'H') => 8,
        Some(_) => return false,
    };
    let sum = weighted_sum(&digits, &[8, 7, 6, 5, 4, 3, 2]) + 9 * second;
    bytes.get(7).map(u8::to_ascii_uppercase) == LETTERS.get((sum % 23) as usize).copied()
}

fn ssn_ok(d: &[u8]) -> bool {
    if d.len() != 9 {
        return false;
    }
    let area = decimal_value(&d[..3]).unwrap_or(0);
    let group = decimal_value(&d[3..5]).unwrap_or(0);
    let serial = decimal_value(&d[5..]).unwrap_or(0);
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

fn sin_ok(d: &[u8]) -> bool {
    d.len() == 9 && luhn(d)
}

fn bsn_ok(d: &[u8]) -> bool {
    if d.len() != 9 {
        return false;
    }
    let sum = weighted_sum(&d[..8], &[9, 8, 7, 6, 5, 4, 3, 2]);
    (sum + 11 * 9 - u32::from(d[8])).is_multiple_of(11)
}

fn tfn_ok(d: &[u8]) -> bool {
    match d.len() {
        9 => weighted_sum(d, &[1, 4, 3, 7, 5, 8, 6, 9, 10]).is_multiple_of(11),
        8 => weighted_sum(d, &[10, 7, 8, 4, 6, 3, 5, 1]).is_multiple_of(11),
        _ => false,
    }
}

fn steuer_id_ok(d: &[u8]) -> bool {
    if d.len() != 11 || d[0] == 0 {
        return false;
    }
    // In the first ten digits exactly one digit repeats (twice or three times), the rest
    // appear at most once.
    let mut counts = [0u8; 10];
    for &digit in &d[..10] {
        counts[usize::from(digit)] += 1;
    }
    let repeated = counts.iter().filter(|&&c| c > 1).count();
    let max = counts.iter().copied().max().unwrap_or(0);
    repeated == 1 && (2..=3).contains(&max) && iso7064_mod11_10(&d[..10]) == d[10]
}

fn pesel_ok(d: &[u8]) -> bool {
    if d.len() != 11 {
        return false;
    }
    let (mut month, day, year2) = (two(d, 2), two(d, 4), two(d, 0));
    let century = match month / 20 {
        0 => 1900,
        1 => 2000,
        2 => 2100,
        3 => 2200,
        _ => 1800,
    };
    month %= 20;
    let check = (10 - weighted_sum(&d[..10], &[1, 3, 7, 9, 1, 3, 7, 9, 1, 3]) % 10) % 10;
    valid_date(century + year2, month, day) && check == u32::from(d[10])
}

fn cpf_ok(d: &[u8]) -> bool {
    if d.len() != 11 || all_same(d) {
        return false;
    }
    let check = |n: usize| -> u8 {
        let sum: u32 = d[..n]
            .iter()
            .enumerate()
            .map(|(i, &x)| u32::from(x) * (n as u32 + 1 - i as u32))
            .sum();
        let rest = (sum * 10) % 11;
        if rest == 10 { 0 } else { rest as u8 }
    };
    check(9) == d[9] && check(10) == d[10]
}

fn nir_digits_ok(d: &[u8]) -> bool {
    if d.len() != 15 || !matches!(d[0], 1 | 2 | 3 | 4 | 7 | 8) {
        return false;
    }
    let month = two(d, 3);
    if !((1..=12).contains(&month) || (20..=99).contains(&month)) {
        return false;
    }
    let (Some(body), Some(key)) = (decimal_value(&d[..13]), decimal_value(&d[13..])) else {
        return false;
    };
    97 - body % 97 == key
}

/// The NIR check on a compact string that may hold the Corsican departments `2A`/`2B`, which
/// count as 19 and 18 for the key.
fn nir_ok(compact: &str) -> bool {
    let replaced = compact.replacen("2A", "19", 1).replacen("2B", "18", 1);
    let digits: Vec<u8> = replaced
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    if digits.len() != 15 || !matches!(digits[0], 1 | 2 | 3 | 4 | 7 | 8) {
        return false;
    }
    let (Some(body), Some(key)) = (decimal_value(&digits[..13]), decimal_value(&digits[13..]))
    else {
        return false;
    };
    97 - body % 97 == key
}

fn aadhaar_ok(d: &[u8]) -> bool {
    d.len() == 12 && d[0] >= 2 && verhoeff(d)
}

fn my_number_ok(d: &[u8]) -> bool {
    if d.len() != 12 {
        return false;
    }
    // Weights 6,5,4,3,2,7,6,5,4,3,2 applied from the most significant of the first 11 digits.
    let sum = weighted_sum(&d[..11], &[6, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2]);
    let rest = sum % 11;
    let check = if rest <= 1 { 0 } else { 11 - rest };
    check == u32::from(d[11])
}

fn rrn_ok(d: &[u8], require_check: bool) -> bool {
    if d.len() != 13 {
        return false;
    }
    let century = match d[6] {
        1 | 2 | 5 | 6 => 1900,
        3 | 4 | 7 | 8 => 2000,
        9 | 0 => 1800,
        _ => return false,
    };
    if !valid_date(century + two(d, 0), two(d, 2), two(d, 4)) {
        return false;
    }
    // Numbers issued since October 2020 no longer carry a check digit, so without a label a
    // number must pass it and with a label the date and sex digit suffice.
    let sum = weighted_sum(&d[..12], &[2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5]);
    let check = (11 - sum % 11) % 10;
    !require_check || check == u32::from(d[12])
}

fn personnummer_ok(d: &[u8]) -> bool {
    let ten = match d.len() {
        10 => d,
        12 => &d[2..],
        _ => return false,
    };
    let day = two(ten, 4);
    // Samordningsnummer add 60 to the day.
    let day = if day > 60 { day - 60 } else { day };
    valid_date(2000 + two(ten, 0), two(ten, 2), day) && luhn(ten)
}

fn nino_ok(value: &str) -> bool {
    let compact: String = value.chars().filter(|c| *c != ' ').collect();
    let spaces = value.len() - compact.len();
    // Either written solid or in the usual 2-2-2-2-1 spacing; not a mix.
    if spaces != 0 && spaces != 4 {
        return false;
    }
    let prefix = compact.get(..2).unwrap_or("");
    !matches!(prefix, "BG" | "GB" | "KN" | "NK" | "NT" | "TN" | "ZZ")
}

fn spanish_ok(value: &str) -> bool {
    const LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";
    let compact: String = value.chars().filter(|c| *c != '-').collect();
    let bytes = compact.as_bytes();
    let Some((&letter, body)) = bytes.split_last() else {
        return false;
    };
    let mut number = String::with_capacity(8);
    for (i, &b) in body.iter().enumerate() {
        match (i, b) {
            (0, b'X') => number.push('0'),
            (0, b'Y') => number.push('1'),
            (0, b'Z') => number.push('2'),
            (_, b) if b.is_ascii_digit() => number.push(char::from(b)),
            _ => return false,
        }
    }
    let Ok(value) = number.parse::<u32>() else {
        return false;
    };
    LETTERS.get((value % 23) as usize) == Some(&letter)
}

fn codice_fiscale_ok(value: &str) -> bool {
    const ODD: [u32; 26] = [
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24,
        23,
    ];
    let bytes = value.as_bytes();
    if bytes.len() != 16 {
        return false;
    }
    let mut sum = 0u32;
    for (i, &b) in bytes[..15].iter().enumerate() {
        let index = if b.is_ascii_digit() {
            u32::from(b - b'0')
        } else {
            u32::from(b - b'A')
        };
        // Positions are counted from 1: odd positions use the table, even ones the plain index.
        sum += if i % 2 == 0 {
            ODD.get(index as usize).copied().unwrap_or(0)
        } else {
            index
        };
    }
    let month_ok = b"ABCDEHLMPRST".contains(&bytes[8]);
    month_ok && u32::from(bytes[15] - b'A') == sum % 26
}

fn china_ok(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() != 18 {
        return false;
    }
    let digits: Vec<u8> = bytes[..17].iter().map(|b| b - b'0').collect();
    let year = decimal_value(&digits[6..10]).unwrap_or(0) as u32;
    if !(1900..=2099).contains(&year) || !valid_date(year, two(&digits, 10), two(&digits, 12)) {
        return false;
    }
    // The first digit is the province group 1–8.
    (1..=8).contains(&digits[0]) && iso7064_mod11_2(&digits) == bytes[17].to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, &mut out, &Deadline::none()).unwrap();
        crate::finding::normalise(&mut out);
        out.iter().map(|f| &text[f.range.clone()]).collect()
    }

    fn found(text: &str, value: &str) {
        assert_eq!(ids(text), vec![value], "in {text:?}");
    }

    fn none(text: &str) {
        assert!(ids(text).is_empty(), "{:?} found in {text:?}", ids(text));
    }

    #[test]
    fn labelled_numeric_ids() {
        assert_eq!(ids("SSN: 078-05-1120"), vec!["078-05-1120"]);
        assert_eq!(ids("my SIN is 046 454 286"), vec!["046 454 286"]);
        assert_eq!(ids("BSN 111222333"), vec!["111222333"]);
        assert_eq!(ids("TFN 123 456 782"), vec!["123 456 782"]);
        assert_eq!(ids("Steuer-ID: 86095742719"), vec!["86095742719"]);
        assert_eq!(ids("PESEL 44051401359"), vec!["44051401359"]);
        assert_eq!(ids("Aadhaar 2341 2341 2346"), vec!["2341 2341 2346"]);
        assert_eq!(ids("personnummer 811228-9874"), vec!["811228-9874"]);
    }

    #[test]
    fn unlabelled_ambiguous_numbers_are_kept() {
        assert!(ids("ticket 078-05-1120").is_empty());
        assert!(ids("order 111222333 shipped").is_empty());
        assert!(ids("86095742719").is_empty());
    }

    #[test]
    fn distinctive_formats_need_no_label() {
        assert_eq!(ids("CPF 123.456.789-09"), vec!["123.456.789-09"]);
        assert_eq!(ids("dni 12345678Z."), vec!["12345678Z"]);
        assert_eq!(ids("NIE X1234567L"), vec!["X1234567L"]);
        assert_eq!(ids("cf RSSMRA85T10A562S"), vec!["RSSMRA85T10A562S"]);
        assert_eq!(ids("身份证 11010519491231002X"), vec!["11010519491231002X"]);
        assert_eq!(ids("NINO AB 12 34 56 C"), vec!["AB 12 34 56 C"]);
        assert_eq!(
            ids("NIR 1 85 05 78 006 084 91"),
            vec!["1 85 05 78 006 084 91"]
        );
    }

    #[test]
    fn more_labels_for_existing_documents() {
        found("my social is 078-05-1120", "078-05-1120");
        found("SSN# 078-05-1120", "078-05-1120");
        found("SS# 078-05-1120", "078-05-1120");
        found("social security no. 078-05-1120", "078-05-1120");
        found("her social security no 078-05-1120", "078-05-1120");
        found("マイナンバー：1234 5678 9018", "1234 5678 9018");
        found("個人番号は123456789018です", "123456789018");
        found("주민등록번호는 800101-1000008입니다", "800101-1000008");
        // Old 15-digit Chinese cards carry no check digit: only with their label.
        found("身份证号码：110105491231002", "110105491231002");
        none("order 110105491231002");
    }

    #[test]
    fn labels_right_against_cjk_text_and_full_width_colons() {
        found("身份证：11010519491231002X", "11010519491231002X");
        found("身份证号11010519491231002X。", "11010519491231002X");
        found("11010519491231002Xです", "11010519491231002X");
        found("CPR：101091-3030", "101091-3030");
        found("我的CPR是1010913030。", "1010913030");
        found("หมายเลขTCKNของฉันคือ92633043448", "92633043448");
        // A Latin label glued to a Latin word is not a label.
        none("xcpr 101091-3030");
        none("cprx 101091-3030");
    }

    #[test]
    fn finland_henkilotunnus() {
        found("Henkilötunnus: 131052-308T", "131052-308T");
        found("the card says 131052-308T", "131052-308T");
        found("since 2023: 010594Y201D ok", "010594Y201D");
        assert_eq!(
            ids("010100A201X and 010100B201X"),
            vec!["010100A201X", "010100B201X"]
        );
        assert_eq!(
            ids("sign U: 311299U201P, sign F: 290200F201T."),
            vec!["311299U201P", "290200F201T"]
        );
        found("hetu 090248-406W", "090248-406W");
        found("hetu 310898+0766", "310898+0766");
        // All digits and a dash: only with the label.
        none("ticket 310898-0766");
        found("HETU：310898-0766", "310898-0766");
        none("hetu 090248-406M");
        none("hetu 310898+076V");
        none("hetu 320898+0766");
    }

    #[test]
    fn norway_fodselsnummer() {
        found("Fødselsnummer: 15034546522", "15034546522");
        found("fødselsnummer 150345 46522", "150345 46522");
        // A D-number: the day plus 40.
        found("personnummer 47031478940", "47031478940");
        none("fødselsnummer 15034546527");
        none("order 15034546522");
    }

    #[test]
    fn denmark_cpr() {
        found("CPR-nr.: 101091-3030", "101091-3030");
        found("CPR 0912520948", "0912520948");
        found("personnummer 290573-0819", "290573-0819");
        none("CPR-nr. 381091-3030");
        none("ticket 101091-3030");
    }

    #[test]
    fn singapore_nric_fin() {
        found("NRIC S1234567D", "S1234567D");
        found("applicant F7975432M approved", "F7975432M");
        found("S9487574I", "S9487574I");
        found("T1234567J", "T1234567J");
        found("G1234567X", "G1234567X");
        found("M1234567K", "M1234567K");
        found("M0123456T", "M0123456T");
        none("S1234567A");
        none("M1234567X");
        // Lower case only with the label.
        none("see s1234567d");
        found("nric s1234567d", "s1234567d");
    }

    #[test]
    fn malaysia_mykad() {
        found("530708-99-1895", "530708-99-1895");
        found("No. K/P: 030429689711", "030429689711");
        found("IC: 120714991049", "120714991049");
        found("MyKad 880101 14 5678", "880101 14 5678");
        none("session 030429689711");
        // A place-of-birth code not in use, a date that does not exist.
        none("MyKad 030429-73-9711");
        none("MyKad 031329-14-9711");
        // "IC" counts only in capitals and right before the number.
        none("the ic reader says 120714991049");
    }

    #[test]
    fn hong_kong_hkid() {
        found("HKID A123456(3)", "A123456(3)");
        found("card V650752(2).", "V650752(2)");
        found("AB987654(3)", "AB987654(3)");
        found("G123456(A)", "G123456(A)");
        found("香港身份證號碼：C123456(9)", "C123456(9)");
        none("A123456(4)");
        // Without parentheses only with the label.
        none("part A1234563");
        found("HKID A1234563", "A1234563");
    }

    #[test]
    fn taiwan_national_id() {
        found("身分證字號：A123456789", "A123456789");
        found("R121223302", "R121223302");
        found("U240268595 ok", "U240268595");
        // New-style resident certificates.
        found("統一證號 F876031377", "F876031377");
        none("R121223303");
        none("A323456789");
        none("serial a123456789");
        found("身分證 a123456789", "a123456789");
    }

    #[test]
    fn mexico_curp() {
        found("CURP: FATO820715MOCDGF74", "FATO820715MOCDGF74");
        found("LOHU060602HSPGWBA8", "LOHU060602HSPGWBA8");
        found("ZALU660928HQRKWW54.", "ZALU660928HQRKWW54");
        none("FATO820715MOCDGF76");
        // A state code that does not exist, a date that does not.
        none("FATO820715MXXDGF74");
        none("FATO821315MOCDGF74");
    }

    #[test]
    fn argentina_dni_and_cuit() {
        found("DNI 23123443", "23123443");
        found("D.N.I. N° 14.416.268", "14.416.268");
        found("Mi DNI es 7.065.034", "7.065.034");
        none("order 23123443");
        found("20-28751460-4", "20-28751460-4");
        found("CUIT 27400129415", "27400129415");
        none("27400129415");
        none("20-28751460-3");
        none("21-28751460-4");
    }

    #[test]
    fn chile_rut() {
        found("RUT 12.345.678-5", "12.345.678-5");
        found("18.773.266-2", "18.773.266-2");
        found("Mi RUT es 23476999-5.", "23476999-5");
        found("RUN 10000013-K", "10000013-K");
        none("job 23476999-5");
        none("18.773.266-4");
        none("RUT 14542956-2");
    }

    #[test]
    fn colombia_cedula_and_nit() {
        found("C.C. 62148384", "62148384");
        found("cédula de ciudadanía No. 21.643.368", "21.643.368");
        found("CC 2952188 de Bogotá", "2952188");
        found("Cédula 1.020.304.050", "1.020.304.050");
        none("order 62148384");
        none("cc me on 62148384");
        none("cédula 34587823042");
        found("NIT 762.494.409-2", "762.494.409-2");
        found("NIT: 323906940-1", "323906940-1");
        none("NIT 323906940-8");
    }

    #[test]
    fn turkey_tc_kimlik() {
        found("T.C. Kimlik No: 92633043448", "92633043448");
        found("TC 49548620592", "49548620592");
        found("KİMLİK NO 96828288034", "96828288034");
        none("TC Kimlik 92633043449");
        none("order 92633043448");
        none("TC Kimlik 02633043448");
    }

    #[test]
    fn south_africa_id() {
        found("ID number: 5606059022086", "5606059022086");
        none("8001015009087");
        found("800101 5009 087", "800101 5009 087");
        found("800101 5009 08 7", "800101 5009 08 7");
        none("ID number: 5606059022081");
        // Citizenship digit 3 does not exist.
        none("identity number 8001015009384");
    }

    #[test]
    fn israel_teudat_zehut() {
        found("ת.ז. 480175983", "480175983");
        found("מספר תעודת זהות: 27261675-6", "27261675-6");
        found("teudat zehut 378878383", "378878383");
        none("ת.ז. 480175984");
        none("order 480175983");
    }

    #[test]
    fn belgium_national_number() {
        found("06.11.09-075.81", "06.11.09-075.81");
        found("Rijksregisternummer: 51121591977", "51121591977");
        found("NISS 950915-147-06", "950915-147-06");
        none("95.09.15-147.19");
        none("order 51121591977");
    }

    #[test]
    fn portugal_nif() {
        found("NIF: 231672322", "231672322");
        found("contribuinte n.º 256 355 150", "256 355 150");
        none("NIF 231672329");
        none("order 231672322");
        // No NIF starts with 4 alone (45 is for non-residents).
        none("NIF 400000008");
    }

    #[test]
    fn ireland_pps() {
        found("PPS number: 1311440V", "1311440V");
        found("2646288VW", "2646288VW");
        found("5140261PA.", "5140261PA");
        found("1234567T", "1234567T");
        none("1311440H");
        none("5140261WA");
        none("ref 1234567t");
        found("PPSN 1234567t", "1234567t");
    }

    #[test]
    fn every_other_check_character_fails() {
        // (text before, valid value, index of the check character, its alphabet)
        const DIGITS: &str = "0123456789";
        let cases: &[(&str, &str, usize, &str)] = &[
            (
                "hetu ",
                "131052-308T",
                10,
                "0123456789ABCDEFHJKLMNPRSTUVWXY",
            ),
            ("", "S1234567D", 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            ("", "M1234567K", 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            ("", "A123456(3)", 8, "0123456789A"),
            ("", "A123456789", 9, DIGITS),
            ("", "FATO820715MOCDGF74", 17, DIGITS),
            ("", "20-28751460-4", 12, DIGITS),
            ("", "18.773.266-2", 11, "0123456789K"),
            ("NIT ", "762.494.409-2", 12, DIGITS),
            ("kimlik no ", "92633043448", 10, DIGITS),
            ("ID number ", "5606059022086", 12, DIGITS),
            ("ת.ז ", "480175983", 8, DIGITS),
            ("", "06.11.09-075.81", 14, DIGITS),
            ("NIF ", "231672322", 8, DIGITS),
            ("", "1311440V", 7, "ABCDEFGHIJKLMNOPQRSTUVW"),
            ("fødselsnummer ", "15034546522", 10, DIGITS),
        ];
        for &(before, value, at, alphabet) in cases {
            let text = format!("{before}{value}");
            assert_eq!(ids(&text), vec![value], "{text}");
            let original = value.as_bytes()[at];
            for replacement in alphabet.bytes().filter(|&b| b != original) {
                let mut changed = value.as_bytes().to_vec();
                changed[at] = replacement;
                let changed = String::from_utf8(changed).unwrap();
                none(&format!("{before}{changed}"));
            }
        }
    }

    #[test]
    fn every_label_is_found() {
        let labels = LABELS.as_ref().unwrap();
        for doc in Doc::ALL {
            for label in doc.labels() {
                let text = format!("{label} 12345678");
                let range = text.len() - 8..text.len();
                assert!(
                    labels.near(&text, &range, &range).contains(doc),
                    "{label:?} for {doc:?}"
                );
            }
        }
        for &(label, doc) in STRICT_LABELS {
            let text = format!("{label}: 12345678");
            let range = text.len() - 8..text.len();
            assert!(labels.near(&text, &range, &range).contains(doc));
            // Strict labels count only as written, and right before the number.
            let lower = format!("{}: 12345678", label.to_ascii_lowercase());
            assert!(!labels.near(&lower, &range, &range).contains(doc));
            let far = format!("{label} was here 12345678");
            let range = far.len() - 8..far.len();
            assert!(!labels.near(&far, &range, &range).contains(doc));
        }
        // A strict label's text is no ordinary label of another document.
        for &(label, _) in STRICT_LABELS {
            let key = label.to_ascii_lowercase();
            assert!(
                Doc::ALL
                    .iter()
                    .all(|doc| doc.labels().iter().all(|l| l.to_ascii_lowercase() != key))
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// Whatever the mix of digits, separators, letters, labels and other scripts, the
        /// detector stays on char boundaries and reports values that stand on their own.
        #[test]
        fn findings_stay_on_char_boundaries(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    "[0-9]{1,14}",
                    "[ .()/-]{1,3}",
                    "[A-Za-z]{1,3}",
                    proptest::strategy::Just("身份证：".to_owned()),
                    proptest::strategy::Just("CPR ".to_owned()),
                    proptest::strategy::Just("CC ".to_owned()),
                    proptest::strategy::Just("ת.ז ".to_owned()),
                    proptest::strategy::Just("ของฉันคือ".to_owned()),
                    proptest::strategy::Just("Ñ".to_owned()),
                    proptest::strategy::Just("\n".to_owned()),
                ],
                0..30,
            )
        ) {
            let text: String = pieces.concat();
            let mut out = Vec::new();
            find(&text, &mut out, &Deadline::none()).unwrap();
            for finding in &out {
                proptest::prop_assert!(text.is_char_boundary(finding.range.start));
                proptest::prop_assert!(text.is_char_boundary(finding.range.end));
                proptest::prop_assert!(finding.range.start < finding.range.end);
            }
        }
    }
}
