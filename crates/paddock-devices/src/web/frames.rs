//! Cross-origin iframes. Chromium puts a frame of another site in its own renderer process, a
//! separate CDP target: the page helper cannot reach into it. Every page session auto-attaches
//! its frames (`Target.setAutoAttach` with flattened sessions, in `prepare_session`), and this
//! module keeps the tree of those frame sessions. An observation runs the helper in each frame
//! too and merges the frame's elements into the page's, in the frame's place and coordinates;
//! refs from a frame carry its prefix (`f2e5`), so a later action goes to the frame that made
//! the ref. Input events are always dispatched on the page: Chromium routes them into the frame
//! under the point, and keys to the focused frame.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::cdp::Cdp;
use super::{CALL_TIMEOUT, PAGE_JS, WebDevice};
use crate::device::DeviceError;

/// One cross-origin frame's session.
#[derive(Debug, Clone)]
struct ChildFrame {
    session: String,
    /// The frame's id, which is its target's id.
    frame_id: String,
    /// The session of the document that holds the frame's `<iframe>`.
    parent: String,
    /// The ref prefix of the frame's elements, such as `f2`.
    prefix: String,
    /// Refs handed out in the frame so far (a new document continues from here).
    ref_base: u64,
}

/// The frame sessions of a device, for every tab.
#[derive(Debug, Default)]
pub(super) struct Frames {
    children: Mutex<Vec<ChildFrame>>,
    next_prefix: Mutex<u64>,
}

/// Where a frame's document is on the page: its offset and the visible part (the clip, in page
/// coordinates), and the ref of its `<iframe>` in the parent.
#[derive(Debug, Clone)]
struct Placement {
    offset: (f64, f64),
    clip: [f64; 4],
    owner_ref: String,
}

/// The frames a tab shows, in tree order, each with where it is.
struct Placed {
    frame: ChildFrame,
    placement: Placement,
}

/// A frame's `<iframe>` in the top document its parent's session reaches: the content box
/// (in that document's viewport coordinates) and the iframe's ref.
struct FrameBox {
    content: [f64; 4],
    owner_ref: String,
}

/// Cross-origin frames an observation looks into, at most (a page of ad frames stays cheap).
const MAX_FRAMES: usize = 64;

/// Places the frames of a tree (parents before children, `parents[i]` the index of frame
/// `i`'s parent, `None` under the tab's document), each with its box in its parent's document
/// (`None`: not shown): offsets add up and clips narrow down from the viewport; a frame whose
/// parent is not shown is not shown either. The answer is in the tree's order.
fn place_tree(
    parents: &[Option<usize>],
    boxes: Vec<Option<FrameBox>>,
    viewport: (f64, f64),
) -> Vec<Option<Placement>> {
    let top = Placement {
        offset: (0.0, 0.0),
        clip: [0.0, 0.0, viewport.0, viewport.1],
        owner_ref: String::new(),
    };
    let mut placements: Vec<Option<Placement>> = Vec::with_capacity(parents.len());
    for (parent, frame_box) in parents.iter().zip(boxes) {
        let parent = match parent {
            None => Some(&top),
            Some(index) => placements.get(*index).and_then(Option::as_ref),
        };
        let placement = parent.zip(frame_box).map(|(parent, frame_box)| {
            let [left, top, width, height] = frame_box.content;
            let (x, y) = (left + parent.offset.0, top + parent.offset.1);
            Placement {
                offset: (x, y),
                clip: [
                    x.max(parent.clip[0]),
                    y.max(parent.clip[1]),
                    (x + width).min(parent.clip[2]),
                    (y + height).min(parent.clip[3]),
                ],
                owner_ref: frame_box.owner_ref,
            }
        });
        placements.push(placement);
    }
    placements
}

impl Frames {
    /// Follows `Target.attachedToTarget` and `Target.detachedFromTarget` for the device's whole
    /// browser (one Chromium per device, so every frame target is this device's).
    pub(super) fn watch(self: &Arc<Self>, cdp: &Cdp) {
        let mut events = cdp.events();
        let cdp = cdp.clone();
        let frames = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return,
                };
                let Some(frames) = frames.upgrade() else {
                    return;
                };
                match event.method.as_str() {
                    "Target.attachedToTarget" => {
                        let info = &event.params["targetInfo"];
                        let (Some(parent), Some(session), Some(frame_id)) = (
                            event.session_id.clone(),
                            event.params["sessionId"].as_str(),
                            info["targetId"].as_str(),
                        ) else {
                            continue;
                        };
                        if info["type"].as_str() != Some("iframe") {
                            continue;
                        }
                        frames.attach(ChildFrame {
                            session: session.to_owned(),
                            frame_id: frame_id.to_owned(),
                            parent,
                            prefix: String::new(),
                            ref_base: 1,
                        });
                        let cdp = cdp.clone();
                        let session = session.to_owned();
                        tokio::spawn(async move {
                            // Frames inside this frame attach to it in turn.
                            let _ = auto_attach(&cdp, &session).await;
                            let _ = cdp
                                .call(
                                    Some(&session),
                                    "Page.addScriptToEvaluateOnNewDocument",
                                    json!({ "source": PAGE_JS }),
                                    CALL_TIMEOUT,
                                )
                                .await;
                        });
                    }
                    "Target.detachedFromTarget" => {
                        if let Some(session) = event.params["sessionId"].as_str() {
                            frames.detach(session);
                        }
                    }
                    _ => {}
                }
            }
        });
    }

    fn attach(&self, mut frame: ChildFrame) {
        let mut next = self.next_prefix.lock().unwrap_or_else(|e| e.into_inner());
        *next += 1;
        frame.prefix = format!("f{next}");
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        children.retain(|other| other.frame_id != frame.frame_id);
        children.push(frame);
    }

    /// Forgets a frame session and every frame below it.
    fn detach(&self, session: &str) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let mut gone = vec![session.to_owned()];
        while let Some(session) = gone.pop() {
            children.retain(|child| {
                if child.parent == session {
                    gone.push(child.session.clone());
                }
                child.session != session
            });
        }
    }

    /// Forgets every frame (the device was reset).
    pub(super) fn clear(&self) {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn children_of(&self, parent: &str) -> Vec<ChildFrame> {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|child| child.parent == parent)
            .cloned()
            .collect()
    }

    fn by_prefix(&self, prefix: &str) -> Option<ChildFrame> {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|child| child.prefix == prefix)
            .cloned()
    }

    fn set_ref_base(&self, session: &str, next: u64) {
        if let Some(child) = self
            .children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
            .find(|child| child.session == session)
        {
            child.ref_base = child.ref_base.max(next);
        }
    }
}

/// Makes `session` attach the frames of its document as flattened sessions of their own.
pub(super) async fn auto_attach(cdp: &Cdp, session: &str) -> Result<(), DeviceError> {
    let params = json!({
        "autoAttach": true,
        "waitForDebuggerOnStart": false,
        "flatten": true,
        "filter": [{ "type": "iframe" }],
    });
    if cdp
        .call(Some(session), "Target.setAutoAttach", params, CALL_TIMEOUT)
        .await
        .is_ok()
    {
        return Ok(());
    }
    // A Chromium without target filters: attach everything, frames are picked out by type.
    let params = json!({ "autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true });
    cdp.call(Some(session), "Target.setAutoAttach", params, CALL_TIMEOUT)
        .await
        .map(|_| ())
        .map_err(|error| DeviceError::Failed(error.to_string()))
}

/// The prefix of a frame ref (`f2` of `f2e5`); `None` for a ref of the page itself.
fn ref_prefix(reference: &str) -> Option<&str> {
    let rest = reference.strip_prefix('f')?;
    let digits = rest.find('e')?;
    (digits > 0 && rest[..digits].bytes().all(|b| b.is_ascii_digit()))
        .then(|| &reference[..=digits])
}

fn shift_box(value: &mut Value, key: &str, (dx, dy): (f64, f64)) {
    if let Some(array) = value.get_mut(key).and_then(Value::as_array_mut) {
        if let Some(x) = array.first().and_then(Value::as_f64) {
            array[0] = json!(x + dx);
        }
        if let Some(y) = array.get(1).and_then(Value::as_f64) {
            array[1] = json!(y + dy);
        }
    }
}

impl WebDevice {
    /// Where `frame`'s document is in its parent's (the top document its parent's session
    /// reaches): its `<iframe>`'s content box and ref; `None` when the frame is not shown (or
    /// went away meanwhile).
    async fn frame_box(&self, frame: &ChildFrame) -> Option<FrameBox> {
        let owner = self
            .cdp
            .call(
                Some(&frame.parent),
                "DOM.getFrameOwner",
                json!({ "frameId": frame.frame_id }),
                CALL_TIMEOUT,
            )
            .await
            .ok()?;
        let node = owner.get("backendNodeId")?.clone();
        let resolved = self
            .cdp
            .call(
                Some(&frame.parent),
                "DOM.resolveNode",
                json!({ "backendNodeId": node }),
                CALL_TIMEOUT,
            )
            .await
            .ok()?;
        let object = resolved.pointer("/object/objectId")?.as_str()?.to_owned();
        // The box is asked of the topmost document of the parent's session that can be
        // reached, so same-origin frames around the `<iframe>` are counted in.
        let function = "function () { let w = window; try { while (w !== w.parent && w.parent.__paddock) w = w.parent; } catch (_) {} return w.__paddock ? w.__paddock.frameBox(this) : null; }";
        let answer = self
            .cdp
            .call(
                Some(&frame.parent),
                "Runtime.callFunctionOn",
                json!({ "objectId": object, "functionDeclaration": function, "returnByValue": true }),
                CALL_TIMEOUT,
            )
            .await;
        // Released in the background: nothing waits on it.
        let (cdp, parent_session) = (self.cdp.clone(), frame.parent.clone());
        tokio::spawn(async move {
            let _ = cdp
                .call(
                    Some(&parent_session),
                    "Runtime.releaseObject",
                    json!({ "objectId": object }),
                    CALL_TIMEOUT,
                )
                .await;
        });
        let value = answer.ok()?.pointer("/result/value")?.clone();
        if value.get("visible") != Some(&Value::Bool(true)) {
            return None;
        }
        let content = value.get("content")?.as_array()?;
        let at = |index: usize| content.get(index).and_then(Value::as_f64).unwrap_or(0.0);
        Some(FrameBox {
            content: [at(0), at(1), at(2), at(3)],
            owner_ref: value.get("ref")?.as_str()?.to_owned(),
        })
    }

    /// The frames the tab of `session` shows, parents before children, with their places.
    async fn placed_frames(&self, session: &str, viewport: (f64, f64)) -> Vec<Placed> {
        let tree = self.frame_tree(session);
        let boxes =
            futures_util::future::join_all(tree.iter().map(|(frame, _)| self.frame_box(frame)))
                .await;
        let parents: Vec<Option<usize>> = tree.iter().map(|(_, parent)| *parent).collect();
        let placements = place_tree(&parents, boxes, viewport);
        tree.into_iter()
            .zip(placements)
            .filter_map(|((frame, _), placement)| {
                Some(Placed {
                    frame,
                    placement: placement?,
                })
            })
            .collect()
    }

    /// Every cross-origin frame under the tab of `session`, parents before children, each
    /// with the index of its parent frame (`None` under the tab's document).
    fn frame_tree(&self, session: &str) -> Vec<(ChildFrame, Option<usize>)> {
        let mut tree: Vec<(ChildFrame, Option<usize>)> = self
            .frames
            .children_of(session)
            .into_iter()
            .map(|child| (child, None))
            .collect();
        let mut next = 0;
        while next < tree.len() && tree.len() < MAX_FRAMES {
            let children = self.frames.children_of(&tree[next].0.session);
            tree.extend(children.into_iter().map(|child| (child, Some(next))));
            next += 1;
        }
        tree.truncate(MAX_FRAMES);
        tree
    }

    /// Observes the tab's document with the page helper (`expression`) and its cross-origin
    /// frames with theirs, all at once, and merges each frame's elements in after its
    /// `<iframe>`, in page coordinates.
    pub(super) async fn observe_document(
        &self,
        expression: &str,
        full: bool,
    ) -> Result<Value, DeviceError> {
        let session = self.session().await;
        let tree = self.frame_tree(&session);
        let top = self.eval_on(&session, expression, false);
        let boxes =
            futures_util::future::join_all(tree.iter().map(|(frame, _)| self.frame_box(frame)));
        let inner = futures_util::future::join_all(tree.iter().map(|(frame, _)| {
            let expression = format!(
                "window.__paddock.observe({{ full: {full}, refBase: {}, prefix: \"{}\" }})",
                frame.ref_base, frame.prefix
            );
            async move { self.eval_on(&frame.session, &expression, false).await }
        }));
        let (raw, boxes, inner) = tokio::join!(top, boxes, inner);
        let mut raw = raw?;
        if !tree.is_empty() {
            let viewport = (
                raw.pointer("/viewport/0")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0),
                raw.pointer("/viewport/1")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0),
            );
            // Every frame observed hands out refs, shown or not: a new document there
            // continues after them.
            for ((frame, _), observed) in tree.iter().zip(&inner) {
                if let Some(next) = observed
                    .as_ref()
                    .ok()
                    .and_then(|inner| inner.get("nextRef"))
                    .and_then(Value::as_u64)
                {
                    self.frames.set_ref_base(&frame.session, next);
                }
            }
            let parents: Vec<Option<usize>> = tree.iter().map(|(_, parent)| *parent).collect();
            let shown = place_tree(&parents, boxes, viewport)
                .into_iter()
                .zip(inner)
                .filter_map(|(placement, observed)| Some((placement?, observed)))
                .collect();
            Self::merge_frames(&mut raw, shown, full);
        }
        Ok(raw)
    }

    /// Adds the elements of the tab's shown cross-origin frames (each with its place and its
    /// helper's observation) to `raw` (the page helper's observation of the tab's document),
    /// each after its `<iframe>`.
    fn merge_frames(
        raw: &mut Value,
        frames: Vec<(Placement, Result<Value, DeviceError>)>,
        full: bool,
    ) {
        let mut below = 0u64;
        let mut above = 0u64;
        let mut focused = None;
        for (placement, inner) in frames {
            let Ok(inner) = inner else {
                continue;
            };
            if let Some(inner_focus) = inner.get("focused").and_then(Value::as_str) {
                focused = Some((placement.owner_ref.clone(), inner_focus.to_owned()));
            }
            let mut elements = Vec::new();
            for mut element in inner
                .get("elements")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                shift_box(&mut element, "bounds", placement.offset);
                let bounds = element.get("bounds").and_then(Value::as_array);
                let at = |index: usize| bounds.and_then(|b| b.get(index)).and_then(Value::as_f64);
                let (Some(x), Some(y), Some(w), Some(h)) = (at(0), at(1), at(2), at(3)) else {
                    continue;
                };
                let [l, t, r, b] = placement.clip;
                let shown = x + w > l && x < r && y + h > t && y < b;
                if !shown {
                    if !full {
                        if y >= b {
                            below += 1;
                        } else {
                            above += 1;
                        }
                        continue;
                    }
                    element["offscreen"] = Value::Bool(true);
                }
                element["bounds"] = json!([x.round(), y.round(), w.round(), h.round()]);
                elements.push(element);
            }
            let Some(list) = raw.get_mut("elements").and_then(Value::as_array_mut) else {
                return;
            };
            let at = list
                .iter()
                .position(|element| element["ref"].as_str() == Some(&placement.owner_ref))
                .map_or(list.len(), |index| index + 1);
            list.splice(at..at, elements);
        }
        let add = |raw: &mut Value, key: &str, more: u64| {
            let now = raw
                .pointer(&format!("/offscreenCount/{key}"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if let Some(count) = raw.get_mut("offscreenCount") {
                count[key] = json!(now + more);
            }
        };
        add(raw, "below", below);
        add(raw, "above", above);
        // The page sees the focus on an `<iframe>`; the frame knows which of its elements.
        if let Some((owner, inner)) = focused
            && raw.get("focused").and_then(Value::as_str) == Some(owner.as_str())
        {
            raw["focused"] = json!(inner);
        }
    }

    /// Scrolls what a finger at the page point (`x`, `y`) moving by (`dx`, `dy`) would: the
    /// innermost scroller there that can move, inside frames of any origin, else the
    /// scrollers around them up to the page. Whether anything moved.
    pub(super) async fn scroll_at(
        &self,
        x: f64,
        y: f64,
        dx: f64,
        dy: f64,
    ) -> Result<bool, DeviceError> {
        let expression = |x: f64, y: f64, chain: bool| {
            format!("window.__paddock.scrollAt({x}, {y}, {dx}, {dy}, {chain})")
        };
        let moved = |answer: &Value| answer.get("moved") == Some(&Value::Bool(true));
        let top = self.session().await;
        let mut answer = self.eval_on(&top, &expression(x, y, false), false).await?;
        if answer.get("frame").is_none() {
            return Ok(moved(&answer));
        }
        // A cross-origin frame is under the point: scroll inside it (and its own frames).
        let (width, height, _) = self.viewport().await?;
        let placed = self.placed_frames(&top, (width, height)).await;
        for _ in 0..placed.len() {
            let Some(owner) = answer.get("frame").and_then(Value::as_str) else {
                break;
            };
            let Some(frame) = placed
                .iter()
                .find(|placed| placed.placement.owner_ref == owner)
            else {
                break;
            };
            let (local_x, local_y) = (x - frame.placement.offset.0, y - frame.placement.offset.1);
            answer = self
                .eval_on(
                    &frame.frame.session,
                    &expression(local_x, local_y, false),
                    false,
                )
                .await?;
            if moved(&answer) {
                return Ok(true);
            }
        }
        // Nothing in the frames could move that way: the page's scrollers around them.
        let answer = self.eval_on(&top, &expression(x, y, true), false).await?;
        Ok(moved(&answer))
    }

    /// The placement of the frame that made `prefix`'s refs, through its parents.
    async fn placement_of(&self, prefix: &str) -> Option<(ChildFrame, Placement)> {
        self.frames.by_prefix(prefix)?;
        let session = self.session().await;
        let (width, height, _) = self.viewport().await.ok()?;
        self.placed_frames(&session, (width, height))
            .await
            .into_iter()
            .find(|placed| placed.frame.prefix == prefix)
            .map(|placed| (placed.frame, placed.placement))
    }

    /// Shifts a frame helper's `locate`/`focused` answer into page coordinates, and judges
    /// whether it is off screen by the page (and the frame's visible part), not the frame.
    fn shift_found(mut found: Value, placement: &Placement) -> Value {
        if found.get("found") != Some(&Value::Bool(true)) {
            return found;
        }
        shift_box(&mut found, "bounds", placement.offset);
        let bounds = found.get("bounds").and_then(Value::as_array);
        let at = |index: usize| {
            bounds
                .and_then(|b| b.get(index))
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        };
        let (x, y, w, h) = (at(0), at(1), at(2), at(3));
        let [l, t, r, b] = placement.clip;
        let offscreen = if y >= b {
            json!("below")
        } else if y + h <= t {
            json!("above")
        } else if x >= r {
            json!("right")
        } else if x + w <= l {
            json!("left")
        } else {
            Value::Null
        };
        found["offscreen"] = offscreen;
        let (left, right) = (x.max(l), (x + w).min(r));
        let (top, bottom) = (y.max(t), (y + h).min(b));
        found["center"] = json!([(left + right) / 2.0, (top + bottom) / 2.0]);
        found
    }

    /// Finds what `query` (`{ref}`, `{id}` or `{text}`) names: in the page and its same-origin
    /// frames first, then in each cross-origin frame. Near misses of a text come from all.
    pub(super) async fn locate(&self, query: &Value) -> Result<Value, DeviceError> {
        let expression = format!("window.__paddock.locate({query})");
        if let Some(prefix) = query["ref"].as_str().and_then(ref_prefix) {
            let Some((frame, placement)) = self.placement_of(prefix).await else {
                return Ok(json!({ "found": false }));
            };
            let found = self.eval_on(&frame.session, &expression, false).await?;
            return Ok(Self::shift_found(found, &placement));
        }
        let found = self.eval(&expression, false).await?;
        if found.get("found") == Some(&Value::Bool(true)) || query.get("ref").is_some() {
            return Ok(found);
        }
        let session = self.session().await;
        let (width, height, _) = self.viewport().await?;
        let mut near: Vec<Value> = found
            .get("near")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for Placed { frame, placement } in self.placed_frames(&session, (width, height)).await {
            let Ok(inner) = self.eval_on(&frame.session, &expression, false).await else {
                continue;
            };
            if inner.get("found") == Some(&Value::Bool(true)) {
                return Ok(Self::shift_found(inner, &placement));
            }
            if let Some(more) = inner.get("near").and_then(Value::as_array) {
                near.extend(more.iter().cloned());
            }
        }
        near.truncate(5);
        Ok(json!({ "found": false, "near": near }))
    }

    /// The session whose document holds the focus (the page's, or a cross-origin frame's),
    /// and the helper's `focused()` answer in page coordinates.
    pub(super) async fn focus(&self) -> Result<(String, Value), DeviceError> {
        let session = self.session().await;
        let found = self.eval("window.__paddock.focused()", false).await?;
        let Some(owner) = found.get("frame").and_then(Value::as_str) else {
            return Ok((session, found));
        };
        let (width, height, _) = self.viewport().await?;
        let mut owner = owner.to_owned();
        let placed = self.placed_frames(&session, (width, height)).await;
        // Follow the focus down through nested frames.
        loop {
            let Some(next) = placed.iter().find(|p| p.placement.owner_ref == owner) else {
                return Ok((session, json!({ "found": false })));
            };
            let inner = self
                .eval_on(&next.frame.session, "window.__paddock.focused()", false)
                .await?;
            match inner.get("frame").and_then(Value::as_str) {
                Some(deeper) => owner = deeper.to_owned(),
                None => {
                    return Ok((
                        next.frame.session.clone(),
                        Self::shift_found(inner, &next.placement),
                    ));
                }
            }
        }
    }

    /// Evaluates `expression` in the document that holds the focus.
    pub(super) async fn eval_focused(&self, expression: &str) -> Result<Value, DeviceError> {
        let (session, _) = self.focus().await?;
        self.eval_on(&session, expression, false).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_refs_name_their_frame_and_page_refs_do_not() {
        assert_eq!(ref_prefix("f2e5"), Some("f2"));
        assert_eq!(ref_prefix("f12e340"), Some("f12"));
        assert_eq!(ref_prefix("e5"), None);
        assert_eq!(ref_prefix("fe5"), None);
        assert_eq!(ref_prefix("fxe5"), None);
        assert_eq!(ref_prefix("f2"), None);
    }

    #[test]
    fn detaching_a_frame_forgets_the_frames_inside_it() {
        let frames = Frames::default();
        let frame = |session: &str, parent: &str| ChildFrame {
            session: session.into(),
            frame_id: format!("id-{session}"),
            parent: parent.into(),
            prefix: String::new(),
            ref_base: 1,
        };
        frames.attach(frame("a", "page"));
        frames.attach(frame("b", "a"));
        frames.attach(frame("c", "page"));
        assert_eq!(frames.by_prefix("f2").map(|f| f.session), Some("b".into()));
        frames.detach("a");
        let left: Vec<String> = frames
            .children
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.session.clone())
            .collect();
        assert_eq!(left, ["c"]);
    }

    #[test]
    fn frame_answers_move_into_page_coordinates_and_the_page_clip() {
        let placement = Placement {
            offset: (10.0, 100.0),
            clip: [10.0, 100.0, 310.0, 250.0],
            owner_ref: "e3".into(),
        };
        let found =
            json!({ "found": true, "bounds": [5.0, 20.0, 50.0, 20.0], "center": [30.0, 30.0] });
        let shifted = WebDevice::shift_found(found, &placement);
        assert_eq!(shifted["bounds"], json!([15.0, 120.0, 50.0, 20.0]));
        assert_eq!(shifted["center"], json!([40.0, 130.0]));
        assert!(shifted["offscreen"].is_null());
        let below = json!({ "found": true, "bounds": [5.0, 400.0, 50.0, 20.0] });
        assert_eq!(
            WebDevice::shift_found(below, &placement)["offscreen"],
            "below"
        );
    }

    #[test]
    fn nested_frames_add_offsets_narrow_clips_and_hide_with_their_parent() {
        let frame_box = |content: [f64; 4], owner: &str| {
            Some(FrameBox {
                content,
                owner_ref: owner.into(),
            })
        };
        let parents = [None, None, Some(0), Some(1)];
        let boxes = vec![
            frame_box([10.0, 500.0, 300.0, 600.0], "e3"),
            None,
            frame_box([5.0, 20.0, 100.0, 100.0], "e7"),
            frame_box([0.0, 0.0, 50.0, 50.0], "e9"),
        ];
        let placed = place_tree(&parents, boxes, (412.0, 915.0));
        assert_eq!(placed.len(), 4);
        assert!(
            placed[1].is_none() && placed[3].is_none(),
            "a hidden frame hides its children"
        );
        let (first, nested) = (placed[0].as_ref().unwrap(), placed[2].as_ref().unwrap());
        assert_eq!(first.clip, [10.0, 500.0, 310.0, 915.0]);
        assert_eq!(nested.offset, (15.0, 520.0));
        assert_eq!(nested.clip, [15.0, 520.0, 115.0, 620.0]);
        assert_eq!(nested.owner_ref, "e7");
    }
}
