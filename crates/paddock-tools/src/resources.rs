//! Resources a session's tools produced — screenshots today; PDFs, downloads, task media and
//! exported plans later — under stable URIs:
//! `paddock://session/<sessionUuid>/<kind>/<name>` (kind: `screenshot`, `pdf`, `download`,
//! `plan`) and `paddock://task/<taskId>/<kind>/<step>`. This scheme is part of the tool
//! contract (CONTRACT.md).
//!
//! Only the session that made a resource can list or read it: another session's URI is "not
//! found", the same answer as a URI that never existed. Each session keeps at most
//! [`MAX_PER_SESSION`] resources and [`MAX_BYTES_PER_SESSION`] bytes (the oldest go first), for
//! at most [`KEEP_FOR`]; the store lives in memory and ends with the daemon.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::session::SessionKey;

/// Resources one session keeps.
pub const MAX_PER_SESSION: usize = 64;
/// Bytes one session keeps.
pub const MAX_BYTES_PER_SESSION: usize = 32 * 1024 * 1024;
/// How long a resource stays readable.
pub const KEEP_FOR: Duration = Duration::from_secs(30 * 60);
/// Resources per `resources/list` page.
pub const PAGE: usize = 50;

/// What a tool's result links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRef {
    pub uri: String,
    pub name: String,
    pub mime_type: &'static str,
    pub size: u64,
}

struct Stored {
    reference: ResourceRef,
    data: Arc<Vec<u8>>,
    created: Instant,
}

#[derive(Default)]
struct SessionResources {
    next: u64,
    bytes: usize,
    items: VecDeque<Stored>,
}

impl SessionResources {
    fn prune(&mut self, now: Instant) {
        while self.items.len() > MAX_PER_SESSION
            || self.bytes > MAX_BYTES_PER_SESSION
            || self
                .items
                .front()
                .is_some_and(|oldest| now.duration_since(oldest.created) > KEEP_FOR)
        {
            match self.items.pop_front() {
                Some(oldest) => self.bytes = self.bytes.saturating_sub(oldest.data.len()),
                None => break,
            }
        }
    }
}

/// The daemon's resources, per session.
#[derive(Default)]
pub struct Resources {
    sessions: Mutex<HashMap<SessionKey, SessionResources>>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resources").finish_non_exhaustive()
    }
}

impl Resources {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, SessionResources>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Keeps `data` as the session's next resource of `kind`; its name is its number.
    pub fn put(
        &self,
        session: &SessionKey,
        kind: &str,
        extension: &str,
        mime_type: &'static str,
        data: Vec<u8>,
    ) -> ResourceRef {
        let now = Instant::now();
        let mut sessions = self.lock();
        let resources = sessions.entry(session.clone()).or_default();
        resources.next += 1;
        let name = format!("{}.{extension}", resources.next);
        let reference = ResourceRef {
            uri: format!("paddock://session/{}/{kind}/{name}", session.as_str()),
            name: format!("{kind} {name}"),
            mime_type,
            size: data.len() as u64,
        };
        resources.bytes += data.len();
        resources.items.push_back(Stored {
            reference: reference.clone(),
            data: Arc::new(data),
            created: now,
        });
        resources.prune(now);
        reference
    }

    /// A page of the session's resources, newest last, from `cursor` (a number this method
    /// gave out); the cursor of the next page when there is one.
    pub fn list(
        &self,
        session: &SessionKey,
        cursor: Option<&str>,
    ) -> Result<(Vec<ResourceRef>, Option<String>), String> {
        let start = match cursor {
            None => 0,
            Some(text) => text
                .parse::<usize>()
                .map_err(|_| format!("`{text}` is not a cursor this server gave out"))?,
        };
        let mut sessions = self.lock();
        let Some(resources) = sessions.get_mut(session) else {
            return Ok((Vec::new(), None));
        };
        resources.prune(Instant::now());
        let page: Vec<ResourceRef> = resources
            .items
            .iter()
            .skip(start)
            .take(PAGE)
            .map(|stored| stored.reference.clone())
            .collect();
        let next = (start + page.len() < resources.items.len()).then(|| (start + PAGE).to_string());
        Ok((page, next))
    }

    /// The bytes behind `uri`, if `session` made it and it is still kept.
    pub fn read(&self, session: &SessionKey, uri: &str) -> Option<(ResourceRef, Arc<Vec<u8>>)> {
        let mut sessions = self.lock();
        let resources = sessions.get_mut(session)?;
        resources.prune(Instant::now());
        resources
            .items
            .iter()
            .find(|stored| stored.reference.uri == uri)
            .map(|stored| (stored.reference.clone(), stored.data.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> SessionKey {
        SessionKey::parse(text).expect("a session key")
    }

    #[test]
    fn a_session_reads_its_own_resources_only() {
        let resources = Resources::default();
        let mine = resources.put(&key("a"), "screenshot", "jpg", "image/jpeg", vec![1, 2, 3]);
        assert_eq!(mine.uri, "paddock://session/a/screenshot/1.jpg");
        assert_eq!(mine.size, 3);
        assert_eq!(
            resources
                .read(&key("a"), &mine.uri)
                .map(|(_, data)| data.to_vec()),
            Some(vec![1, 2, 3])
        );
        assert!(resources.read(&key("b"), &mine.uri).is_none());
        assert!(
            resources
                .read(&key("a"), "paddock://session/a/screenshot/9.jpg")
                .is_none()
        );
        assert_eq!(resources.list(&key("b"), None), Ok((Vec::new(), None)));
    }

    #[test]
    fn lists_page_and_old_resources_give_way() {
        let resources = Resources::default();
        for n in 0..(MAX_PER_SESSION + 6) {
            resources.put(&key("s"), "screenshot", "jpg", "image/jpeg", vec![n as u8]);
        }
        let (first, next) = resources.list(&key("s"), None).expect("a page");
        assert_eq!(first.len(), PAGE);
        // The six oldest gave way to the newest.
        assert_eq!(first[0].uri, "paddock://session/s/screenshot/7.jpg");
        let (second, last) = resources.list(&key("s"), next.as_deref()).expect("a page");
        assert_eq!(first.len() + second.len(), MAX_PER_SESSION);
        assert_eq!(last, None);
        assert!(resources.list(&key("s"), Some("x")).is_err());
        // A session over its byte budget keeps only what fits.
        let big = vec![0u8; MAX_BYTES_PER_SESSION / 2 + 1];
        resources.put(&key("t"), "screenshot", "jpg", "image/jpeg", big.clone());
        resources.put(&key("t"), "screenshot", "jpg", "image/jpeg", big);
        assert_eq!(resources.list(&key("t"), None).expect("a page").0.len(), 1);
    }
}
