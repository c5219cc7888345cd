//! The device side of one adb connection: the CNXN handshake, then any number of concurrent
//! streams, each a service running on its own thread with flow control in both directions.
//!
//! The reader thread owns the socket's read half and dispatches messages: OPEN starts a
//! service (or is refused with CLSE), WRTE queues data for the stream's service, OKAY lets the
//! stream send its next WRTE, CLSE ends the stream. A WRTE is acknowledged when the service
//! takes the data, as adbd acknowledges once the data reached the service's socket, so a
//! service that reads nothing holds its host back instead of buffering without bound.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::wire::{
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_VERSION, A_WRTE, DEVICE_MAX_PAYLOAD, Packet,
    READ_LIMIT,
};

/// What runs a service on a stream once it is open.
pub(crate) type ServiceJob = Box<dyn FnOnce(StreamReader, StreamWriter) + Send>;

/// The services a device offers on its connections.
pub(crate) trait Services: Send + Sync + 'static {
    /// The device's CNXN banner (`device::ro.product.name=…;…;features=…`).
    fn banner(&self) -> String;
    /// The job for `service`, or `None` to refuse it (the host then sees `error: closed`).
    fn open(&self, service: &str) -> Option<ServiceJob>;
}

/// Locks `mutex`, taking the data even when a panicking thread poisoned it: the state here
/// stays consistent between statements, and a test's fake device must keep answering.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One live connection from an adb server.
#[derive(Debug)]
pub(crate) struct Connection {
    socket: TcpStream,
    writer: Mutex<TcpStream>,
    max_payload: AtomicU32,
    streams: Mutex<HashMap<u32, Arc<StreamShared>>>,
    next_id: AtomicU32,
    closed: AtomicBool,
}

#[derive(Debug, Default)]
struct Flow {
    /// The host took our last WRTE (or none was sent yet: an OPEN implies a READY).
    can_write: bool,
    closed: bool,
}

#[derive(Debug)]
struct StreamShared {
    local_id: u32,
    remote_id: u32,
    flow: Mutex<Flow>,
    changed: Condvar,
    inbound: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
}

impl StreamShared {
    /// Marks the stream closed and wakes whoever waits on it; true if it was open.
    fn mark_closed(&self) -> bool {
        let was_open = {
            let mut flow = lock(&self.flow);
            let was_open = !flow.closed;
            flow.closed = true;
            was_open
        };
        lock(&self.inbound).take();
        self.changed.notify_all();
        was_open
    }
}

impl Connection {
    fn new(socket: TcpStream) -> io::Result<Self> {
        let writer = socket.try_clone()?;
        Ok(Self {
            socket,
            writer: Mutex::new(writer),
            max_payload: AtomicU32::new(DEVICE_MAX_PAYLOAD),
            streams: Mutex::new(HashMap::new()),
            next_id: AtomicU32::new(1),
            closed: AtomicBool::new(false),
        })
    }

    fn send(&self, packet: &Packet) -> io::Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the connection is closed",
            ));
        }
        packet.write_to(&mut *lock(&self.writer))
    }

    /// Cuts the connection: both directions of the socket, and every stream.
    pub(crate) fn shut_down(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.socket.shutdown(Shutdown::Both);
        let streams: Vec<_> = lock(&self.streams).drain().map(|(_, s)| s).collect();
        for stream in streams {
            stream.mark_closed();
        }
    }

    fn max_payload(&self) -> usize {
        self.max_payload.load(Ordering::SeqCst) as usize
    }
}

/// Serves one accepted connection until the host goes away or [`Connection::shut_down`];
/// joins every service thread it started before returning.
pub(crate) fn serve(
    socket: TcpStream,
    services: Arc<dyn Services>,
    on_open: impl Fn(&Arc<Connection>),
) -> io::Result<()> {
    let _ = socket.set_nodelay(true);
    let connection = Arc::new(Connection::new(socket.try_clone()?)?);
    on_open(&connection);
    let mut reader = io::BufReader::new(socket);
    let mut connected = false;
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    // A broken header leaves the stream out of step, so the connection ends (protocol.md:
    // "MUST result in the closing of the remote connection").
    while let Ok(packet) = Packet::read_from(&mut reader, READ_LIMIT) {
        workers.retain(|worker| !worker.is_finished());
        match packet.command {
            A_CNXN => {
                // A second CNXN restarts the transport, as it does in adbd.
                if connected {
                    close_all_streams(&connection);
                }
                connected = true;
                let version = packet.arg0.min(A_VERSION);
                let max_payload = packet.arg1.clamp(4096, DEVICE_MAX_PAYLOAD);
                connection.max_payload.store(max_payload, Ordering::SeqCst);
                let banner = services.banner().into_bytes();
                if connection
                    .send(&Packet::new(A_CNXN, version, max_payload, banner))
                    .is_err()
                {
                    break;
                }
            }
            // Messages before the handshake are ignored (protocol.md).
            _ if !connected => {}
            A_OPEN => {
                let service = service_name(&packet.payload);
                match services.open(&service) {
                    Some(job) => {
                        let (reader_half, writer_half) = open_stream(&connection, packet.arg0);
                        if connection
                            .send(&Packet::new(
                                A_OKAY,
                                writer_half.local_id,
                                writer_half.remote_id,
                                Vec::new(),
                            ))
                            .is_err()
                        {
                            break;
                        }
                        let spawned = std::thread::Builder::new()
                            .name(format!("fake-adb {service}"))
                            .spawn(move || job(reader_half, writer_half));
                        if let Ok(worker) = spawned {
                            workers.push(worker);
                        }
                    }
                    None => {
                        if connection
                            .send(&Packet::new(A_CLSE, 0, packet.arg0, Vec::new()))
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
            A_OKAY => {
                if let Some(stream) = lock(&connection.streams).get(&packet.arg1) {
                    lock(&stream.flow).can_write = true;
                    stream.changed.notify_all();
                }
            }
            A_WRTE => {
                let stream = lock(&connection.streams).get(&packet.arg1).cloned();
                if let Some(stream) = stream
                    && let Some(sender) = lock(&stream.inbound).as_ref()
                {
                    let _ = sender.send(packet.payload);
                }
            }
            A_CLSE => {
                let stream = lock(&connection.streams).remove(&packet.arg1);
                if let Some(stream) = stream {
                    stream.mark_closed();
                }
            }
            // A host never sends these to a device that skipped AUTH and TLS; ignore them.
            A_AUTH | A_STLS => {}
            // An unknown command means the peer speaks something else: end the connection.
            _ => break,
        }
    }
    connection.shut_down();
    for worker in workers {
        let _ = worker.join();
    }
    Ok(())
}

fn close_all_streams(connection: &Connection) {
    let streams: Vec<_> = lock(&connection.streams).drain().map(|(_, s)| s).collect();
    for stream in streams {
        stream.mark_closed();
    }
}

/// The service string of an OPEN: the payload up to its terminating NUL.
fn service_name(payload: &[u8]) -> String {
    let end = payload
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(payload.len());
    String::from_utf8_lossy(&payload[..end]).into_owned()
}

fn open_stream(connection: &Arc<Connection>, remote_id: u32) -> (StreamReader, StreamWriter) {
    let local_id = connection.next_id.fetch_add(1, Ordering::SeqCst);
    let (sender, receiver) = mpsc::channel();
    let shared = Arc::new(StreamShared {
        local_id,
        remote_id,
        flow: Mutex::new(Flow {
            can_write: true,
            closed: false,
        }),
        changed: Condvar::new(),
        inbound: Mutex::new(Some(sender)),
    });
    lock(&connection.streams).insert(local_id, Arc::clone(&shared));
    let reader = StreamReader {
        connection: Arc::clone(connection),
        shared: Arc::clone(&shared),
        inbound: receiver,
        pending: Vec::new(),
        position: 0,
    };
    let writer = StreamWriter {
        connection: Arc::clone(connection),
        shared,
        local_id,
        remote_id,
        buffer: Vec::new(),
    };
    (reader, writer)
}

/// The host-to-device half of a stream.
#[derive(Debug)]
pub(crate) struct StreamReader {
    connection: Arc<Connection>,
    shared: Arc<StreamShared>,
    inbound: mpsc::Receiver<Vec<u8>>,
    pending: Vec<u8>,
    position: usize,
}

impl StreamReader {
    /// The next WRTE's payload, acknowledged to the host now that it is taken; `None` once the
    /// host closed the stream.
    pub(crate) fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.position < self.pending.len() {
            let rest = self.pending.split_off(self.position);
            self.pending.clear();
            self.position = 0;
            return Some(rest);
        }
        let chunk = self.inbound.recv().ok()?;
        if !lock(&self.shared.flow).closed {
            // The host waits for this before it sends the stream's next WRTE.
            let _ = self.connection.send(&Packet::new(
                A_OKAY,
                self.shared.local_id,
                self.shared.remote_id,
                Vec::new(),
            ));
        }
        Some(chunk)
    }
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.position >= self.pending.len() {
            match self.next_chunk() {
                Some(chunk) => {
                    self.pending = chunk;
                    self.position = 0;
                }
                None => return Ok(0),
            }
        }
        let available = &self.pending[self.position..];
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        self.position += count;
        Ok(count)
    }
}

/// The device-to-host half of a stream; dropping it closes the stream.
#[derive(Debug)]
pub(crate) struct StreamWriter {
    connection: Arc<Connection>,
    shared: Arc<StreamShared>,
    local_id: u32,
    remote_id: u32,
    buffer: Vec<u8>,
}

impl StreamWriter {
    /// The largest payload one WRTE may carry on this connection.
    pub(crate) fn max_payload(&self) -> usize {
        self.connection.max_payload()
    }

    /// Sends `data` now, in WRTEs of at most the negotiated size, each after the host took the
    /// one before.
    pub(crate) fn send(&mut self, data: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.send_now(data)
    }

    fn send_now(&self, data: &[u8]) -> io::Result<()> {
        for chunk in data.chunks(self.max_payload().max(1)) {
            {
                let mut flow = lock(&self.shared.flow);
                while !flow.can_write && !flow.closed {
                    flow = self
                        .shared
                        .changed
                        .wait(flow)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if flow.closed {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "the host closed the stream",
                    ));
                }
                flow.can_write = false;
            }
            self.connection.send(&Packet::new(
                A_WRTE,
                self.local_id,
                self.remote_id,
                chunk.to_vec(),
            ))?;
        }
        Ok(())
    }

    /// Queues `data`, sending full WRTEs as the queue fills: small protocol messages travel
    /// together, as they do through adbd's socket.
    pub(crate) fn queue(&mut self, data: &[u8]) -> io::Result<()> {
        self.buffer.extend_from_slice(data);
        let max = self.max_payload().max(1);
        if self.buffer.len() >= max {
            let whole = self.buffer.len() / max * max;
            let rest = self.buffer.split_off(whole);
            let full = std::mem::replace(&mut self.buffer, rest);
            self.send_now(&full)?;
        }
        Ok(())
    }

    /// Sends whatever [`queue`](Self::queue) holds.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buffer);
        self.send_now(&data)
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        let _ = self.flush();
        lock(&self.connection.streams).remove(&self.local_id);
        if self.shared.mark_closed() {
            let _ = self.connection.send(&Packet::new(
                A_CLSE,
                self.local_id,
                self.remote_id,
                Vec::new(),
            ));
        }
    }
}
