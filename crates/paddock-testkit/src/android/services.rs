//! The services a host can OPEN on the fake device: `shell:` (v1, raw bytes), `shell,v2,…:`
//! (the shell protocol of `shell_protocol.h`: packets of an id byte, a little-endian length
//! and data — stdin 0, stdout 1, stderr 2, exit 3, close-stdin 4, window-size-change 5),
//! `exec:` (raw bytes, stdout and stderr together), `sync:`, and `root:`/`unroot:` as a user
//! build answers them.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use super::Core;
use super::shell::{self, Input, Session, Sink};
use super::sync;
use super::transport::{ServiceJob, Services, StreamReader, StreamWriter, lock};

/// The features this device announces: only those it implements.
pub(crate) const FEATURES: &str = "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir";

const ID_STDIN: u8 = 0;
const ID_STDOUT: u8 = 1;
const ID_STDERR: u8 = 2;
const ID_EXIT: u8 = 3;
const ID_CLOSE_STDIN: u8 = 4;
const ID_WINDOW_SIZE: u8 = 5;

/// The device's services, over the shared state in [`Core`].
#[derive(Debug)]
pub(crate) struct DeviceServices {
    pub(crate) core: Arc<Core>,
}

/// How a shell service was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ShellRequest {
    v2: bool,
    pty: bool,
    command: String,
}

/// Parses `shell[,opt…]:command`. Without `raw` or `pty`, an empty command gets a pty and a
/// command gets raw pipes, as adbd decides.
fn parse_shell(service: &str) -> Option<ShellRequest> {
    let rest = service.strip_prefix("shell")?;
    let (options, command) = rest.split_once(':')?;
    if !options.is_empty() && !options.starts_with(',') {
        return None;
    }
    let options: Vec<&str> = options.split(',').filter(|o| !o.is_empty()).collect();
    let v2 = options.contains(&"v2");
    let pty = if options.contains(&"pty") {
        true
    } else if options.contains(&"raw") {
        false
    } else {
        command.is_empty()
    };
    Some(ShellRequest {
        v2,
        pty,
        command: command.to_owned(),
    })
}

impl Services for DeviceServices {
    fn banner(&self) -> String {
        let device = lock(&self.core.device);
        let property = |name: &str| device.properties.get(name).cloned().unwrap_or_default();
        format!(
            "device::ro.product.name={};ro.product.model={};ro.product.device={};features={FEATURES}",
            property("ro.product.name"),
            property("ro.product.model"),
            property("ro.product.device"),
        )
    }

    fn open(&self, service: &str) -> Option<ServiceJob> {
        lock(&self.core.log).services.push(service.to_owned());
        let core = Arc::clone(&self.core);
        if let Some(request) = parse_shell(service) {
            return Some(Box::new(move |reader, writer| {
                run_shell(&core, request, reader, writer);
            }));
        }
        if let Some(command) = service.strip_prefix("exec:") {
            let command = command.to_owned();
            return Some(Box::new(move |reader, writer| {
                run_exec(&core, &command, reader, writer);
            }));
        }
        match service {
            "sync:" => Some(Box::new(move |reader, writer| {
                sync::serve(&core.device, reader, writer);
            })),
            "root:" => Some(message("adbd cannot run as root in production builds\n")),
            "unroot:" => Some(message("adbd not running as root\n")),
            _ => None,
        }
    }
}

fn message(text: &'static str) -> ServiceJob {
    Box::new(move |_reader, mut writer| {
        let _ = writer.send(text.as_bytes());
    })
}

/// Records a command line and waits the device's service time before it runs.
fn begin_command(core: &Core, line: &str) {
    lock(&core.log).commands.push(line.to_owned());
    let delay: Duration = *lock(&core.delay);
    if !delay.is_zero() {
        std::thread::sleep(delay);
    }
}

/// Output through the shell protocol, a packet per write; with a pty, stderr shares the
/// terminal with stdout and newlines become CR LF (the terminal's `onlcr`).
struct PacketSink<'a> {
    writer: &'a mut StreamWriter,
    pty: bool,
}

impl PacketSink<'_> {
    fn packet(&mut self, id: u8, data: &[u8]) {
        // Each packet fits one WRTE, as adbd sizes its shell buffer to the payload limit.
        let room = self.writer.max_payload().saturating_sub(5).max(1);
        for chunk in data.chunks(room) {
            let mut bytes = Vec::with_capacity(chunk.len() + 5);
            bytes.push(id);
            bytes.extend_from_slice(&u32::try_from(chunk.len()).unwrap_or(0).to_le_bytes());
            bytes.extend_from_slice(chunk);
            if self.writer.send(&bytes).is_err() {
                return;
            }
        }
    }
}

fn onlcr(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for byte in data {
        if *byte == b'\n' {
            out.push(b'\r');
        }
        out.push(*byte);
    }
    out
}

impl Sink for PacketSink<'_> {
    fn stdout(&mut self, data: &[u8]) {
        if self.pty {
            self.packet(ID_STDOUT, &onlcr(data));
        } else {
            self.packet(ID_STDOUT, data);
        }
    }

    fn stderr(&mut self, data: &[u8]) {
        if self.pty {
            self.packet(ID_STDOUT, &onlcr(data));
        } else {
            self.packet(ID_STDERR, data);
        }
    }
}

/// Raw output (shell v1, exec): stdout and stderr both go to the stream, as the subprocess
/// writes both to the one socket.
struct RawSink<'a> {
    writer: &'a mut StreamWriter,
    pty: bool,
}

impl Sink for RawSink<'_> {
    fn stdout(&mut self, data: &[u8]) {
        let data = if self.pty { onlcr(data) } else { data.to_vec() };
        let _ = self.writer.send(&data);
    }

    fn stderr(&mut self, data: &[u8]) {
        self.stdout(data);
    }
}

/// Stdin from shell-protocol packets.
struct PacketInput<'a> {
    reader: &'a mut StreamReader,
    pending: Vec<u8>,
    closed: bool,
}

impl PacketInput<'_> {
    /// Reads packets until some stdin data arrives or stdin closes.
    fn fill(&mut self) {
        while self.pending.is_empty() && !self.closed {
            let mut header = [0u8; 5];
            if self.reader.read_exact(&mut header).is_err() {
                self.closed = true;
                return;
            }
            let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
            let mut data = vec![0u8; length as usize];
            if self.reader.read_exact(&mut data).is_err() {
                self.closed = true;
                return;
            }
            match header[0] {
                ID_STDIN => self.pending = data,
                ID_CLOSE_STDIN => self.closed = true,
                // The fake's terminal has no size to change; other ids are not for a device.
                ID_WINDOW_SIZE => {}
                _ => {}
            }
        }
    }

    /// The next bytes of stdin, or `None` once it closed.
    fn next(&mut self) -> Option<Vec<u8>> {
        self.fill();
        if self.pending.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.pending))
        }
    }
}

impl Input for PacketInput<'_> {
    fn read_all(&mut self) -> Vec<u8> {
        let mut all = Vec::new();
        while let Some(data) = self.next() {
            all.extend_from_slice(&data);
        }
        all
    }

    fn read_up_to(&mut self, count: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < count {
            self.fill();
            if self.pending.is_empty() {
                break;
            }
            let take = (count - out.len()).min(self.pending.len());
            out.extend(self.pending.drain(..take));
        }
        out
    }
}

/// Raw stdin (shell v1, exec): the stream's bytes until the host closes it.
struct RawInput<'a> {
    reader: &'a mut StreamReader,
}

impl Input for RawInput<'_> {
    fn read_all(&mut self) -> Vec<u8> {
        let mut all = Vec::new();
        let _ = self.reader.read_to_end(&mut all);
        all
    }

    fn read_up_to(&mut self, count: usize) -> Vec<u8> {
        let mut out = vec![0u8; count];
        let mut filled = 0;
        while filled < count {
            match self.reader.read(&mut out[filled..]) {
                Ok(0) | Err(_) => break,
                Ok(read) => filled += read,
            }
        }
        out.truncate(filled);
        out
    }
}

fn exit_packet(writer: &mut StreamWriter, code: i32) {
    // The exit status travels as one byte, as a process's status does.
    let bytes = [ID_EXIT, 1, 0, 0, 0, (code & 0xff) as u8];
    let _ = writer.send(&bytes);
}

fn run_shell(
    core: &Core,
    request: ShellRequest,
    mut reader: StreamReader,
    mut writer: StreamWriter,
) {
    let mut session = Session::default();
    if request.command.is_empty() {
        let code = if request.pty {
            interactive(core, &mut session, &request, &mut reader, &mut writer)
        } else {
            // No terminal: the shell reads its script from stdin.
            let script = if request.v2 {
                PacketInput {
                    reader: &mut reader,
                    pending: Vec::new(),
                    closed: false,
                }
                .read_all()
            } else {
                RawInput {
                    reader: &mut reader,
                }
                .read_all()
            };
            let script = String::from_utf8_lossy(&script).into_owned();
            run_script(core, &mut session, &script, request.v2, &mut writer)
        };
        if request.v2 {
            exit_packet(&mut writer, code);
        }
        return;
    }
    begin_command(core, &request.command);
    if request.v2 {
        let code = {
            let mut input = PacketInput {
                reader: &mut reader,
                pending: Vec::new(),
                closed: false,
            };
            let mut sink = PacketSink {
                writer: &mut writer,
                pty: request.pty,
            };
            shell::run_line(core, &mut session, &request.command, &mut input, &mut sink)
        };
        exit_packet(&mut writer, code);
    } else {
        let mut input = RawInput {
            reader: &mut reader,
        };
        let mut sink = RawSink {
            writer: &mut writer,
            pty: request.pty,
        };
        shell::run_line(core, &mut session, &request.command, &mut input, &mut sink);
    }
}

/// Runs a script read from stdin, line after line.
fn run_script(
    core: &Core,
    session: &mut Session,
    script: &str,
    v2: bool,
    writer: &mut StreamWriter,
) -> i32 {
    let mut code = 0;
    for line in script.lines() {
        if line.trim().is_empty() {
            continue;
        }
        begin_command(core, line);
        let mut input = shell::Buffered::default();
        code = if v2 {
            let mut sink = PacketSink {
                writer: &mut *writer,
                pty: false,
            };
            shell::run_line(core, session, line, &mut input, &mut sink)
        } else {
            let mut sink = RawSink {
                writer: &mut *writer,
                pty: false,
            };
            shell::run_line(core, session, line, &mut input, &mut sink)
        };
        if session.exit.is_some() {
            break;
        }
    }
    code
}

/// An interactive shell on a terminal: a prompt like `sunfish:/ $ `, the terminal echoing
/// what is typed, a line run on Enter, until `exit`, Ctrl-D or stdin closing.
fn interactive(
    core: &Core,
    session: &mut Session,
    request: &ShellRequest,
    reader: &mut StreamReader,
    writer: &mut StreamWriter,
) -> i32 {
    let host = lock(&core.device)
        .properties
        .get("ro.product.device")
        .cloned()
        .unwrap_or_default();
    let mut input = PacketInput {
        reader,
        pending: Vec::new(),
        closed: false,
    };
    let mut line: Vec<u8> = Vec::new();
    let send = |writer: &mut StreamWriter, data: &[u8]| {
        if request.v2 {
            PacketSink { writer, pty: false }.packet(ID_STDOUT, data);
        } else {
            let _ = writer.send(data);
        }
    };
    let prompt = |session: &Session| format!("{host}:{} $ ", session.cwd);
    send(writer, prompt(session).as_bytes());
    loop {
        let data = if request.v2 {
            input.next()
        } else {
            let mut buffer = [0u8; 4096];
            match input.reader.read(&mut buffer) {
                Ok(0) | Err(_) => None,
                Ok(count) => Some(buffer[..count].to_vec()),
            }
        };
        let Some(data) = data else {
            return session.last_status;
        };
        for byte in data {
            match byte {
                b'\r' | b'\n' => {
                    send(writer, b"\r\n");
                    let text = String::from_utf8_lossy(&line).into_owned();
                    line.clear();
                    if !text.trim().is_empty() {
                        begin_command(core, &text);
                        let mut nothing = shell::Buffered::default();
                        if request.v2 {
                            let mut sink = PacketSink {
                                writer: &mut *writer,
                                pty: true,
                            };
                            shell::run_line(core, session, &text, &mut nothing, &mut sink);
                        } else {
                            let mut sink = RawSink {
                                writer: &mut *writer,
                                pty: true,
                            };
                            shell::run_line(core, session, &text, &mut nothing, &mut sink);
                        }
                        if let Some(code) = session.exit {
                            return code;
                        }
                    }
                    send(writer, prompt(session).as_bytes());
                }
                // Ctrl-D on an empty line ends the shell.
                0x04 if line.is_empty() => return session.last_status,
                // Backspace and DEL erase the last character.
                0x08 | 0x7f => {
                    if line.pop().is_some() {
                        send(writer, b"\x08 \x08");
                    }
                }
                // Ctrl-C drops the line.
                0x03 => {
                    line.clear();
                    send(writer, b"^C\r\n");
                    send(writer, prompt(session).as_bytes());
                }
                _ => {
                    line.push(byte);
                    send(writer, &[byte]);
                }
            }
        }
    }
}

fn run_exec(core: &Core, command: &str, mut reader: StreamReader, mut writer: StreamWriter) {
    let mut session = Session::default();
    begin_command(core, command);
    let mut input = RawInput {
        reader: &mut reader,
    };
    let mut sink = RawSink {
        writer: &mut writer,
        pty: false,
    };
    shell::run_line(core, &mut session, command, &mut input, &mut sink);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_services_parse_their_options() {
        assert_eq!(
            parse_shell("shell,v2,raw:getprop"),
            Some(ShellRequest {
                v2: true,
                pty: false,
                command: "getprop".into()
            })
        );
        assert_eq!(
            parse_shell("shell,v2,TERM=xterm-256color,pty:"),
            Some(ShellRequest {
                v2: true,
                pty: true,
                command: String::new()
            })
        );
        assert_eq!(
            parse_shell("shell:ls"),
            Some(ShellRequest {
                v2: false,
                pty: false,
                command: "ls".into()
            })
        );
        assert_eq!(parse_shell("shellx:ls"), None);
    }
}
