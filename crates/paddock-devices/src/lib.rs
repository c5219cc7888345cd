//! Paddock's devices. A [`Device`] is something an agent can observe and act on; the [`Pool`]
//! keeps warm devices per platform and profile, binds one to each session, resets and returns
//! it when the session ends, and replaces devices that die. Platforms: `web` (headless Chromium
//! with mobile emulation, over CDP) and `android` (phones and emulators through the adb server). iOS comes later behind the same trait.
//!
//! This crate knows nothing of MCP or HTTP: tools translate its Rust types.

pub mod android;
pub mod device;
pub mod matching;
pub mod pool;
pub mod profile;
pub mod progress;
pub mod web;

pub use device::{
    Action, ActionOutcome, Device, DeviceError, Element, ImeAction, Key, Observation,
    ObserveOptions, Orientation, Platform, Point, Screenshot, SqlQuery, SwipeDirection, TabsInfo,
    TapKind, Target,
};
pub use pool::{DeviceInfo, DeviceState, Pool, PoolConfig, RefillHold, WebPoolConfig};
pub use profile::{AppConfig, Profile};
