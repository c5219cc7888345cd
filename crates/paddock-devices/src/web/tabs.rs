//! Tabs of a web device: pages the site opens (`window.open`, `target=_blank`, OAuth-style
//! popups) join the device's session as tabs, and `tabs` lists, selects, closes and opens them.
//!
//! The browser reports every new page target (`Target.setDiscoverTargets`); one of the
//! device's browser context that Paddock did not create itself is a tab the page opened, and
//! becomes the active tab, as a person would see it in front. When the active tab goes (a
//! popup calling `window.close()` after signing in), its opener, else the tab before it, becomes
//! active; when the last tab goes, a fresh blank tab takes its place, so the session never
//! loses its page. Every tab's session is readied by `prepare_session`, like the first.
//!
//! Tabs are numbered from 1 in the order they opened.

use std::sync::Arc;

use serde_json::{Value, json};
use tracing::debug;

use super::{BLANK, CALL_TIMEOUT, PageState, WebDevice, attach_page, cdp_error};
use crate::device::{DeviceError, Observation, ObserveOptions, TabsInfo};

/// The most tabs a device keeps; a page that opens more has its newest ones closed.
pub const MAX_TABS: usize = 20;

/// One tab: its page target and the flattened CDP session attached to it.
#[derive(Debug, Clone)]
pub(super) struct Tab {
    pub(super) target_id: String,
    pub(super) session_id: String,
    /// The tab that opened this one, if a page did.
    pub(super) opener: Option<String>,
}

/// One tab as `tabs list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabSummary {
    /// 1-based.
    pub index: usize,
    pub title: String,
    pub url: String,
    pub active: bool,
}

/// The tab list of a device whose only tab is its first page.
pub(super) fn initial(target_id: &str, session_id: &str) -> Vec<Tab> {
    vec![Tab {
        target_id: target_id.to_owned(),
        session_id: session_id.to_owned(),
        opener: None,
    }]
}

/// Removes `target_id` from the tab list; when it was the active tab, its opener (else the tab
/// before it) becomes active. Returns the tab removed, if it was one of the list.
fn remove_tab(state: &mut PageState, target_id: &str) -> Option<Tab> {
    let position = state
        .tabs
        .iter()
        .position(|tab| tab.target_id == target_id)?;
    let removed = state.tabs.remove(position);
    if state.target_id == target_id && !state.tabs.is_empty() {
        let next = removed
            .opener
            .as_deref()
            .and_then(|opener| state.tabs.iter().find(|tab| tab.target_id == opener))
            .or_else(|| state.tabs.get(position.saturating_sub(1)))
            .or_else(|| state.tabs.last())
            .cloned();
        if let Some(next) = next {
            state.target_id = next.target_id;
            state.session_id = next.session_id;
        }
    }
    Some(removed)
}

/// Tab `index` (1-based), or `[not_found]` naming the range.
fn tab_at(state: &PageState, index: usize) -> Result<&Tab, DeviceError> {
    index
        .checked_sub(1)
        .and_then(|position| state.tabs.get(position))
        .ok_or_else(|| {
            DeviceError::NotFound(format!(
                "there is no tab {index}; tabs are numbered 1 to {} (see `tabs` `list`)",
                state.tabs.len()
            ))
        })
}

impl WebDevice {
    /// How many tabs there are and which is active, when there is more than one.
    pub(super) async fn tabs_info(&self) -> Option<TabsInfo> {
        let state = self.state.lock().await;
        if state.tabs.len() < 2 {
            return None;
        }
        let active = state
            .tabs
            .iter()
            .position(|tab| tab.target_id == state.target_id)
            .map_or(0, |position| position + 1);
        Some(TabsInfo {
            count: state.tabs.len(),
            active,
        })
    }

    /// Every tab, in the order they opened, with its title and URL.
    pub async fn list_tabs(&self) -> Result<Vec<TabSummary>, DeviceError> {
        let (tabs, active) = {
            let state = self.state.lock().await;
            (state.tabs.clone(), state.target_id.clone())
        };
        let targets = self
            .cdp
            .call(None, "Target.getTargets", json!({}), CALL_TIMEOUT)
            .await
            .map_err(cdp_error)?;
        let infos = targets
            .get("targetInfos")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(tabs
            .iter()
            .enumerate()
            .map(|(position, tab)| {
                let info = infos.iter().find(|info| {
                    info.get("targetId").and_then(Value::as_str) == Some(tab.target_id.as_str())
                });
                let text = |key: &str| {
                    info.and_then(|info| info.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                TabSummary {
                    index: position + 1,
                    title: text("title"),
                    url: text("url"),
                    active: tab.target_id == active,
                }
            })
            .collect())
    }

    /// Makes tab `index` (1-based) the active one.
    pub async fn select_tab(&self, index: usize) -> Result<(), DeviceError> {
        let target_id = {
            let mut state = self.state.lock().await;
            let tab = tab_at(&state, index)?.clone();
            state.target_id = tab.target_id.clone();
            state.session_id = tab.session_id;
            tab.target_id
        };
        // Brings it to the front, so timers and animations run as in a visible tab.
        let _ = self
            .cdp
            .call(
                None,
                "Target.activateTarget",
                json!({ "targetId": target_id }),
                CALL_TIMEOUT,
            )
            .await;
        Ok(())
    }

    /// Closes tab `index` (1-based), by default the active one. Closing the last tab leaves a
    /// fresh blank one.
    pub async fn close_tab(&self, index: Option<usize>) -> Result<(), DeviceError> {
        let target_id = {
            let mut state = self.state.lock().await;
            let target_id = match index {
                None => state.target_id.clone(),
                Some(index) => tab_at(&state, index)?.target_id.clone(),
            };
            if let Some(removed) = remove_tab(&mut state, &target_id) {
                self.loading.set(&removed.session_id, false);
            }
            if state.tabs.is_empty() {
                self.open_tab_locked(&mut state, None).await?;
            }
            target_id
        };
        let _ = self
            .cdp
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": target_id }),
                CALL_TIMEOUT,
            )
            .await;
        Ok(())
    }

    /// Opens a new tab (blank, or at the http(s) `url`) and makes it active.
    pub async fn new_tab(&self, url: Option<&str>) -> Result<(), DeviceError> {
        if let Some(url) = url {
            super::input::check_url(url)?;
        }
        let mut state = self.state.lock().await;
        if state.tabs.len() >= MAX_TABS {
            return Err(DeviceError::InvalidInput(format!(
                "a device keeps at most {MAX_TABS} tabs; close one first"
            )));
        }
        self.open_tab_locked(&mut state, url).await
    }

    /// Settles (at most `bound`) and observes, as an action's answer does.
    pub async fn settle_and_observe(
        &self,
        bound: std::time::Duration,
        options: ObserveOptions,
    ) -> Result<Observation, DeviceError> {
        let settled = bound.is_zero() || self.settle(bound).await;
        let mut observation = self.observe_inner(options).await?;
        observation.settled = Some(settled);
        Ok(observation)
    }

    /// Creates a blank page in the device's context, readies it, makes it the active tab and,
    /// with `url`, opens that. The caller holds the state lock, so the discovery watch sees the
    /// new target as known.
    async fn open_tab_locked(
        &self,
        state: &mut PageState,
        url: Option<&str>,
    ) -> Result<(), DeviceError> {
        let created = self
            .cdp
            .call(
                None,
                "Target.createTarget",
                json!({ "url": BLANK, "browserContextId": state.context_id }),
                CALL_TIMEOUT,
            )
            .await
            .map_err(cdp_error)?;
        let target_id = created
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let tab = self.adopt_locked(state, &target_id, None).await?;
        state.target_id = tab.target_id;
        state.session_id = tab.session_id.clone();
        if let Some(url) = url {
            let result = self
                .cdp
                .call(
                    Some(&tab.session_id),
                    "Page.navigate",
                    json!({ "url": url }),
                    CALL_TIMEOUT,
                )
                .await
                .map_err(cdp_error)?;
            if let Some(error) = result.get("errorText").and_then(Value::as_str) {
                return Err(DeviceError::Failed(format!(
                    "could not open `{url}`: {error}"
                )));
            }
        }
        Ok(())
    }

    /// Attaches to `target_id`, readies its session and adds it to the tab list.
    async fn adopt_locked(
        &self,
        state: &mut PageState,
        target_id: &str,
        opener: Option<String>,
    ) -> Result<Tab, DeviceError> {
        let session_id = attach_page(
            &self.cdp,
            target_id,
            &self.profile,
            state.orientation,
            &self.data,
        )
        .await?;
        super::spawn_event_watch(
            &self.cdp,
            session_id.clone(),
            target_id.to_owned(),
            self.loading.clone(),
            self.notices.clone(),
        );
        let tab = Tab {
            target_id: target_id.to_owned(),
            session_id,
            opener,
        };
        state.tabs.push(tab.clone());
        Ok(tab)
    }

    /// A page target appeared: one of this device's context that is not a tab yet was opened
    /// by a page, and becomes the active tab.
    async fn on_target_created(&self, info: &Value) {
        let text = |key: &str| info.get(key).and_then(Value::as_str).unwrap_or_default();
        if text("type") != "page" {
            return;
        }
        let target_id = text("targetId").to_owned();
        let mut state = self.state.lock().await;
        if text("browserContextId") != state.context_id
            || state.tabs.iter().any(|tab| tab.target_id == target_id)
        {
            return;
        }
        if state.tabs.len() >= MAX_TABS {
            drop(state);
            let _ = self
                .cdp
                .call(
                    None,
                    "Target.closeTarget",
                    json!({ "targetId": target_id }),
                    CALL_TIMEOUT,
                )
                .await;
            if let Ok(mut notices) = self.notices.lock() {
                notices.push(format!(
                    "the page opened a tab past the limit of {MAX_TABS}; it was closed"
                ));
            }
            return;
        }
        let opener = info
            .get("openerId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match self.adopt_locked(&mut state, &target_id, opener).await {
            Ok(tab) => {
                state.target_id = tab.target_id;
                state.session_id = tab.session_id;
                if let Ok(mut notices) = self.notices.lock() {
                    notices.push(format!(
                        "the page opened a new tab ({} of {}), now active",
                        state.tabs.len(),
                        state.tabs.len()
                    ));
                }
            }
            // A popup that closed at once: nothing to adopt.
            Err(error) => debug!(device = %self.id, %error, "could not attach to a new tab"),
        }
    }

    /// A page target went (closed by its page, or crashed): it leaves the tab list, and the
    /// last one is replaced by a blank tab.
    async fn on_target_gone(&self, target_id: &str) {
        let mut state = self.state.lock().await;
        let Some(removed) = remove_tab(&mut state, target_id) else {
            return;
        };
        self.loading.set(&removed.session_id, false);
        if state.tabs.is_empty()
            && let Err(error) = self.open_tab_locked(&mut state, None).await
        {
            debug!(device = %self.id, %error, "could not open a blank tab after the last closed");
        }
    }
}

/// Turns on target discovery and follows tabs opening and closing for as long as the device
/// lives.
pub(super) async fn watch(device: &Arc<WebDevice>) -> Result<(), DeviceError> {
    let mut events = device.cdp.events();
    device
        .cdp
        .call(
            None,
            "Target.setDiscoverTargets",
            json!({ "discover": true }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
    let weak = Arc::downgrade(device);
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            if event.session_id.is_some() {
                continue;
            }
            let Some(device) = weak.upgrade() else {
                return;
            };
            let target_of = |params: &Value| {
                params
                    .get("targetId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match event.method.as_str() {
                "Target.targetCreated" => {
                    if let Some(info) = event.params.get("targetInfo") {
                        device.on_target_created(info).await;
                    }
                }
                "Target.targetDestroyed" | "Target.detachedFromTarget" => {
                    device.on_target_gone(&target_of(&event.params)).await;
                }
                "Target.targetCrashed" => {
                    device.on_target_gone(&target_of(&event.params)).await;
                }
                _ => {}
            }
        }
    });
    Ok(())
}
