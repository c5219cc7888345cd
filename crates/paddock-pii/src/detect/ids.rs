//! National identity, social-security and personal tax numbers of 16 countries and regions.
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
//! | CN | Resident identity card | 18 characters, last may be `X` | ISO 7064 MOD 11-2 + birth date | no |
//! | IN | Aadhaar | 12 digits, `2345 6789 0123` | Verhoeff | yes |
//! | KR | Resident registration number | `YYMMDD-GNNNNNN` | birth date + mod 11 | with valid check: no; otherwise yes |
//! | JP | My Number (個人番号) | 12 digits, `1234 5678 9012` | mod 11 | yes |
//! | CA | Social Insurance Number | `046 454 286`, `046-454-286` | Luhn | yes |
//! | AU | Tax File Number | 8–9 digits, `123 456 782` | weighted mod 11 | yes |
//! | SE | Personnummer / samordningsnummer | `YYMMDD-NNNC`, `YYYYMMDD-NNNC` | birth date + Luhn | yes |
//! | PL | PESEL | 11 digits | birth date + weighted check | yes |
//!
//! "Label required" means a document label ("SSN", "BSN", "PESEL", …) must stand on the same
//! line within 40 bytes before the number or 16 bytes after it: those layouts are plain digit
//! strings that order numbers, timestamps and phone numbers share, and a checksum alone passes
//! one random number in ten or eleven.

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use crate::checksum::{
    all_same, decimal_value, iso7064_mod11_2, iso7064_mod11_10, luhn, two, valid_date, verhoeff,
    weighted_sum,
};
use crate::finding::{Category, Finding};
use crate::scan::{
    Deadline, Expired, LabelSet, NumericRun, collect_digits, left_alone, numeric_runs, push_window,
    right_alone, widen_to_whitespace,
};

/// The most groups a numeric layout has (the spaced French NIR, `1 85 05 78 006 084 36`).
const MAX_GROUPS: usize = 7;

/// Digit counts of the numeric layouts: TFN (8) to NIR (15).
fn plausible_digit_count(count: usize) -> bool {
    matches!(count, 8..=13 | 15)
}

/// How far before and after a number a document label may stand.
const LABEL_BEFORE: usize = 40;
const LABEL_AFTER: usize = 16;

/// The documents whose numbers are ambiguous without a label, each with its labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doc {
    UsSsn,
    DeSteuerId,
    FrNir,
    NlBsn,
    BrCpf,
    InAadhaar,
    KrRrn,
    JpMyNumber,
    CaSin,
    AuTfn,
    SePersonnummer,
    PlPesel,
}

impl Doc {
    const ALL: [Doc; 12] = [
        Doc::UsSsn,
        Doc::DeSteuerId,
        Doc::FrNir,
        Doc::NlBsn,
        Doc::BrCpf,
        Doc::InAadhaar,
        Doc::KrRrn,
        Doc::JpMyNumber,
        Doc::CaSin,
        Doc::AuTfn,
        Doc::SePersonnummer,
        Doc::PlPesel,
    ];

    fn labels(self) -> &'static [&'static str] {
        match self {
            Doc::UsSsn => &[
                "ssn",
                "ssn#",
                "ss#",
                "ss no",
                "social security",
                "social security number",
                "soc sec",
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
        }
    }
}

struct Labels {
    sets: Vec<(Doc, LabelSet)>,
}

impl Labels {
    fn near(&self, doc: Doc, text: &str, range: &Range<usize>) -> bool {
        self.sets
            .iter()
            .find(|(candidate, _)| *candidate == doc)
            .is_some_and(|(_, set)| set.near(text, range, LABEL_BEFORE, LABEL_AFTER))
    }
}

static LABELS: LazyLock<Labels> = LazyLock::new(|| Labels {
    sets: Doc::ALL
        .iter()
        .filter_map(|&doc| LabelSet::new(doc.labels()).map(|set| (doc, set)))
        .collect(),
});

/// Identifier layouts that contain letters, matched with regular expressions inside windows
/// around digits (every one of them contains at least one digit).
const NINO: &str = r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b";
const DNI: &str = r"\b\d{8}-?[A-Z]\b";
const NIE: &str = r"\b[XYZ]-?\d{7}-?[A-Z]\b";
const CODICE_FISCALE: &str =
    r"\b[A-Z]{6}[0-9LMNPQRSTUV]{2}[ABCDEHLMPRST][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z]\b";
const CHINA: &str = r"\b\d{17}[0-9Xx]\b";
const NIR_CORSICA: &str = r"\b[1-478] ?\d{2} ?\d{2} ?2[AB] ?\d{3} ?\d{3} ?\d{2}\b";

struct Patterns {
    nino: Regex,
    dni: Regex,
    nie: Regex,
    codice_fiscale: Regex,
    china: Regex,
    nir_corsica: Regex,
    /// All of the above in one automaton: one pass tells which of them occur in a window at
    /// all, so a window (a long run of digits, say) where none does costs one scan, not six.
    any: RegexSet,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    Some(Patterns {
        nino: Regex::new(NINO).ok()?,
        dni: Regex::new(DNI).ok()?,
        nie: Regex::new(NIE).ok()?,
        codice_fiscale: Regex::new(CODICE_FISCALE).ok()?,
        china: Regex::new(CHINA).ok()?,
        nir_corsica: Regex::new(NIR_CORSICA).ok()?,
        any: RegexSet::new([NINO, DNI, NIE, CODICE_FISCALE, CHINA, NIR_CORSICA]).ok()?,
    })
});

/// Group layouts of the numeric formats below, besides a single group: a candidate laid out
/// any other way cannot be one of them, and is not looked at closely.
const LAYOUTS: &[&[usize]] = &[
    &[3, 2, 4],
    &[3, 3, 3],
    &[3, 3, 2],
    &[4, 2, 3],
    &[2, 3, 3, 3],
    &[3, 3, 3, 2],
    &[13, 2],
    &[1, 2, 2, 2, 3, 3, 2],
    &[4, 4, 4],
    &[6, 7],
    &[6, 4],
    &[8, 4],
];

fn plausible_layout(lengths: &[usize]) -> bool {
    lengths.len() == 1 || LAYOUTS.contains(&lengths)
}

/// Appends every identity number in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let labels = &*LABELS;
    let mut digits = Vec::with_capacity(20);
    let mut windows: Vec<Range<usize>> = Vec::new();
    numeric_runs(text, deadline, |run| {
        find_in_run(text, run, labels, &mut digits, out, deadline)?;
        if let (Some(first), Some(last)) = (run.groups.first(), run.groups.last()) {
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
            find_alphanumeric(text, window, patterns, out);
        }
    }
    Ok(())
}

fn find_alphanumeric(
    text: &str,
    window: Range<usize>,
    patterns: &Patterns,
    out: &mut Vec<Finding>,
) {
    let Some(slice) = text.get(window.clone()) else {
        return;
    };
    let present = patterns.any.matches(slice);
    if !present.matched_any() {
        return;
    }
    let mut push = |m: regex::Match<'_>| {
        out.push(Finding {
            range: window.start + m.start()..window.start + m.end(),
            category: Category::IdNumber,
        });
    };
    let in_window = |index: usize, regex| matches_in(present.matched(index), regex, slice);
    for m in in_window(0, &patterns.nino) {
        if nino_ok(m.as_str()) {
            push(m);
        }
    }
    for m in in_window(1, &patterns.dni).chain(in_window(2, &patterns.nie)) {
        if spanish_ok(m.as_str()) {
            push(m);
        }
    }
    for m in in_window(3, &patterns.codice_fiscale) {
        if codice_fiscale_ok(m.as_str()) {
            push(m);
        }
    }
    for m in in_window(4, &patterns.china) {
        if china_ok(m.as_str()) {
            push(m);
        }
    }
    for m in in_window(5, &patterns.nir_corsica) {
        let compact: String = m.as_str().chars().filter(|c| *c != ' ').collect();
        if nir_ok(&compact) {
            push(m);
        }
    }
}

/// Each group is tried as the start of a number against at most [`MAX_GROUPS`] ends, and a
/// candidate is looked at closely only when its digit count and grouping fit a format, so a
/// run of any length costs a constant amount of work per group.
/// The matches of `regex` in `slice`, or none at all when the set found it absent.
fn matches_in<'r, 'h>(
    present: bool,
    regex: &'r Regex,
    slice: &'h str,
) -> impl Iterator<Item = regex::Match<'h>> + use<'r, 'h> {
    present
        .then(|| regex.find_iter(slice))
        .into_iter()
        .flatten()
}

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
                if identify(&shape, labels, &(start..end)) {
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

    /// One group, or groups of exactly `lengths` joined by one of `separators` used throughout.
    fn laid_out(&self, lengths: &[usize], separators: &[&str]) -> bool {
        let own = self.lengths();
        if own.len() == 1 {
            return own[0] == lengths.iter().sum::<usize>();
        }
        let seps = self.separators();
        own == lengths
            && seps
                .first()
                .is_some_and(|first| separators.contains(first) && seps.iter().all(|s| s == first))
    }
}

fn identify(shape: &Shape<'_>, labels: &Labels, range: &Range<usize>) -> bool {
    let digits = shape.digits;
    let lengths = shape.lengths();
    let separators = shape.separators();
    let label = |doc: Doc| labels.near(doc, shape.text, range);
    if all_same(digits) {
        return false;
    }
    // Formats that stand on their own.
    if lengths == [3, 3, 3, 2] && separators == [".", ".", "-"] && cpf_ok(digits) {
        return true;
    }
    if lengths == [1, 2, 2, 2, 3, 3, 2]
        && separators.iter().all(|s| *s == " ")
        && nir_digits_ok(digits)
    {
        return true;
    }
    if lengths == [6, 7] && separators == ["-"] && rrn_ok(digits, true) {
        return true;
    }
    // Formats that need their document label: only those of this many digits are checked
    // (every check below requires its own digit count).
    let candidates: &[Doc] = match digits.len() {
        8 => &[Doc::AuTfn],
        9 => &[Doc::UsSsn, Doc::CaSin, Doc::NlBsn, Doc::AuTfn],
        10 => &[Doc::SePersonnummer],
        11 => &[Doc::DeSteuerId, Doc::PlPesel, Doc::BrCpf],
        12 => &[Doc::InAadhaar, Doc::JpMyNumber, Doc::SePersonnummer],
        13 => &[Doc::KrRrn],
        15 => &[Doc::FrNir],
        _ => &[],
    };
    candidates
        .iter()
        .any(|&doc| valid_without_label(doc, shape) && label(doc))
}

/// Whether a candidate has the layout and check digits of `doc`, which also needs its label.
fn valid_without_label(doc: Doc, shape: &Shape<'_>) -> bool {
    let digits = shape.digits;
    let lengths = shape.lengths();
    match doc {
        Doc::UsSsn => shape.laid_out(&[3, 2, 4], &["-", " "]) && ssn_ok(digits),
        Doc::CaSin => shape.laid_out(&[3, 3, 3], &["-", " "]) && sin_ok(digits),
        Doc::NlBsn => shape.laid_out(&[4, 2, 3], &["."]) && bsn_ok(digits),
        Doc::AuTfn => {
            (shape.laid_out(&[3, 3, 3], &[" ", "-"]) || shape.laid_out(&[3, 3, 2], &[" "]))
                && tfn_ok(digits)
        }
        Doc::DeSteuerId => shape.laid_out(&[2, 3, 3, 3], &[" "]) && steuer_id_ok(digits),
        Doc::PlPesel => lengths.len() == 1 && pesel_ok(digits),
        Doc::BrCpf => lengths.len() == 1 && cpf_ok(digits),
        Doc::FrNir => (lengths.len() == 1 || lengths == [13, 2]) && nir_digits_ok(digits),
        Doc::InAadhaar => shape.laid_out(&[4, 4, 4], &[" ", "-"]) && aadhaar_ok(digits),
        Doc::JpMyNumber => shape.laid_out(&[4, 4, 4], &[" ", "-"]) && my_number_ok(digits),
        Doc::KrRrn => shape.laid_out(&[6, 7], &["-"]) && rrn_ok(digits, false),
        Doc::SePersonnummer => {
            (shape.laid_out(&[6, 4], &["-", "+"]) || shape.laid_out(&[8, 4], &["-", "+"]))
                && personnummer_ok(digits)
        }
    }
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
}
