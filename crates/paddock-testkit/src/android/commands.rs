//! The Android commands of the fake device, answering in the formats of Android 11's own:
//! `getprop`, `settings`, `wm`, `pm`, `am`, `input`, `ime`, `uiautomator`, `screencap`,
//! `dumpsys`, `monkey`, `logcat`, `cmd` and, under `run-as`, `sqlite3`.

use std::fmt::Write as _;

use base64::Engine as _;

use super::apps::{ADB_KEYBOARD, ADB_KEYBOARD_IME, LATIN_IME, PANEL_HEIGHT, PANEL_WIDTH};
use super::device::{self, Device, StartResult, keys};
use super::render;
use super::shell::{Input, Output, Session, file_exists};
use super::ui::{self, Node};

/// Runs `name` if it is an Android command; `None` when the device has no such command.
pub(crate) fn run(
    device: &mut Device,
    session: &Session,
    name: &str,
    args: &[String],
    input: &mut dyn Input,
) -> Option<Output> {
    Some(match name {
        "getprop" => getprop(device, args),
        "setprop" => setprop(device, args),
        "settings" => settings(device, args),
        "wm" => wm(device, args),
        "pm" => pm(device, session, args, input),
        "am" => am(device, args),
        "input" => input_command(device, args),
        "ime" => ime(device, args),
        "uiautomator" => uiautomator(device, session, args),
        "screencap" => screencap(device, session, args),
        "dumpsys" => dumpsys(device, args),
        "monkey" => monkey(device, args),
        "logcat" => logcat(args),
        "sqlite3" if session.run_as.is_some() => sqlite3(device, args),
        "cmd" => {
            let Some(service) = args.first() else {
                return Some(Output::ok(
                    "cmd: No service specified; use -l to list all running services. Use -w to start and wait for a service.\n",
                ));
            };
            let rest = &args[1..];
            match service.as_str() {
                "package" => pm(device, session, rest, input),
                "activity" => am(device, rest),
                "window" => wm(device, rest),
                "input_method" => ime(device, rest),
                "settings" => settings(device, rest),
                "-l" => Output::ok(
                    "Currently running services:\n  activity\n  input_method\n  package\n  settings\n  window\n",
                ),
                other => Output::fail(20, format!("cmd: Can't find service: {other}\n")),
            }
        }
        _ => return None,
    })
}

fn lines(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().fold(String::new(), |mut text, line| {
        text.push_str(&line);
        text.push('\n');
        text
    })
}

/// toybox `getprop`: one property, or all as `[name]: [value]` lines sorted by name.
fn getprop(device: &Device, args: &[String]) -> Output {
    match args {
        [] => Output::ok(lines(
            device
                .properties
                .iter()
                .map(|(name, value)| format!("[{name}]: [{value}]")),
        )),
        [name, rest @ ..] => {
            let value = device
                .properties
                .get(name)
                .filter(|value| !value.is_empty())
                .cloned()
                .or_else(|| rest.first().cloned())
                .unwrap_or_default();
            Output::ok(format!("{value}\n"))
        }
    }
}

fn setprop(device: &mut Device, args: &[String]) -> Output {
    let [name, value] = args else {
        return Output::fail(
            1,
            "usage: setprop NAME VALUE\n\nSets an Android system property.\n",
        );
    };
    // The shell user may set debug and similar properties, never read-only ones.
    if name.starts_with("ro.") || name.starts_with("sys.") || name.starts_with("persist.sys.") {
        return Output::fail(
            1,
            format!("Failed to set property '{name}' to '{value}'.\nSee dmesg for error reason.\n"),
        );
    }
    device.properties.insert(name.clone(), value.clone());
    Output::default()
}

/// `settings [--user N] get|put|delete|list NAMESPACE …`.
fn settings(device: &mut Device, args: &[String]) -> Output {
    let mut args: Vec<&String> = args.iter().collect();
    if args.first().map(|a| a.as_str()) == Some("--user") {
        args.drain(..2.min(args.len()));
    }
    let usage = "Settings provider (settings) commands:\n  help\n      Print this help text.\n  get [--user <USER_ID> | current] NAMESPACE KEY\n      Retrieve the current value of KEY.\n  put [--user <USER_ID> | current] NAMESPACE KEY VALUE [TAG] [default]\n      Change the contents of KEY to VALUE.\n  delete [--user <USER_ID> | current] NAMESPACE KEY\n      Delete the entry for KEY.\n  list [--user <USER_ID> | current] NAMESPACE\n      Print all defined keys.\n\nNAMESPACE is one of {system, secure, global}, case-insensitive\n";
    let (Some(verb), Some(namespace)) = (args.first(), args.get(1)) else {
        return Output::fail(255, usage);
    };
    let namespace = namespace.to_lowercase();
    let Some(table) = device.settings.table(&namespace) else {
        return Output::fail(255, format!("Invalid namespace '{namespace}'\n{usage}"));
    };
    match (verb.as_str(), args.get(2), args.get(3)) {
        ("get", Some(key), _) => Output::ok(format!(
            "{}\n",
            table.get(key.as_str()).map_or("null", String::as_str)
        )),
        ("put", Some(key), Some(value)) => {
            table.insert((*key).clone(), (*value).clone());
            Output::default()
        }
        ("delete", Some(key), _) => {
            let deleted = usize::from(table.remove(key.as_str()).is_some());
            Output::ok(format!("Deleted {deleted} rows\n"))
        }
        ("list", _, _) => Output::ok(lines(
            table.iter().map(|(key, value)| format!("{key}={value}")),
        )),
        _ => Output::fail(255, usage),
    }
}

/// `wm size` and `wm density` (overrides are remembered and reported, not applied).
fn wm(device: &mut Device, args: &[String]) -> Output {
    match (
        args.first().map(String::as_str),
        args.get(1).map(String::as_str),
    ) {
        (Some("size"), None) => {
            let mut text = format!("Physical size: {PANEL_WIDTH}x{PANEL_HEIGHT}\n");
            if let Some((width, height)) = device.size_override {
                let _ = writeln!(text, "Override size: {width}x{height}");
            }
            Output::ok(text)
        }
        (Some("size"), Some("reset")) => {
            device.size_override = None;
            Output::default()
        }
        (Some("size"), Some(size)) => {
            let parsed = size
                .split_once('x')
                .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
            match parsed {
                Some(size) => {
                    device.size_override = Some(size);
                    Output::default()
                }
                None => Output::fail(255, format!("Error: bad size {size}\n")),
            }
        }
        (Some("density"), None) => {
            let mut text = "Physical density: 440\n".to_owned();
            if let Some(density) = device.density_override {
                let _ = writeln!(text, "Override density: {density}");
            }
            Output::ok(text)
        }
        (Some("density"), Some("reset")) => {
            device.density_override = None;
            Output::default()
        }
        (Some("density"), Some(density)) => match density.parse() {
            Ok(density) => {
                device.density_override = Some(density);
                Output::default()
            }
            Err(_) => Output::fail(255, format!("Error: bad number {density}\n")),
        },
        (Some(other), _) => Output::fail(255, format!("Unknown command: {other}\n")),
        (None, _) => Output::ok(
            "Window manager (window) commands:\n  help\n      Print this help text.\n  size [reset|WxH|WdpxHdp] [-d DISPLAY_ID]\n    Return or override display size.\n    width and height in pixels unless suffixed with 'dp'.\n  density [reset|DENSITY] [-d DISPLAY_ID]\n    Return or override display density.\n",
        ),
    }
}

/// `pm list packages`, `path`, `install`, `uninstall`, `clear`, `grant`/`revoke`.
fn pm(device: &mut Device, session: &Session, args: &[String], input: &mut dyn Input) -> Output {
    let Some(verb) = args.first() else {
        return Output::ok(
            "Package manager (package) commands:\n  help\n    Print this help text.\n",
        );
    };
    let rest = &args[1..];
    match verb.as_str() {
        "list" => match rest.first().map(String::as_str) {
            Some("packages") => list_packages(device, &rest[1..]),
            Some(other) => Output::fail(255, format!("Error: unknown list type '{other}'\n")),
            None => Output::fail(255, "Error: didn't specify type of data to list\n"),
        },
        "path" => match rest.iter().find(|arg| !arg.starts_with('-')) {
            Some(name) => match device.package(name) {
                Some(package) => Output::ok(format!("package:{}\n", package.apk)),
                None => Output::default().with_code(1),
            },
            None => Output::fail(255, "Error: no package specified\n"),
        },
        "install" => install(device, session, rest, input),
        "uninstall" => {
            let Some(name) = rest.iter().find(|arg| !arg.starts_with('-')) else {
                return Output::fail(255, "Error: package name not specified\n");
            };
            if device.uninstall(name) {
                Output::ok("Success\n")
            } else {
                Output::ok("Failure [DELETE_FAILED_INTERNAL_ERROR]\n").with_code(1)
            }
        }
        "clear" => {
            let Some(name) = rest.iter().find(|arg| !arg.starts_with('-')) else {
                return Output::fail(255, "Error: no package specified\n");
            };
            if device.package(name).is_some() {
                device.clear_data(name);
                Output::ok("Success\n")
            } else {
                Output::ok("Failed\n").with_code(1)
            }
        }
        "grant" | "revoke" => match rest.first() {
            Some(name) if device.package(name).is_some() => Output::default(),
            Some(name) => Output::fail(
                255,
                format!(
                    "Exception occurred while executing '{verb}':\njava.lang.IllegalArgumentException: Unknown package: {name}\n"
                ),
            ),
            None => Output::fail(255, "Error: no package specified\n"),
        },
        other => Output::fail(255, format!("Unknown command: {other}\n")),
    }
}

fn list_packages(device: &Device, args: &[String]) -> Output {
    let mut third_party = false;
    let mut system = false;
    let mut paths = false;
    let mut uids = false;
    let mut filter: Option<&str> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-3" => third_party = true,
            "-s" => system = true,
            "-f" => paths = true,
            "-U" => uids = true,
            "--user" => {
                iter.next();
            }
            flag if flag.starts_with('-') => {}
            name => filter = Some(name),
        }
    }
    let listed = device
        .packages
        .iter()
        .filter(|p| if p.system { !third_party } else { !system })
        .filter(|p| filter.is_none_or(|f| p.name.contains(f)))
        .map(|p| {
            let mut line = String::from("package:");
            if paths {
                let _ = write!(line, "{}=", p.apk);
            }
            line.push_str(&p.name);
            if uids {
                let _ = write!(line, " uid:{}", p.uid);
            }
            line
        });
    Output::ok(lines(listed))
}

fn install(
    device: &mut Device,
    session: &Session,
    args: &[String],
    input: &mut dyn Input,
) -> Output {
    let mut size: Option<usize> = None;
    let mut path: Option<&String> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-S" => size = iter.next().and_then(|s| s.parse().ok()),
            "-i" | "--user" | "--install-location" | "-p" | "--originating-uri" | "--referrer"
            | "--abi" => {
                iter.next();
            }
            flag if flag.starts_with('-') && flag != "-" => {}
            _ => path = Some(arg),
        }
    }
    // Streamed installs (`adb install` through `cmd package install -S SIZE`) read the APK
    // from stdin.
    if let Some(size) = size {
        let received = input.read_up_to(size);
        if received.len() < size {
            return Output::ok(format!(
                "Failure [INSTALL_FAILED_INTERNAL_ERROR: Failed to write 0 bytes at offset {}]\n",
                received.len()
            ))
            .with_code(1);
        }
        device.installs.push("-".to_owned());
        return Output::ok("Success\n");
    }
    let Some(path) = path else {
        return Output::fail(255, "Error: APK content must be streamed\n");
    };
    if !file_exists(device, session, path) {
        let mut stderr = format!("Error: Unable to open file: {path}\n");
        if !path.starts_with("/data/local/tmp/") {
            stderr.push_str("Consider using a file under /data/local/tmp/\n");
        }
        let _ = write!(
            stderr,
            "Error: Can't open file: {path}\nException occurred while executing 'install':\njava.lang.IllegalArgumentException: Error: Can't open file: {path}\n\tat com.android.server.pm.PackageManagerShellCommand.setParamsSize(PackageManagerShellCommand.java:550)\n\tat com.android.server.pm.PackageManagerShellCommand.doRunInstall(PackageManagerShellCommand.java:1301)\n\tat com.android.server.pm.PackageManagerShellCommand.runInstall(PackageManagerShellCommand.java:1267)\n\tat com.android.server.pm.PackageManagerShellCommand.onCommand(PackageManagerShellCommand.java:190)\n\tat android.os.BasicShellCommandHandler.exec(BasicShellCommandHandler.java:98)\n\tat android.os.ShellCommand.exec(ShellCommand.java:44)\n\tat com.android.server.pm.PackageManagerService.onShellCommand(PackageManagerService.java:23456)\n\tat android.os.Binder.shellCommand(Binder.java:929)\n\tat android.os.Binder.onTransact(Binder.java:813)\n"
        );
        return Output::fail(255, stderr);
    }
    device.installs.push(device::normalize(path, &session.cwd));
    Output::ok("Success\n")
}

/// An intent as `am` builds it from its arguments.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Intent {
    action: Option<String>,
    data: Option<String>,
    mime_type: Option<String>,
    categories: Vec<String>,
    component: Option<(String, String)>,
    package: Option<String>,
    flags: u32,
    /// String extras (`--es`/`-e`), integers as their text (`--ei`), int arrays (`--eia`).
    extras: Vec<(String, String)>,
}

/// `Uri.toSafeString()`: web URLs lose everything after the authority.
fn safe_uri(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return uri.to_owned();
    };
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" | "ftp" | "rtsp" => {
            let authority = rest
                .trim_start_matches("//")
                .split(['/', '?', '#'])
                .next()
                .unwrap_or("");
            // The user info is dropped; host and port stay.
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}/...")
        }
        "tel" | "sip" | "sms" | "smsto" | "mailto" | "nfc" => {
            format!("{scheme}:{}", "x".repeat(rest.chars().count()))
        }
        _ => uri.to_owned(),
    }
}

impl Intent {
    /// `Intent.toString()` (secure form), as `am` prints it.
    fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(action) = &self.action {
            parts.push(format!("act={action}"));
        }
        if !self.categories.is_empty() {
            parts.push(format!("cat=[{}]", self.categories.join(",")));
        }
        if let Some(data) = &self.data {
            parts.push(format!("dat={}", safe_uri(data)));
        }
        if let Some(mime_type) = &self.mime_type {
            parts.push(format!("typ={mime_type}"));
        }
        if self.flags != 0 {
            parts.push(format!("flg={:#x}", self.flags));
        }
        if let Some(package) = &self.package {
            parts.push(format!("pkg={package}"));
        }
        if let Some((package, class)) = &self.component {
            parts.push(format!("cmp={}", short_component(package, class)));
        }
        if !self.extras.is_empty() {
            parts.push("(has extras)".to_owned());
        }
        format!("Intent {{ {} }}", parts.join(" "))
    }

    fn extra(&self, key: &str) -> Option<&str> {
        self.extras
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }
}

/// `ComponentName.flattenToShortString()`.
fn short_component(package: &str, class: &str) -> String {
    let short = match class.strip_prefix(package) {
        Some(rest) if rest.starts_with('.') => rest,
        _ => class,
    };
    format!("{package}/{short}")
}

/// Parses `pkg/.Class` or `pkg/pkg.Class`.
fn parse_component(text: &str) -> Option<(String, String)> {
    let (package, class) = text.split_once('/')?;
    let class = if class.starts_with('.') {
        format!("{package}{class}")
    } else {
        class.to_owned()
    };
    Some((package.to_owned(), class))
}

/// Reads `am`'s intent arguments; what is left over (options `am` itself takes) is skipped.
fn parse_intent(args: &[String]) -> Result<Intent, String> {
    let mut intent = Intent::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || {
            iter.next()
                .cloned()
                .ok_or_else(|| format!("Argument expected after \"{arg}\""))
        };
        match arg.as_str() {
            "-a" => intent.action = Some(value()?),
            "-d" => intent.data = Some(value()?),
            "-t" => intent.mime_type = Some(value()?),
            "-c" => intent.categories.push(value()?),
            "-n" => {
                let text = value()?;
                intent.component = Some(
                    parse_component(&text).ok_or_else(|| format!("Bad component name: {text}"))?,
                );
            }
            "-p" => intent.package = Some(value()?),
            "-f" => {
                let text = value()?;
                let parsed = match text.strip_prefix("0x") {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => text.parse().ok(),
                };
                intent.flags |= parsed.ok_or_else(|| format!("Invalid flags: {text}"))?;
            }
            "-e" | "--es" | "--ei" | "--ez" | "--el" | "--ef" | "--eu" | "--eia" | "--esa"
            | "--ela" | "--efa" => {
                let key = value()?;
                let text = value()?;
                intent.extras.push((key, text));
            }
            "--esn" => {
                let key = value()?;
                intent.extras.push((key, String::new()));
            }
            "--user"
            | "--receiver-permission"
            | "--windowingMode"
            | "--activityType"
            | "--display"
            | "-P"
            | "--start-profiler"
            | "--sampling"
            | "--task" => {
                value()?;
            }
            flag if flag.starts_with('-') => {}
            uri => intent.data = Some(uri.to_owned()),
        }
    }
    Ok(intent)
}

/// `am start`, `force-stop`, `kill`, `broadcast`, `get-current-user`.
fn am(device: &mut Device, args: &[String]) -> Output {
    let Some(verb) = args.first() else {
        return Output::ok(
            "Activity manager (activity) commands:\n  help\n      Print this help text.\n",
        );
    };
    let rest = &args[1..];
    match verb.as_str() {
        "start" | "start-activity" => start_activity(device, rest),
        "force-stop" => match rest.iter().find(|arg| !arg.starts_with('-')) {
            Some(package) => {
                device.force_stop(package);
                Output::default()
            }
            None => Output::fail(255, "Error: Argument expected after \"force-stop\"\n"),
        },
        "kill" => {
            if let Some(package) = rest.iter().find(|arg| !arg.starts_with('-'))
                && device.front_task().package != *package
            {
                // Only a background process can be killed this way.
                device.processes.remove(package);
            }
            Output::default()
        }
        "broadcast" => broadcast(device, rest),
        "get-current-user" => Output::ok("0\n"),
        other => Output::fail(255, format!("Unknown command: {other}\n")),
    }
}

fn start_activity(device: &mut Device, args: &[String]) -> Output {
    let mut intent = match parse_intent(args) {
        Ok(intent) => intent,
        Err(message) => return Output::fail(255, format!("Error: {message}\n")),
    };
    let stdout = format!("Starting: {}\n", intent.describe());
    // `am` adds FLAG_ACTIVITY_NEW_TASK after it printed the intent.
    intent.flags |= 0x1000_0000;
    let unresolved = |intent: &Intent, stdout: String| Output {
        stdout: stdout.into_bytes(),
        stderr: format!(
            "Error: Activity not started, unable to resolve {}\n",
            intent.describe()
        )
        .into_bytes(),
        code: 0,
    };
    if let Some((package, class)) = &intent.component {
        return match device.start_component(package, class) {
            Some(StartResult::Started) => Output::ok(stdout),
            Some(StartResult::BroughtToFront) => Output {
                stdout: stdout.into_bytes(),
                stderr: b"Warning: Activity not started, its current task has been brought to the front\n".to_vec(),
                code: 0,
            },
            None if device.package(package).is_some() => Output {
                stdout: stdout.into_bytes(),
                stderr: format!(
                    "Error type 3\nError: Activity class {{{package}/{class}}} does not exist.\n"
                )
                .into_bytes(),
                code: 0,
            },
            None => unresolved(&intent, stdout),
        };
    }
    let web = intent.data.as_deref().is_some_and(|data| {
        let lower = data.to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://")
    });
    match (intent.action.as_deref(), &intent.data) {
        (Some("android.intent.action.VIEW"), Some(url)) if web => {
            let url = url.clone();
            device.open_url(&url);
            Output::ok(stdout)
        }
        (Some("android.intent.action.MAIN"), None)
            if intent
                .categories
                .iter()
                .any(|c| c == "android.intent.category.HOME") =>
        {
            device.go_home();
            Output::ok(stdout)
        }
        (Some("android.intent.action.MAIN"), None) if intent.package.is_some() => {
            let package = intent.package.clone().unwrap_or_default();
            if device.launch(&package) {
                Output::ok(stdout)
            } else {
                unresolved(&intent, stdout)
            }
        }
        _ => unresolved(&intent, stdout),
    }
}

/// `am broadcast`: ADBKeyboard's receivers act when it is the current input method.
fn broadcast(device: &mut Device, args: &[String]) -> Output {
    let mut intent = match parse_intent(args) {
        Ok(intent) => intent,
        Err(message) => return Output::fail(255, format!("Error: {message}\n")),
    };
    // FLAG_RECEIVER_FROM_SHELL.
    intent.flags |= 0x0040_0000;
    let stdout = format!(
        "Broadcasting: {}\nBroadcast completed: result=0\n",
        intent.describe()
    );
    let keyboard_active =
        device.package(ADB_KEYBOARD).is_some() && device.current_ime() == ADB_KEYBOARD_IME;
    if keyboard_active {
        match intent.action.as_deref() {
            Some("ADB_INPUT_TEXT") => {
                if let Some(text) = intent.extra("msg") {
                    let text = text.to_owned();
                    device.commit_text(&text);
                }
            }
            Some("ADB_INPUT_B64") => {
                let decoded = intent
                    .extra("msg")
                    .and_then(|msg| base64::engine::general_purpose::STANDARD.decode(msg).ok())
                    .and_then(|bytes| String::from_utf8(bytes).ok());
                if let Some(text) = decoded {
                    device.commit_text(&text);
                }
            }
            Some("ADB_INPUT_CHARS") => {
                let text: String = intent
                    .extra("chars")
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|code| code.trim().parse::<u32>().ok())
                    .filter_map(char::from_u32)
                    .collect();
                device.commit_text(&text);
            }
            Some("ADB_INPUT_CODE") => {
                if let Some(code) = intent.extra("code").and_then(|c| c.parse().ok()) {
                    device.key(code);
                }
            }
            Some("ADB_EDITOR_CODE") => device.editor_action(),
            Some("ADB_CLEAR_TEXT") => device.clear_field(),
            _ => {}
        }
    }
    Output::ok(stdout)
}

/// Android 11's `input` usage, printed on errors. The sources come in `HashMap` order.
fn input_usage() -> String {
    let mut text = String::from(
        "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n\nThe sources are: \n",
    );
    for source in INPUT_SOURCES {
        let _ = writeln!(text, "      {source}");
    }
    text.push_str(
        "\n-d: specify the display ID.\n      (Default: -1 for key event, 0 for motion event if not specified.)\nThe commands and default sources are:\n      text <string> (Default: touchscreen)\n      keyevent [--longpress] <key code number or name> ... (Default: keyboard)\n      tap <x> <y> (Default: touchscreen)\n      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n      press (Default: trackball)\n      roll <dx> <dy> (Default: trackball)\n      motionevent <DOWN|UP|MOVE> <x> <y> (Default: touchscreen)\n",
    );
    text
}

/// The iteration order of `input`'s `SOURCES` map (a `HashMap` of these ten names).
const INPUT_SOURCES: [&str; 10] = [
    "dpad",
    "keyboard",
    "mouse",
    "touchpad",
    "gamepad",
    "touchnavigation",
    "joystick",
    "touchscreen",
    "stylus",
    "trackball",
];

/// How `input` fails on a bad argument (`BaseCommand` catches the IllegalArgumentException).
fn input_error(message: &str) -> Output {
    Output::fail(0, format!("{}\nError: {message}\n", input_usage()))
}

/// `KeyEvent.keyCodeFromString`: a number in range, or a name with or without `KEYCODE_`.
pub(crate) fn key_code(name: &str) -> u32 {
    if let Ok(number) = name.parse::<u32>() {
        return if number <= 288 { number } else { 0 };
    }
    let name = name.strip_prefix("KEYCODE_").unwrap_or(name);
    if let Some(letter) = name.strip_prefix("").filter(|n| n.len() == 1) {
        let c = letter.chars().next().unwrap_or(' ');
        if c.is_ascii_uppercase() {
            return 29 + (c as u32 - 'A' as u32);
        }
        if c.is_ascii_digit() {
            return 7 + (c as u32 - '0' as u32);
        }
    }
    KEY_NAMES
        .iter()
        .find(|(label, _)| *label == name)
        .map_or(0, |(_, code)| *code)
}

/// Key names (besides letters and digits) and their codes, from `KeyEvent`.
const KEY_NAMES: [(&str, u32); 62] = [
    ("UNKNOWN", 0),
    ("SOFT_LEFT", 1),
    ("SOFT_RIGHT", 2),
    ("HOME", 3),
    ("BACK", 4),
    ("CALL", 5),
    ("ENDCALL", 6),
    ("STAR", 17),
    ("POUND", 18),
    ("DPAD_UP", 19),
    ("DPAD_DOWN", 20),
    ("DPAD_LEFT", 21),
    ("DPAD_RIGHT", 22),
    ("DPAD_CENTER", 23),
    ("VOLUME_UP", 24),
    ("VOLUME_DOWN", 25),
    ("POWER", 26),
    ("CAMERA", 27),
    ("CLEAR", 28),
    ("COMMA", 55),
    ("PERIOD", 56),
    ("ALT_LEFT", 57),
    ("ALT_RIGHT", 58),
    ("SHIFT_LEFT", 59),
    ("SHIFT_RIGHT", 60),
    ("TAB", 61),
    ("SPACE", 62),
    ("SYM", 63),
    ("EXPLORER", 64),
    ("ENVELOPE", 65),
    ("ENTER", 66),
    ("DEL", 67),
    ("GRAVE", 68),
    ("MINUS", 69),
    ("EQUALS", 70),
    ("LEFT_BRACKET", 71),
    ("RIGHT_BRACKET", 72),
    ("BACKSLASH", 73),
    ("SEMICOLON", 74),
    ("APOSTROPHE", 75),
    ("SLASH", 76),
    ("AT", 77),
    ("PLUS", 81),
    ("MENU", 82),
    ("NOTIFICATION", 83),
    ("SEARCH", 84),
    ("MEDIA_PLAY_PAUSE", 85),
    ("MEDIA_STOP", 86),
    ("MEDIA_NEXT", 87),
    ("MEDIA_PREVIOUS", 88),
    ("PAGE_UP", 92),
    ("PAGE_DOWN", 93),
    ("ESCAPE", 111),
    ("FORWARD_DEL", 112),
    ("MOVE_HOME", 122),
    ("MOVE_END", 123),
    ("VOLUME_MUTE", 164),
    ("APP_SWITCH", 187),
    ("SLEEP", 223),
    ("WAKEUP", 224),
    ("COPY", 278),
    ("PASTE", 279),
];

/// The next argument of an `input` command, or the error `nextArgRequired` throws.
fn next_arg<'a>(
    args: &mut std::slice::Iter<'a, String>,
    previous: &str,
) -> Result<&'a String, String> {
    args.next()
        .ok_or_else(|| format!("Argument expected after \"{previous}\""))
}

fn parse_float(text: &str, command: &str) -> Result<f32, String> {
    text.trim()
        .trim_end_matches(['f', 'F', 'd', 'D'])
        .parse::<f32>()
        .map_err(|_| format!("Error: Invalid arguments for command: {command}"))
}

/// What `input text` cannot type: the virtual keyboard's key map has printable ASCII,
/// newline and tab, and `getEvents` returns null for anything else.
fn typeable(text: &str) -> bool {
    text.chars().all(|c| matches!(c, ' '..='~' | '\n' | '\t'))
}

fn input_command(device: &mut Device, args: &[String]) -> Output {
    if args.is_empty() {
        return Output::ok(input_usage());
    }
    match run_input(device, args) {
        Ok(output) => output,
        Err(message) => input_error(&message),
    }
}

fn run_input(device: &mut Device, args: &[String]) -> Result<Output, String> {
    let mut iter = args.iter();
    let mut command = next_arg(&mut iter, "input")?;
    if INPUT_SOURCES.contains(&command.as_str()) {
        command = next_arg(&mut iter, command)?;
    }
    if command == "-d" {
        next_arg(&mut iter, "-d")?;
        command = next_arg(&mut iter, "-d")?;
    }
    let name = command.as_str();
    let point = |x: &str, y: &str| -> Result<(i32, i32), String> {
        Ok((parse_float(x, name)? as i32, parse_float(y, name)? as i32))
    };
    match name {
        "text" => {
            let text = next_arg(&mut iter, name)?;
            // `%s` is how a space survives a shell that splits words.
            let text = text.replace("%s", " ");
            if !typeable(&text) {
                return Ok(Output::fail(
                    1,
                    "java.lang.NullPointerException: Attempt to get length of null array\n\tat com.android.commands.input.Input$InputText.sendText(Input.java:168)\n\tat com.android.commands.input.Input$InputText.run(Input.java:140)\n\tat com.android.commands.input.Input.onRun(Input.java:107)\n\tat com.android.internal.os.BaseCommand.run(BaseCommand.java:60)\n\tat com.android.commands.input.Input.main(Input.java:71)\n\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:399)\n",
                ));
            }
            device.type_text(&text);
        }
        "keyevent" => {
            let mut key = next_arg(&mut iter, name)?;
            let longpress = key == "--longpress";
            if longpress {
                key = next_arg(&mut iter, "--longpress")?;
            }
            let mut keys_pressed = vec![key];
            keys_pressed.extend(iter.by_ref());
            for key in keys_pressed {
                let code = key_code(key);
                device.key(code);
                if longpress && Device::key_repeats(code) {
                    // The long press injects a second key down (a repeat).
                    device.key(code);
                }
            }
        }
        "tap" => {
            let x = next_arg(&mut iter, name)?;
            let y = next_arg(&mut iter, name)?;
            let (x, y) = point(x, y)?;
            device.tap(x, y);
        }
        "swipe" | "draganddrop" => {
            let x1 = next_arg(&mut iter, name)?.clone();
            let y1 = next_arg(&mut iter, name)?.clone();
            let x2 = next_arg(&mut iter, name)?.clone();
            let y2 = next_arg(&mut iter, name)?.clone();
            let duration = match iter.next() {
                Some(text) => text
                    .parse::<i64>()
                    .map_err(|_| format!("Error: Invalid arguments for command: {name}"))?,
                None => -1,
            };
            let duration = if duration < 0 { 300 } else { duration };
            let from = point(&x1, &y1)?;
            let to = point(&x2, &y2)?;
            if name == "swipe" {
                device.swipe(from, to, duration);
            } else {
                device.drag_and_drop(from, to);
            }
        }
        "press" => device.key(keys::ENTER),
        "roll" => {
            next_arg(&mut iter, name)?;
            next_arg(&mut iter, name)?;
        }
        "motionevent" => {
            let action = next_arg(&mut iter, name)?.to_uppercase();
            let x = next_arg(&mut iter, name)?;
            let y = next_arg(&mut iter, name)?;
            let (x, y) = point(x, y)?;
            match action.as_str() {
                // A lone UP completes a touch where it lands, as a tap does.
                "UP" => device.tap(x, y),
                "DOWN" | "MOVE" => {}
                other => return Err(format!("Unknown motionevent {other}")),
            }
        }
        other => return Err(format!("Error: Unknown command: {other}")),
    }
    Ok(Output::default())
}

/// `ime list [-a] [-s]`, `enable`, `disable`, `set`, `reset`.
fn ime(device: &mut Device, args: &[String]) -> Output {
    let verb = args.first().map(String::as_str);
    let id = args.iter().skip(1).find(|arg| !arg.starts_with('-'));
    let installed = device.installed_imes();
    match (verb, id) {
        (Some("list"), _) => {
            let all = args.iter().any(|arg| arg == "-a");
            let brief = args.iter().any(|arg| arg == "-s");
            let shown: Vec<String> = installed
                .iter()
                .filter(|ime| all || device.enabled_imes.contains(ime))
                .cloned()
                .collect();
            if brief {
                Output::ok(lines(shown))
            } else {
                Output::ok(lines(shown.iter().map(|ime| {
                    let (package, _) = ime.split_once('/').unwrap_or((ime, ""));
                    format!("{ime}:\n  mId={ime} mSettingsActivityName=null mIsVrOnly=false mSupportsSwitchingToNextInputMethod=false\n  mIsDefaultResId=0x0\n  Service:\n    priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n    ServiceInfo:\n      name={}\n      packageName={package}\n      enabled=true exported=true directBootAware=false\n      permission=android.permission.BIND_INPUT_METHOD", ime.replace("/.", &format!("/{package}.")).split('/').nth(1).unwrap_or(""))
                })))
            }
        }
        (Some(verb @ ("enable" | "disable")), Some(id)) => {
            if !installed.contains(id) {
                return Output::fail(
                    255,
                    format!("Unknown input method {id} cannot be {verb}d for user #0\n"),
                );
            }
            let enable = verb == "enable";
            let was = device.enabled_imes.contains(id);
            if enable && !was {
                device.enabled_imes.push(id.clone());
            } else if !enable {
                device.enabled_imes.retain(|ime| ime != id);
            }
            let enabled = device.enabled_imes.join(":");
            device
                .settings
                .secure
                .insert("enabled_input_methods".into(), enabled);
            let state = if enable == was { "already " } else { "now " };
            Output::ok(format!(
                "Input method {id}: {state}{}abled for user #0\n",
                if enable { "en" } else { "dis" }
            ))
        }
        (Some("set"), Some(id)) => {
            if !installed.contains(id) {
                return Output::fail(
                    255,
                    format!("Unknown input method {id} cannot be selected for user #0\n"),
                );
            }
            device
                .settings
                .secure
                .insert("default_input_method".into(), id.clone());
            Output::ok(format!("Input method {id} selected for user #0\n"))
        }
        (Some("reset"), _) => {
            device.enabled_imes = vec![LATIN_IME.to_owned()];
            device
                .settings
                .secure
                .insert("default_input_method".into(), LATIN_IME.into());
            device
                .settings
                .secure
                .insert("enabled_input_methods".into(), LATIN_IME.into());
            Output::ok(format!(
                "Reset current and enabled IMEs for user #0\n  Selected: {LATIN_IME}\n   Enabled: {LATIN_IME}\n"
            ))
        }
        _ => Output::ok(
            "ime <command>:\n  list [-a] [-s]\n    prints all enabled input methods.\n  enable [--user <USER_ID>] <ID>\n    allows the given input method ID to be used.\n  disable [--user <USER_ID>] <ID>\n    disallows the given input method ID to be used.\n  set [--user <USER_ID>] <ID>\n    switches to the given input method ID.\n  reset [--user <USER_ID>]\n    reset currently selected/enabled IMEs to the default ones as if the device is initially booted with the current locale.\n",
        ),
    }
}

/// The compressed hierarchy (`uiautomator dump --compressed`): views not important for
/// accessibility — plain layout wrappers with no id, text or role — give way to their
/// children.
fn compress(node: &Node) -> Node {
    fn keep(node: &Node) -> bool {
        !node.text.is_empty()
            || !node.content_desc.is_empty()
            || !node.resource_id.is_empty()
            || node.clickable
            || node.focusable
            || node.scrollable
            || node.checkable
            || node.long_clickable
    }
    fn flatten(node: &Node, out: &mut Vec<Node>) {
        if keep(node) {
            out.push(compress(node));
        } else {
            for child in &node.children {
                flatten(child, out);
            }
        }
    }
    let mut children = Vec::new();
    for child in &node.children {
        flatten(child, &mut children);
    }
    let mut copy = Node {
        children: Vec::new(),
        ..node.clone()
    };
    for (index, child) in children.into_iter().enumerate() {
        copy.children.push(Node { index, ..child });
    }
    copy
}

fn uiautomator(device: &mut Device, session: &Session, args: &[String]) -> Output {
    match args.first().map(String::as_str) {
        Some("dump") => {}
        Some("events") => return Output::default(),
        _ => {
            return Output::ok(
                "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n    runtest <class spec> [options]\n    <class spec>: <JARS> < -c <CLASSES> | -e class <CLASSES> >\n      <JARS>: a list of jar files containing test classes and dependencies. If\n        the path is relative, it's assumed to be under /data/local/tmp. Use\n        absolute path if the file is elsewhere. Multiple files can be\n        specified, separated by space.\n      <CLASSES>: a list of test class names to run, separated by comma. To\n        a single method, use TestClass#testMethod format. The -e or -c option\n        may be repeated. This option is not required and if not provided then\n        all the tests in provided jars will be run automatically.\n    options:\n      --nohup: trap SIG_HUP, so test won't terminate even if parent process\n               is terminated, e.g. USB is disconnected.\n      -e debug [true|false]: wait for debugger to connect before starting.\n      -e runner [CLASS]: use specified test runner class instead. If\n        unspecified, framework default runner will be used.\n      -e <NAME> <VALUE>: other name-value pairs to be passed to test classes.\n        May be repeated.\n      -e outputFormat simple | -s: enabled less verbose JUnit style output.\n\ndump: creates an XML dump of current UI hierarchy\n    dump [--verbose][file]\n      [--compressed]: dumps compressed layout information.\n      [file]: the location where the dumped XML should be stored, default is\n      /sdcard/window_dump.xml\n\nevents: prints out accessibility events until terminated\n",
            );
        }
    }
    let mut file = "/sdcard/window_dump.xml".to_owned();
    let mut compressed = false;
    for arg in &args[1..] {
        if arg == "--compressed" {
            compressed = true;
        } else if !arg.starts_with('-') {
            file = arg.clone();
        }
    }
    if device.dumps_to_fail > 0 {
        device.dumps_to_fail -= 1;
        return Output::fail(
            0,
            "ERROR: null root node returned by UiTestAutomationBridge.\n",
        );
    }
    let display = device.display();
    let root = device.tree();
    let root = if compressed { compress(&root) } else { root };
    let xml = ui::hierarchy_xml(&root, display.rotation, display.width, display.height);
    let shown = if file.starts_with('/') {
        file.clone()
    } else {
        format!("{}/{file}", session.cwd.trim_end_matches('/'))
    };
    let message = format!("UI hierchary dumped to: {shown}\n");
    if file == "/dev/tty" {
        let mut stdout = xml.into_bytes();
        stdout.extend_from_slice(message.as_bytes());
        return Output::ok(stdout);
    }
    let path = device::normalize(&file, &session.cwd);
    // A file it cannot write is only logged; the message is printed all the same.
    let _ = device
        .files
        .write(&path, xml.into_bytes(), 0o660, device::BOOT_TIME, false);
    Output::ok(message)
}

fn screencap(device: &mut Device, session: &Session, args: &[String]) -> Output {
    let mut png = false;
    let mut file: Option<&String> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-p" => png = true,
            "-d" => {
                iter.next();
            }
            "-h" => {
                return Output::fail(
                    1,
                    "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save the file as a png.\n   -d: specify the physical display ID to capture (default: 4619827259835644672)\n       see \"dumpsys SurfaceFlinger --display-id\" for valid display IDs.\nIf FILENAME ends with .png it will be saved as a png.\nIf FILENAME is not given, the results will be printed to stdout.\n",
                );
            }
            _ => file = Some(arg),
        }
    }
    if file.is_some_and(|f| f.ends_with(".png")) {
        png = true;
    }
    let frame = render::render(&device.tree(), &device.display());
    let bytes = if png {
        match frame.png() {
            Ok(bytes) => bytes,
            Err(error) => return Output::fail(1, format!("Error encoding PNG: {error}\n")),
        }
    } else {
        render::raw(&frame)
    };
    match file {
        None => Output::ok(bytes),
        Some(file) => {
            let path = device::normalize(file, &session.cwd);
            match device
                .files
                .write(&path, bytes, 0o660, device::BOOT_TIME, false)
            {
                Ok(()) => Output::default(),
                Err(error) => Output::fail(
                    1,
                    format!("Error opening file: {file} ({})\n", error.message()),
                ),
            }
        }
    }
}

/// `Window{hash u0 package/full.Class}`, as WindowState prints itself.
fn window_name(record: &device::Record) -> String {
    let package = record.screen.package();
    format!(
        "Window{{{:x} u0 {package}/{package}{}}}",
        record.window_hash,
        record.screen.short_class()
    )
}

/// `ActivityRecord{hash u0 package/.Class tN}`.
fn activity_record(record: &device::Record, task: u32) -> String {
    format!(
        "ActivityRecord{{{:x} u0 {}/{} t{task}}}",
        record.record_hash,
        record.screen.package(),
        record.screen.short_class()
    )
}

fn configuration(device: &Device) -> String {
    let display = device.display();
    let (w_dp, h_dp) = (
        display.width * 160 / 440,
        (display.height - super::apps::STATUS_BAR - super::apps::NAV_BAR) * 160 / 440,
    );
    let orientation = if display.rotation % 2 == 1 {
        "land"
    } else {
        "port"
    };
    let area = display.app_area();
    format!(
        "{{1.0 310mcc260mnc [en_US] ldltr sw392dp w{w_dp}dp h{h_dp}dp 440dpi nrml long {orientation} finger qwerty/v/v -nav/h winConfig={{ mBounds=Rect(0, 0 - {}, {}) mAppBounds=Rect({}, {} - {}, {}) mWindowingMode=fullscreen mDisplayWindowingMode=fullscreen mActivityType=undefined mAlwaysOnTop=undefined mRotation=ROTATION_{}}} s.12}}",
        display.width,
        display.height,
        area.left,
        0,
        area.right,
        area.bottom,
        u32::from(display.rotation) * 90
    )
}

fn windows_section(device: &Device) -> String {
    let display = device.display();
    let mut text = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
    let front = device.front();
    let nav = display.nav_bar();
    let status = display.status_bar();
    let mut windows: Vec<(String, String, bool)> = vec![
        (
            "Window{2c6f5a1 u0 NavigationBar0}".to_owned(),
            format!(
                "    mDisplayId=0 rootTaskId=1 mSession=Session{{8a1c2e3 1216:u0a10114}} mClient=android.os.BinderProxy@5d2f1b0\n    mOwnerUid=10114 showForAllUsers=true package=com.android.systemui appop=NONE\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=pan}} ty=NAVIGATION_BAR fmt=TRANSLUCENT\n      fl=NOT_FOCUSABLE NOT_TOUCH_MODAL TOUCHABLE_WHEN_WAKING WATCH_OUTSIDE_TOUCH SPLIT_TOUCH HARDWARE_ACCELERATED FLAG_SLIPPERY\n      pfl=COLOR_SPACE_AGNOSTIC FIT_INSETS_CONTROLLED}}\n    Requested w={} h={} mLayoutSeq=104\n    mFrame={nav} last={nav}\n",
                nav.width(),
                nav.height()
            ),
            true,
        ),
        (
            "Window{4e8d3c7 u0 StatusBar}".to_owned(),
            format!(
                "    mDisplayId=0 rootTaskId=1 mSession=Session{{8a1c2e3 1216:u0a10114}} mClient=android.os.BinderProxy@1f3e5d9\n    mOwnerUid=10114 showForAllUsers=true package=com.android.systemui appop=NONE\n    mAttrs={{(0,0)(fillx{}) gr=TOP CENTER_VERTICAL sim={{adjust=resize}} ty=STATUS_BAR fmt=TRANSLUCENT\n      fl=NOT_FOCUSABLE SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS\n      pfl=COLOR_SPACE_AGNOSTIC FIT_INSETS_CONTROLLED}}\n    Requested w={} h={} mLayoutSeq=104\n    mFrame={status} last={status}\n",
                status.height(),
                status.width(),
                status.height()
            ),
            true,
        ),
    ];
    // Application windows, front to back.
    for task in device.tasks.iter().rev() {
        for record in task.records.iter().rev() {
            let visible = std::ptr::eq(record, front);
            windows.push((
                window_name(record),
                format!(
                    "    mDisplayId=0 rootTaskId={} mSession=Session{{{:x} {}:u0a10{:03}}} mClient=android.os.BinderProxy@{:x}\n    mOwnerUid={} showForAllUsers=false package={} appop=NONE\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=resize forwardNavigation}} ty=BASE_APPLICATION wanim=0x10302fe\n      fl=LAYOUT_IN_SCREEN LAYOUT_INSET_DECOR SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS\n      pfl=FORCE_DRAW_STATUS_BAR_BACKGROUND FIT_INSETS_CONTROLLED}}\n    Requested w={} h={} mLayoutSeq=104\n    mToken={}\n    mActivityRecord={}\n    mViewVisibility={} mHaveFrame=true mObscured=false\n    mFrame=[0,0][{},{}] last=[0,0][{},{}]\n    isOnScreen={visible}\n    isVisible={visible}\n",
                    task.id,
                    record.window_hash ^ 0x00f0_0f0f,
                    4000 + task.id,
                    task.id,
                    record.record_hash ^ 0x0a0a_0a0a,
                    10100 + task.id,
                    record.screen.package(),
                    display.width,
                    display.height,
                    activity_record(record, task.id),
                    activity_record(record, task.id),
                    if visible { "0x0" } else { "0x8" },
                    display.width,
                    display.height,
                    display.width,
                    display.height,
                ),
                visible,
            ));
        }
    }
    windows.push((
        "Window{7a3b9f2 u0 com.android.systemui.ImageWallpaper}".to_owned(),
        "    mDisplayId=0 rootTaskId=1 mSession=Session{8a1c2e3 1216:u0a10114} mClient=android.os.BinderProxy@9c2d4e1\n    mOwnerUid=10114 showForAllUsers=false package=com.android.systemui appop=NONE\n    mAttrs={(0,0)(2340x2340) gr=TOP START CENTER layoutInDisplayCutoutMode=always ty=WALLPAPER fmt=RGBX_8888 wanim=0x103030e\n      fl=NOT_FOCUSABLE NOT_TOUCHABLE LAYOUT_IN_SCREEN LAYOUT_NO_LIMITS SCALED LAYOUT_INSET_DECOR}\n    isOnScreen=false\n    isVisible=false\n".to_owned(),
        false,
    ));
    for (index, (name, body, _)) in windows.iter().enumerate() {
        let _ = writeln!(text, "  Window #{index} {name}:");
        text.push_str(body);
    }
    let focus = window_name(front);
    let _ = write!(
        text,
        "\n  mGlobalConfiguration={}\n  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n  mInputMethodTarget in display# 0 {focus}\n  mInputMethodInputTarget in display# 0 {focus}\n  inputMethodControlTarget in display# 0 {focus}\n  mInTouchMode=true\n  mLastDisplayFreezeDuration=0 due to new-config\n  mLastWakeLockHoldingWindow=null mLastWakeLockObscuringWindow={focus}\n  mHighResTaskSnapshotScale=0.8\n  SnapshotCache\n  mInputMethodWindow=Window{{3b1e6d8 u0 InputMethod}}\n  mTraversalScheduled=false\n  mHoldScreenWindow=null\n  mObscuringWindow={focus}\n  mSystemBooted=true mDisplayEnabled=true\n  mTransactionSequence=2190\n  mDisplayFrozen=false windows=0 client=false apps=0  mRotation={}  mLastOrientation={}\n waitingForConfig=false\n  Animation settings: disabled=false window=1.0 transition=1.0 animator=1.0\n  PolicyControl.sImmersiveStatusFilter=null\n  PolicyControl.sImmersiveNavigationFilter=null\n  PolicyControl.sImmersivePreconfirmationsFilter=null\n",
        configuration(device),
        display.rotation,
        if display.rotation % 2 == 1 { 0 } else { 1 },
    );
    text
}

fn displays_section(device: &Device) -> String {
    let display = device.display();
    let front = device.front();
    let front_task = device.front_task();
    let mut text = String::from("WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n");
    let _ = write!(
        text,
        "  Display: mDisplayId=0 rootTasks={}\n    init={PANEL_WIDTH}x{PANEL_HEIGHT} 440dpi base={PANEL_WIDTH}x{PANEL_HEIGHT} 440dpi cur={}x{} app={}x{} rng=1080x974-2340x2208\n    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion((0,0,{},{}))\n\n  mLayoutSeq=104\n  mDeferredRotationPauseCount=0\n  mCurrentFocus={}\n  mFocusedApp={}\n",
        device.tasks.len(),
        display.width,
        display.height,
        display.app_area().width(),
        display.app_area().bottom,
        display.width,
        display.height,
        window_name(front),
        activity_record(front, front_task.id),
    );
    text.push_str("\n  Application tokens in top down Z order:\n");
    for task in device.tasks.iter().rev() {
        let _ = writeln!(
            text,
            "  * Task{{{:x} #{} type={} A={}:{} U=0 visible={} mode=fullscreen translucent=false sz={}}}",
            task.id.wrapping_mul(0x9e37_79b9) >> 4,
            task.id,
            if task.package == super::apps::LAUNCHER {
                "home"
            } else {
                "standard"
            },
            10100 + task.id,
            task.package,
            std::ptr::eq(task, front_task),
            task.records.len()
        );
        for record in task.records.iter().rev() {
            let _ = writeln!(text, "    * {}", activity_record(record, task.id));
        }
    }
    text
}

/// `dumpsys window [windows|displays]`, `dumpsys activity activities` and `dumpsys package`.
fn dumpsys(device: &Device, args: &[String]) -> Output {
    match args.first().map(String::as_str) {
        Some("window") => match args.get(1).map(String::as_str) {
            Some("windows" | "w") => Output::ok(windows_section(device)),
            Some("displays" | "d") => Output::ok(displays_section(device)),
            _ => Output::ok(format!(
                "WINDOW MANAGER LAST ANR (dumpsys window lastanr)\n  <no ANR has occurred since boot>\n{}\n{}",
                displays_section(device),
                windows_section(device)
            )),
        },
        Some("activity") => {
            let front = device.front();
            let task = device.front_task();
            let mut text = String::from(
                "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n",
            );
            for task in device.tasks.iter().rev() {
                let _ = writeln!(
                    text,
                    "  * Task{{{:x} #{} A={} U=0 sz={}}}",
                    task.id.wrapping_mul(0x9e37_79b9) >> 4,
                    task.id,
                    task.package,
                    task.records.len()
                );
                for record in task.records.iter().rev() {
                    let _ = writeln!(
                        text,
                        "    * Hist #{}: {}",
                        0,
                        activity_record(record, task.id)
                    );
                }
            }
            let _ = write!(
                text,
                "\n  ResumedActivity: {}\n\n  mFocusedApp={}\n  mFocusedRootTask=Task{{{:x} #{} A={} U=0 sz={}}}\n  mLastFocusedRootTask=Task{{{:x} #{} A={} U=0 sz={}}}\n",
                activity_record(front, task.id),
                activity_record(front, task.id),
                task.id.wrapping_mul(0x9e37_79b9) >> 4,
                task.id,
                task.package,
                task.records.len(),
                task.id.wrapping_mul(0x9e37_79b9) >> 4,
                task.id,
                task.package,
                task.records.len(),
            );
            let _ = writeln!(
                text,
                "    mResumedActivity: {}",
                activity_record(front, task.id)
            );
            Output::ok(text)
        }
        Some("package") => {
            let Some(name) = args.get(1) else {
                return Output::ok("Packages:\n");
            };
            match device.package(name) {
                Some(package) => Output::ok(format!(
                    "Packages:\n  Package [{}] ({:x}):\n    userId={}\n    pkg=Package{{{:x} {}}}\n    codePath={}\n    versionCode={} minSdk=21 targetSdk=30\n    versionName={}\n    flags=[ {}HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP ]\n",
                    package.name,
                    package.uid.wrapping_mul(0x2545_f491) >> 4,
                    package.uid,
                    package.uid.wrapping_mul(0x9e37_79b9) >> 4,
                    package.name,
                    package
                        .apk
                        .rsplit_once('/')
                        .map_or(package.apk.as_str(), |(dir, _)| dir),
                    package.version_code,
                    package.version_name,
                    if package.debuggable {
                        "DEBUGGABLE "
                    } else if package.system {
                        "SYSTEM "
                    } else {
                        ""
                    },
                )),
                None => Output::default(),
            }
        }
        Some(other) => Output::fail(0, format!("Can't find service: {other}\n")),
        None => Output::ok(
            "Currently running services:\n  activity\n  input_method\n  package\n  window\n",
        ),
    }
}

/// `monkey -p PKG -c android.intent.category.LAUNCHER 1`: starts the package's launcher
/// activity as one event. The `bash arg:` lines come from the `monkey` shell script.
fn monkey(device: &mut Device, args: &[String]) -> Output {
    let mut stdout = String::new();
    for arg in args {
        let _ = writeln!(stdout, "  bash arg: {arg}");
    }
    let mut packages: Vec<&String> = Vec::new();
    let mut iter = args.iter();
    let mut count: Option<&String> = None;
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-p" => packages.extend(iter.next()),
            "-c" | "-s" | "--throttle" | "--pct-touch" | "--pct-motion" | "--pct-appswitch"
            | "--pct-anyevent" | "--pct-nav" | "--pct-majornav" | "--pct-trackball" => {
                iter.next();
            }
            flag if flag.starts_with('-') => {}
            _ => count = Some(arg),
        }
    }
    let _ = writeln!(
        stdout,
        "args: [{}]",
        args.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for arg in args {
        let _ = writeln!(stdout, " arg: \"{arg}\"");
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if (arg == "-p" || arg == "-c")
            && let Some(data) = iter.next()
        {
            let _ = writeln!(stdout, "data=\"{data}\"");
        }
    }
    let Some(count) = count else {
        return Output {
            stdout: stdout.into_bytes(),
            stderr: b"** Error: Count not specified\n".to_vec(),
            code: 1,
        };
    };
    if count.parse::<u64>().is_err() {
        return Output {
            stdout: stdout.into_bytes(),
            stderr: b"** Error: Count is not a number\n".to_vec(),
            code: 1,
        };
    }
    let launchable: Vec<&String> = packages
        .iter()
        .copied()
        .filter(|name| {
            device
                .package(name)
                .is_some_and(|package| package.launcher_activity.is_some())
        })
        .collect();
    let Some(package) = launchable.first() else {
        return Output {
            stdout: stdout.into_bytes(),
            stderr: b"** No activities found to run, monkey aborted.\n".to_vec(),
            code: 252,
        };
    };
    let package = (*package).clone();
    device.launch(&package);
    let _ = writeln!(
        stdout,
        "Events injected: 1\n## Network stats: elapsed time=21ms (0ms mobile, 0ms wifi, 21ms not connected)"
    );
    Output::ok(stdout)
}

/// `logcat -c` clears, anything else prints what is buffered (nothing) and returns, as `-d`.
fn logcat(args: &[String]) -> Output {
    if args.iter().any(|arg| arg == "-c") {
        return Output::default();
    }
    Output::ok("--------- beginning of main\n--------- beginning of system\n")
}

/// `sqlite3 DB "SQL"` for the notes database, under `run-as`: `SELECT … FROM notes` lists
/// the notes as `id|title` rows; other statements fail as sqlite3 reports a missing table.
fn sqlite3(device: &Device, args: &[String]) -> Output {
    let positional: Vec<&String> = args.iter().filter(|arg| !arg.starts_with('-')).collect();
    let (Some(database), Some(sql)) = (positional.first(), positional.get(1)) else {
        return Output::fail(1, "Usage: sqlite3 [OPTIONS] FILENAME [SQL]\n");
    };
    if !database.ends_with("notes.db") {
        return Output::fail(
            1,
            format!(
                "Error: unable to open database \"{database}\": unable to open database file\n"
            ),
        );
    }
    let lower = sql.trim().trim_end_matches(';').to_lowercase();
    if lower.starts_with("select") && lower.contains("from notes") {
        if lower.contains("count(") {
            return Output::ok(format!("{}\n", device.notes.titles.len()));
        }
        return Output::ok(lines(
            device
                .notes
                .titles
                .iter()
                .enumerate()
                .map(|(index, title)| format!("{}|{title}", index + 1)),
        ));
    }
    if lower.starts_with(".tables") {
        return Output::ok("android_metadata  notes\n");
    }
    let table = lower
        .split_whitespace()
        .skip_while(|word| *word != "from" && *word != "into" && *word != "update")
        .nth(1)
        .unwrap_or("");
    Output::fail(1, format!("Error: no such table: {table}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::android::apps::Screen;

    #[test]
    fn intents_print_like_am() {
        let intent = parse_intent(&[
            "-a".into(),
            "android.intent.action.VIEW".into(),
            "-d".into(),
            "https://example.com/path?q=1".into(),
        ])
        .expect("parses");
        assert_eq!(
            intent.describe(),
            "Intent { act=android.intent.action.VIEW dat=https://example.com/... }"
        );
        let component = parse_intent(&["-n".into(), "com.example.notes/.LoginActivity".into()])
            .expect("parses");
        assert_eq!(
            component.describe(),
            "Intent { cmp=com.example.notes/.LoginActivity }"
        );
    }

    #[test]
    fn key_names_and_numbers_resolve() {
        assert_eq!(key_code("KEYCODE_BACK"), 4);
        assert_eq!(key_code("BACK"), 4);
        assert_eq!(key_code("67"), 67);
        assert_eq!(key_code("KEYCODE_A"), 29);
        assert_eq!(key_code("KEYCODE_5"), 12);
        assert_eq!(key_code("NOPE"), 0);
        assert_eq!(key_code("999"), 0);
    }

    #[test]
    fn screens_have_their_components() {
        assert!(Screen::for_component("com.example.notes", ".LoginActivity").is_some());
        assert!(
            Screen::for_component("com.example.notes", "com.example.notes.ListActivity").is_some()
        );
    }
}
