//! Finding the element an action means, the same way on every platform that resolves targets
//! against its own observation (Android today): a ref is exact; text matches only exactly,
//! after collapsing whitespace and ignoring case; an id goes through the platform's rule. When
//! nothing matches, the error lists the closest candidates with their refs — an action never
//! lands on a control whose text merely contains the words asked for.

use crate::device::{DeviceError, Element, Target};

/// How many candidates a failed text match lists.
const CANDIDATES: usize = 5;

/// Lower-case with runs of whitespace collapsed to one space and trimmed.
pub fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether an element's name or value is exactly `wanted` (normalised).
fn matches_text(element: &Element, wanted: &str) -> bool {
    normalize(&element.name) == wanted
        || element
            .value
            .as_deref()
            .is_some_and(|value| normalize(value) == wanted)
}

/// Whether some element shows exactly `wanted`.
pub fn visible_text(elements: &[Element], wanted: &str) -> bool {
    let wanted = normalize(wanted);
    elements
        .iter()
        .any(|element| matches_text(element, &wanted))
}

/// The element `target` names. `id_matches(element_id, wanted)` is the platform's id rule.
/// A point target has no element: it is the caller's to handle.
pub fn find<'a>(
    elements: &'a [Element],
    target: &Target,
    id_matches: impl Fn(&str, &str) -> bool,
) -> Result<&'a Element, DeviceError> {
    match target {
        Target::Ref(reference) => elements
            .iter()
            .find(|element| &element.reference == reference)
            .ok_or_else(|| {
                DeviceError::NotFound(format!(
                    "ref `{reference}` is not on the screen (refs live as long as their element); observe again for current refs"
                ))
            }),
        Target::Id(id) => {
            let found: Vec<&Element> = elements
                .iter()
                .filter(|element| element.id.as_deref().is_some_and(|own| id_matches(own, id)))
                .collect();
            match found.as_slice() {
                [one] => Ok(one),
                [] => Err(DeviceError::NotFound(format!(
                    "no element with id `{id}` is on the screen; observe to see what is there"
                ))),
                [first, ..] => Ok(first),
            }
        }
        Target::Text(text) => {
            let wanted = normalize(text);
            if wanted.is_empty() {
                return Err(DeviceError::InvalidInput(
                    "`text` is empty; give the element's visible text".into(),
                ));
            }
            if let Some(element) = elements
                .iter()
                .find(|element| matches_text(element, &wanted))
            {
                return Ok(element);
            }
            Err(DeviceError::NotFound(no_exact_match(elements, text, &wanted)))
        }
        Target::Point(_) => Err(DeviceError::InvalidInput(
            "a point is not an element".into(),
        )),
    }
}

/// The error for text with no exact match: the closest names on screen, by shared words and
/// containment, with their refs.
fn no_exact_match(elements: &[Element], text: &str, wanted: &str) -> String {
    let wanted_words: Vec<&str> = wanted.split(' ').collect();
    let mut scored: Vec<(usize, &Element)> = elements
        .iter()
        .filter(|element| !element.name.is_empty())
        .filter_map(|element| {
            let name = normalize(&element.name);
            let shared = name
                .split(' ')
                .filter(|word| wanted_words.contains(word))
                .count();
            let contains = name.contains(wanted) || wanted.contains(name.as_str());
            let score = shared * 2 + usize::from(contains) * 3;
            (score > 0).then_some((score, element))
        })
        .collect();
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    if scored.is_empty() {
        return format!("no element shows exactly `{text}`; observe to see what is on screen");
    }
    let candidates: Vec<String> = scored
        .iter()
        .take(CANDIDATES)
        .map(|(_, element)| {
            format!(
                "{} {} \"{}\"",
                element.reference, element.role, element.name
            )
        })
        .collect();
    format!(
        "no element shows exactly `{text}` (matching is exact, ignoring case and spacing); closest: {}. Tap one by its ref",
        candidates.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(reference: &str, role: &str, name: &str, id: Option<&str>) -> Element {
        Element {
            reference: reference.into(),
            role: role.into(),
            name: name.into(),
            value: None,
            states: Vec::new(),
            level: None,
            id: id.map(str::to_owned),
            bounds: [0, 0, 10, 10],
            offscreen: false,
        }
    }

    fn screen() -> Vec<Element> {
        vec![
            element("e1", "button", "Clear completed (1)", None),
            element("e2", "checkbox", "Mark all as complete", Some("toggle-all")),
            element("e3", "link", "All", None),
            element("e4", "text", "3  items\nleft", None),
        ]
    }

    fn exact(id: &str, wanted: &str) -> bool {
        id == wanted
    }

    #[test]
    fn text_matches_exactly_ignoring_case_and_spacing() {
        let elements = screen();
        let found = find(&elements, &Target::Text("all".into()), exact).map(|e| &e.reference);
        assert_eq!(found, Ok(&"e3".to_owned()));
        let found =
            find(&elements, &Target::Text("3 items left".into()), exact).map(|e| &e.reference);
        assert_eq!(found, Ok(&"e4".to_owned()));
    }

    #[test]
    fn a_substring_is_never_tapped_silently() {
        let elements = screen();
        let error = find(&elements, &Target::Text("Completed".into()), exact)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("no element shows exactly `Completed`"),
            "{error}"
        );
        assert!(
            error.contains("e1 button \"Clear completed (1)\""),
            "{error}"
        );
        let error = find(&elements, &Target::Text("Mark all".into()), exact)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("closest: e2 checkbox \"Mark all as complete\""),
            "{error}"
        );
        let nothing = find(&elements, &Target::Text("Checkout".into()), exact)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            nothing.contains("observe to see what is on screen"),
            "{nothing}"
        );
    }

    #[test]
    fn refs_and_ids() {
        let elements = screen();
        assert_eq!(
            find(&elements, &Target::Ref("e2".into()), exact).map(|e| &e.name),
            Ok(&"Mark all as complete".to_owned())
        );
        assert!(find(&elements, &Target::Ref("e9".into()), exact).is_err());
        assert_eq!(
            find(&elements, &Target::Id("toggle-all".into()), exact).map(|e| &e.reference),
            Ok(&"e2".to_owned())
        );
        assert!(find(&elements, &Target::Id("nope".into()), exact).is_err());
        assert!(visible_text(&elements, "ALL"));
        assert!(!visible_text(&elements, "Al"));
    }
}
