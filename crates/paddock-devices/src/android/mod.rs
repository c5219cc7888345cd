//! The Android platform: devices the user's adb server knows (USB phones, emulators, devices
//! over TCP), driven through the adb host protocol.

pub mod adb;
pub mod device;
pub mod hierarchy;
pub mod image;
pub mod input;

pub use device::{ANDROID_PROFILE, AndroidDevice, AndroidFacts};
