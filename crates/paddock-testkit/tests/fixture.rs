#![cfg(test)]
//! The fixture web app answers every page with accessible, self-contained HTML.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use paddock_testkit::fixture::FixtureApp;

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Sends `METHOD path` with `Connection: close` on a fresh connection and reads to EOF.
fn request(port: u16, method: &str, path: &str) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn get(app: &FixtureApp, path: &str) -> Response {
    request(app.port(), "GET", path)
}

/// GETs `path`, checks it is a 200 HTML page and returns the body.
fn page(app: &FixtureApp, path: &str) -> String {
    let response = get(app, path);
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    assert_eq!(
        response.header("Content-Type"),
        Some("text/html; charset=utf-8"),
        "{path}"
    );
    response.body
}

const PAGES: &[&str] = &[
    "/",
    "/login",
    "/welcome?user=ada",
    "/list",
    "/item/1",
    "/item/200",
    "/canvas",
    "/table?rows=5",
    "/keys",
    "/drag",
    "/storage",
];

#[test]
fn url_and_port() {
    let app = FixtureApp::start().unwrap();
    assert_ne!(app.port(), 0);
    assert_eq!(
        app.url("/list"),
        format!("http://127.0.0.1:{}/list", app.port())
    );
}

#[test]
fn every_page_is_a_self_contained_mobile_document() {
    let app = FixtureApp::start().unwrap();
    for path in PAGES {
        let response = get(&app, path);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(
            response.header("Content-Type"),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        assert_eq!(response.header("Connection"), Some("close"), "{path}");
        assert_eq!(
            response.header("Content-Length"),
            Some(response.body.len().to_string().as_str()),
            "{path}"
        );
        let body = &response.body;
        assert!(body.starts_with("<!doctype html>"), "{path}");
        assert!(body.contains("<html lang=\"en\">"), "{path}");
        assert!(
            body.contains(
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            ),
            "{path}"
        );
        assert!(
            body.contains("<title>") && body.contains("</title>"),
            "{path}"
        );
        assert!(body.contains("<h1"), "{path}");
        for external in ["http://", "https://", "src=\"//", "href=\"//", "@import"] {
            assert!(!body.contains(external), "{path} refers to `{external}`");
        }
    }
}

#[test]
fn index_links_every_page() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/");
    assert!(body.contains("<title>Fixture</title>"));
    assert!(body.contains("<h1>Fixture app</h1>"));
    for (href, text) in [
        ("/login", "Sign in"),
        ("/list", "Items"),
        ("/slow", "Slow page"),
        ("/canvas", "Canvas"),
        ("/table", "Table"),
        ("/keys", "Keys"),
        ("/drag", "Drag"),
        ("/storage", "Storage"),
    ] {
        let link = format!("<a href=\"{href}\">{text}</a>");
        assert!(body.contains(&link), "missing {link}");
    }
}

#[test]
fn login_form_is_labelled() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/login");
    assert!(body.contains("<h1>Sign in</h1>"));
    assert!(body.contains("<form"));
    assert!(body.contains("<label for=\"email\">Email</label>"));
    assert!(body.contains("id=\"email\"") && body.contains("type=\"email\""));
    assert!(body.contains("<label for=\"password\">Password</label>"));
    assert!(body.contains("id=\"password\"") && body.contains("type=\"password\""));
    assert!(body.contains("<button type=\"submit\">Sign in</button>"));
    assert!(body.contains("role=\"alert\""));
    assert!(body.contains("Email and password are required"));
    assert!(body.contains("'/welcome?user=' + encodeURIComponent(email)"));
}

#[test]
fn welcome_greets_and_escapes_the_user() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/welcome?user=ada%40example.com");
    assert!(body.contains("<h1>Welcome, ada@example.com</h1>"));
    assert!(body.contains("<a href=\"/list\">Items</a>"));

    let body = page(&app, "/welcome?user=Ada+Lovelace");
    assert!(body.contains("<h1>Welcome, Ada Lovelace</h1>"));

    let body = page(
        &app,
        "/welcome?user=%3Cscript%3Ealert(%22x%22)%3C%2Fscript%3E",
    );
    assert!(
        body.contains("<h1>Welcome, &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</h1>"),
        "{body}"
    );
    assert!(!body.contains("<script>"), "{body}");

    // An unencoded `<` in the target is escaped too.
    let body = page(&app, "/welcome?user=<b>&other=1");
    assert!(body.contains("<h1>Welcome, &lt;b&gt;</h1>"), "{body}");
}

#[test]
fn list_starts_with_twenty_items_and_loads_more() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/list");
    assert!(body.contains("<h1>Items</h1>"));
    assert_eq!(body.matches("<li>").count(), 20);
    assert!(body.contains("<li><a href=\"/item/1\">Item 1</a></li>"));
    assert!(body.contains("<li><a href=\"/item/20\">Item 20</a></li>"));
    assert!(!body.contains("Item 21"));
    assert!(body.contains("id=\"sentinel\""));
    assert!(body.contains("IntersectionObserver"));
    assert!(body.contains("'End of list'"));
    assert!(body.contains("height: 48px"));
}

#[test]
fn item_page_has_a_confirm_dialog() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/item/7");
    assert!(body.contains("<title>Item 7 - Fixture</title>"));
    assert!(body.contains("<h1>Item 7</h1>"));
    assert!(body.contains("<p>Details of item 7.</p>"));
    assert!(body.contains(">Delete</button>"));
    assert!(body.contains("<dialog id=\"confirm\""));
    assert!(body.contains(">Delete Item 7?</h2>"));
    assert!(body.contains(">Cancel</button>"));
    assert!(body.contains(">Confirm</button>"));
    assert!(body.contains("showModal()"));
    assert!(body.contains("' deleted'"));
    assert!(body.contains("role=\"status\""));
    assert!(body.contains("<a href=\"/list\">Back to list</a>"));

    assert!(page(&app, "/item/200").contains("<h1>Item 200</h1>"));
    for missing in ["/item/0", "/item/201", "/item/abc", "/item/", "/item/07"] {
        let response = get(&app, missing);
        assert_eq!(response.status, 404, "{missing}");
        assert!(response.body.contains("<h1>Not found</h1>"), "{missing}");
    }
}

#[test]
fn slow_page_answers() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/slow");
    assert!(body.contains("<h1>Slow page loaded</h1>"));
}

#[test]
fn canvas_page_has_a_bare_canvas_and_a_status() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/canvas");
    assert!(body.contains("<h1>Drawing</h1>"));
    assert!(body.contains("<canvas id=\"board\" width=\"300\" height=\"200\"></canvas>"));
    assert!(body.contains("<p id=\"status\" role=\"status\"></p>"));
    assert!(body.contains("'Clicked at '"));
    assert!(body.contains("event.offsetX") && body.contains("event.offsetY"));
}

#[test]
fn table_rows_follow_the_query() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/table?rows=3");
    assert!(body.contains("<h1 id=\"accounts\">Accounts</h1>"));
    assert_eq!(body.matches("<tr>").count(), 4, "header and 3 rows");
    for header in ["ID", "Name", "Email", "Status", "Action"] {
        assert!(body.contains(&format!("<th scope=\"col\">{header}</th>")));
    }
    assert!(body.contains(
        "<tr><td>1</td><td>Name 1</td><td>user1@example.com</td><td>active</td>\
         <td><a href=\"/item/1\">Open</a></td></tr>"
    ));
    assert!(body.contains("<td>user2@example.com</td><td>paused</td>"));
    assert!(body.contains("<td>user3@example.com</td><td>active</td>"));
    assert!(!body.contains("user4@example.com"));

    assert_eq!(page(&app, "/table").matches("<tr>").count(), 401);
    assert_eq!(page(&app, "/table?rows=junk").matches("<tr>").count(), 401);
    assert_eq!(page(&app, "/table?rows=0").matches("<tr>").count(), 1);
    let big = page(&app, "/table?rows=999999");
    assert_eq!(big.matches("<tr>").count(), 5001);
    // Row 201 opens item 1 again; row 5000 opens item 200.
    assert!(big.contains("<td>201</td><td>Name 201</td>"));
    assert!(big.contains(
        "<td>user201@example.com</td><td>active</td><td><a href=\"/item/1\">Open</a></td>"
    ));
    assert!(big.contains(
        "<td>user5000@example.com</td><td>paused</td><td><a href=\"/item/200\">Open</a></td>"
    ));
}

#[test]
fn keys_page_logs_keys() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/keys");
    assert!(body.contains("<h1>Keys</h1>"));
    assert!(body.contains("<label for=\"field\">Field</label>"));
    assert!(body.contains("<input id=\"field\""));
    assert!(body.contains("<p id=\"log\" role=\"log\"></p>"));
    assert!(body.contains("'key:' + event.key"));
    assert!(body.contains("'Submitted: '"));
}

#[test]
fn drag_page_uses_pointer_events() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/drag");
    assert!(body.contains("<h1>Drag</h1>"));
    assert!(body.contains("role=\"button\" tabindex=\"0\" aria-label=\"Drag me\""));
    assert!(body.contains("aria-label=\"Drop zone\""));
    for event in [
        "pointerdown",
        "pointermove",
        "pointerup",
        "setPointerCapture",
    ] {
        assert!(body.contains(event), "{event}");
    }
    assert!(body.contains("'Dropped'"));
}

#[test]
fn storage_page_remembers() {
    let app = FixtureApp::start().unwrap();
    let body = page(&app, "/storage");
    assert!(body.contains("<h1>Storage</h1>"));
    assert!(body.contains("<p id=\"value\"></p>"));
    assert!(body.contains(">Remember me</button>"));
    assert!(body.contains("localStorage.setItem('remembered', 'yes')"));
    assert!(body.contains("document.cookie = 'remembered=yes; path=/'"));
    assert!(body.contains("'nothing'") && body.contains("'no cookie'"));
}

#[test]
fn unknown_paths_and_methods() {
    let app = FixtureApp::start().unwrap();
    for path in ["/nope", "/list/", "/login/extra", "/<script>"] {
        let response = get(&app, path);
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(
            response.header("Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert!(response.body.contains("<h1>Not found</h1>"), "{path}");
        assert!(!response.body.contains("<script>"), "{path}");
    }

    let response = request(app.port(), "POST", "/login");
    assert_eq!(response.status, 405);
    assert_eq!(response.header("Allow"), Some("GET, HEAD"));

    let response = request(app.port(), "HEAD", "/");
    assert_eq!(response.status, 200);
    assert!(response.body.is_empty());
    assert_ne!(response.header("Content-Length"), Some("0"));
}

#[test]
fn counts_requests() {
    let app = FixtureApp::start().unwrap();
    assert_eq!(app.requests(), 0);
    get(&app, "/");
    get(&app, "/nope");
    request(app.port(), "POST", "/");
    assert_eq!(app.requests(), 3);
}

#[test]
fn serves_connections_in_parallel() {
    let app = FixtureApp::start().unwrap();
    let port = app.port();
    let slow = std::thread::spawn(move || request(port, "GET", "/slow").status);
    let fast: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || request(port, "GET", "/list").status))
        .collect();
    for handle in fast {
        assert_eq!(handle.join().unwrap(), 200);
    }
    assert_eq!(slow.join().unwrap(), 200);
    assert_eq!(app.requests(), 9);
}

#[test]
fn drop_stops_the_server() {
    let app = FixtureApp::start().unwrap();
    let port = app.port();
    assert_eq!(get(&app, "/").status, 200);
    drop(app);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
