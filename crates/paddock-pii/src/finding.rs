//! What a detector reports (a byte range and a category) and how a set of findings becomes
//! redacted text.

use std::ops::Range;

/// The kind of sensitive value a default filter found; each has its own replacement marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// PEM or OpenSSH private key blocks.
    PrivateKey,
    /// A recognised vendor API key or a Paddock voucher.
    ApiKey,
    /// A JSON Web Token.
    Jwt,
    /// The credential of an `Authorization` header (the scheme stays).
    Authorization,
    /// A password: a `password=` assignment or the password part of a URL.
    Password,
    /// Any other labelled secret (`token=`, `"client_secret": …`).
    Credential,
    /// An e-mail address.
    Email,
    /// A national identity, social-security or personal tax number.
    IdNumber,
    /// A telephone number.
    Phone,
    /// A payment card number.
    Card,
}

impl Category {
    /// Every category, in marker-priority order (earlier wins when findings overlap).
    pub const ALL: [Category; 10] = [
        Category::PrivateKey,
        Category::ApiKey,
        Category::Jwt,
        Category::Authorization,
        Category::Password,
        Category::Credential,
        Category::Email,
        Category::IdNumber,
        Category::Phone,
        Category::Card,
    ];

    /// The text that replaces a value of this category.
    pub const fn marker(self) -> &'static str {
        match self {
            Category::PrivateKey => "[PRIVATE_KEY]",
            Category::ApiKey => "[API_KEY]",
            Category::Jwt => "[JWT]",
            Category::Authorization => "[AUTHORIZATION]",
            Category::Password => "[PASSWORD]",
            Category::Credential => "[CREDENTIAL]",
            Category::Email => "[EMAIL]",
            Category::IdNumber => "[ID_NUMBER]",
            Category::Phone => "[PHONE]",
            Category::Card => "[CARD]",
        }
    }

    /// The marker without brackets (`API_KEY`), as used by the labelled corpus.
    pub fn label(self) -> &'static str {
        let marker = self.marker();
        &marker[1..marker.len() - 1]
    }

    /// The category whose [`Category::label`] is `label`.
    pub fn from_label(label: &str) -> Option<Category> {
        Category::ALL
            .into_iter()
            .find(|category| category.label() == label)
    }
}

/// A sensitive value found in a text: its byte range and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Byte range in the text the detector scanned; always on `char` boundaries.
    pub range: Range<usize>,
    /// What was found.
    pub category: Category,
}

/// Sorts findings and merges overlapping ones so that every byte any detector flagged is
/// replaced. Overlaps keep the highest-priority category (a GitHub token inside a
/// `token=` assignment is reported as `[API_KEY]`, not `[CREDENTIAL]`), which is how the keys
/// filter preserves category-specific markers while running all its checks together.
pub(crate) fn normalise(findings: &mut Vec<Finding>) {
    findings.retain(|finding| finding.range.start < finding.range.end);
    findings.sort_by_key(|finding| (finding.range.start, finding.category));
    let mut merged: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings.drain(..) {
        match merged.last_mut() {
            Some(last) if finding.range.start < last.range.end => {
                last.range.end = last.range.end.max(finding.range.end);
                last.category = last.category.min(finding.category);
            }
            _ => merged.push(finding),
        }
    }
    *findings = merged;
}

/// Replaces each (normalised) finding with its marker. Returns `None` when there is nothing to
/// replace so the caller can keep the input without copying it.
pub(crate) fn apply(text: &str, findings: &[Finding]) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    let mut output = String::with_capacity(text.len());
    let mut cursor = 0;
    for finding in findings {
        // Findings are normalised, so ranges are ordered, disjoint and on char boundaries;
        // `get` keeps this total even if a detector ever broke that promise.
        if finding.range.start < cursor {
            continue;
        }
        output.push_str(text.get(cursor..finding.range.start).unwrap_or_default());
        output.push_str(finding.category.marker());
        cursor = finding.range.end;
    }
    output.push_str(text.get(cursor..).unwrap_or_default());
    Some(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_findings_merge_to_the_higher_priority_marker() {
        let mut findings = vec![
            Finding {
                range: 10..30,
                category: Category::Credential,
            },
            Finding {
                range: 12..30,
                category: Category::ApiKey,
            },
            Finding {
                range: 40..45,
                category: Category::Email,
            },
        ];
        normalise(&mut findings);
        assert_eq!(findings.len(), 2);
        assert_eq!(findings[0].range, 10..30);
        assert_eq!(findings[0].category, Category::ApiKey);
    }

    #[test]
    fn apply_replaces_ranges() {
        let text = "mail a@b.co now";
        let findings = [Finding {
            range: 5..11,
            category: Category::Email,
        }];
        assert_eq!(apply(text, &findings).as_deref(), Some("mail [EMAIL] now"));
        assert_eq!(apply(text, &[]), None);
    }

    #[test]
    fn labels_round_trip() {
        for category in Category::ALL {
            assert_eq!(Category::from_label(category.label()), Some(category));
        }
    }
}
