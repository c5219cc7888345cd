//! Argument types shared by several tools, and the wire enums: each closed set of strings a
//! tool accepts is one Rust enum, renamed to its wire names and converted once into the device
//! crate's type.

use std::borrow::Cow;
use std::fmt;

use paddock_devices::{Point, Target};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::{Map, json};

use crate::error::ToolError;

/// Declares a wire enum — camelCase variant names on the wire, no variant doc comments (a
/// documented variant would turn the schema's `enum` into a `oneOf`) — and, with `=> Type`,
/// its one conversion into the device crate's enum of the same variants.
///
/// The enum's own doc comment is for Rust readers: it stays out of the schema, where it would
/// otherwise become the description of every argument of this type that has none of its own.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident => $target:ty { $($variant:ident),+ $(,)? }) => {
        wire_enum! { $(#[$meta])* $name { $($variant),+ } }

        impl From<$name> for $target {
            fn from(value: $name) -> Self {
                match value {
                    $($name::$variant => Self::$variant),+
                }
            }
        }
    };
    ($(#[$meta:meta])* $name:ident { $($variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[schemars(description = "")]
        pub(crate) enum $name {
            $($variant),+
        }
    };
}
pub(crate) use wire_enum;

wire_enum! {
    /// A device platform.
    Platform => paddock_devices::Platform { Web, Android, Ios }
}

wire_enum! {
    /// An emulation profile of the web platform, by its name in `paddock_devices::profile`.
    Profile { Pixel7, Iphone15, Desktop }
}

impl Profile {
    /// The device crate's name for the profile.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Pixel7 => "pixel7",
            Self::Iphone15 => "iphone15",
            Self::Desktop => "desktop",
        }
    }
}

wire_enum! {
    /// How a tool returns an image: inline (base64 image content) or as a `resource_link` to
    /// the session's resource holding it (read with `resources/read`).
    ImageAs { Inline, Link }
}

/// No arguments at all.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

/// An integer from `MIN` to `MAX`; its schema carries the bounds, and a value outside them
/// fails to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounded<const MIN: u32, const MAX: u32>(u32);

impl<const MIN: u32, const MAX: u32> Bounded<MIN, MAX> {
    pub(crate) fn get(self) -> u32 {
        self.0
    }
}

impl<'de, const MIN: u32, const MAX: u32> Deserialize<'de> for Bounded<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Range<const MIN: u32, const MAX: u32>;

        impl<const MIN: u32, const MAX: u32> Visitor<'_> for Range<MIN, MAX> {
            type Value = Bounded<MIN, MAX>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(formatter, "an integer from {MIN} to {MAX}")
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                match u32::try_from(value) {
                    Ok(value) if (MIN..=MAX).contains(&value) => Ok(Bounded(value)),
                    _ => Err(E::invalid_value(de::Unexpected::Unsigned(value), &self)),
                }
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                match u64::try_from(value) {
                    Ok(value) => self.visit_u64(value),
                    Err(_) => Err(E::invalid_value(de::Unexpected::Signed(value), &self)),
                }
            }
        }

        deserializer.deserialize_u64(Range::<MIN, MAX>)
    }
}

impl<const MIN: u32, const MAX: u32> JsonSchema for Bounded<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Bounded_{MIN}_{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("integer"));
        schema.insert("minimum".into(), json!(MIN));
        schema.insert("maximum".into(), json!(MAX));
        Schema::from(schema)
    }
}

/// An element or point: `ref`, `text`, `id`, or `x` with `y`. Flattened into a tool's
/// arguments, or nested as a [`TargetObject`].
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct TargetArgs {
    /// Element ref from observe, such as `e12`.
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// Visible text or accessible name; exact match first, then case-insensitive substring.
    text: Option<String>,
    /// The element's id attribute.
    id: Option<String>,
    /// Screen x in CSS pixels (with `y`).
    x: Option<f64>,
    /// Screen y in CSS pixels (with `x`).
    y: Option<f64>,
}

impl TargetArgs {
    /// The one target given; none, several, or half a point is `[invalid_input]`.
    pub(crate) fn into_target(self) -> Result<Target, ToolError> {
        let given = [
            self.reference.is_some(),
            self.text.is_some(),
            self.id.is_some(),
            self.x.is_some() || self.y.is_some(),
        ]
        .iter()
        .filter(|given| **given)
        .count();
        if given != 1 {
            return Err(ToolError::invalid_input(
                "give exactly one target: `ref`, `text`, `id`, or `x` with `y`",
            ));
        }
        Ok(match (self.reference, self.text, self.id, self.x, self.y) {
            (Some(reference), ..) => Target::Ref(reference),
            (_, Some(text), ..) => Target::Text(text),
            (_, _, Some(id), ..) => Target::Id(id),
            (_, _, _, Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                Target::Point(Point { x, y })
            }
            _ => {
                return Err(ToolError::invalid_input(
                    "`x` and `y` go together and must be numbers",
                ));
            }
        })
    }
}

/// A target as an object of its own (`dragAndDrop`'s `from`, `highlight`'s `targets`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "An element or point.")]
pub(crate) struct TargetObject {
    #[serde(flatten)]
    target: TargetArgs,
}

impl TargetObject {
    pub(crate) fn into_target(self) -> Result<Target, ToolError> {
        self.target.into_target()
    }
}

/// A text field given by `ref`, `id` or `label`, or none (the focused field). Flattened into a
/// tool's arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct FieldArgs {
    /// Ref of the text field from observe.
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// The text field's id attribute.
    id: Option<String>,
    /// The text field's label, placeholder or accessible name.
    label: Option<String>,
}

impl FieldArgs {
    /// The field given, or `None` for the focused one; several is `[invalid_input]`.
    pub(crate) fn into_target(self) -> Result<Option<Target>, ToolError> {
        match (self.reference, self.id, self.label) {
            (None, None, None) => Ok(None),
            (Some(reference), None, None) => Ok(Some(Target::Ref(reference))),
            (None, Some(id), None) => Ok(Some(Target::Id(id))),
            (None, None, Some(label)) => Ok(Some(Target::Text(label))),
            _ => Err(ToolError::invalid_input(
                "give at most one of `ref`, `id` or `label`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn bounded_integers_parse_only_inside_their_range() {
        let parse = |value: Value| serde_json::from_value::<Bounded<1, 50>>(value);
        assert_eq!(parse(json!(1)).map(Bounded::get).ok(), Some(1));
        assert_eq!(parse(json!(50)).map(Bounded::get).ok(), Some(50));
        for outside in [json!(0), json!(51), json!(-3), json!(u64::MAX), json!(2.5)] {
            let error = parse(outside.clone()).err().map(|error| error.to_string());
            assert!(
                error
                    .as_deref()
                    .is_some_and(|error| error.contains("an integer from 1 to 50")),
                "{outside}: {error:?}"
            );
        }
    }

    #[test]
    fn every_profile_is_one_the_device_crate_knows() {
        for profile in [Profile::Pixel7, Profile::Iphone15, Profile::Desktop] {
            let wire: Profile = serde_json::from_value(json!(profile.name()))
                .unwrap_or_else(|error| panic!("{profile:?}: {error}"));
            assert_eq!(wire, profile);
            assert!(paddock_devices::profile::profile(profile.name()).is_some());
        }
        assert_eq!(paddock_devices::profile::builtin_profiles().len(), 3);
    }
}
