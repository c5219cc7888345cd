//! The state of the fake phone behind its shell: properties, packages, files, settings, the
//! task stack of activities, the input method, and what touches and keys do to the app in
//! front.

use std::collections::{BTreeMap, BTreeSet};

use super::apps::{
    self, ADB_KEYBOARD, ADB_KEYBOARD_IME, BROWSER, Browser, Display, LATIN_IME, LAUNCHER, NOTES,
    NoteList, NotesData, SETTINGS, Screen, TextField,
};
use super::ui::{Action, Field, Node};

/// What the device's build and apps look like; [`super::FakeAndroid::start`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeAndroidConfig {
    /// `ro.boot.qemu.avd_name`: an emulator's AVD name, or `None` for a physical phone.
    pub avd_name: Option<String>,
    /// `ro.product.model`.
    pub model: String,
    /// `ro.product.manufacturer`.
    pub manufacturer: String,
    /// `ro.product.name`.
    pub product: String,
    /// `ro.product.device`.
    pub device: String,
    /// `ro.serialno`.
    pub serial_number: String,
    /// Whether `com.example.notes` is debuggable (`run-as` works for it).
    pub notes_debuggable: bool,
    /// Whether ADBKeyboard (`com.android.adbkeyboard`) is installed.
    pub adb_keyboard: bool,
}

impl Default for FakeAndroidConfig {
    /// A Pixel 4a on Android 11.
    fn default() -> Self {
        Self {
            avd_name: None,
            model: "Pixel 4a".to_owned(),
            manufacturer: "Google".to_owned(),
            product: "sunfish".to_owned(),
            device: "sunfish".to_owned(),
            serial_number: "0B281JEC215487".to_owned(),
            notes_debuggable: false,
            adb_keyboard: true,
        }
    }
}

impl FakeAndroidConfig {
    /// An Android 11 x86_64 emulator image running the AVD `name`.
    pub fn emulator(name: &str) -> Self {
        Self {
            avd_name: Some(name.to_owned()),
            model: "sdk_gphone_x86_64".to_owned(),
            manufacturer: "Google".to_owned(),
            product: "sdk_gphone_x86_64".to_owned(),
            device: "generic_x86_64_arm64".to_owned(),
            serial_number: "EMULATOR30X8X4X0".to_owned(),
            ..Self::default()
        }
    }
}

/// An installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) system: bool,
    pub(crate) debuggable: bool,
    pub(crate) uid: u32,
    pub(crate) apk: String,
    pub(crate) version_name: String,
    pub(crate) version_code: u32,
    /// The activity monkey and the launcher start.
    pub(crate) launcher_activity: Option<&'static str>,
}

/// A file in the fake file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct File {
    pub(crate) data: Vec<u8>,
    pub(crate) mode: u32,
    pub(crate) mtime: u32,
    /// Written by the sync service (`adb push`).
    pub(crate) pushed: bool,
}

/// Why a path cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsError {
    NotFound,
    PermissionDenied,
    ReadOnly,
    IsDirectory,
    NotDirectory,
}

impl FsError {
    /// `strerror`'s text.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::NotFound => "No such file or directory",
            Self::PermissionDenied => "Permission denied",
            Self::ReadOnly => "Read-only file system",
            Self::IsDirectory => "Is a directory",
            Self::NotDirectory => "Not a directory",
        }
    }

    /// The Linux errno, which the sync protocol carries.
    pub(crate) fn errno(self) -> u32 {
        match self {
            Self::NotFound => 2,
            Self::PermissionDenied => 13,
            Self::ReadOnly => 30,
            Self::IsDirectory => 21,
            Self::NotDirectory => 20,
        }
    }
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stat {
    File { size: u64, mode: u32, mtime: u32 },
    Directory { mtime: u32 },
}

/// The boot time the file system's dates start from (2021-10-01).
pub(crate) const BOOT_TIME: u32 = 1_633_046_400;

/// Directories the shell user can write below.
const WRITABLE: [&str; 2] = ["/data/local/tmp", "/storage/emulated/0"];
/// Directories the shell user cannot list.
const UNLISTABLE: [&str; 4] = ["/data", "/data/data", "/data/app", "/data/user/0"];

/// The files: a map of absolute paths, with directories listed apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Files {
    files: BTreeMap<String, File>,
    directories: BTreeSet<String>,
}

/// `path` made absolute (relative to `cwd`) with `.`, `..` and repeated slashes resolved, and
/// the shared-storage aliases (`/sdcard`, `/storage/self/primary`) mapped to the one real
/// directory, `/storage/emulated/0`.
pub(crate) fn normalize(path: &str, cwd: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    let mut absolute = format!("/{}", parts.join("/"));
    for alias in ["/sdcard", "/storage/self/primary", "/mnt/sdcard"] {
        if absolute == alias || absolute.starts_with(&format!("{alias}/")) {
            absolute = format!("/storage/emulated/0{}", &absolute[alias.len()..]);
        }
    }
    absolute
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(index) => &path[..index],
    }
}

impl Default for Files {
    fn default() -> Self {
        let directories = [
            "/",
            "/data",
            "/data/local",
            "/data/local/tmp",
            "/data/app",
            "/data/data",
            "/data/user",
            "/data/user/0",
            "/storage",
            "/storage/emulated",
            "/storage/emulated/0",
            "/storage/emulated/0/Alarms",
            "/storage/emulated/0/Android",
            "/storage/emulated/0/DCIM",
            "/storage/emulated/0/Documents",
            "/storage/emulated/0/Download",
            "/storage/emulated/0/Movies",
            "/storage/emulated/0/Music",
            "/storage/emulated/0/Notifications",
            "/storage/emulated/0/Pictures",
            "/storage/emulated/0/Podcasts",
            "/storage/emulated/0/Ringtones",
            "/system",
            "/system/app",
            "/system/bin",
            "/system/framework",
            "/system/priv-app",
            "/vendor",
            "/product",
            "/dev",
            "/proc",
            "/sys",
            "/etc",
            "/mnt",
            "/sdcard",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let mut files = BTreeMap::new();
        files.insert(
            "/system/build.prop".to_owned(),
            File {
                data: b"# begin build properties\nro.build.version.sdk=30\nro.build.version.release=11\n# end build properties\n".to_vec(),
                mode: 0o100644,
                mtime: BOOT_TIME,
                pushed: false,
            },
        );
        Self { files, directories }
    }
}

impl Files {
    pub(crate) fn stat(&self, path: &str) -> Option<Stat> {
        if self.directories.contains(path) {
            return Some(Stat::Directory { mtime: BOOT_TIME });
        }
        self.files.get(path).map(|file| Stat::File {
            size: file.data.len() as u64,
            mode: file.mode,
            mtime: file.mtime,
        })
    }

    /// Whether `app` (`run-as`), or the shell user when `None`, may read below `/data`.
    fn data_readable(path: &str, app: Option<&str>) -> bool {
        if !path.starts_with("/data/") || path.starts_with("/data/local/tmp/") {
            return true;
        }
        app.is_some_and(|app| {
            path == format!("/data/user/0/{app}")
                || path.starts_with(&format!("/data/user/0/{app}/"))
                || path.starts_with(&format!("/data/data/{app}/"))
        })
    }

    /// A file as the shell user reads it.
    pub(crate) fn read(&self, path: &str) -> Result<&File, FsError> {
        self.read_as(path, None)
    }

    /// A file as `app` (under `run-as`) or the shell user reads it.
    pub(crate) fn read_as(&self, path: &str, app: Option<&str>) -> Result<&File, FsError> {
        if self.directories.contains(path) {
            return Err(FsError::IsDirectory);
        }
        if !Self::data_readable(path, app) {
            return Err(FsError::PermissionDenied);
        }
        self.files.get(path).ok_or(FsError::NotFound)
    }

    /// Adds an app's private data (directories and files), as installing it creates them.
    pub(crate) fn add_app_data(&mut self, app: &str, files: &[(&str, &[u8])]) {
        let root = format!("/data/user/0/{app}");
        self.directories.insert(root.clone());
        for dir in ["cache", "code_cache", "databases", "shared_prefs"] {
            self.directories.insert(format!("{root}/{dir}"));
        }
        for (name, data) in files {
            self.files.insert(
                format!("{root}/{name}"),
                File {
                    data: data.to_vec(),
                    mode: 0o100660,
                    mtime: BOOT_TIME,
                    pushed: false,
                },
            );
        }
    }

    fn writable(path: &str) -> Result<(), FsError> {
        if WRITABLE
            .iter()
            .any(|dir| path.starts_with(&format!("{dir}/")))
        {
            Ok(())
        } else if ["/system", "/vendor", "/product"]
            .iter()
            .any(|dir| path.starts_with(&format!("{dir}/")))
        {
            Err(FsError::ReadOnly)
        } else {
            Err(FsError::PermissionDenied)
        }
    }

    /// Creates the directories above `path` (as adbd's `secure_mkdirs` does for a push).
    pub(crate) fn make_parents(&mut self, path: &str) -> Result<(), FsError> {
        let mut missing = Vec::new();
        let mut dir = parent(path);
        while !self.directories.contains(dir) {
            if self.files.contains_key(dir) {
                return Err(FsError::NotDirectory);
            }
            missing.push(dir.to_owned());
            dir = parent(dir);
        }
        for dir in missing {
            Self::writable(&dir)?;
            self.directories.insert(dir);
        }
        Ok(())
    }

    pub(crate) fn write(
        &mut self,
        path: &str,
        data: Vec<u8>,
        mode: u32,
        mtime: u32,
        pushed: bool,
    ) -> Result<(), FsError> {
        if self.directories.contains(path) {
            return Err(FsError::IsDirectory);
        }
        Self::writable(path)?;
        if !self.directories.contains(parent(path)) {
            return Err(if self.files.contains_key(parent(path)) {
                FsError::NotDirectory
            } else {
                FsError::NotFound
            });
        }
        self.files.insert(
            path.to_owned(),
            File {
                data,
                mode: 0o100000 | (mode & 0o7777),
                mtime,
                pushed,
            },
        );
        Ok(())
    }

    pub(crate) fn append(&mut self, path: &str, data: &[u8]) -> Result<(), FsError> {
        let mut existing = match self.files.get(path) {
            Some(file) => file.data.clone(),
            None => Vec::new(),
        };
        existing.extend_from_slice(data);
        self.write(path, existing, 0o644, BOOT_TIME, false)
    }

    pub(crate) fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        if self.directories.contains(path) {
            if !recursive {
                return Err(FsError::IsDirectory);
            }
            Self::writable(path)?;
            let prefix = format!("{path}/");
            self.files.retain(|name, _| !name.starts_with(&prefix));
            self.directories
                .retain(|name| name != path && !name.starts_with(&prefix));
            return Ok(());
        }
        if !self.files.contains_key(path) {
            return Err(FsError::NotFound);
        }
        Self::writable(path)?;
        self.files.remove(path);
        Ok(())
    }

    pub(crate) fn make_dir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        if self.directories.contains(path) {
            return if parents {
                Ok(())
            } else {
                Err(FsError::IsDirectory)
            };
        }
        Self::writable(path)?;
        if parents {
            self.make_parents(path)?;
        } else if !self.directories.contains(parent(path)) {
            return Err(FsError::NotFound);
        }
        self.directories.insert(path.to_owned());
        Ok(())
    }

    /// The names in a directory (without `.` and `..`), sorted, as the shell user sees them.
    pub(crate) fn list(&self, path: &str) -> Result<Vec<(String, Stat)>, FsError> {
        self.list_as(path, None)
    }

    /// The names in a directory as `app` (under `run-as`) or the shell user sees them.
    pub(crate) fn list_as(
        &self,
        path: &str,
        app: Option<&str>,
    ) -> Result<Vec<(String, Stat)>, FsError> {
        if !self.directories.contains(path) {
            return Err(if self.files.contains_key(path) {
                FsError::NotDirectory
            } else {
                FsError::NotFound
            });
        }
        if UNLISTABLE.contains(&path)
            || (!Self::data_readable(&format!("{path}/"), app) && path.starts_with("/data/"))
        {
            return Err(FsError::PermissionDenied);
        }
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        let direct = |name: &str| {
            name.strip_prefix(&prefix)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_owned)
        };
        let mut entries: Vec<(String, Stat)> = Vec::new();
        for dir in &self.directories {
            if let Some(name) = direct(dir) {
                entries.push((name, Stat::Directory { mtime: BOOT_TIME }));
            }
        }
        for (name, file) in &self.files {
            if let Some(short) = direct(name) {
                entries.push((
                    short,
                    Stat::File {
                        size: file.data.len() as u64,
                        mode: file.mode,
                        mtime: file.mtime,
                    },
                ));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    pub(crate) fn pushed(&self, path: &str) -> Option<Vec<u8>> {
        self.files
            .get(path)
            .filter(|file| file.pushed)
            .map(|file| file.data.clone())
    }
}

/// One activity instance in a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) screen: Screen,
    /// The identity hashes `ActivityRecord{…}` and `Window{…}` print.
    pub(crate) record_hash: u32,
    pub(crate) window_hash: u32,
}

/// A task: a stack of activities of one app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) id: u32,
    pub(crate) package: String,
    pub(crate) records: Vec<Record>,
}

/// Where `am start` ended up, for its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartResult {
    Started,
    BroughtToFront,
}

/// Settings tables, by namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Settings {
    pub(crate) system: BTreeMap<String, String>,
    pub(crate) secure: BTreeMap<String, String>,
    pub(crate) global: BTreeMap<String, String>,
}

impl Settings {
    pub(crate) fn table(&mut self, namespace: &str) -> Option<&mut BTreeMap<String, String>> {
        match namespace {
            "system" => Some(&mut self.system),
            "secure" => Some(&mut self.secure),
            "global" => Some(&mut self.global),
            _ => None,
        }
    }
}

/// Keys the app model understands (Android `KeyEvent` codes).
pub(crate) mod keys {
    pub(crate) const HOME: u32 = 3;
    pub(crate) const BACK: u32 = 4;
    pub(crate) const DPAD_LEFT: u32 = 21;
    pub(crate) const DPAD_RIGHT: u32 = 22;
    pub(crate) const TAB: u32 = 61;
    pub(crate) const SPACE: u32 = 62;
    pub(crate) const ENTER: u32 = 66;
    pub(crate) const DEL: u32 = 67;
    pub(crate) const FORWARD_DEL: u32 = 112;
    pub(crate) const MOVE_HOME: u32 = 122;
    pub(crate) const MOVE_END: u32 = 123;
}

/// The whole phone.
#[derive(Debug)]
pub(crate) struct Device {
    pub(crate) config: FakeAndroidConfig,
    pub(crate) properties: BTreeMap<String, String>,
    pub(crate) packages: Vec<Package>,
    pub(crate) files: Files,
    pub(crate) settings: Settings,
    /// Back to front: the home task is first and never removed.
    pub(crate) tasks: Vec<Task>,
    next_task: u32,
    hash_seed: u32,
    /// Running app processes and their pids.
    pub(crate) processes: BTreeMap<String, u32>,
    next_pid: u32,
    pub(crate) enabled_imes: Vec<String>,
    pub(crate) notes: NotesData,
    /// URLs `am start -a android.intent.action.VIEW -d URL` opened.
    pub(crate) opened_urls: Vec<String>,
    /// APKs `pm install` accepted.
    pub(crate) installs: Vec<String>,
    /// How many of the next `uiautomator dump`s fail.
    pub(crate) dumps_to_fail: u32,
    /// SurfaceFlinger's page-flip count and the screen it last showed: a frame is flipped
    /// whenever what is on screen differs from the last frame (`service call SurfaceFlinger
    /// 1013` reads the count).
    pub(crate) page_flips: u32,
    pub(crate) last_frame: String,
    /// `wm size WxH` / `wm density N` overrides (reported only).
    pub(crate) size_override: Option<(u32, u32)>,
    pub(crate) density_override: Option<u32>,
}

impl Device {
    pub(crate) fn new(config: FakeAndroidConfig) -> Self {
        let mut device = Self {
            properties: BTreeMap::new(),
            packages: Vec::new(),
            files: Files::default(),
            settings: Settings::default(),
            tasks: Vec::new(),
            next_task: 12,
            hash_seed: 0x5eed_1234,
            processes: BTreeMap::new(),
            next_pid: 4312,
            enabled_imes: vec![LATIN_IME.to_owned()],
            notes: NotesData::default(),
            opened_urls: Vec::new(),
            installs: Vec::new(),
            dumps_to_fail: 0,
            page_flips: 1,
            last_frame: String::new(),
            size_override: None,
            density_override: None,
            config,
        };
        device.properties = device.initial_properties();
        device.packages = device.initial_packages();
        device.settings = Settings {
            system: [
                ("accelerometer_rotation", "0"),
                ("user_rotation", "0"),
                ("screen_brightness", "102"),
                ("screen_off_timeout", "30000"),
                ("font_scale", "1.0"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            secure: [
                ("default_input_method", LATIN_IME),
                ("enabled_input_methods", LATIN_IME),
                ("android_id", "6f1c2a3b4d5e6f70"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            global: [
                ("adb_enabled", "1"),
                ("development_settings_enabled", "1"),
                ("stay_on_while_plugged_in", "0"),
                ("window_animation_scale", "1.0"),
                ("transition_animation_scale", "1.0"),
                ("animator_duration_scale", "1.0"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        };
        let home = device.new_record(Screen::Launcher);
        device.tasks.push(Task {
            id: 1,
            package: LAUNCHER.to_owned(),
            records: vec![home],
        });
        device.processes.insert(LAUNCHER.to_owned(), 1735);
        device.files.add_app_data(
            NOTES,
            &[
                ("databases/notes.db", b"SQLite format 3\0"),
                (
                    "shared_prefs/com.example.notes_preferences.xml",
                    b"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n    <boolean name=\"dark_mode\" value=\"false\" />\n</map>\n",
                ),
            ],
        );
        device
    }

    fn initial_properties(&self) -> BTreeMap<String, String> {
        let config = &self.config;
        let emulator = config.avd_name.is_some();
        let fingerprint = if emulator {
            "google/sdk_gphone_x86_64/generic_x86_64_arm64:11/RSR1.201013.001/6903271:user/release-keys"
        } else {
            "google/sunfish/sunfish:11/RQ3A.211001.001/7641976:user/release-keys"
        };
        let mut properties: BTreeMap<String, String> = [
            ("ro.build.version.sdk", "30"),
            ("ro.build.version.release", "11"),
            ("ro.build.version.codename", "REL"),
            ("ro.build.version.security_patch", "2021-10-05"),
            ("ro.build.type", "user"),
            ("ro.build.tags", "release-keys"),
            ("ro.build.fingerprint", fingerprint),
            ("ro.product.brand", "google"),
            (
                "ro.product.cpu.abi",
                if emulator { "x86_64" } else { "arm64-v8a" },
            ),
            (
                "ro.product.cpu.abilist",
                if emulator {
                    "x86_64,x86,arm64-v8a,armeabi-v7a,armeabi"
                } else {
                    "arm64-v8a,armeabi-v7a,armeabi"
                },
            ),
            ("ro.sf.lcd_density", "440"),
            ("ro.debuggable", "0"),
            ("ro.secure", "1"),
            ("ro.adb.secure", "0"),
            ("sys.boot_completed", "1"),
            ("dev.bootcomplete", "1"),
            ("init.svc.bootanim", "stopped"),
            ("service.bootanim.exit", "1"),
            ("persist.sys.locale", "en-US"),
            ("persist.sys.timezone", "GMT"),
            ("ro.boot.qemu.avd_name", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        properties.insert("ro.product.model".into(), config.model.clone());
        properties.insert(
            "ro.product.manufacturer".into(),
            config.manufacturer.clone(),
        );
        properties.insert("ro.product.name".into(), config.product.clone());
        properties.insert("ro.product.device".into(), config.device.clone());
        properties.insert("ro.serialno".into(), config.serial_number.clone());
        properties.insert("ro.boot.serialno".into(), config.serial_number.clone());
        if let Some(avd) = &config.avd_name {
            properties.insert("ro.boot.qemu.avd_name".into(), avd.clone());
            properties.insert("ro.boot.qemu".into(), "1".into());
            properties.insert("ro.kernel.qemu".into(), "1".into());
            properties.insert("ro.hardware".into(), "ranchu".into());
        } else {
            properties.insert("ro.hardware".into(), "sunfish".into());
        }
        properties
    }

    fn initial_packages(&self) -> Vec<Package> {
        let mut uid = 10100;
        let mut package = |name: &str, system: bool, launcher: Option<&'static str>| {
            uid += 1;
            let apk = if system {
                let dir = name.rsplit('.').next().unwrap_or(name);
                format!("/system/app/{dir}/{dir}.apk")
            } else {
                format!("/data/app/~~Qm9vdGVkIGFwcA==/{name}-YXBwIHBhdGg=/base.apk")
            };
            Package {
                name: name.to_owned(),
                system,
                debuggable: false,
                uid,
                apk,
                version_name: if system { "11".into() } else { "1.0".into() },
                version_code: if system { 30 } else { 1 },
                launcher_activity: launcher,
            }
        };
        let mut packages = vec![
            Package {
                uid: 1000,
                apk: "/system/framework/framework-res.apk".into(),
                ..package("android", true, None)
            },
            package("com.android.systemui", true, None),
            package("com.android.shell", true, None),
            package("com.android.providers.settings", true, None),
            package("com.android.inputmethod.latin", true, None),
            package(LAUNCHER, true, Some(".Launcher")),
            package(SETTINGS, true, Some(".Settings")),
            package(BROWSER, true, Some(".WebViewBrowserActivity")),
            Package {
                debuggable: self.config.notes_debuggable,
                ..package(NOTES, false, Some(".LoginActivity"))
            },
        ];
        if self.config.adb_keyboard {
            packages.push(package(ADB_KEYBOARD, false, None));
        }
        packages
    }

    pub(crate) fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|package| package.name == name)
    }

    /// A new identity hash, as `Integer.toHexString(System.identityHashCode(…))` prints.
    pub(crate) fn next_hash(&mut self) -> u32 {
        // A 32-bit LCG: stable across runs, varied enough to look like identity hashes.
        self.hash_seed = self
            .hash_seed
            .wrapping_mul(1_664_525)
            .wrapping_add(1_013_904_223);
        self.hash_seed >> 4
    }

    fn new_record(&mut self, screen: Screen) -> Record {
        Record {
            screen,
            record_hash: self.next_hash(),
            window_hash: self.next_hash(),
        }
    }

    pub(crate) fn front_task(&self) -> &Task {
        // The home task is never removed, so there is always one.
        let index = self.tasks.len().saturating_sub(1);
        &self.tasks[index]
    }

    pub(crate) fn front(&self) -> &Record {
        let task = self.front_task();
        &task.records[task.records.len().saturating_sub(1)]
    }

    fn front_screen_mut(&mut self) -> &mut Screen {
        let index = self.tasks.len().saturating_sub(1);
        let task = &mut self.tasks[index];
        let top = task.records.len().saturating_sub(1);
        &mut task.records[top].screen
    }

    /// The display's rotation: the rotation setting when the activity in front follows it.
    pub(crate) fn rotation(&self) -> u8 {
        if !self.front().screen.follows_rotation() {
            return 0;
        }
        let setting = |name: &str| self.settings.system.get(name).cloned().unwrap_or_default();
        if setting("accelerometer_rotation") == "1" {
            // Auto-rotate follows the sensor, and the phone lies upright on the desk.
            return 0;
        }
        setting("user_rotation").trim().parse::<u8>().unwrap_or(0) % 4
    }

    pub(crate) fn display(&self) -> Display {
        Display::rotated(self.rotation())
    }

    /// The tree of the window in front.
    pub(crate) fn tree(&self) -> Node {
        apps::tree(&self.front().screen, &self.display(), &self.notes)
    }

    fn ensure_process(&mut self, package: &str) {
        if !self.processes.contains_key(package) {
            self.next_pid += 17;
            self.processes.insert(package.to_owned(), self.next_pid);
        }
    }

    /// Brings `package`'s task to the front, or starts it at its launcher activity, as tapping
    /// its icon does. False when the package has no launcher activity.
    pub(crate) fn launch(&mut self, package: &str) -> bool {
        let Some(activity) = self.package(package).and_then(|p| p.launcher_activity) else {
            return false;
        };
        if package == LAUNCHER {
            self.go_home();
            return true;
        }
        if let Some(index) = self.tasks.iter().position(|task| task.package == package) {
            let task = self.tasks.remove(index);
            self.tasks.push(task);
            return true;
        }
        match Screen::for_component(package, activity) {
            Some(screen) => {
                self.start_new_task(package, screen);
                true
            }
            None => false,
        }
    }

    fn start_new_task(&mut self, package: &str, screen: Screen) {
        let screen = self.prepare(screen);
        let record = self.new_record(screen);
        let id = self.next_task;
        self.next_task += 1;
        self.ensure_process(package);
        self.tasks.push(Task {
            id,
            package: package.to_owned(),
            records: vec![record],
        });
    }

    /// Fills in what a fresh activity reads from its app's storage.
    fn prepare(&self, screen: Screen) -> Screen {
        match screen {
            Screen::Login(mut login) => {
                if let Some(user) = &self.notes.remembered {
                    login.username = TextField::with_text(user);
                    login.remember = true;
                }
                Screen::Login(login)
            }
            other => other,
        }
    }

    /// `am start -n package/class`, as the activity manager resolves it.
    pub(crate) fn start_component(&mut self, package: &str, class: &str) -> Option<StartResult> {
        self.package(package)?;
        let screen = Screen::for_component(package, class)?;
        if package == LAUNCHER {
            self.go_home();
            return Some(StartResult::BroughtToFront);
        }
        if let Some(index) = self.tasks.iter().position(|task| task.package == package) {
            let task = self.tasks.remove(index);
            let root_matches = task
                .records
                .first()
                .map(|record| record.screen.short_class())
                == Some(screen.short_class());
            self.tasks.push(task);
            if root_matches {
                return Some(StartResult::BroughtToFront);
            }
            let screen = self.prepare(screen);
            let record = self.new_record(screen);
            let last = self.tasks.len() - 1;
            self.tasks[last].records.push(record);
            return Some(StartResult::Started);
        }
        self.start_new_task(package, screen);
        Some(StartResult::Started)
    }

    /// `am start -a android.intent.action.VIEW -d URL` for a web URL: the browser shows it.
    pub(crate) fn open_url(&mut self, url: &str) {
        self.opened_urls.push(url.to_owned());
        let screen = Screen::Browser(Browser {
            url: TextField::with_text(url),
            loaded: url.to_owned(),
            focused: false,
        });
        if let Some(index) = self.tasks.iter().position(|task| task.package == BROWSER) {
            let task = self.tasks.remove(index);
            self.tasks.push(task);
            let record = self.new_record(screen);
            let last = self.tasks.len() - 1;
            self.tasks[last].records.push(record);
        } else {
            self.start_new_task(BROWSER, screen);
        }
    }

    pub(crate) fn go_home(&mut self) {
        if let Some(index) = self.tasks.iter().position(|task| task.package == LAUNCHER) {
            let home = self.tasks.remove(index);
            self.tasks.push(home);
        }
    }

    /// BACK: the activity in front finishes; a task left empty goes away.
    pub(crate) fn back(&mut self) {
        let index = self.tasks.len().saturating_sub(1);
        if self.tasks[index].package == LAUNCHER {
            return;
        }
        self.tasks[index].records.pop();
        if self.tasks[index].records.is_empty() {
            self.tasks.remove(index);
            // A task finished from its root returns to the home screen.
            self.go_home();
        }
    }

    /// `am force-stop`: the app's process and tasks go away.
    pub(crate) fn force_stop(&mut self, package: &str) {
        if package == LAUNCHER {
            // The home app restarts at once.
            return;
        }
        let was_front = self.front_task().package == package;
        self.tasks.retain(|task| task.package != package);
        self.processes.remove(package);
        if was_front {
            self.go_home();
        }
    }

    /// `pm clear`: the app's data goes, and its process with it.
    pub(crate) fn clear_data(&mut self, package: &str) {
        self.force_stop(package);
        if package == NOTES {
            self.notes = NotesData::default();
        }
    }

    pub(crate) fn uninstall(&mut self, package: &str) -> bool {
        match self.package(package) {
            Some(found) if !found.system => {
                self.clear_data(package);
                self.packages.retain(|p| p.name != package);
                if package == ADB_KEYBOARD {
                    self.enabled_imes.retain(|ime| ime != ADB_KEYBOARD_IME);
                    self.settings
                        .secure
                        .insert("default_input_method".into(), LATIN_IME.into());
                }
                true
            }
            _ => false,
        }
    }

    /// The IMEs installed (by id).
    pub(crate) fn installed_imes(&self) -> Vec<String> {
        let mut imes = vec![LATIN_IME.to_owned()];
        if self.package(ADB_KEYBOARD).is_some() {
            imes.push(ADB_KEYBOARD_IME.to_owned());
        }
        imes
    }

    pub(crate) fn current_ime(&self) -> String {
        self.settings
            .secure
            .get("default_input_method")
            .cloned()
            .unwrap_or_default()
    }

    /// The focused editable field of the front activity.
    fn focused_field(&mut self) -> Option<&mut TextField> {
        match self.front_screen_mut() {
            Screen::Login(login) => match login.focus {
                Some(Field::Username) => Some(&mut login.username),
                Some(Field::Password) => Some(&mut login.password),
                _ => None,
            },
            Screen::Browser(browser) if browser.focused => Some(&mut browser.url),
            _ => None,
        }
    }

    /// Types `text` into the focused field (nothing happens without one).
    pub(crate) fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '\n' => self.key(keys::ENTER),
                '\t' => self.key(keys::TAB),
                _ => {
                    if let Some(field) = self.focused_field() {
                        field.insert(&c.to_string());
                    }
                }
            }
        }
    }

    /// Commits `text` at the cursor, as an input method does (ADBKeyboard's broadcasts).
    pub(crate) fn commit_text(&mut self, text: &str) {
        if let Some(field) = self.focused_field() {
            field.insert(text);
        }
    }

    pub(crate) fn clear_field(&mut self) {
        if let Some(field) = self.focused_field() {
            field.clear();
        }
    }

    /// One key press (down and up).
    pub(crate) fn key(&mut self, code: u32) {
        match code {
            keys::HOME => self.go_home(),
            keys::BACK => self.back(),
            keys::ENTER => self.editor_action(),
            keys::TAB => self.focus_next(),
            keys::DEL => {
                if let Some(field) = self.focused_field() {
                    field.delete_back();
                }
            }
            keys::FORWARD_DEL => {
                if let Some(field) = self.focused_field() {
                    field.delete_forward();
                }
            }
            keys::MOVE_HOME => {
                if let Some(field) = self.focused_field() {
                    field.move_to(0);
                }
            }
            keys::MOVE_END => {
                if let Some(field) = self.focused_field() {
                    let end = field.len();
                    field.move_to(end);
                }
            }
            keys::DPAD_LEFT => {
                if let Some(field) = self.focused_field() {
                    let cursor = field.cursor.saturating_sub(1);
                    field.move_to(cursor);
                }
            }
            keys::DPAD_RIGHT => {
                if let Some(field) = self.focused_field() {
                    let cursor = field.cursor + 1;
                    field.move_to(cursor);
                }
            }
            _ => {
                if let Some(c) = key_char(code)
                    && let Some(field) = self.focused_field()
                {
                    field.insert(&c.to_string());
                }
            }
        }
    }

    /// Whether a long press repeats `code` (the injected repeat is a second key down).
    pub(crate) fn key_repeats(code: u32) -> bool {
        matches!(code, keys::DEL | keys::FORWARD_DEL) || key_char(code).is_some()
    }

    fn focus_next(&mut self) {
        if let Screen::Login(login) = self.front_screen_mut() {
            login.focus = match login.focus {
                Some(Field::Username) => Some(Field::Password),
                other => other,
            };
            if let Some(Field::Password) = login.focus {
                login.password.move_to(login.password.len());
            }
        }
    }

    /// ENTER or an IME action on the focused field: next field, sign in, or load the URL.
    pub(crate) fn editor_action(&mut self) {
        match self.front_screen_mut() {
            Screen::Login(login) => match login.focus {
                Some(Field::Username) => {
                    login.focus = Some(Field::Password);
                    let end = login.password.len();
                    login.password.move_to(end);
                }
                Some(Field::Password) => self.sign_in(),
                _ => {}
            },
            Screen::Browser(browser) if browser.focused => {
                browser.loaded = browser.url.text.clone();
                browser.focused = false;
            }
            _ => {}
        }
    }

    fn sign_in(&mut self) {
        let Screen::Login(login) = self.front_screen_mut() else {
            return;
        };
        if login.username.text.is_empty() || login.password.text.is_empty() {
            login.error = true;
            return;
        }
        login.error = false;
        let remembered = login.remember.then(|| login.username.text.clone());
        self.notes.remembered = remembered;
        let record = self.new_record(Screen::List(NoteList::default()));
        let last = self.tasks.len() - 1;
        self.tasks[last].records.push(record);
    }

    /// The action of the node a tap at (x, y) reaches, if any.
    fn action_at(&self, x: i32, y: i32) -> Option<Action> {
        self.tree().hit(x, y).and_then(|node| node.action)
    }

    /// Whether (x, y) lies on the navigation bar; which button it presses.
    fn nav_button(&self, x: i32, y: i32) -> Option<u32> {
        let display = self.display();
        let bar = display.nav_bar();
        if !bar.contains(x, y) {
            return None;
        }
        // Back, home and recents split the bar along its length.
        let (along, length) = if bar.width() >= bar.height() {
            (x - bar.left, bar.width())
        } else {
            (bar.bottom - y, bar.height())
        };
        if along * 8 < length * 3 {
            Some(keys::BACK)
        } else if along * 8 < length * 5 {
            Some(keys::HOME)
        } else {
            None
        }
    }

    pub(crate) fn tap(&mut self, x: i32, y: i32) {
        if self.display().nav_bar().contains(x, y) {
            if let Some(code) = self.nav_button(x, y) {
                self.key(code);
            }
            return;
        }
        if self.display().status_bar().contains(x, y) {
            return;
        }
        let Some(action) = self.action_at(x, y) else {
            return;
        };
        match action {
            Action::Launch(package) => {
                self.launch(package);
            }
            Action::Field(field) => match self.front_screen_mut() {
                Screen::Login(login) => {
                    login.focus = Some(field);
                    let target = match field {
                        Field::Password => &mut login.password,
                        _ => &mut login.username,
                    };
                    let end = target.len();
                    target.move_to(end);
                }
                Screen::Browser(browser) => {
                    browser.focused = true;
                    let end = browser.url.len();
                    browser.url.move_to(end);
                }
                _ => {}
            },
            Action::RememberMe => {
                if let Screen::Login(login) = self.front_screen_mut() {
                    login.remember = !login.remember;
                }
            }
            Action::SignIn => self.sign_in(),
            Action::DarkMode => {
                if let Screen::List(list) = self.front_screen_mut() {
                    list.dark_mode = !list.dark_mode;
                }
            }
            Action::AddNote => {
                let title = format!("Note {}", self.notes.titles.len() + 1);
                self.notes.titles.push(title);
                let display = self.display();
                let max = apps::notes_max_scroll(&display, self.notes.titles.len());
                if let Screen::List(list) = self.front_screen_mut() {
                    list.scroll = max;
                }
            }
            Action::Note(_) | Action::SettingsRow => {}
        }
    }

    pub(crate) fn long_press(&mut self, x: i32, y: i32) {
        if let Some(Action::Note(position)) = self.action_at(x, y)
            && let Screen::List(list) = self.front_screen_mut()
        {
            if let Some(index) = list.selected.iter().position(|p| *p == position) {
                list.selected.remove(index);
            } else {
                list.selected.push(position);
            }
        }
    }

    /// A swipe: a long press when the finger stays put (within the 8 dp touch slop) for the
    /// long-press timeout, a tap when it stays put briefly, else a scroll of whatever
    /// scrollable view it started on, by the distance the finger moved.
    pub(crate) fn swipe(&mut self, from: (i32, i32), to: (i32, i32), duration_ms: i64) {
        let slop = apps::dp(8);
        let moved = (to.0 - from.0).abs().max((to.1 - from.1).abs());
        if moved <= slop {
            if duration_ms >= 500 {
                self.long_press(from.0, from.1);
            } else {
                self.tap(from.0, from.1);
            }
            return;
        }
        let Some(scrolled) = self
            .tree()
            .scrollable_at(from.0, from.1)
            .map(|node| node.resource_id.clone())
        else {
            return;
        };
        let delta = from.1 - to.1;
        let display = self.display();
        let notes = self.notes.titles.len();
        match self.front_screen_mut() {
            Screen::List(list) if scrolled.ends_with(":id/notes") => {
                let max = apps::notes_max_scroll(&display, notes);
                list.scroll = (list.scroll + delta).clamp(0, max);
            }
            Screen::Settings { scroll } => {
                let max = apps::settings_max_scroll(&display);
                *scroll = (*scroll + delta).clamp(0, max);
            }
            _ => {}
        }
    }

    /// Drag and drop: on the notes list, the note picked up moves to where it is dropped.
    pub(crate) fn drag_and_drop(&mut self, from: (i32, i32), to: (i32, i32)) {
        let Some(Action::Note(source)) = self.action_at(from.0, from.1) else {
            return;
        };
        let display = self.display();
        let viewport = apps::notes_viewport(&display);
        let Screen::List(list) = self.front_screen_mut() else {
            return;
        };
        let y = to.1.clamp(viewport.top, viewport.bottom - 1);
        let target = usize::try_from((y - viewport.top + list.scroll) / apps::NOTE_ROW)
            .unwrap_or(0)
            .min(self.notes.titles.len().saturating_sub(1));
        if source < self.notes.titles.len() {
            let title = self.notes.titles.remove(source);
            self.notes.titles.insert(target, title);
        }
    }
}

/// The character a key types on the virtual keyboard, for the keys the model knows.
fn key_char(code: u32) -> Option<char> {
    match code {
        7..=16 => char::from_digit(code - 7, 10),
        29..=54 => char::from_u32(u32::from(b'a') + code - 29),
        keys::SPACE => Some(' '),
        55 => Some(','),
        56 => Some('.'),
        69 => Some('-'),
        70 => Some('='),
        71 => Some('['),
        72 => Some(']'),
        73 => Some('\\'),
        74 => Some(';'),
        75 => Some('\''),
        76 => Some('/'),
        77 => Some('@'),
        81 => Some('+'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalize_and_alias_shared_storage() {
        assert_eq!(normalize("/sdcard/a/../b", "/"), "/storage/emulated/0/b");
        assert_eq!(normalize("x", "/data/local/tmp"), "/data/local/tmp/x");
        assert_eq!(normalize("/sdcard", "/"), "/storage/emulated/0");
        assert_eq!(normalize("//a//b/.", "/"), "/a/b");
    }

    #[test]
    fn writes_need_a_writable_existing_directory() {
        let mut files = Files::default();
        assert_eq!(
            files.write("/system/x", Vec::new(), 0o644, 0, false),
            Err(FsError::ReadOnly)
        );
        assert_eq!(
            files.write("/data/local/tmp/a/b", Vec::new(), 0o644, 0, false),
            Err(FsError::NotFound)
        );
        files.make_parents("/data/local/tmp/a/b").expect("mkdirs");
        files
            .write("/data/local/tmp/a/b", b"x".to_vec(), 0o644, 0, true)
            .expect("write");
        assert_eq!(files.pushed("/data/local/tmp/a/b"), Some(b"x".to_vec()));
        let names: Vec<String> = files
            .list("/data/local/tmp")
            .expect("list")
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names, ["a"]);
    }

    #[test]
    fn the_sign_in_flow_reaches_the_list_and_back_returns() {
        let mut device = Device::new(FakeAndroidConfig::default());
        assert!(device.launch(NOTES));
        assert_eq!(device.front().screen.name(), "notes-login");
        device.tap(540, 350);
        device.type_text("ann");
        device.key(keys::ENTER);
        device.type_text("pw");
        device.key(keys::ENTER);
        assert_eq!(device.front().screen.name(), "notes-list");
        device.back();
        assert_eq!(device.front().screen.name(), "notes-login");
        device.key(keys::HOME);
        assert_eq!(device.front().screen.name(), "launcher");
        assert!(device.launch(NOTES));
        assert_eq!(device.front().screen.name(), "notes-login");
    }
}
