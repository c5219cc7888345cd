//! What the device tools share: the session's device, bounded device operations, device
//! errors as tool errors, and observations as tool output.

use std::sync::Arc;
use std::time::Duration;

use paddock_devices::{Action, Device, DeviceError, Observation, ObserveOptions, Platform};
use serde_json::json;

use crate::error::{ToolError, ToolErrorCode};
use crate::render::{Bounds, Seen, change_text, observation_json, observation_text_with};
use crate::session::SessionKey;
use crate::tools::args::ImageAs;
use crate::tools::{Call, Image, Output};

/// How long an action waits for the UI to settle before observing anyway.
pub(super) const SETTLE: Duration = Duration::from_secs(3);
/// The longest any single device operation may take.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(45);

/// Tools for web devices only.
pub(super) const WEB: &[Platform] = &[Platform::Web];
/// Tools for web and Android devices.
pub(super) const WEB_AND_ANDROID: &[Platform] = &[Platform::Web, Platform::Android];

pub(super) fn device_error(error: DeviceError) -> ToolError {
    let code = match &error {
        DeviceError::NotFound(_) => ToolErrorCode::NotFound,
        DeviceError::InvalidInput(_) => ToolErrorCode::InvalidInput,
        DeviceError::Unsupported(_) => ToolErrorCode::UnsupportedPlatform,
        DeviceError::Lost(_) => ToolErrorCode::DeviceLost,
        DeviceError::Unavailable(_) => ToolErrorCode::Unavailable,
        DeviceError::Failed(_) => ToolErrorCode::UpstreamError,
    };
    ToolError::new(code, error.to_string())
}

/// Runs one device operation under the operation timeout.
pub(super) async fn bounded<T>(
    future: impl Future<Output = Result<T, DeviceError>>,
) -> Result<T, ToolError> {
    match tokio::time::timeout(OPERATION_TIMEOUT, future).await {
        Ok(result) => result.map_err(device_error),
        Err(_) => Err(ToolError::new(
            ToolErrorCode::Unavailable,
            format!(
                "the device did not answer within {}s",
                OPERATION_TIMEOUT.as_secs()
            ),
        )),
    }
}

pub(super) fn require_session(call: &Call<'_>) -> Result<SessionKey, ToolError> {
    call.session.clone().ok_or_else(|| {
        ToolError::invalid_input(
            "this tool needs a session: call getWeb first and send its `sessionUuid` as the `x-paddock-session-id` header or the `__mcpSessionId` argument",
        )
    })
}

/// The session's device, checked against the tool's platforms.
pub(super) fn session_device(call: &Call<'_>) -> Result<Arc<dyn Device>, ToolError> {
    let session = require_session(call)?;
    let device = call
        .ctx
        .backend
        .device(session.as_str())
        .map_err(device_error)?;
    let platforms = call.tool.platforms;
    if !platforms.contains(&device.platform()) {
        return Err(ToolError::new(
            ToolErrorCode::UnsupportedPlatform,
            format!(
                "`{}` does not support {} devices (it supports: {})",
                call.tool.name,
                device.platform(),
                platforms
                    .iter()
                    .map(|platform| platform.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(device)
}

/// Keeps `jpeg` as the session's next screenshot resource, and returns it the way `image_as`
/// asks (inline by default). Every screenshot becomes a resource, inline or not, so a client
/// can fetch it again with `resources/read`.
pub(super) fn publish_jpeg(call: &Call<'_>, jpeg: Vec<u8>, image_as: Option<ImageAs>) -> Image {
    let Some(session) = &call.session else {
        return Image::Inline(jpeg);
    };
    match image_as {
        Some(ImageAs::Link) => Image::Link(call.registry.resources.put(
            session,
            "screenshot",
            "jpg",
            "image/jpeg",
            jpeg,
        )),
        None | Some(ImageAs::Inline) => {
            call.registry
                .resources
                .put(session, "screenshot", "jpg", "image/jpeg", jpeg.clone());
            Image::Inline(jpeg)
        }
    }
}

/// How an observation answers: text (with elements' bounds as [`Bounds`] says) or JSON.
#[derive(Debug, Clone, Copy)]
pub(super) enum Form {
    Text(Bounds),
    Json,
}

impl Default for Form {
    fn default() -> Self {
        Self::Text(Bounds::default())
    }
}

pub(super) fn observation_output(
    call: &Call<'_>,
    observation: &Observation,
    detail: Option<String>,
    form: Form,
    image_as: Option<ImageAs>,
) -> Output {
    if let Some(session) = &call.session {
        call.registry
            .remember_seen(session, &observation.device, Seen::of(observation));
    }
    let image = observation
        .screenshot
        .as_ref()
        .map(|shot| publish_jpeg(call, shot.jpeg.clone(), image_as));
    let Form::Text(bounds) = form else {
        let mut value = observation_json(observation);
        if let Some(detail) = detail {
            value["detail"] = json!(detail);
        }
        return Output::Rich {
            text: value.to_string(),
            image,
            structured: Some(value),
        };
    };
    let mut text = String::new();
    if let Some(detail) = detail {
        text.push_str(&detail);
        text.push('\n');
    }
    text.push_str(&observation_text_with(observation, bounds));
    Output::Rich {
        text,
        image,
        structured: None,
    }
}

/// Performs `action` on the session's device and observes once the UI settles. The answer
/// is what changed since the caller's last observation of this device when that is shorter
/// than the whole screen ([`change_text`]), else the whole screen.
pub(super) async fn act(call: &Call<'_>, action: Action) -> Result<Output, ToolError> {
    let device = session_device(call)?;
    let previous = call
        .session
        .as_ref()
        .and_then(|session| call.registry.last_seen(session, device.id()));
    let outcome = bounded(device.act(action, SETTLE, ObserveOptions::default())).await?;
    Ok(outcome_output(call, previous.as_ref(), outcome))
}

/// An action's answer: the changes since `previous` (the caller's last observation of the
/// device) when that is shorter than the whole screen, else the whole screen.
pub(super) fn outcome_output(
    call: &Call<'_>,
    previous: Option<&Seen>,
    outcome: paddock_devices::ActionOutcome,
) -> Output {
    let changes = previous.and_then(|previous| change_text(previous, &outcome.observation));
    let Some(changes) = changes else {
        return observation_output(
            call,
            &outcome.observation,
            outcome.detail,
            Form::default(),
            None,
        );
    };
    if let Some(session) = &call.session {
        call.registry.remember_seen(
            session,
            &outcome.observation.device,
            Seen::of(&outcome.observation),
        );
    }
    let mut text = String::new();
    if let Some(detail) = outcome.detail {
        text.push_str(&detail);
        text.push('\n');
    }
    text.push_str(&changes);
    Output::Rich {
        text,
        image: None,
        structured: None,
    }
}
