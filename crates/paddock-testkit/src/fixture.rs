//! A small web app for end-to-end device tests. [`FixtureApp`] serves hand-written, accessible
//! HTML (sign-in form, infinite list, modal dialog, canvas, big table, key log, pointer drag,
//! storage) on `127.0.0.1`, one thread per connection, no external resources. Dropping it stops
//! the server.
//!
//! Pages: `/`, `/login` (`?notice=1` puts a notice before the form), `/welcome?user=X`, `/list`, `/item/N` (1..=200), `/slow` (answers
//! after 1500 ms; `?again=1` reloads itself once loaded), `/canvas`, `/table?rows=N` (default 400, at most 5000), `/keys`, `/drag`,
//! `/storage`, `/logs`, `/locale`, `/session` (see [`web_data`]); `/hover`, `/popup-login`,
//! `/provider`, `/help`, `/upload`, `/download` and the attachments `/files/report.csv` and
//! `/files/big.bin?mb=N` (see `fixture/web_pages.rs`); the pages of [`real_web`]
//! (`/components`, `/frames`, `/frame/form`, `/frame/note`, `/frames/scroll`, `/frame/rows`,
//! `/todo`); anything else is a 404 page with the heading "Not found".
//!
//! The app answers on `127.0.0.2` too, on the same port: a page of `127.0.0.1` can embed a
//! frame of another site (Chromium gives it its own process), see [`FixtureApp::cross_site_url`].

mod real_web;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;

pub mod web_data;
mod web_pages;
pub use web_pages::REPORT_CSV;

/// How long `/slow` waits before answering.
pub const SLOW_DELAY: Duration = Duration::from_millis(1500);
/// Items `/list` ends with, and the largest `N` of `/item/N`.
pub const ITEM_COUNT: u32 = 200;
/// Rows `/table` shows without `?rows=`.
pub const DEFAULT_TABLE_ROWS: usize = 400;
/// The most rows `/table` shows.
pub const MAX_TABLE_ROWS: usize = 5000;

/// Longest request head the server reads; the rest of a request is ignored.
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The fixture web app, serving until dropped.
#[derive(Debug)]
pub struct FixtureApp {
    addr: SocketAddr,
    /// The same port on `127.0.0.2`, another site.
    cross_site: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
    accept: Vec<JoinHandle<()>>,
}

impl FixtureApp {
    /// Binds a free port on `127.0.0.1` and the same port on `127.0.0.2`, and starts serving.
    pub fn start() -> anyhow::Result<Self> {
        let (listener, cross_listener) = bind_pair()?;
        let addr = listener.local_addr().context("fixture app address")?;
        let cross_site = cross_listener.local_addr().context("fixture app address")?;
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let mut accept = Vec::new();
        for listener in [listener, cross_listener] {
            accept.push(
                std::thread::Builder::new()
                    .name("fixture-accept".to_owned())
                    .spawn({
                        let stop = Arc::clone(&stop);
                        let requests = Arc::clone(&requests);
                        move || accept_loop(&listener, &stop, &requests)
                    })
                    .context("spawn fixture accept thread")?,
            );
        }
        Ok(Self {
            addr,
            cross_site,
            stop,
            requests,
            accept,
        })
    }

    /// `http://127.0.0.2:PORT{path}`: the same app as another site.
    pub fn cross_site_url(&self, path: &str) -> String {
        format!("http://127.0.0.2:{}{path}", self.cross_site.port())
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT{path}`; `path` starts with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    /// Requests answered so far (any status). A request counts once its answer is written,
    /// before its connection closes.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FixtureApp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // One connection wakes each blocked `accept`; the loop then sees the flag and returns.
        // If even that fails the thread is left behind rather than hanging the test.
        for (addr, accept) in [self.addr, self.cross_site]
            .into_iter()
            .zip(std::mem::take(&mut self.accept))
        {
            if TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_ok() {
                let _ = accept.join();
            }
        }
    }
}

/// A free port on `127.0.0.1` that is free on `127.0.0.2` as well.
fn bind_pair() -> anyhow::Result<(TcpListener, TcpListener)> {
    let mut last = None;
    for _ in 0..50 {
        let listener = TcpListener::bind(("127.0.0.1", 0)).context("bind fixture app")?;
        let port = listener.local_addr().context("fixture app address")?.port();
        match TcpListener::bind(("127.0.0.2", port)) {
            Ok(cross) => return Ok((listener, cross)),
            Err(error) => last = Some(error),
        }
    }
    Err(anyhow::anyhow!(
        "no port was free on both 127.0.0.1 and 127.0.0.2: {last:?}"
    ))
}

fn accept_loop(listener: &TcpListener, stop: &Arc<AtomicBool>, requests: &Arc<AtomicUsize>) {
    for connection in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = connection else {
            // Out of descriptors and the like: back off instead of spinning.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let requests = Arc::clone(requests);
        // A connection whose thread cannot start is dropped, which the client sees as a reset.
        let _ = std::thread::Builder::new()
            .name("fixture-conn".to_owned())
            .spawn(move || serve(stream, &requests));
    }
}

fn serve(mut stream: TcpStream, requests: &AtomicUsize) {
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let (status, body, head_only) = match parse_request_line(&head) {
        None => (
            400,
            not_found_like("Bad request", "The request could not be read."),
            false,
        ),
        Some((method, target)) => match method {
            "GET" | "HEAD" => {
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                if let Some(_written) =
                    web_pages::serve_file(&mut stream, path, query, method == "HEAD")
                {
                    requests.fetch_add(1, Ordering::SeqCst);
                    let _ = stream.shutdown(Shutdown::Write);
                    return;
                }
                if path == "/slow" {
                    std::thread::sleep(SLOW_DELAY);
                }
                let (status, body) = route(path, query);
                (status, body, method == "HEAD")
            }
            _ => (
                405,
                not_found_like("Method not allowed", "This app only answers GET."),
                false,
            ),
        },
    };
    let _ = write_response(&mut stream, status, &body, head_only);
    requests.fetch_add(1, Ordering::SeqCst);
    let _ = stream.shutdown(Shutdown::Write);
}

/// Reads up to the blank line ending the request head; `None` if the peer sent nothing usable.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    let mut head = Vec::new();
    let mut buf = [0_u8; 4096];
    loop {
        let read = stream.read(&mut buf).ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buf[..read]);
        if let Some(end) = head.windows(4).position(|window| window == b"\r\n\r\n") {
            head.truncate(end);
            break;
        }
        if head.len() > MAX_HEAD {
            break;
        }
    }
    if head.is_empty() {
        return None;
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next()?;
    (version.starts_with("HTTP/1.") && target.starts_with('/')).then_some((method, target))
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    body: &str,
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Unknown",
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\n\
         Content-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\n\
         Cache-Control: no-store\r\n\
         Connection: close\r\n",
        body.len()
    );
    if status == 405 {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    response.push_str("\r\n");
    if !head_only {
        response.push_str(body);
    }
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

fn route(path: &str, query: &str) -> (u16, String) {
    match path {
        "/" => (200, page("Fixture", INDEX_BODY, "")),
        "/login" if query.split('&').any(|pair| pair == "notice=1") => (
            200,
            page(
                "Sign in - Fixture",
                &format!("{LOGIN_NOTICE}\n{LOGIN_BODY}"),
                LOGIN_SCRIPT,
            ),
        ),
        "/login" => (200, page("Sign in - Fixture", LOGIN_BODY, LOGIN_SCRIPT)),
        "/welcome" => (200, welcome(query)),
        "/list" => (200, list()),
        // `?again=1`: the page reloads itself once loaded, so its tab is (almost) always loading.
        "/slow" => (
            200,
            page(
                "Slow page - Fixture",
                SLOW_BODY,
                if query_param(query, "again").is_some() {
                    "addEventListener(\"load\", () => location.reload());"
                } else {
                    ""
                },
            ),
        ),
        "/canvas" => (200, page("Drawing - Fixture", CANVAS_BODY, CANVAS_SCRIPT)),
        "/table" => (200, table(query)),
        "/keys" => (200, page("Keys - Fixture", KEYS_BODY, KEYS_SCRIPT)),
        "/drag" => (200, page("Drag - Fixture", DRAG_BODY, DRAG_SCRIPT)),
        "/storage" => (200, page("Storage - Fixture", STORAGE_BODY, STORAGE_SCRIPT)),
        "/components" => (
            200,
            page(
                "Components - Fixture",
                &format!(
                    "{}\n{}",
                    real_web::COMPONENTS_STYLE,
                    real_web::COMPONENTS_BODY
                ),
                real_web::COMPONENTS_SCRIPT,
            ),
        ),
        "/frames" => (
            200,
            page(
                "Frames - Fixture",
                real_web::FRAMES_BODY,
                real_web::FRAMES_SCRIPT,
            ),
        ),
        "/frame/form" => (
            200,
            page(
                "Form - Fixture",
                real_web::FRAME_FORM_BODY,
                real_web::FRAME_FORM_SCRIPT,
            ),
        ),
        "/frame/note" => (200, page("Note - Fixture", real_web::FRAME_NOTE_BODY, "")),
        "/frames/scroll" => (
            200,
            page(
                "Scrolling frame - Fixture",
                real_web::SCROLL_FRAMES_BODY,
                real_web::SCROLL_FRAMES_SCRIPT,
            ),
        ),
        "/frame/rows" => (200, page("Rows - Fixture", "", real_web::FRAME_ROWS_SCRIPT)),
        "/todo" => (
            200,
            page(
                "Todos - Fixture",
                &format!("{}\n{}", real_web::TODO_STYLE, real_web::TODO_BODY),
                real_web::TODO_SCRIPT,
            ),
        ),
        "/logs" => (
            200,
            page("Logs - Fixture", web_data::LOGS_BODY, web_data::LOGS_SCRIPT),
        ),
        "/locale" => (
            200,
            page(
                "Locale - Fixture",
                web_data::LOCALE_BODY,
                web_data::LOCALE_SCRIPT,
            ),
        ),
        "/session" => (
            200,
            page(
                "Session - Fixture",
                web_data::SESSION_BODY,
                &web_data::session_script(),
            ),
        ),
        _ => match path.strip_prefix("/item/").and_then(item_number) {
            Some(n) => (200, item(n)),
            None => web_pages::route(path, query).unwrap_or_else(|| (404, not_found(path))),
        },
    }
}

/// `N` of `/item/N`: a canonical decimal in `1..=ITEM_COUNT`.
fn item_number(segment: &str) -> Option<u32> {
    let n: u32 = segment.parse().ok()?;
    ((1..=ITEM_COUNT).contains(&n) && n.to_string() == segment).then_some(n)
}

/// A whole document: shared head and style, `body` inside `<main>`, then `script`.
fn page(title: &str, body: &str, script: &str) -> String {
    let script = if script.is_empty() {
        String::new()
    } else {
        format!("<script>{script}</script>\n")
    };
    format!(
        "<!doctype html>\n\
         <html lang=\"en\">\n\
         <head>\n\
         <meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n\
         <style>{STYLE}</style>\n\
         </head>\n\
         <body>\n\
         <main>\n{body}\n</main>\n\
         {script}\
         </body>\n\
         </html>\n",
        escape_html(title)
    )
}

fn welcome(query: &str) -> String {
    let user = query_param(query, "user").unwrap_or_default();
    let user = escape_html(&user);
    let body = format!(
        "<h1>Welcome, {user}</h1>\n\
         <p>You are signed in.</p>\n\
         <p><a href=\"/list\">Items</a></p>"
    );
    page("Welcome - Fixture", &body, "")
}

fn list() -> String {
    let mut body = String::from("<h1>Items</h1>\n<ul id=\"items\" class=\"items\">\n");
    for n in 1..=20 {
        body.push_str(&format!("<li><a href=\"/item/{n}\">Item {n}</a></li>\n"));
    }
    body.push_str("</ul>\n<div id=\"sentinel\" class=\"sentinel\" aria-hidden=\"true\"></div>");
    page("Items - Fixture", &body, LIST_SCRIPT)
}

fn item(n: u32) -> String {
    let body = format!(
        "<h1>Item {n}</h1>\n\
         <p>Details of item {n}.</p>\n\
         <p><button type=\"button\" id=\"delete\">Delete</button></p>\n\
         <p id=\"result\" role=\"status\"></p>\n\
         <p><a href=\"/list\">Back to list</a></p>\n\
         <dialog id=\"confirm\" aria-labelledby=\"confirm-title\" data-item=\"{n}\">\n\
         <h2 id=\"confirm-title\">Delete Item {n}?</h2>\n\
         <p class=\"actions\">\
         <button type=\"button\" id=\"cancel\">Cancel</button> \
         <button type=\"button\" id=\"ok\">Confirm</button>\
         </p>\n\
         </dialog>"
    );
    page(&format!("Item {n} - Fixture"), &body, ITEM_SCRIPT)
}

fn table(query: &str) -> String {
    let rows = query_param(query, "rows")
        .and_then(|rows| rows.parse::<usize>().ok())
        .unwrap_or(DEFAULT_TABLE_ROWS)
        .min(MAX_TABLE_ROWS);
    let mut body = String::with_capacity(200 + rows * 220);
    body.push_str(
        "<h1 id=\"accounts\">Accounts</h1>\n\
         <table aria-labelledby=\"accounts\">\n\
         <thead><tr><th scope=\"col\">ID</th><th scope=\"col\">Name</th>\
         <th scope=\"col\">Email</th><th scope=\"col\">Status</th>\
         <th scope=\"col\">Action</th></tr></thead>\n<tbody>\n",
    );
    for i in 1..=rows {
        let status = if i % 2 == 1 { "active" } else { "paused" };
        let target = (i - 1) % ITEM_COUNT as usize + 1;
        body.push_str(&format!(
            "<tr><td>{i}</td><td>Name {i}</td><td>user{i}@example.com</td><td>{status}</td>\
             <td><a href=\"/item/{target}\">Open</a></td></tr>\n"
        ));
    }
    body.push_str("</tbody>\n</table>");
    page("Accounts - Fixture", &body, "")
}

fn not_found(path: &str) -> String {
    not_found_like(
        "Not found",
        &format!("Nothing lives at <code>{}</code>.", escape_html(path)),
    )
}

/// An error page: `heading`, a line of (already escaped) HTML, a link home.
fn not_found_like(heading: &str, detail_html: &str) -> String {
    let body = format!(
        "<h1>{}</h1>\n<p>{detail_html}</p>\n<p><a href=\"/\">Home</a></p>",
        escape_html(heading)
    );
    page(heading, &body, "")
}

/// The first value of `name` in an `application/x-www-form-urlencoded` query.
fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key) == name).then(|| percent_decode(value))
        })
        .next()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; background: #fff; }
main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.75rem; margin: 0 0 1rem; }
a { color: #0b57d0; }
button { font: inherit; min-height: 44px; padding: 0.5rem 1rem; border: 1px solid #444; border-radius: 6px; background: #f1f3f4; color: #1b1b1b; cursor: pointer; }
button:focus-visible, a:focus-visible, input:focus-visible, [tabindex]:focus-visible { outline: 3px solid #f9ab00; outline-offset: 2px; }
label { display: block; margin-top: 0.75rem; font-weight: 600; }
input { font: inherit; width: 100%; min-height: 44px; padding: 0.5rem; border: 1px solid #444; border-radius: 6px; }
form button { margin-top: 1rem; }
[role=alert] { color: #b00020; font-weight: 600; }
nav ul { padding-left: 1.25rem; }
nav li { margin: 0.5rem 0; }
.items { list-style: none; margin: 0; padding: 0; }
.items li { height: 48px; border-bottom: 1px solid #ddd; }
.items a { display: block; height: 100%; line-height: 48px; padding: 0 0.5rem; }
.sentinel { height: 1px; }
table { border-collapse: collapse; width: 100%; font-size: 0.875rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; }
thead th { background: #f1f3f4; }
#board { display: block; width: 300px; height: 200px; border: 0; padding: 0; }
#box { position: relative; z-index: 1; width: 80px; height: 80px; display: flex; align-items: center; justify-content: center; text-align: center; border-radius: 8px; background: #0b57d0; color: #fff; font-weight: 600; cursor: grab; touch-action: none; user-select: none; -webkit-user-select: none; }
#zone { width: 200px; height: 120px; margin-top: 360px; display: flex; align-items: center; justify-content: center; border: 3px dashed #444; border-radius: 8px; }
dialog { max-width: 90vw; padding: 1rem 1.5rem; border: 1px solid #444; border-radius: 8px; }
dialog::backdrop { background: rgb(0 0 0 / 0.4); }
dialog h2 { margin-top: 0; }
"#;

const INDEX_BODY: &str = r#"<h1>Fixture app</h1>
<p>Pages for end-to-end device tests.</p>
<nav aria-label="Pages">
<ul>
<li><a href="/login">Sign in</a></li>
<li><a href="/list">Items</a></li>
<li><a href="/slow">Slow page</a></li>
<li><a href="/canvas">Canvas</a></li>
<li><a href="/table">Table</a></li>
<li><a href="/keys">Keys</a></li>
<li><a href="/drag">Drag</a></li>
<li><a href="/storage">Storage</a></li>
</ul>
</nav>"#;

/// `/login?notice=1`: elements before the form, so every ref of the page shifts.
const LOGIN_NOTICE: &str = r#"<aside aria-label="Notice">
<p>Scheduled maintenance tonight.</p>
<a href="/">Read more</a>
<button type="button">Dismiss</button>
</aside>"#;

const LOGIN_BODY: &str = r#"<h1>Sign in</h1>
<form id="login" novalidate>
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<p id="error" role="alert"></p>
<button type="submit">Sign in</button>
</form>"#;

const LOGIN_SCRIPT: &str = r#"
document.getElementById('login').addEventListener('submit', (event) => {
  event.preventDefault();
  const email = document.getElementById('email').value;
  const password = document.getElementById('password').value;
  if (email !== '' && password !== '') {
    location.href = '/welcome?user=' + encodeURIComponent(email);
  } else {
    document.getElementById('error').textContent = 'Email and password are required';
  }
});
"#;

const LIST_SCRIPT: &str = r#"
const MAX = 200, STEP = 20, DELAY_MS = 150;
const list = document.getElementById('items');
const sentinel = document.getElementById('sentinel');
let count = list.children.length;
let loading = false;
function appendItems() {
  const end = Math.min(count + STEP, MAX);
  const fragment = document.createDocumentFragment();
  for (let n = count + 1; n <= end; n++) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '/item/' + n;
    a.textContent = 'Item ' + n;
    li.append(a);
    fragment.append(li);
  }
  list.append(fragment);
  count = end;
}
const observer = new IntersectionObserver((entries) => {
  if (loading || count >= MAX || !entries.some((entry) => entry.isIntersecting)) return;
  loading = true;
  setTimeout(() => {
    appendItems();
    loading = false;
    if (count >= MAX) {
      observer.disconnect();
      const end = document.createElement('p');
      end.textContent = 'End of list';
      sentinel.replaceWith(end);
    } else {
      // Observing again reports the current state, so a sentinel still in view loads more.
      observer.unobserve(sentinel);
      observer.observe(sentinel);
    }
  }, DELAY_MS);
});
observer.observe(sentinel);
"#;

const ITEM_SCRIPT: &str = r#"
const dialog = document.getElementById('confirm');
const result = document.getElementById('result');
document.getElementById('delete').addEventListener('click', () => dialog.showModal());
document.getElementById('cancel').addEventListener('click', () => dialog.close());
document.getElementById('ok').addEventListener('click', () => {
  dialog.close();
  result.textContent = 'Item ' + dialog.dataset.item + ' deleted';
});
"#;

const SLOW_BODY: &str = r#"<h1>Slow page loaded</h1>
<p>This page took a while.</p>
<p><a href="/">Home</a></p>"#;

const CANVAS_BODY: &str = r#"<h1>Drawing</h1>
<canvas id="board" width="300" height="200"></canvas>
<p id="status" role="status"></p>"#;

const CANVAS_SCRIPT: &str = r#"
const board = document.getElementById('board');
const status = document.getElementById('status');
const ctx = board.getContext('2d');
ctx.fillStyle = '#f4f1e8';
ctx.fillRect(0, 0, 300, 200);
ctx.fillStyle = '#0b57d0';
ctx.fillRect(20, 20, 90, 60);
ctx.fillStyle = '#d93025';
ctx.beginPath();
ctx.arc(210, 60, 40, 0, Math.PI * 2);
ctx.fill();
ctx.fillStyle = '#188038';
ctx.fillRect(130, 130, 140, 45);
ctx.strokeStyle = '#1b1b1b';
ctx.lineWidth = 4;
ctx.beginPath();
ctx.arc(65, 145, 32, 0, Math.PI * 2);
ctx.stroke();
board.addEventListener('click', (event) => {
  status.textContent = 'Clicked at ' + Math.round(event.offsetX) + ',' + Math.round(event.offsetY);
});
"#;

const KEYS_BODY: &str = r#"<h1>Keys</h1>
<label for="field">Field</label>
<input id="field" name="field" type="text" autocomplete="off">
<p id="log" role="log"></p>
<p id="submitted" role="status"></p>"#;

const KEYS_SCRIPT: &str = r#"
const field = document.getElementById('field');
const log = document.getElementById('log');
const submitted = document.getElementById('submitted');
field.addEventListener('keydown', (event) => {
  log.textContent += (log.textContent ? ' ' : '') + 'key:' + event.key;
  if (event.key === 'Enter') {
    submitted.textContent = 'Submitted: ' + field.value;
  }
});
"#;

const DRAG_BODY: &str = r#"<h1>Drag</h1>
<p>Drag the box into the drop zone, or focus it and press Enter.</p>
<div id="box" role="button" tabindex="0" aria-label="Drag me">Drag me</div>
<div id="zone" role="region" aria-label="Drop zone">Drop zone</div>
<p id="status" role="status"></p>"#;

const DRAG_SCRIPT: &str = r#"
const box = document.getElementById('box');
const zone = document.getElementById('zone');
const status = document.getElementById('status');
let offset = { x: 0, y: 0 };
let drag = null;
function place(x, y) {
  box.style.transform = 'translate(' + x + 'px, ' + y + 'px)';
}
function overZone(x, y) {
  const r = zone.getBoundingClientRect();
  return x >= r.left && x <= r.right && y >= r.top && y <= r.bottom;
}
function dropped() {
  status.textContent = 'Dropped';
}
box.addEventListener('pointerdown', (event) => {
  event.preventDefault();
  box.setPointerCapture(event.pointerId);
  drag = { id: event.pointerId, x: event.clientX, y: event.clientY };
  status.textContent = '';
});
box.addEventListener('pointermove', (event) => {
  if (!drag || event.pointerId !== drag.id) return;
  place(offset.x + event.clientX - drag.x, offset.y + event.clientY - drag.y);
});
box.addEventListener('pointerup', (event) => {
  if (!drag || event.pointerId !== drag.id) return;
  const moved = { x: offset.x + event.clientX - drag.x, y: offset.y + event.clientY - drag.y };
  drag = null;
  if (overZone(event.clientX, event.clientY)) {
    offset = moved;
    place(offset.x, offset.y);
    dropped();
  } else {
    place(offset.x, offset.y);
  }
});
box.addEventListener('pointercancel', () => {
  drag = null;
  place(offset.x, offset.y);
});
// Keyboard alternative to dragging: Enter or Space moves the box into the zone.
box.addEventListener('keydown', (event) => {
  if (event.key !== 'Enter' && event.key !== ' ') return;
  event.preventDefault();
  const b = box.getBoundingClientRect();
  const z = zone.getBoundingClientRect();
  offset = {
    x: offset.x + z.left + (z.width - b.width) / 2 - b.left,
    y: offset.y + z.top + (z.height - b.height) / 2 - b.top,
  };
  place(offset.x, offset.y);
  dropped();
});
"#;

const STORAGE_BODY: &str = r#"<h1>Storage</h1>
<p id="value"></p>
<p><button type="button" id="remember">Remember me</button></p>"#;

const STORAGE_SCRIPT: &str = r#"
const value = document.getElementById('value');
function show() {
  value.textContent = 'Remembered: ' + (localStorage.getItem('remembered') ?? 'nothing') +
    '; Cookie: ' + (document.cookie || 'no cookie');
}
document.getElementById('remember').addEventListener('click', () => {
  localStorage.setItem('remembered', 'yes');
  document.cookie = 'remembered=yes; path=/';
  show();
});
show();
"#;
