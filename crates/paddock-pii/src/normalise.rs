//! The text the default detectors see: full-width and Arabic-Indic forms folded to ASCII and
//! invisible characters dropped, with a map from its byte offsets back to the original's.
//!
//! The detectors are written for ASCII digits, `@`, `+` and punctuation. East Asian text often
//! writes those in their full-width forms (`０３－７６０９－２２７９`, `name＠example.jp`,
//! `電話：…`), and a zero-width space or soft hyphen inside a value hides it from a byte
//! matcher as well as any separator would. Rather than teach five detectors every variant, a
//! filter runs its detector on a normalised copy and maps the findings back, so the
//! redaction replaces the original characters.
//!
//! Most texts have nothing to normalise; [`Normalised::new`] finds that out with a word-wise
//! ASCII check or a few `memchr` searches for the lead bytes of the characters it changes, and
//! then borrows the text instead of copying it.

use std::borrow::Cow;
use std::ops::Range;

use memchr::memmem;

use crate::finding::Finding;
use crate::scan::{ceil_char_boundary, floor_char_boundary};

/// What normalisation does with the character at the start of `bytes`: `None` when it keeps
/// it, otherwise the character's length in bytes and its replacement (`None` to drop it).
///
/// - Full-width ASCII variants (U+FF01–U+FF5E: `０`–`９`, `Ａ`–`Ｚ`, `ａ`–`ｚ`, `＠`, `：`,
///   `，`, `（`, …) become their ASCII characters, and the ideographic space U+3000 a space.
/// - Arabic-Indic and extended Arabic-Indic digits (`٠`–`٩`, `۰`–`۹`) become ASCII digits.
/// - No-break, narrow no-break and figure spaces (U+00A0, U+202F, U+2007), which French and
///   typeset text put inside numbers (`06 12 34 56 78`), become spaces; the hyphens and dashes
///   that stand for a minus or a hyphen inside numbers (U+2010–U+2013, U+2212) become `-`.
/// - Zero-width and invisible formatting characters are dropped: soft hyphen U+00AD,
///   zero-width space, non-joiner and joiner U+200B–U+200D, the directional marks U+200E,
///   U+200F and U+061C, the bidirectional embeddings and isolates U+202A–U+202E and
///   U+2066–U+2069, word joiner U+2060 and the byte-order mark U+FEFF.
fn change_at(bytes: &[u8]) -> Option<(usize, Option<u8>)> {
    match *bytes {
        [0xC2, 0xAD, ..] => Some((2, None)),
        [0xC2, 0xA0, ..] => Some((2, Some(b' '))),
        [0xE2, 0x80, 0x87 | 0xAF, ..] => Some((3, Some(b' '))),
        [0xE2, 0x80, 0x90..=0x93, ..] | [0xE2, 0x88, 0x92, ..] => Some((3, Some(b'-'))),
        [0xD8, 0x9C, ..] => Some((2, None)),
        [0xD9, second @ 0xA0..=0xA9, ..] => Some((2, Some(b'0' + (second - 0xA0)))),
        [0xDB, second @ 0xB0..=0xB9, ..] => Some((2, Some(b'0' + (second - 0xB0)))),
        [0xE2, 0x80, 0x8B..=0x8F | 0xAA..=0xAE, ..] => Some((3, None)),
        [0xE2, 0x81, 0xA0 | 0xA6..=0xA9, ..] => Some((3, None)),
        [0xE3, 0x80, 0x80, ..] => Some((3, Some(b' '))),
        [0xEF, 0xBB, 0xBF, ..] => Some((3, None)),
        // U+FF01–U+FF3F map to `!`–`_`, U+FF40–U+FF5E to `` ` ``–`~`.
        [0xEF, 0xBC, third @ 0x81..=0xBF, ..] => Some((3, Some(0x21 + (third - 0x81)))),
        [0xEF, 0xBD, third @ 0x80..=0x9E, ..] => Some((3, Some(0x60 + (third - 0x80)))),
        _ => None,
    }
}

/// Finds the characters normalisation changes, with fast byte searches for their lead bytes:
/// `C2`, `E2` and `EF` (soft hyphen, format characters, full-width forms and U+FEFF),
/// `D8`, `D9` and `DB` (U+061C and the Arabic-Indic digits), and U+3000 as a whole. The lead
/// byte of kana and of most CJK punctuation, `E3`, is not searched for on its own, so Japanese
/// prose costs no more than a few searches that find nothing.
#[derive(Debug)]
struct Changes<'a> {
    bytes: &'a [u8],
    ideographic_space: memmem::Finder<'static>,
    /// For each search, the next candidate it found, `None` once it has found them all.
    next: [Option<usize>; 3],
}

impl<'a> Changes<'a> {
    fn new(bytes: &'a [u8]) -> Changes<'a> {
        let mut changes = Changes {
            bytes,
            ideographic_space: memmem::Finder::new("\u{3000}".as_bytes()),
            next: [None; 3],
        };
        for search in 0..3 {
            changes.next[search] = changes.search(search, 0);
        }
        changes
    }

    /// The first candidate of `search` at or after `from`.
    fn search(&self, search: usize, from: usize) -> Option<usize> {
        let rest = self.bytes.get(from..)?;
        let found = match search {
            0 => memchr::memchr3(0xC2, 0xE2, 0xEF, rest),
            1 => memchr::memchr3(0xD8, 0xD9, 0xDB, rest),
            _ => self.ideographic_space.find(rest),
        };
        found.map(|offset| from + offset)
    }

    /// The offset of the first character at or after `from` that normalisation changes.
    /// Calls come with growing `from`, and every search only moves forward, so finding all
    /// changes is linear in the text.
    fn next_from(&mut self, from: usize) -> Option<usize> {
        loop {
            for search in 0..3 {
                if self.next[search].is_some_and(|at| at < from) {
                    self.next[search] = self.search(search, from);
                }
            }
            let (search, at) = (0..3)
                .filter_map(|search| self.next[search].map(|at| (search, at)))
                .min_by_key(|&(_, at)| at)?;
            if self.bytes.get(at..).and_then(change_at).is_some() {
                return Some(at);
            }
            self.next[search] = self.search(search, at + 1);
        }
    }
}

/// Consecutive characters changed the same way: `count` characters of `width` bytes each at
/// `original` became `count * kept` bytes at `normalised` (`kept` is 1 for a replacement, 0
/// for a dropped character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    normalised: usize,
    original: usize,
    count: usize,
    width: usize,
    kept: usize,
}

impl Run {
    fn normalised_end(&self) -> usize {
        self.normalised + self.count * self.kept
    }

    fn original_end(&self) -> usize {
        self.original + self.count * self.width
    }
}

/// The normalised copy of a text that had something to normalise, and its changes.
#[derive(Debug, Clone)]
pub(crate) struct Normalisation {
    copy: String,
    /// The changes, in order.
    runs: Vec<Run>,
}

impl Normalisation {
    /// Normalises `text`; `None` when there is nothing to change. Linear in `text`.
    fn of(text: &str) -> Option<Normalisation> {
        // Most text is ASCII, which `is_ascii` checks a word at a time.
        if text.is_ascii() {
            return None;
        }
        let bytes = text.as_bytes();
        let mut changes = Changes::new(bytes);
        let mut next = Some(changes.next_from(0)?);
        let mut copy = String::with_capacity(text.len());
        let mut runs: Vec<Run> = Vec::new();
        let mut cursor = 0;
        while let Some(at) = next {
            let Some((width, replacement)) = bytes.get(at..).and_then(change_at) else {
                break;
            };
            copy.push_str(text.get(cursor..at).unwrap_or_default());
            let normalised = copy.len();
            if let Some(byte) = replacement {
                copy.push(char::from(byte));
            }
            let kept = usize::from(replacement.is_some());
            match runs.last_mut() {
                Some(run)
                    if run.width == width
                        && run.kept == kept
                        && run.original_end() == at
                        && run.normalised_end() == normalised =>
                {
                    run.count += 1;
                }
                _ => runs.push(Run {
                    normalised,
                    original: at,
                    count: 1,
                    width,
                    kept,
                }),
            }
            cursor = at + width;
            next = changes.next_from(cursor);
        }
        copy.push_str(text.get(cursor..).unwrap_or_default());
        Some(Normalisation { copy, runs })
    }
}

/// A text as the detectors see it, and the way back to the original's offsets.
#[derive(Debug)]
pub(crate) struct Normalised<'a> {
    original: &'a str,
    /// `None` when nothing needed changing: the detectors scan the original.
    normalisation: Option<Cow<'a, Normalisation>>,
}

impl<'a> Normalised<'a> {
    /// Normalises `text`, borrowing it when there is nothing to change. Linear in `text`.
    pub fn new(text: &'a str) -> Normalised<'a> {
        Normalised {
            original: text,
            normalisation: Normalisation::of(text).map(Cow::Owned),
        }
    }

    /// The text the findings are mapped back to.
    pub fn original(&self) -> &'a str {
        self.original
    }

    /// The text the detectors scan.
    pub fn text(&self) -> &str {
        match &self.normalisation {
            Some(normalisation) => &normalisation.copy,
            None => self.original,
        }
    }

    /// Whether the detectors scan a copy (something was normalised).
    #[cfg(test)]
    pub fn is_copy(&self) -> bool {
        self.normalisation.is_some()
    }

    /// The original bytes behind byte `position` of the normalised text: one byte for a byte
    /// that was copied, the whole character for one that replaced a character.
    fn original_bytes(runs: &[Run], position: usize) -> Range<usize> {
        // The last run that starts at or before `position`; dropped characters make runs that
        // are empty in the normalised text, and one that ends at `position` lies before it.
        let index = runs.partition_point(|run| run.normalised <= position);
        let Some(run) = index.checked_sub(1).and_then(|i| runs.get(i)) else {
            return position..position + 1;
        };
        if position < run.normalised_end() {
            let start = run.original + (position - run.normalised) * run.width;
            start..start + run.width
        } else {
            let start = run.original_end() + (position - run.normalised_end());
            start..start + 1
        }
    }

    /// `range` of the normalised text in the original's offsets. The range covers the original
    /// characters of its first and last byte and everything between; characters dropped just
    /// outside it stay outside. Always on the original's char boundaries.
    pub fn to_original(&self, range: Range<usize>) -> Range<usize> {
        let Some(runs) = self.normalisation.as_ref().map(|n| n.runs.as_slice()) else {
            return range;
        };
        if range.start >= range.end {
            let at = Self::original_bytes(runs, range.start).start;
            let at = floor_char_boundary(self.original, at);
            return at..at;
        }
        let start = Self::original_bytes(runs, range.start).start;
        let end = Self::original_bytes(runs, range.end - 1).end;
        floor_char_boundary(self.original, start)..ceil_char_boundary(self.original, end)
    }

    /// Maps findings made on [`Normalised::text`] to the original text, in place.
    pub fn map_back(&self, findings: &mut [Finding]) {
        if self.normalisation.is_none() {
            return;
        }
        for finding in findings {
            finding.range = self.to_original(finding.range.clone());
        }
    }
}

/// The normalisation of the last text a run scanned, kept for the next filter: the default
/// filters of a run scan the same text one after another until one of them redacts something.
/// A text is compared with the last one before its normalisation is reused, which costs far
/// less than normalising it again.
#[derive(Debug, Default)]
pub(crate) struct LastNormalised {
    last: Option<(String, Normalisation)>,
}

impl LastNormalised {
    /// `text` as the detectors see it, reusing the last normalisation when `text` is the same.
    pub fn view<'t>(&'t mut self, text: &'t str) -> Normalised<'t> {
        if self.last.as_ref().is_none_or(|(last, _)| last != text) {
            self.last =
                Normalisation::of(text).map(|normalisation| (text.to_owned(), normalisation));
        }
        Normalised {
            original: text,
            normalisation: self
                .last
                .as_ref()
                .map(|(_, normalisation)| Cow::Borrowed(normalisation)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped<'t>(original: &'t str, normalised_value: &str) -> &'t str {
        let normalised = Normalised::new(original);
        let start = normalised
            .text()
            .find(normalised_value)
            .unwrap_or_else(|| panic!("{normalised_value:?} not in {:?}", normalised.text()));
        let range = normalised.to_original(start..start + normalised_value.len());
        &original[range]
    }

    #[test]
    fn nothing_to_normalise_borrows() {
        for text in [
            "plain ASCII +1 415 555 2671",
            "",
            "accents é, “quotes”, em — dash, 日本語の文章、句読点。",
            "한국어 문장 ไทย العربية русский",
        ] {
            let normalised = Normalised::new(text);
            assert!(!normalised.is_copy(), "{text}");
            assert!(std::ptr::eq(normalised.text(), text));
            assert_eq!(normalised.to_original(1..3), 1..3);
        }
    }

    #[test]
    fn the_last_normalisation_is_reused_for_the_same_text() {
        let mut last = LastNormalised::default();
        let text = "電話：０３－７６０９－２２７９";
        let first = last.view(text).text().as_ptr();
        assert_eq!(last.view(text).text().as_ptr(), first);
        assert_eq!(last.view(text).text(), "電話:03-7609-2279");
        let other = "電話：０３";
        assert_eq!(last.view(other).text(), "電話:03");
        let clean = "plain";
        assert!(std::ptr::eq(last.view(clean).text(), clean));
        assert_eq!(last.view(text).text(), "電話:03-7609-2279");
    }

    #[test]
    fn full_width_forms_become_ascii() {
        let text = "電話：０３－７６０９－２２７９、ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ（ＡＢＣ）　ｘ";
        let normalised = Normalised::new(text);
        assert!(normalised.is_copy());
        assert_eq!(
            normalised.text(),
            "電話:03-7609-2279、name@example.jp(ABC) x"
        );
        assert_eq!(mapped(text, "03-7609-2279"), "０３－７６０９－２２７９");
        assert_eq!(
            mapped(text, "name@example.jp"),
            "ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ"
        );
        assert_eq!(mapped(text, "電話:"), "電話：");
        assert_eq!(mapped(text, "(ABC) x"), "（ＡＢＣ）　ｘ");
    }

    #[test]
    fn no_break_spaces_and_dashes_inside_numbers() {
        let text = "Tél.\u{a0}: 06\u{a0}12\u{202f}34\u{2007}56 78, SSN 078\u{2011}05\u{2013}1120 \u{2212}3";
        let normalised = Normalised::new(text);
        assert_eq!(
            normalised.text(),
            "Tél. : 06 12 34 56 78, SSN 078-05-1120 -3"
        );
        assert_eq!(
            mapped(text, "06 12 34 56 78"),
            "06\u{a0}12\u{202f}34\u{2007}56 78"
        );
        assert_eq!(mapped(text, "078-05-1120"), "078\u{2011}05\u{2013}1120");
    }

    #[test]
    fn arabic_indic_digits_become_ascii() {
        let text = "هاتف: ٠٥٠١٢٣٤٥٦٧ و ۰۹۱۲";
        let normalised = Normalised::new(text);
        assert_eq!(normalised.text(), "هاتف: 0501234567 و 0912");
        assert_eq!(mapped(text, "0501234567"), "٠٥٠١٢٣٤٥٦٧");
        assert_eq!(mapped(text, "0912"), "۰۹۱۲");
    }

    #[test]
    fn invisible_characters_are_dropped_and_stay_outside_edges() {
        let text = "call \u{200B}415\u{200C}555\u{00AD}2671\u{2060} or \u{FEFF}x\u{200D}\u{200E}y";
        let normalised = Normalised::new(text);
        assert_eq!(normalised.text(), "call 4155552671 or xy");
        // Inside a value they are covered; just outside it they are not.
        assert_eq!(mapped(text, "4155552671"), "415\u{200C}555\u{00AD}2671");
        assert_eq!(mapped(text, "xy"), "x\u{200D}\u{200E}y");
        assert_eq!(mapped(text, "call "), "call ");
        assert_eq!(mapped(text, " or "), " or ");
        assert_eq!(mapped(text, "y"), "y");
    }

    #[test]
    fn runs_of_changes_map_each_character() {
        let text = "\u{200B}\u{200B}１２\u{200B}３ab４";
        let normalised = Normalised::new(text);
        assert_eq!(normalised.text(), "123ab4");
        assert_eq!(mapped(text, "1"), "１");
        assert_eq!(mapped(text, "2"), "２");
        assert_eq!(mapped(text, "23"), "２\u{200B}３");
        assert_eq!(mapped(text, "3ab"), "３ab");
        assert_eq!(mapped(text, "b4"), "b４");
        assert_eq!(mapped(text, "123ab4"), "１２\u{200B}３ab４");
    }

    /// The mapping, computed the slow way: every byte of the normalised text with the original
    /// bytes behind it.
    fn reference(text: &str) -> (String, Vec<Range<usize>>) {
        let mut copy = String::new();
        let mut spans = Vec::new();
        for (at, c) in text.char_indices() {
            let end = at + c.len_utf8();
            match change_at(&text.as_bytes()[at..]) {
                Some((_, Some(byte))) => {
                    copy.push(char::from(byte));
                    spans.push(at..end);
                }
                Some((_, None)) => {}
                None => {
                    copy.push(c);
                    spans.extend((at..end).map(|byte| byte..byte + 1));
                }
            }
        }
        (copy, spans)
    }

    proptest::proptest! {
        #[test]
        fn mapping_matches_the_reference(
            text in "[a-z0-9 @.\u{FF01}-\u{FF5E}\u{3000}\u{200B}-\u{200F}\u{00AD}\u{FEFF}\u{0660}-\u{0669}\u{06F0}-\u{06F9}\u{2066}-\u{2069}日本、。é“”]{0,40}",
            a in 0usize..80,
            b in 0usize..80,
        ) {
            let normalised = Normalised::new(&text);
            let (copy, spans) = reference(&text);
            proptest::prop_assert_eq!(normalised.text(), copy.as_str());
            proptest::prop_assert_eq!(normalised.is_copy(), copy != text);
            let boundaries: Vec<usize> =
                (0..=copy.len()).filter(|&i| copy.is_char_boundary(i)).collect();
            let start = boundaries[a % boundaries.len()];
            let end = boundaries[b % boundaries.len()].max(start);
            let range = normalised.to_original(start..end);
            if start < end {
                proptest::prop_assert_eq!(range, spans[start].start..spans[end - 1].end);
            } else {
                proptest::prop_assert!(range.is_empty());
                proptest::prop_assert!(text.is_char_boundary(range.start));
            }
        }
    }

    #[test]
    fn every_range_maps_to_char_boundaries() {
        let text = "日本\u{200B}語１２ab\u{00AD}ç\u{3000}٣x\u{FEFF}";
        let normalised = Normalised::new(text);
        let copy = normalised.text();
        let boundaries: Vec<usize> = (0..=copy.len())
            .filter(|&i| copy.is_char_boundary(i))
            .collect();
        for (i, &start) in boundaries.iter().enumerate() {
            for &end in &boundaries[i..] {
                let range = normalised.to_original(start..end);
                assert!(text.is_char_boundary(range.start), "{start}..{end}");
                assert!(text.is_char_boundary(range.end), "{start}..{end}");
                assert!(range.start <= range.end);
                // What the range covers normalises back to what it was mapped from.
                assert_eq!(
                    Normalised::new(&text[range.clone()]).text(),
                    &copy[start..end],
                    "{start}..{end}"
                );
            }
        }
    }
}
