//! The device's `/system/bin/sh` (mksh) for the fake: runs a parsed command line — lists,
//! pipelines, redirections, `$?` — over the toybox commands a client uses (`echo`, `cat`, `ls`,
//! `rm`, `mkdir`, `grep`, …) and the Android commands in [`super::commands`]. Each command
//! runs to completion with its output buffered, which is all a test device needs.

use super::Core;
use super::commands;
use super::device::{self, Device, FsError, Stat};
use super::shell_words::{self, Joint, Redirect, SimpleCommand, Word};
use super::transport::lock;

/// A command's input.
pub(crate) trait Input {
    /// Everything until the input ends.
    fn read_all(&mut self) -> Vec<u8>;
    /// `count` bytes, or fewer if the input ends first.
    fn read_up_to(&mut self, count: usize) -> Vec<u8>;
}

/// Input that is already all there (a pipe from the previous command, a file, nothing).
#[derive(Debug, Default)]
pub(crate) struct Buffered(pub(crate) Vec<u8>);

impl Input for Buffered {
    fn read_all(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }

    fn read_up_to(&mut self, count: usize) -> Vec<u8> {
        let rest = self.0.split_off(count.min(self.0.len()));
        std::mem::replace(&mut self.0, rest)
    }
}

/// What a finished command wrote and returned.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) code: i32,
}

impl Output {
    pub(crate) fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: stdout.into(),
            ..Self::default()
        }
    }

    pub(crate) fn fail(code: i32, stderr: impl Into<Vec<u8>>) -> Self {
        Self {
            stderr: stderr.into(),
            code,
            ..Self::default()
        }
    }

    pub(crate) fn with_code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }
}

/// Where a session's output goes.
pub(crate) trait Sink {
    fn stdout(&mut self, data: &[u8]);
    fn stderr(&mut self, data: &[u8]);
}

/// The state a shell keeps between the lines of one session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) last_status: i32,
    pub(crate) cwd: String,
    /// Set by `exit`: the session ends with this status.
    pub(crate) exit: Option<i32>,
    /// The package `run-as` runs as, if any.
    pub(crate) run_as: Option<String>,
}

impl Default for Session {
    fn default() -> Self {
        Self {
            last_status: 0,
            // adbd starts shells in `/`.
            cwd: "/".to_owned(),
            exit: None,
            run_as: None,
        }
    }
}

/// mksh's prefix for its own error messages.
pub(crate) const SH: &str = "/system/bin/sh";

fn parameter(session: &Session, name: &str) -> String {
    match name {
        "?" => session.last_status.to_string(),
        "$" => "12345".to_owned(),
        "#" => "0".to_owned(),
        "HOME" => "/".to_owned(),
        "PATH" => {
            "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin".to_owned()
        }
        "USER" | "LOGNAME" => "shell".to_owned(),
        "HOSTNAME" => "localhost".to_owned(),
        "SHELL" => SH.to_owned(),
        "TMPDIR" => "/data/local/tmp".to_owned(),
        "EXTERNAL_STORAGE" => "/sdcard".to_owned(),
        "ANDROID_DATA" => "/data".to_owned(),
        "ANDROID_ROOT" => "/system".to_owned(),
        "PWD" => session.cwd.clone(),
        _ => String::new(),
    }
}

fn expand(session: &Session, words: &[Word]) -> Vec<String> {
    words
        .iter()
        .filter_map(|word| {
            let text = word.expand(&|name| parameter(session, name));
            // An unquoted word that expands to nothing is no word at all.
            (!text.is_empty() || word.quoted).then_some(text)
        })
        .collect()
}

/// Where a command's output descriptor points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The pipeline's stdout (the next command, or the session).
    Stdout,
    /// The session's stderr.
    Stderr,
    Null,
    File {
        path: String,
        append: bool,
    },
}

/// Runs one command line; returns its status.
pub(crate) fn run_line(
    core: &Core,
    session: &mut Session,
    line: &str,
    input: &mut dyn Input,
    sink: &mut dyn Sink,
) -> i32 {
    let script = match shell_words::parse(line) {
        Ok(script) => script,
        Err(error) => {
            sink.stderr(format!("{SH}: {error}\n").as_bytes());
            session.last_status = 1;
            return 1;
        }
    };
    for (joint, pipeline) in &script.pipelines {
        let run = match joint {
            Joint::Always => true,
            Joint::IfSuccess => session.last_status == 0,
            Joint::IfFailure => session.last_status != 0,
        };
        if !run {
            continue;
        }
        let mut piped: Option<Vec<u8>> = None;
        let count = pipeline.commands.len();
        for (position, command) in pipeline.commands.iter().enumerate() {
            let last = position + 1 == count;
            let status = run_simple(core, session, command, input, &mut piped, last, sink);
            session.last_status = status;
            if session.exit.is_some() {
                return session.exit.unwrap_or(status);
            }
        }
    }
    session.last_status
}

fn run_simple(
    core: &Core,
    session: &mut Session,
    command: &SimpleCommand,
    input: &mut dyn Input,
    piped: &mut Option<Vec<u8>>,
    last: bool,
    sink: &mut dyn Sink,
) -> i32 {
    let args = expand(session, &command.words);
    let mut stdout_target = Target::Stdout;
    let mut stderr_target = Target::Stderr;
    let mut stdin_file: Option<Vec<u8>> = None;
    for redirect in &command.redirects {
        match redirect {
            Redirect::Output { fd, target, append } => {
                let path = target.expand(&|name| parameter(session, name));
                let target = if path == "/dev/null" {
                    Target::Null
                } else {
                    Target::File {
                        path: device::normalize(&path, &session.cwd),
                        append: *append,
                    }
                };
                match fd {
                    2 => stderr_target = target,
                    _ => stdout_target = target,
                }
            }
            Redirect::Duplicate { fd, to } => {
                let copied = if *to == 2 {
                    stderr_target.clone()
                } else {
                    stdout_target.clone()
                };
                match fd {
                    2 => stderr_target = copied,
                    _ => stdout_target = copied,
                }
            }
            Redirect::Input { target } => {
                let path = device::normalize(
                    &target.expand(&|name| parameter(session, name)),
                    &session.cwd,
                );
                let read = lock(&core.device)
                    .files
                    .read(&path)
                    .map(|file| file.data.clone());
                match read {
                    Ok(data) => stdin_file = Some(data),
                    Err(error) => {
                        sink.stderr(
                            format!("{SH}: can't open '{path}': {}\n", error.message()).as_bytes(),
                        );
                        *piped = if last { None } else { Some(Vec::new()) };
                        return 1;
                    }
                }
            }
        }
    }
    // Prepare each file target once (`>` truncates even when the command writes nothing).
    for target in [&stdout_target, &stderr_target] {
        if let Target::File {
            path,
            append: false,
        } = target
        {
            let result =
                lock(&core.device)
                    .files
                    .write(path, Vec::new(), 0o666, device::BOOT_TIME, false);
            if let Err(error) = result {
                sink.stderr(format!("{SH}: can't create {path}: {}\n", error.message()).as_bytes());
                *piped = if last { None } else { Some(Vec::new()) };
                return 1;
            }
        }
    }
    let output = if args.is_empty() {
        Output::default()
    } else {
        let mut pipe_input;
        let mut file_input;
        let source: &mut dyn Input = if let Some(data) = stdin_file {
            file_input = Buffered(data);
            &mut file_input
        } else if let Some(data) = piped.take() {
            pipe_input = Buffered(data);
            &mut pipe_input
        } else {
            input
        };
        run_command(core, session, &args, source)
    };
    let mut next_pipe = Vec::new();
    let mut deliver = |target: &Target, data: &[u8], sink: &mut dyn Sink| {
        if data.is_empty() {
            return;
        }
        match target {
            Target::Stdout if last => sink.stdout(data),
            Target::Stdout => next_pipe.extend_from_slice(data),
            Target::Stderr => sink.stderr(data),
            Target::Null => {}
            Target::File { path, .. } => {
                let result = lock(&core.device).files.append(path, data);
                if let Err(error) = result {
                    sink.stderr(
                        format!("{SH}: can't create {path}: {}\n", error.message()).as_bytes(),
                    );
                }
            }
        }
    };
    deliver(&stdout_target, &output.stdout, sink);
    deliver(&stderr_target, &output.stderr, sink);
    *piped = if last { None } else { Some(next_pipe) };
    output.code
}

/// The commands the device has, for `which` (every one lives in `/system/bin`).
const KNOWN: [&str; 40] = [
    "am",
    "cat",
    "cmd",
    "cp",
    "dumpsys",
    "echo",
    "false",
    "getprop",
    "grep",
    "id",
    "ime",
    "input",
    "log",
    "logcat",
    "ls",
    "mkdir",
    "monkey",
    "mv",
    "pidof",
    "pm",
    "printf",
    "ps",
    "rm",
    "run-as",
    "screencap",
    "settings",
    "sh",
    "sleep",
    "svc",
    "test",
    "toybox",
    "touch",
    "true",
    "uiautomator",
    "uname",
    "wc",
    "whoami",
    "which",
    "wm",
    "setprop",
];

/// Runs one command with its arguments.
pub(crate) fn run_command(
    core: &Core,
    session: &mut Session,
    args: &[String],
    input: &mut dyn Input,
) -> Output {
    let name = args[0].as_str();
    let rest = &args[1..];
    match name {
        "true" | ":" => Output::default(),
        "false" => Output::default().with_code(1),
        "exit" => {
            let code = rest
                .first()
                .and_then(|code| code.parse::<i32>().ok())
                .unwrap_or(session.last_status);
            session.exit = Some(code & 0xff);
            Output::default().with_code(code & 0xff)
        }
        "cd" => {
            let target = device::normalize(rest.first().map_or("/", String::as_str), &session.cwd);
            match lock(&core.device).files.stat(&target) {
                Some(Stat::Directory { .. }) => {
                    session.cwd = target;
                    Output::default()
                }
                Some(Stat::File { .. }) => {
                    Output::fail(2, format!("{SH}: cd: {target}: Not a directory\n"))
                }
                None => Output::fail(
                    2,
                    format!("{SH}: cd: {target}: No such file or directory\n"),
                ),
            }
        }
        "echo" => echo(rest),
        "sh" => {
            if rest.first().map(String::as_str) == Some("-c") {
                let line = rest.get(1).cloned().unwrap_or_default();
                let mut nested = session.clone();
                let mut capture = Capture::default();
                let code = run_line(core, &mut nested, &line, input, &mut capture);
                Output {
                    stdout: capture.stdout,
                    stderr: capture.stderr,
                    code,
                }
            } else {
                // Lines on stdin, one after another.
                let script = String::from_utf8_lossy(&input.read_all()).into_owned();
                let mut nested = session.clone();
                let mut capture = Capture::default();
                let code = run_line(
                    core,
                    &mut nested,
                    &script,
                    &mut Buffered::default(),
                    &mut capture,
                );
                Output {
                    stdout: capture.stdout,
                    stderr: capture.stderr,
                    code,
                }
            }
        }
        "which" => {
            let mut output = Output::default();
            for command in rest {
                if KNOWN.contains(&command.as_str()) {
                    output
                        .stdout
                        .extend_from_slice(format!("/system/bin/{command}\n").as_bytes());
                } else {
                    output.code = 1;
                }
            }
            output
        }
        "id" => Output::ok(
            "uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid) context=u:r:shell:s0\n",
        ),
        "whoami" => Output::ok("shell\n"),
        "uname" => {
            if rest.iter().any(|arg| arg == "-a") {
                Output::ok(
                    "Linux localhost 4.14.180-perf+ #1 SMP PREEMPT Tue Sep 7 18:26:17 UTC 2021 aarch64\n",
                )
            } else {
                Output::ok("Linux\n")
            }
        }
        "sleep" => {
            let seconds: f64 = rest.first().and_then(|s| s.parse().ok()).unwrap_or(0.0);
            // Bounded so a mistaken argument cannot hang a test for long.
            std::thread::sleep(std::time::Duration::from_secs_f64(seconds.clamp(0.0, 10.0)));
            Output::default()
        }
        "cat" => cat(core, session, rest, input),
        "ls" => ls(core, session, rest),
        "rm" => rm(core, session, rest),
        "mkdir" => mkdir(core, session, rest),
        "touch" => touch(core, session, rest),
        "grep" => grep(core, session, rest, input),
        "run-as" => run_as(core, session, rest, input),
        "pidof" => {
            let device = lock(&core.device);
            let pids: Vec<String> = rest
                .iter()
                .filter_map(|name| device.processes.get(name).map(u32::to_string))
                .collect();
            if pids.is_empty() {
                Output::default().with_code(1)
            } else {
                Output::ok(format!("{}\n", pids.join(" ")))
            }
        }
        _ => {
            let mut device = lock(&core.device);
            match commands::run(&mut device, session, name, rest, input) {
                Some(output) => output,
                None => not_found(name),
            }
        }
    }
}

/// `run-as PKG CMD…`: the command runs as the app, in its data directory, when the package is
/// debuggable (the check `run-as` makes on a user build).
fn run_as(core: &Core, session: &Session, args: &[String], input: &mut dyn Input) -> Output {
    let Some(package) = args.first() else {
        return Output::fail(
            1,
            "usage: run-as <package-name> [--user <uid>] <command> [<args>]\n",
        );
    };
    let debuggable = {
        let device = lock(&core.device);
        match device.package(package) {
            None => return Output::fail(1, format!("run-as: unknown package: {package}\n")),
            Some(found) => found.debuggable,
        }
    };
    if !debuggable {
        return Output::fail(1, format!("run-as: package not debuggable: {package}\n"));
    }
    let mut command: Vec<String> = args[1..].to_vec();
    if command.first().map(String::as_str) == Some("--user") {
        command.drain(..2.min(command.len()));
    }
    if command.is_empty() {
        // An interactive shell as the app is more than this fake offers.
        command = vec!["sh".to_owned(), "-c".to_owned(), "true".to_owned()];
    }
    let mut nested = session.clone();
    nested.run_as = Some(package.clone());
    nested.cwd = format!("/data/user/0/{package}");
    run_command(core, &mut nested, &command, input)
}

/// mksh's answer for a command it cannot find.
pub(crate) fn not_found(name: &str) -> Output {
    Output::fail(127, format!("{SH}: {name}: inaccessible or not found\n"))
}

/// Collects a nested shell's output.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

impl Sink for Capture {
    fn stdout(&mut self, data: &[u8]) {
        self.stdout.extend_from_slice(data);
    }

    fn stderr(&mut self, data: &[u8]) {
        self.stderr.extend_from_slice(data);
    }
}

fn echo(args: &[String]) -> Output {
    let (newline, words) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut text = words.join(" ");
    if newline {
        text.push('\n');
    }
    Output::ok(text)
}

fn fs_error(command: &str, path: &str, error: FsError) -> String {
    format!("{command}: {path}: {}\n", error.message())
}

fn cat(core: &Core, session: &Session, args: &[String], input: &mut dyn Input) -> Output {
    if args.is_empty() || args.iter().all(|arg| arg == "-") {
        return Output::ok(input.read_all());
    }
    let device = lock(&core.device);
    let mut output = Output::default();
    for arg in args {
        let path = device::normalize(arg, &session.cwd);
        match device.files.read_as(&path, session.run_as.as_deref()) {
            Ok(file) => output.stdout.extend_from_slice(&file.data),
            Err(error) => {
                output
                    .stderr
                    .extend_from_slice(fs_error("cat", arg, error).as_bytes());
                output.code = 1;
            }
        }
    }
    output
}

fn mode_string(stat: &Stat) -> String {
    let (kind, mode) = match stat {
        Stat::Directory { .. } => ('d', 0o771),
        Stat::File { mode, .. } => ('-', *mode & 0o777),
    };
    let mut text = String::from(kind);
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        text.push(if bits & 4 != 0 { 'r' } else { '-' });
        text.push(if bits & 2 != 0 { 'w' } else { '-' });
        text.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    text
}

fn ls(core: &Core, session: &Session, args: &[String]) -> Output {
    let long = args
        .iter()
        .any(|arg| arg.starts_with('-') && arg.contains('l'));
    let paths: Vec<&String> = args.iter().filter(|arg| !arg.starts_with('-')).collect();
    let cwd = session.cwd.clone();
    let targets: Vec<String> = if paths.is_empty() {
        vec![cwd.clone()]
    } else {
        paths.iter().map(|p| (*p).clone()).collect()
    };
    let device = lock(&core.device);
    let mut output = Output::default();
    let line = |name: &str, stat: &Stat| {
        if long {
            let size = match stat {
                Stat::File { size, .. } => *size,
                Stat::Directory { .. } => 4096,
            };
            format!(
                "{} 1 shell shell {size:>8} 2021-10-01 00:00 {name}\n",
                mode_string(stat)
            )
        } else {
            format!("{name}\n")
        }
    };
    for target in targets {
        let path = device::normalize(&target, &cwd);
        match device.files.stat(&path) {
            Some(stat @ Stat::File { .. }) => {
                output
                    .stdout
                    .extend_from_slice(line(&target, &stat).as_bytes());
            }
            Some(Stat::Directory { .. }) => {
                match device.files.list_as(&path, session.run_as.as_deref()) {
                    Ok(entries) => {
                        for (name, stat) in entries {
                            output
                                .stdout
                                .extend_from_slice(line(&name, &stat).as_bytes());
                        }
                    }
                    Err(error) => {
                        output
                            .stderr
                            .extend_from_slice(fs_error("ls", &target, error).as_bytes());
                        output.code = 1;
                    }
                }
            }
            None => {
                output
                    .stderr
                    .extend_from_slice(fs_error("ls", &target, FsError::NotFound).as_bytes());
                output.code = 1;
            }
        }
    }
    output
}

fn rm(core: &Core, session: &Session, args: &[String]) -> Output {
    let flags: String = args
        .iter()
        .filter(|arg| arg.starts_with('-'))
        .flat_map(|arg| arg.chars().skip(1))
        .collect();
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let mut device = lock(&core.device);
    let mut output = Output::default();
    for arg in args.iter().filter(|arg| !arg.starts_with('-')) {
        let path = device::normalize(arg, &session.cwd);
        match device.files.remove(&path, recursive) {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(error) => {
                output
                    .stderr
                    .extend_from_slice(fs_error("rm", arg, error).as_bytes());
                output.code = 1;
            }
        }
    }
    output
}

fn mkdir(core: &Core, session: &Session, args: &[String]) -> Output {
    let parents = args.iter().any(|arg| arg == "-p");
    let mut device = lock(&core.device);
    let mut output = Output::default();
    for arg in args.iter().filter(|arg| !arg.starts_with('-')) {
        let path = device::normalize(arg, &session.cwd);
        if let Err(error) = device.files.make_dir(&path, parents) {
            let error = if error == FsError::IsDirectory {
                "File exists".to_owned()
            } else {
                error.message().to_owned()
            };
            output
                .stderr
                .extend_from_slice(format!("mkdir: '{arg}': {error}\n").as_bytes());
            output.code = 1;
        }
    }
    output
}

fn touch(core: &Core, session: &Session, args: &[String]) -> Output {
    let mut device = lock(&core.device);
    let mut output = Output::default();
    for arg in args.iter().filter(|arg| !arg.starts_with('-')) {
        let path = device::normalize(arg, &session.cwd);
        if device.files.stat(&path).is_some() {
            continue;
        }
        if let Err(error) = device
            .files
            .write(&path, Vec::new(), 0o666, device::BOOT_TIME, false)
        {
            output
                .stderr
                .extend_from_slice(fs_error("touch", arg, error).as_bytes());
            output.code = 1;
        }
    }
    output
}

/// A basic regular expression (toybox's default) as the regex crate's syntax: `\|`, `\(`,
/// `\)`, `\{`, `\}`, `\+` and `\?` are the operators, the bare characters literal.
fn basic_to_extended(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(op @ ('|' | '(' | ')' | '{' | '}' | '+' | '?')) => out.push(op),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push_str("\\\\"),
            },
            '|' | '(' | ')' | '{' | '}' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn grep(core: &Core, session: &Session, args: &[String], input: &mut dyn Input) -> Output {
    let mut extended = false;
    let mut fixed = false;
    let mut ignore_case = false;
    let mut invert = false;
    let mut count = false;
    let mut quiet = false;
    let mut patterns: Vec<String> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-e" {
            if let Some(pattern) = iter.next() {
                patterns.push(pattern.clone());
            }
        } else if arg.starts_with('-') && arg.len() > 1 {
            for flag in arg.chars().skip(1) {
                match flag {
                    'E' => extended = true,
                    'F' => fixed = true,
                    'i' => ignore_case = true,
                    'v' => invert = true,
                    'c' => count = true,
                    'q' => quiet = true,
                    _ => {}
                }
            }
        } else {
            operands.push(arg.clone());
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            return Output::fail(2, "usage: grep [-EFivcq] [-e REGEX]... REGEX [FILE]...\n");
        }
        patterns.push(operands.remove(0));
    }
    let expressions: Result<Vec<regex::Regex>, _> = patterns
        .iter()
        .map(|pattern| {
            let source = if fixed {
                regex::escape(pattern)
            } else if extended {
                pattern.clone()
            } else {
                basic_to_extended(pattern)
            };
            regex::RegexBuilder::new(&source)
                .case_insensitive(ignore_case)
                .build()
        })
        .collect();
    let Ok(expressions) = expressions else {
        return Output::fail(2, "grep: bad regex\n");
    };
    let text = if operands.is_empty() {
        input.read_all()
    } else {
        let device = lock(&core.device);
        let mut text = Vec::new();
        for operand in &operands {
            let path = device::normalize(operand, &session.cwd);
            if let Ok(file) = device.files.read_as(&path, session.run_as.as_deref()) {
                text.extend_from_slice(&file.data);
            }
        }
        text
    };
    let text = String::from_utf8_lossy(&text);
    let mut matched = 0;
    let mut stdout = String::new();
    for line in text.lines() {
        let hit = expressions
            .iter()
            .any(|expression| expression.is_match(line))
            != invert;
        if hit {
            matched += 1;
            if !count && !quiet {
                stdout.push_str(line);
                stdout.push('\n');
            }
        }
    }
    if count {
        stdout = format!("{matched}\n");
    }
    if quiet {
        stdout.clear();
    }
    Output {
        stdout: stdout.into_bytes(),
        stderr: Vec::new(),
        code: if matched > 0 { 0 } else { 1 },
    }
}

/// Reads a device file for a command that takes a path argument (`pm install`, …).
pub(crate) fn file_exists(device: &Device, session: &Session, path: &str) -> bool {
    matches!(
        device.files.stat(&device::normalize(path, &session.cwd)),
        Some(Stat::File { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_regular_expressions_translate() {
        assert_eq!(basic_to_extended(r"a\|b"), "a|b");
        assert_eq!(basic_to_extended("a|b(c)"), r"a\|b\(c\)");
    }
}
