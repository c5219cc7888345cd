//! Observation: what is on the session's device's screen, as text, JSON or a JPEG.

use paddock_devices::ObserveOptions;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Hints, ToolDef};
use crate::error::ToolError;
use crate::render::Bounds;
use crate::tools::args::{Bounded, ImageAs, wire_enum};
use crate::tools::device::{
    Form, WEB_AND_ANDROID, bounded, observation_output, publish_jpeg, session_device,
};
use crate::tools::{Call, Image, Output, Tool};

const DEFAULT_OBSERVE_SCREENSHOT_WIDTH: u32 = 360;
const OBSERVE_SCREENSHOT_QUALITY: u8 = 60;
const DEFAULT_SCREENSHOT_QUALITY: u32 = 70;

wire_enum! {
    /// How `observe` answers.
    Format { Text, Json }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ObserveArgs {
    /// List every element, not only those on screen.
    #[serde(default)]
    full: bool,
    /// Add a JPEG screenshot.
    #[serde(default)]
    screenshot: bool,
    /// Screenshot width in pixels (default 360).
    screenshot_width: Option<Bounded<64, 2048>>,
    /// Default `text`.
    format: Option<Format>,
    /// In the text form, every element's bounds (`@x,y wxh`, CSS pixels on the web, dp on
    /// Android); by default only elements with no name, hidden controls and closed shadow
    /// roots carry them (JSON always does).
    #[serde(default)]
    bounds: bool,
    /// With a screenshot: `inline` (default) returns the JPEG in the answer, `link` a
    /// `resource_link` to it (fetch it with `resources/read`), for clients with image or token
    /// limits.
    image_as: Option<ImageAs>,
}

#[derive(Debug)]
pub(crate) struct Observe;

impl Tool for Observe {
    type Args = ObserveArgs;

    const DEF: ToolDef = ToolDef::new(
        "observe",
        "Observe the screen",
        "Lists what is on screen for the session's device: each element's ref (stable while the element lives), role, name or text, value, non-default states, the focused element, the open modal dialog, screen size, app and URL, and how much content lies off screen. On web pages text is listed in reading order, one visual line per element, and the list includes open shadow roots and iframes in place (refs like `f2e5` are inside a cross-origin frame); `hidden-control` marks a control drawn over by a custom one (its bounds are what a finger hits, act on it as usual), `closed-shadow-root` a component whose insides cannot be read (tap its ref or a point). Bounds (`@x,y wxh`, CSS pixels; dp on Android) are shown for elements with no name, hidden controls and closed shadow roots; `bounds: true` shows every element's. `full: true` lists the whole document. `screenshot: true` adds a downscaled JPEG. `format: json` returns structured data instead of text.",
        Hints::READ,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: ObserveArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let width = args.screenshot_width.map(Bounded::get);
        let options = ObserveOptions {
            full: args.full,
            screenshot_width: (args.screenshot || width.is_some())
                .then(|| width.unwrap_or(DEFAULT_OBSERVE_SCREENSHOT_WIDTH)),
            screenshot_quality: OBSERVE_SCREENSHOT_QUALITY,
        };
        let observation = bounded(device.observe(options)).await?;
        Ok(observation_output(
            &call,
            &observation,
            None,
            match (args.format, args.bounds) {
                (Some(Format::Json), _) => Form::Json,
                (_, true) => Form::Text(Bounds::All),
                (_, false) => Form::Text(Bounds::WhereNeeded),
            },
            args.image_as,
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScreenshotArgs {
    /// Image width in pixels (default: the screen's CSS width).
    width: Option<Bounded<64, 4096>>,
    /// JPEG quality (default 70).
    quality: Option<Bounded<1, 100>>,
    /// `inline` (default) returns the JPEG in the answer, `link` a `resource_link` to it
    /// (fetch it with `resources/read`).
    #[serde(rename = "imageAs")]
    image_as: Option<ImageAs>,
}

#[derive(Debug)]
pub(crate) struct Screenshot;

impl Tool for Screenshot {
    type Args = ScreenshotArgs;

    const DEF: ToolDef = ToolDef::new(
        "screenshot",
        "Take a screenshot",
        "Returns a JPEG of the screen, inline or, with `imageAs: link`, as a `resource_link` to the session's screenshot resource (read it with resources/read).",
        Hints::READ,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: ScreenshotArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let quality = args
            .quality
            .map_or(DEFAULT_SCREENSHOT_QUALITY, Bounded::get);
        // `Bounded<1, 100>` keeps the quality inside a byte.
        let quality = u8::try_from(quality).unwrap_or(u8::MAX);
        let shot = bounded(device.screenshot(args.width.map(Bounded::get), quality)).await?;
        let image = publish_jpeg(&call, shot.jpeg, args.image_as);
        let text = match &image {
            Image::Link(reference) => format!(
                "screenshot {}x{} JPEG at {}",
                shot.width, shot.height, reference.uri
            ),
            Image::Inline(_) => format!("screenshot {}x{} JPEG", shot.width, shot.height),
        };
        Ok(Output::Rich {
            text,
            image: Some(image),
            structured: None,
        })
    }
}
