//! Emulation profiles and configured apps.

/// A device emulation profile: what the page sees of the screen and the browser.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    pub width: u32,
    pub height: u32,
    pub device_scale_factor: f64,
    pub mobile: bool,
    pub touch: bool,
    pub user_agent: &'static str,
}

/// The built-in profiles.
pub fn builtin_profiles() -> Vec<Profile> {
    vec![
        Profile {
            name: "pixel7",
            width: 412,
            height: 915,
            device_scale_factor: 2.625,
            mobile: true,
            touch: true,
            user_agent: "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36",
        },
        Profile {
            name: "iphone15",
            width: 393,
            height: 852,
            device_scale_factor: 3.0,
            mobile: true,
            touch: true,
            user_agent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        },
        Profile {
            name: "desktop",
            width: 1280,
            height: 800,
            device_scale_factor: 1.0,
            mobile: false,
            touch: false,
            user_agent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
        },
    ]
}

/// The built-in profile called `name`.
pub fn profile(name: &str) -> Option<Profile> {
    builtin_profiles()
        .into_iter()
        .find(|profile| profile.name == name)
}

/// A configured web app: what `launchApp` opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppConfig {
    pub id: String,
    pub name: String,
    pub url: String,
}
