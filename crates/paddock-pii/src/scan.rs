//! Shared scanning helpers: numeric runs, token boundaries, document labels, windows and the
//! deadline of a default-filter run.
//!
//! The default filters avoid running regular expressions over whole messages. Instead they
//! find cheap trigger bytes (digits, `@`, key prefixes) and look closely only around them,
//! which keeps clean prose fast to scan. Every step does a bounded amount of work per byte,
//! group or trigger, so a run is linear in its input; the [`Deadline`] is the backstop that
//! turns a run that is still too slow into an error instead of a stall.

use std::cell::Cell;
use std::ops::Range;
use std::time::Instant;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// A default-filter run ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expired;

/// The clock is read on every this many checks only: a check is then a counter increment,
/// cheap enough for per-group and per-trigger loops.
const CHECKS_PER_CLOCK_READ: u32 = 64;

/// When a default-filter run must give up. Detectors call [`Deadline::check`] in every loop
/// whose trip count grows with the input and stop with [`Expired`] once it has passed.
#[derive(Debug)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    checks: Cell<u32>,
}

impl Deadline {
    /// A deadline at `at`.
    pub fn at(at: Instant) -> Deadline {
        Deadline {
            at: Some(at),
            checks: Cell::new(0),
        }
    }

    /// No deadline: for callers that accept any run time (the findings API, tests).
    pub fn none() -> Deadline {
        Deadline {
            at: None,
            checks: Cell::new(0),
        }
    }

    /// `Err(Expired)` once the deadline has passed (noticed within a few dozen checks).
    pub fn check(&self) -> Result<(), Expired> {
        let Some(at) = self.at else {
            return Ok(());
        };
        let checks = self.checks.get().wrapping_add(1);
        self.checks.set(checks);
        if checks.is_multiple_of(CHECKS_PER_CLOCK_READ) && Instant::now() >= at {
            Err(Expired)
        } else {
            Ok(())
        }
    }
}

/// Characters that continue a word or identifier: a value glued to one of these is part of a
/// longer token (a UUID, a SKU, a file name) and is not a standalone number.
pub(crate) fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether the byte range `start..end` of `text` stands on its own: not glued to a word on
/// either side, and not the middle of a dotted or dashed token such as `v1.2.3`, `A-123` or
/// `path/123`.
#[cfg(test)]
pub(crate) fn stands_alone(text: &[u8], start: usize, end: usize) -> bool {
    left_alone(text, start) && right_alone(text, end)
}

/// The left half of [`stands_alone`]: nothing word-like glued before `start`.
pub(crate) fn left_alone(text: &[u8], start: usize) -> bool {
    let before = start.checked_sub(1).and_then(|i| text.get(i)).copied();
    let before2 = start.checked_sub(2).and_then(|i| text.get(i)).copied();
    match before {
        None => true,
        Some(b) if is_word_byte(b) => false,
        Some(b'-' | b'.' | b'/' | b'\\') => !before2.is_some_and(is_word_byte),
        Some(_) => true,
    }
}

/// The right half of [`stands_alone`]: nothing word-like glued after `end`.
pub(crate) fn right_alone(text: &[u8], end: usize) -> bool {
    let after = text.get(end).copied();
    let after2 = text.get(end + 1).copied();
    match after {
        None => true,
        Some(b) if is_word_byte(b) => false,
        Some(b'-' | b'.' | b'/' | b'\\' | b',') => {
            !after2.is_some_and(|b| b.is_ascii_alphanumeric())
        }
        Some(_) => true,
    }
}

/// A maximal run of digit groups joined by short separators, such as `(415) 555-2671`,
/// `4111 1111 1111 1111` or `123.456.789-09`.
#[derive(Debug, Default)]
pub(crate) struct NumericRun {
    /// Byte ranges of the digit groups, in order.
    pub groups: Vec<Range<usize>>,
    /// Whether a `+` immediately precedes the first group.
    pub plus: bool,
    /// Whether a `(` immediately precedes the first group.
    pub open_paren: bool,
}

impl NumericRun {
    /// Start of the run, including a leading `+` or `(`.
    pub fn start(&self) -> usize {
        let first = self.groups.first().map_or(0, |g| g.start);
        if self.plus || self.open_paren {
            first.saturating_sub(1)
        } else {
            first
        }
    }

    /// The separator text between group `index` and group `index + 1`.
    pub fn separator<'t>(&self, text: &'t str, index: usize) -> &'t str {
        match (self.groups.get(index), self.groups.get(index + 1)) {
            (Some(left), Some(right)) => text.get(left.end..right.start).unwrap_or(""),
            _ => "",
        }
    }
}

fn is_separator(byte: u8) -> bool {
    matches!(byte, b' ' | b'-' | b'.' | b'(' | b')' | b'/')
}

/// Finds numeric runs in `text`, calling `visit` for each. Groups are joined by one to three
/// separator bytes (space, `-`, `.`, `/`, parentheses); anything else ends a run. Stops at the
/// first error, from `visit` or the deadline.
pub(crate) fn numeric_runs(
    text: &str,
    deadline: &Deadline,
    mut visit: impl FnMut(&NumericRun) -> Result<(), Expired>,
) -> Result<(), Expired> {
    let bytes = text.as_bytes();
    let mut run = NumericRun::default();
    let mut i = 0;
    while i < bytes.len() {
        // Skip to the next digit. Clean prose spends almost all its time in this loop.
        match bytes[i..].iter().position(u8::is_ascii_digit) {
            Some(offset) => i += offset,
            None => break,
        }
        run.groups.clear();
        run.plus = i > 0 && bytes[i - 1] == b'+';
        run.open_paren = i > 0 && bytes[i - 1] == b'(';
        loop {
            deadline.check()?;
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            run.groups.push(start..i);
            // Look past up to three separator bytes for another digit.
            let mut j = i;
            while j < bytes.len() && j - i < 3 && is_separator(bytes[j]) {
                j += 1;
            }
            if j > i && j < bytes.len() && bytes[j].is_ascii_digit() {
                i = j;
            } else {
                break;
            }
        }
        visit(&run)?;
    }
    Ok(())
}

/// Digit values (`0..=9`) of the groups `first..=last` of a run, appended to `out`.
pub(crate) fn collect_digits(
    text: &str,
    run: &NumericRun,
    first: usize,
    last: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    for group in run.groups.get(first..=last).unwrap_or(&[]) {
        if let Some(slice) = text.as_bytes().get(group.clone()) {
            out.extend(slice.iter().map(|b| b - b'0'));
        }
    }
}

/// A set of phone labels ("Tel.", "電話", "телефон") matched right before a candidate value,
/// case-insensitively and on word boundaries where the label's script has them. (Document
/// labels are `detect::ids`'s own index.)
///
/// Scripts that separate words with spaces (Latin, Greek, Cyrillic, Armenian) need a boundary:
/// `tel` inside "Hotel" or "тел" inside "отель" is no label. Scripts written without spaces
/// between words (Chinese, Japanese, Thai) and those whose words take attached particles and
/// prefixes (Korean, Arabic) need none: "携帯電話" holds the label "電話", "الهاتف" the label
/// "هاتف". Characters of another script, full-width punctuation and CJK punctuation are always
/// boundaries, so "連絡先TEL：" holds the label "TEL".
#[derive(Debug)]
pub(crate) struct LabelSet {
    automaton: AhoCorasick,
    /// For each pattern of the automaton, the index of the label it spells: labels with
    /// non-ASCII letters are also matched capitalised and in capitals ("Телефон", "TÉL."),
    /// which the automaton's ASCII case folding does not cover.
    origins: Vec<usize>,
    /// Every label holds an ASCII letter or a non-ASCII character, so a stretch without
    /// either (the digits and spaces around a number in a long run) holds no label.
    lettered: bool,
}

/// Whether a byte can be part of a label's letters.
fn letter_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || !byte.is_ascii()
}

/// Scripts whose words are separated by spaces, so that a label written in one of them must
/// not be glued to another letter of the same script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpacedScript {
    Latin,
    Greek,
    Cyrillic,
    Armenian,
}

/// The spaced script `c` is a letter (or, for Latin, an ASCII digit or a combining accent) of.
fn spaced_script(c: char) -> Option<SpacedScript> {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric().then_some(SpacedScript::Latin);
    }
    let script = match c {
        // Latin-1 letters, Latin Extended-A/B, IPA, combining accents, Latin Extended
        // Additional.
        '\u{C0}'..='\u{36F}' | '\u{1E00}'..='\u{1EFF}' => SpacedScript::Latin,
        '\u{370}'..='\u{3FF}' | '\u{1F00}'..='\u{1FFF}' => SpacedScript::Greek,
        '\u{400}'..='\u{52F}' | '\u{1C80}'..='\u{1C8F}' => SpacedScript::Cyrillic,
        '\u{530}'..='\u{58F}' => SpacedScript::Armenian,
        _ => return None,
    };
    let letter = c.is_alphabetic() || ('\u{300}'..='\u{36F}').contains(&c);
    letter.then_some(script)
}

/// Whether `c` is a non-ASCII letter of the Latin script (`é`, `ß`, `ø`, a combining accent).
pub(crate) fn is_latin_letter(c: char) -> bool {
    !c.is_ascii() && spaced_script(c) == Some(SpacedScript::Latin)
}

/// Whether `neighbour` continues the word that `edge` (a label's first or last character)
/// belongs to, so the label is only part of a longer word. ASCII digits continue any spaced
/// word: "tel1" and "SSN123" are no labels.
fn continues_word(edge: char, neighbour: char) -> bool {
    spaced_script(edge).is_some_and(|script| {
        neighbour.is_ascii_digit() || spaced_script(neighbour) == Some(script)
    })
}

/// Whether `text[start..end]`, a label match, stands as a word of its own.
fn stands_as_word(text: &str, start: usize, end: usize) -> bool {
    let (Some(before), Some(label), Some(after)) =
        (text.get(..start), text.get(start..end), text.get(end..))
    else {
        return false;
    };
    let (Some(first), Some(last)) = (label.chars().next(), label.chars().next_back()) else {
        return false;
    };
    let left = before
        .chars()
        .next_back()
        .is_none_or(|previous| !continues_word(first, previous));
    let right = after
        .chars()
        .next()
        .is_none_or(|next| !continues_word(last, next));
    left && right
}

/// Characters that separate a label from its value and filler words from each other: spaces
/// of every kind and the punctuation of "Tel.: ", "(mobile) ", "電話：", "【電話】", "تلفن، ".
fn is_gap_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ':' | '.'
                | '-'
                | '#'
                | '('
                | ')'
                | ','
                | '['
                | ']'
                | '：'
                | '，'
                | '（'
                | '）'
                | '。'
                | '、'
                | '・'
                | '．'
                | '－'
                | '＃'
                | '［'
                | '］'
                | '【'
                | '】'
                | '「'
                | '」'
                | '『'
                | '』'
                | '〔'
                | '〕'
                | '،'
                | '؛'
        )
}

/// Words that may stand between a label and its value ("call me at", "Telefonnummer lautet",
/// "mi teléfono es el", "電話番号は", "전화번호는", "Телефон для связи"), in lower case.
const FILLER: &[&str] = &[
    // English
    "me",
    "at",
    "on",
    "us",
    "to",
    "number",
    "no",
    "nr",
    "is",
    "my",
    "our",
    "or",
    "via",
    "me:",
    // German
    "ist",
    "unter",
    "lautet",
    "mein",
    "meine",
    "nummer",
    // French
    "au",
    "est",
    "le",
    "mon",
    "ma",
    "numéro",
    "n°",
    "de",
    // Spanish, Portuguese, Italian
    "es",
    "el",
    "al",
    "mi",
    "número",
    "nº",
    "contacto",
    "é",
    "o",
    "meu",
    "minha",
    "contato",
    "è",
    "il",
    "mio",
    "numero",
    "di",
    // Russian, Ukrainian
    "мой",
    "мій",
    "номер",
    "по",
    "для",
    "связи",
    "зв'язку",
    // Japanese, Chinese, Korean
    "は",
    "の",
    "番号",
    "番号は",
    "是",
    "为",
    "為",
    "는",
    "은",
    "번호",
    "번호는",
    // Turkish, Hindi, Thai, Arabic
    "numarası",
    "numaram",
    "नंबर",
    "คือ",
    "เบอร์",
    "رقم",
    "هو",
    "على",
];

fn is_filler(word: &str) -> bool {
    FILLER.iter().any(|filler| {
        if filler.is_ascii() {
            word.eq_ignore_ascii_case(filler)
        } else {
            word.chars().flat_map(char::to_lowercase).eq(filler.chars())
        }
    })
}

/// The spellings of `label` the automaton matches: the label itself and, when it has
/// non-ASCII letters, its lower-case, capitalised and upper-case forms.
fn spellings(label: &str) -> Vec<String> {
    let mut out = vec![label.to_owned()];
    if !label.is_ascii() {
        let lower = label.to_lowercase();
        let mut chars = lower.chars();
        let capitalised: String = chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        out.extend([capitalised, label.to_uppercase(), lower]);
    }
    out
}

impl LabelSet {
    /// Builds the set; returns `None` only if the automaton cannot be built, which for the
    /// short static label lists in this crate does not happen.
    pub fn new(labels: &[&str]) -> Option<LabelSet> {
        let mut patterns: Vec<String> = Vec::new();
        let mut origins = Vec::new();
        for (index, label) in labels.iter().enumerate() {
            for spelling in spellings(label) {
                if !patterns.contains(&spelling) {
                    patterns.push(spelling);
                    origins.push(index);
                }
            }
        }
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok()?;
        let lettered = labels.iter().all(|label| label.bytes().any(letter_byte));
        Some(LabelSet {
            automaton,
            origins,
            lettered,
        })
    }

    /// Whether `haystack` may hold a label at all; a cheap test that spares the automaton
    /// the many candidates a long run of numbers produces.
    fn may_hold_label(&self, haystack: &str) -> bool {
        !self.lettered || haystack.bytes().any(letter_byte)
    }

    /// The label standing closest before `range` with only punctuation and a few filler words
    /// ("Tel.: ", "call me at ", "phone number is ", "電話番号は") between them, on the same
    /// line, as its index in the list the set was built from.
    pub fn directly_before(
        &self,
        text: &str,
        range: &Range<usize>,
        before: usize,
    ) -> Option<usize> {
        let from = floor_char_boundary(text, range.start.saturating_sub(before));
        let haystack = text.get(from..range.start)?;
        if !self.may_hold_label(haystack) {
            return None;
        }
        self.automaton
            .find_iter(haystack)
            .filter(|m| {
                let (start, end) = (from + m.start(), from + m.end());
                let gap = text.get(end..range.start).unwrap_or("x");
                stands_as_word(text, start, end)
                    && !gap.contains('\n')
                    && gap
                        .split(is_gap_separator)
                        .filter(|word| !word.is_empty())
                        .all(is_filler)
            })
            .last()
            .and_then(|m| self.origins.get(m.pattern().as_usize()).copied())
    }
}

/// The largest char boundary at or below `index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary at or above `index`.
pub(crate) fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Merges `range` into a sorted list of windows, joining it with the last one when they touch.
pub(crate) fn push_window(windows: &mut Vec<Range<usize>>, range: Range<usize>) {
    match windows.last_mut() {
        Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
        _ => windows.push(range),
    }
}

/// Widens `start..end` to whitespace on both sides (at most `limit` bytes further each way) so
/// a window never cuts a token in half, and keeps it on char boundaries.
pub(crate) fn widen_to_whitespace(
    text: &str,
    start: usize,
    end: usize,
    limit: usize,
) -> Range<usize> {
    let bytes = text.as_bytes();
    let mut from = start.min(bytes.len());
    let floor = from.saturating_sub(limit);
    while from > floor && !bytes[from - 1].is_ascii_whitespace() {
        from -= 1;
    }
    let mut to = end.min(bytes.len());
    let ceiling = (to + limit).min(bytes.len());
    while to < ceiling && !bytes[to].is_ascii_whitespace() {
        to += 1;
    }
    floor_char_boundary(text, from)..ceil_char_boundary(text, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<Vec<&str>> {
        let mut out = Vec::new();
        let _ = numeric_runs(text, &Deadline::none(), |run| {
            out.push(run.groups.iter().map(|g| &text[g.clone()]).collect());
            Ok(())
        });
        out
    }

    #[test]
    fn numeric_runs_join_short_separators() {
        assert_eq!(
            runs("call (415) 555-2671 now"),
            vec![vec!["415", "555", "2671"]]
        );
        assert_eq!(
            runs("a 4111 1111 1111 1111."),
            vec![vec!["4111", "1111", "1111", "1111"]]
        );
        assert_eq!(runs("1, 2"), vec![vec!["1"], vec!["2"]]);
        assert_eq!(runs("no digits"), Vec::<Vec<&str>>::new());
    }

    #[test]
    fn stand_alone_rules() {
        let text = b"x 123 A123 v1.2 -5 ab-12 7.";
        assert!(stands_alone(text, 2, 5));
        assert!(!stands_alone(text, 7, 10));
        assert!(!stands_alone(text, 14, 15));
        assert!(stands_alone(text, 17, 18));
        assert!(!stands_alone(text, 22, 24));
        assert!(stands_alone(text, 25, 26));
    }

    #[test]
    fn labels_need_word_boundaries() {
        let labels = LabelSet::new(&["sin", "ssn"]).unwrap();
        let text = "using 046 454 286";
        assert!(labels.directly_before(text, &(6..17), 40).is_none());
        let text = "SIN: 046 454 286";
        assert!(labels.directly_before(text, &(5..16), 40).is_some());
        let text = "SSN\n046 454 286";
        assert!(labels.directly_before(text, &(4..15), 40).is_none());
    }

    /// Whether a label stands directly before `value`, the one occurrence in `text`.
    fn label_before(labels: &LabelSet, text: &str, value: &str) -> bool {
        let start = text.find(value).unwrap();
        labels
            .directly_before(text, &(start..start + value.len()), 40)
            .is_some()
    }

    #[test]
    fn labels_next_to_cjk_and_full_width_punctuation() {
        let labels = LabelSet::new(&["tel", "ssn", "電話", "身份证号码", "전화번호"]).unwrap();
        for text in [
            "連絡先TEL：03-7609-2279",
            "電話：03-7609-2279",
            "携帯電話（03-7609-2279）",
            "【電話】03-7609-2279",
            "お問い合わせは電話03-7609-2279まで",
            "身份证号码：03-7609-2279",
            "전화번호: 03-7609-2279",
            "SSN：03-7609-2279",
            "ＳＳＮ、tel。03-7609-2279",
        ] {
            assert!(label_before(&labels, text, "03-7609-2279"), "{text}");
        }
        // A full-width colon or comma is a boundary, a letter is not.
        assert!(!label_before(
            &labels,
            "Hotel：03-7609-2279",
            "03-7609-2279"
        ));
        assert!(!label_before(&labels, "telco 03-7609-2279", "03-7609-2279"));
    }

    #[test]
    fn labels_in_spaced_scripts_need_word_boundaries() {
        let labels = LabelSet::new(&["тел", "телефон", "téléphone", "هاتف", "โทร"]).unwrap();
        let number = "8 495 123-45-67";
        assert!(label_before(&labels, "Телефон: 8 495 123-45-67", number));
        assert!(label_before(&labels, "ТЕЛ. 8 495 123-45-67", number));
        assert!(label_before(&labels, "TÉLÉPHONE : 8 495 123-45-67", number));
        // "тел" inside "отель" (hotel) is no label; Latin letters next to Cyrillic are a
        // boundary.
        assert!(!label_before(&labels, "отель 8 495 123-45-67", number));
        assert!(label_before(&labels, "Xтел 8 495 123-45-67", number));
        // Arabic labels take prefixes, Thai words run together.
        assert!(label_before(&labels, "رقم الهاتف: 8 495 123-45-67", number));
        assert!(label_before(&labels, "ติดต่อโทร8 495 123-45-67", number));
    }

    #[test]
    fn filler_words_in_other_languages() {
        let labels = LabelSet::new(&["電話番号", "전화번호", "teléfono", "телефон"]).unwrap();
        for text in [
            "電話番号は03-7609-2279です",
            "전화번호는 03-7609-2279입니다",
            "Mi teléfono es el 03-7609-2279",
            "Телефон для связи: 03-7609-2279",
        ] {
            assert!(label_before(&labels, text, "03-7609-2279"), "{text}");
        }
        assert!(!label_before(
            &labels,
            "電話番号を変えた03-7609-2279",
            "03-7609-2279"
        ));
        assert!(!label_before(
            &labels,
            "Телефон сломался 03-7609-2279",
            "03-7609-2279"
        ));
    }

    #[test]
    fn the_closest_label_is_reported() {
        let labels = LabelSet::new(&["fax", "tel.", "電話"]).unwrap();
        let text = "Tel./Fax 030 901820";
        assert_eq!(labels.directly_before(text, &(9..19), 40), Some(0));
        let text = "電話：030 901820";
        assert_eq!(labels.directly_before(text, &(9..19), 40), Some(2));
        assert_eq!(labels.directly_before("x 030 901820", &(2..12), 40), None);
    }
}
