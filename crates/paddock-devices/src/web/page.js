// Paddock's in-page helper, injected into every document of a web device. It observes the page
// for an LLM (compact, stable refs) and locates elements for actions. It never changes the page
// except for `highlight` overlays, which carry `data-paddock-overlay` and are never observed.
//
// It sees what a person sees: open shadow roots (slotted content in its rendered place), the
// documents of same-origin iframes (at their place on the page), and text in any element
// whatever its tag. Cross-origin iframes are other documents: the device observes them with
// their own copy of this helper and merges them in (`frames.rs`). Closed shadow roots cannot be
// entered; their hosts are listed as opaque elements.
(() => {
  if (window.__paddock) return;
  const REF = Symbol("paddockRef");
  const state = { nextRef: 1, prefix: "", refs: new Map(), routeChangedAt: -Infinity, listed: null };
  // Roles whose name is their content: their text is not listed again as text.
  const NAMED_BY_CONTENT = new Set(["heading", "img", "option", "tooltip", "alert", "status", "progressbar", "meter", "term", "definition", "math"]);
  const INTERACTIVE_TAGS = new Set(["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY", "DETAILS", "OPTION", "VIDEO", "AUDIO"]);
  const CONTAINER_ROLES = new Set(["cell", "columnheader", "rowheader", "listitem", "row", "rowgroup", "table", "grid", "list", "navigation", "group", "region", "main", "banner", "contentinfo", "form", "article", "section", "complementary", "presentation", "none", "generic"]);
  const SKIP_TAGS = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "defs", "style", "script", "title", "desc", "metadata", "clipPath", "mask", "pattern", "symbol", "marker", "linearGradient", "radialGradient", "filter"]);
  const INTERACTIVE_ROLES = ["button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "slider", "textbox", "combobox", "searchbox", "spinbutton", "treeitem"];
  const INPUT_ROLES = { checkbox: "checkbox", radio: "radio", range: "slider", button: "button", submit: "button", reset: "button", image: "button", search: "searchbox", email: "textbox", tel: "textbox", url: "textbox", text: "textbox", password: "textbox", number: "spinbutton", date: "textbox", time: "textbox", "datetime-local": "textbox", month: "textbox", week: "textbox", color: "button", file: "button" };
  const NOT_TYPED = ["checkbox", "radio", "submit", "button", "reset", "image", "file", "hidden", "range", "color"];

  // Hosts of closed shadow roots, seen as they are attached (this helper runs before the
  // page's scripts): their insides cannot be read, so they are reported as opaque.
  const closedHosts = new WeakSet();
  try {
    const attach = Element.prototype.attachShadow;
    Element.prototype.attachShadow = function (init) {
      const root = attach.call(this, init);
      if (init && init.mode === "closed") closedHosts.add(this);
      return root;
    };
  } catch (_) { /* a frozen prototype: closed roots stay invisible */ }

  // Route changes (history and hash) and DOM mutations, for `settle`.
  const noteRoute = () => { state.routeChangedAt = performance.now(); };
  try {
    for (const name of ["pushState", "replaceState"]) {
      const original = history[name];
      history[name] = function (...args) { const result = original.apply(this, args); noteRoute(); return result; };
    }
    window.addEventListener("hashchange", noteRoute, true);
    window.addEventListener("popstate", noteRoute, true);
  } catch (_) { /* a page that locks history down */ }

  function refOf(node) {
    if (!node[REF]) {
      node[REF] = state.prefix + "e" + state.nextRef++;
      state.refs.set(node[REF], new WeakRef(node));
    }
    return node[REF];
  }

  function byRef(ref) {
    const held = state.refs.get(ref);
    const node = held && held.deref();
    if (!node || !node.isConnected) { state.refs.delete(ref); return null; }
    return node;
  }

  // An element a re-render replaced with one that shows the same (same role and name, each
  // unique in both lists) keeps the ref it was listed with: a caller's ref still means what it
  // saw, and a change list shows what changed rather than every row of a redrawn list. The old
  // element must be gone; an ambiguous role and name gets a new ref.
  function keepReplacedRefs(elements) {
    const keyOf = (entry) => entry.role + "\u0000" + entry.name;
    const counts = new Map();
    for (const entry of elements) counts.set(keyOf(entry), (counts.get(keyOf(entry)) || 0) + 1);
    const before = state.listed;
    if (before) {
      for (const entry of elements) {
        const key = keyOf(entry);
        const old = before.byKey.get(key);
        if (!old || before.refs.has(entry.ref) || counts.get(key) !== 1 || byRef(old)) continue;
        const node = byRef(entry.ref);
        if (!node) continue;
        state.refs.delete(entry.ref);
        node[REF] = old;
        state.refs.set(old, new WeakRef(node));
        entry.ref = old;
      }
    }
    const byKey = new Map();
    for (const entry of elements) if (counts.get(keyOf(entry)) === 1) byKey.set(keyOf(entry), entry.ref);
    state.listed = { byKey, refs: new Set(elements.map((entry) => entry.ref)) };
  }

  function roleOf(el) {
    const explicit = el.getAttribute("role");
    if (explicit) return explicit.split(" ")[0];
    switch (el.tagName) {
      case "A": return el.hasAttribute("href") ? "link" : null;
      case "BUTTON": case "SUMMARY": return "button";
      case "INPUT": {
        const type = (el.getAttribute("type") || "text").toLowerCase();
        if (type === "hidden") return null;
        return INPUT_ROLES[type] || "textbox";
      }
      case "SELECT": return el.multiple ? "listbox" : "combobox";
      case "OPTION": return "option";
      case "TEXTAREA": return "textbox";
      case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
      case "IMG": return el.getAttribute("alt") === "" ? null : "img";
      case "CANVAS": return "canvas";
      case "DIALOG": return "dialog";
      case "LI": return "listitem";
      case "TD": return "cell";
      case "TH": return "columnheader";
      case "TR": return "row";
      case "TABLE": return "table";
      case "NAV": return "navigation";
      case "FORM": return null;
      case "VIDEO": return "video";
      case "AUDIO": return "audio";
      case "PROGRESS": return "progressbar";
      case "IFRAME": case "FRAME": return "iframe";
      default: return null;
    }
  }

  function clean(text, max) {
    if (!text) return "";
    const collapsed = text.replace(/\s+/g, " ").trim();
    return collapsed.length > max ? collapsed.slice(0, max - 1) + "…" : collapsed;
  }

  // The root an element's ids resolve in: its shadow root or its document.
  function rootOf(el) {
    const root = el.getRootNode();
    return root && root.getElementById ? root : el.ownerDocument;
  }

  function labelText(el) {
    const labelledBy = el.getAttribute("aria-labelledby");
    if (labelledBy) {
      const root = rootOf(el);
      const text = labelledBy.split(/\s+/).map((id) => root.getElementById(id)).filter(Boolean).map((node) => node.textContent).join(" ");
      if (text.trim()) return text;
    }
    if (el.labels && el.labels.length) return Array.from(el.labels).map((label) => label.textContent).join(" ");
    return "";
  }

  // Text of an element as rendered, including what its open shadow root shows.
  function renderedText(el) {
    let text = el.innerText !== undefined ? el.innerText : el.textContent;
    if (!clean(text, 2) && el.shadowRoot) text = el.shadowRoot.textContent;
    return text || "";
  }

  function nameOf(el, role) {
    const aria = el.getAttribute("aria-label");
    if (aria && aria.trim()) return clean(aria, 80);
    const label = labelText(el);
    if (label.trim()) return clean(label, 80);
    if (el.tagName === "IMG") return clean(el.getAttribute("alt") || "", 80);
    if (el.tagName === "IFRAME" || el.tagName === "FRAME") return clean(el.getAttribute("title") || el.getAttribute("name") || "", 80);
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT") {
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (type === "submit" || type === "button" || type === "reset") return clean(el.value, 80);
      return clean(el.getAttribute("placeholder") || el.getAttribute("title") || "", 80);
    }
    if (role === "dialog") {
      const heading = el.querySelector("h1,h2,h3,h4,h5,h6");
      if (heading) return clean(heading.textContent, 80);
    }
    const name = clean(renderedText(el), 80);
    if (name) return name;
    return clean(el.getAttribute("title") || "", 80);
  }

  function isVisible(el, rect, style) {
    if (rect.width <= 0 || rect.height <= 0) return false;
    if (style.visibility === "hidden" || style.visibility === "collapse" || style.display === "none") return false;
    if (parseFloat(style.opacity) === 0) return false;
    return true;
  }

  function isFormControl(el) {
    return el.tagName === "INPUT" || el.tagName === "SELECT" || el.tagName === "TEXTAREA";
  }

  // A form control a person cannot see but can operate: transparent under a drawn
  // replacement, or clipped to a pixel ("sr-only") with a label to tap. Answers the box a
  // finger would hit, or null when the control is simply visible or truly hidden.
  function hiddenControlBox(el, rect, style) {
    if (!isFormControl(el) || el.type === "hidden") return null;
    if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse") return null;
    const transparent = parseFloat(style.opacity) === 0;
    const tiny = rect.width <= 2 || rect.height <= 2;
    const clipped = (style.clip && style.clip !== "auto") || (style.clipPath && style.clipPath !== "none");
    if (!transparent && !tiny && !clipped) return null;
    if (rect.width >= 8 && rect.height >= 8 && !clipped) return rect;
    for (const label of Array.from(el.labels || [])) {
      const box = label.getBoundingClientRect();
      if (box.width > 0 && box.height > 0) return box;
    }
    const parent = el.parentElement;
    if (parent) {
      const box = parent.getBoundingClientRect();
      if (box.width > 0 && box.height > 0) return box;
    }
    return null;
  }

  function isInteractive(el, role) {
    if (INTERACTIVE_TAGS.has(el.tagName)) return !(el.tagName === "A" && !el.hasAttribute("href"));
    if (el.hasAttribute("onclick") || el.hasAttribute("contenteditable") && el.getAttribute("contenteditable") !== "false") return true;
    const tabindex = el.getAttribute("tabindex");
    if (tabindex !== null && tabindex !== "-1") return true;
    return INTERACTIVE_ROLES.includes(role);
  }

  // The element that has focus, through shadow roots and same-origin frames.
  function deepActive() {
    let el = document.activeElement;
    for (;;) {
      if (!el) return null;
      if (el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
      if ((el.tagName === "IFRAME" || el.tagName === "FRAME") && frameDocument(el) && frameDocument(el).activeElement) {
        const inner = frameDocument(el).activeElement;
        if (inner === frameDocument(el).body) return el;
        el = inner;
        continue;
      }
      return el;
    }
  }

  function statesOf(el, active) {
    const states = [];
    if (el.disabled || el.getAttribute("aria-disabled") === "true") states.push("disabled");
    if (el.checked === true || el.getAttribute("aria-checked") === "true") states.push("checked");
    if (el.getAttribute("aria-expanded") === "true" || (el.tagName === "DETAILS" && el.open)) states.push("expanded");
    if (el.getAttribute("aria-selected") === "true" || (el.tagName === "OPTION" && el.selected)) states.push("selected");
    if (el.required || el.getAttribute("aria-required") === "true") states.push("required");
    if (el.readOnly === true) states.push("readonly");
    if (el.getAttribute("aria-invalid") === "true") states.push("invalid");
    if (el.tagName === "INPUT" && el.type === "password") states.push("password");
    if (active === el && el !== document.body) states.push("focused");
    return states;
  }

  function valueOf(el) {
    if (el.tagName === "INPUT") {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (["checkbox", "radio", "submit", "button", "reset", "image", "file", "hidden"].includes(type)) return null;
      if (type === "password") return el.value ? "•".repeat(Math.min(el.value.length, 12)) : "";
      return clean(el.value, 200);
    }
    if (el.tagName === "TEXTAREA") return clean(el.value, 200);
    if (el.tagName === "SELECT") {
      const selected = el.selectedOptions && el.selectedOptions[0];
      return selected ? clean(selected.textContent, 80) : "";
    }
    return null;
  }

  function headingLevel(el) {
    const match = /^H([1-6])$/.exec(el.tagName);
    if (match) return Number(match[1]);
    const level = el.getAttribute("aria-level");
    return level ? Number(level) : null;
  }

  // The document of a same-origin frame, or null (cross-origin, or not loaded).
  function frameDocument(el) {
    try {
      const doc = el.contentDocument;
      return doc && doc.documentElement ? doc : null;
    } catch (_) {
      return null;
    }
  }

  // The part of this window's viewport where `node`'s document shows: the viewport narrowed by
  // the content box of every same-origin frame around it.
  function clipOf(node) {
    let clip = [0, 0, window.innerWidth, window.innerHeight];
    let win = node.ownerDocument && node.ownerDocument.defaultView;
    while (win && win !== window) {
      const frame = win.frameElement;
      if (!frame) break;
      const [ox, oy] = offsetOf(frame);
      const [x, y] = contentOffset(frame);
      const left = ox + x, top = oy + y;
      clip = [Math.max(clip[0], left), Math.max(clip[1], top), Math.min(clip[2], left + frame.clientWidth), Math.min(clip[3], top + frame.clientHeight)];
      win = win.parent;
    }
    return clip;
  }

  // Scrolls the innermost scroller under (x, y) (in `doc`'s viewport) that can move that way,
  // else the document, instantly: a smooth scroll would still be moving when the next tap
  // arrives, and a tap on a moving page only stops it. Over a same-origin frame it scrolls
  // inside the frame first and, when nothing there can move, the scrollers around the frame.
  function scrollIn(doc, x, y, dx, dy, intoFrames) {
    const canScroll = (el) => {
      const style = getComputedStyle(el);
      const vertical = dy !== 0 && /(auto|scroll|overlay)/.test(style.overflowY) && el.scrollHeight > el.clientHeight &&
        (dy > 0 ? el.scrollTop + el.clientHeight < el.scrollHeight - 1 : el.scrollTop > 0);
      const horizontal = dx !== 0 && /(auto|scroll|overlay)/.test(style.overflowX) && el.scrollWidth > el.clientWidth &&
        (dx > 0 ? el.scrollLeft + el.clientWidth < el.scrollWidth - 1 : el.scrollLeft > 0);
      return vertical || horizontal;
    };
    let el = doc.elementFromPoint(x, y);
    if (intoFrames && el && (el.tagName === "IFRAME" || el.tagName === "FRAME")) {
      const inner = frameDocument(el);
      if (!inner) return { frame: refOf(el) };
      const [left, top] = contentOffset(el);
      const result = scrollIn(inner, x - left, y - top, dx, dy, true);
      if (result.frame || result.moved) return result;
    }
    while (el && el !== doc.body && el !== doc.documentElement && !canScroll(el)) el = el.parentElement || (el.parentNode && el.parentNode.host) || null;
    const scroller = el && el !== doc.body && el !== doc.documentElement ? el : (doc.scrollingElement || doc.documentElement);
    const before = [scroller.scrollLeft, scroller.scrollTop];
    scroller.scrollBy({ left: dx, top: dy, behavior: "instant" });
    return { moved: before[0] !== scroller.scrollLeft || before[1] !== scroller.scrollTop };
  }

  // Where a frame element's document starts, in the coordinates of the frame element's own
  // viewport: its border box plus border and padding.
  function contentOffset(frame) {
    const rect = frame.getBoundingClientRect();
    const style = getComputedStyle(frame);
    return [rect.left + frame.clientLeft + parseFloat(style.paddingLeft || 0), rect.top + frame.clientTop + parseFloat(style.paddingTop || 0)];
  }

  // The offset of `node`'s document in this window's viewport (zero outside iframes).
  function offsetOf(node) {
    let dx = 0, dy = 0;
    let win = node.ownerDocument && node.ownerDocument.defaultView;
    while (win && win !== window) {
      const frame = win.frameElement;
      if (!frame) break;
      const [x, y] = contentOffset(frame);
      dx += x; dy += y;
      win = win.parent;
    }
    return [dx, dy];
  }

  // The children as rendered: an open shadow root replaces its host's light children, a slot
  // shows what is assigned to it (else its fallback content).
  function renderedChildren(node) {
    if (node.nodeType === 1) {
      if (node.shadowRoot) return node.shadowRoot.childNodes;
      if (node.tagName === "SLOT") {
        const assigned = node.assignedNodes({ flatten: true });
        if (assigned.length) return assigned;
      }
    }
    return node.childNodes;
  }

  function skipped(el) {
    return SKIP_TAGS.has(el.tagName) || el.hasAttribute("data-paddock-overlay") || el.getAttribute("aria-hidden") === "true";
  }

  // The modal dialog that owns the screen, if any: everything outside it is inert.
  function activeModal() {
    const open = Array.from(document.querySelectorAll("dialog[open], [role=dialog][aria-modal=true], [role=alertdialog][aria-modal=true]"));
    const modal = open.reverse().find((el) => (el.tagName !== "DIALOG" || el.matches(":modal")) && el.getClientRects().length);
    return modal || null;
  }

  // An element whose whole content is text on inline boxes, so that it reads as one run
  // with its siblings: no controls, no roles, no blocks inside (through open shadow roots and
  // slots, which show their assigned content in place).
  function isInlineText(el) {
    if (closedHosts.has(el) || el.tagName === "BR") return false;
    if (el.tagName !== "SLOT") {
      const role = roleOf(el);
      if (role || isInteractive(el, role)) return false;
      if (!getComputedStyle(el).display.startsWith("inline")) return false;
      if (!el.shadowRoot) {
        if (el.childElementCount === 0) return true;
        if (el.querySelector("a[href],button,input,select,textarea,iframe,[role],[tabindex],[onclick],[contenteditable]")) return false;
      }
    }
    for (const child of renderedChildren(el)) {
      if (child.nodeType === 1 && (skipped(child) || !isInlineText(child))) return false;
    }
    return true;
  }

  // The text of inline content as rendered (shadow roots and slots in place).
  function inlineTextOf(node) {
    if (node.nodeType === 3) return node.nodeValue;
    if (node.nodeType !== 1 || skipped(node)) return "";
    if (!node.shadowRoot && node.tagName !== "SLOT" && node.childElementCount === 0) return node.textContent;
    let text = "";
    for (const child of renderedChildren(node)) text += inlineTextOf(child);
    return text;
  }

  // The box of a run of inline nodes: the union of its text and element boxes.
  function runRect(first, last) {
    const doc = first.ownerDocument || document;
    let l = Infinity, t = Infinity, r = -Infinity, b = -Infinity;
    const add = (rect) => {
      if (rect.width <= 0 || rect.height <= 0) return;
      l = Math.min(l, rect.left); t = Math.min(t, rect.top);
      r = Math.max(r, rect.right); b = Math.max(b, rect.bottom);
    };
    for (let node = first; node; node = node === last ? null : node.nextSibling) {
      if (node.nodeType === 1) add(node.getBoundingClientRect());
      else if (node.nodeType === 3) {
        const range = doc.createRange();
        range.selectNodeContents(node);
        add(range.getBoundingClientRect());
      }
    }
    if (l === Infinity) return new DOMRect(0, 0, 0, 0);
    return new DOMRect(l, t, r - l, b - t);
  }

  // Walks the page as rendered and lists what a person sees. `ctx` carries the offset of the
  // current document in the top viewport, the clip of the frames around it, whether text is
  // already part of an enclosing control's name, and whether the walk is inert (outside a
  // modal dialog).
  function collect(full) {
    const vw = window.innerWidth, vh = window.innerHeight;
    const modal = activeModal();
    const active = deepActive();
    const out = [];
    const offscreen = { above: 0, below: 0 };
    const topClip = [0, 0, vw, vh];

    function place(rect, ctx) {
      return [rect.left + ctx.dx, rect.top + ctx.dy, rect.width, rect.height];
    }

    // Whether a box (top coordinates) shows inside the clip; counts it off screen if not.
    function inView(box, ctx) {
      const [l, t, r, b] = ctx.clip;
      return box[0] + box[2] > l && box[0] < r && box[1] + box[3] > t && box[1] < b;
    }

    // Counts an element that is not listed because it lies off screen, above or below.
    function countOffscreen(box, ctx) {
      if (box[1] >= ctx.clip[3]) offscreen.below += 1; else if (box[1] + box[3] <= ctx.clip[1]) offscreen.above += 1;
    }

    function push(entry, box, ctx) {
      const shown = inView(box, ctx);
      if (!shown && !full) {
        countOffscreen(box, ctx);
        return false;
      }
      entry.bounds = box.map(Math.round);
      if (!shown) entry.offscreen = true;
      out.push(entry);
      return true;
    }

    function emitRun(run, ctx) {
      if (!run.length || ctx.quiet) return;
      const text = clean(run.map(inlineTextOf).join(""), 120);
      if (!text) return;
      const parent = run[0].parentElement || run[0].parentNode.host;
      if (parent) {
        const style = getComputedStyle(parent);
        if (style.visibility === "hidden" || style.visibility === "collapse") return;
      }
      const rect = runRect(run[0], run[run.length - 1]);
      if (rect.width <= 0 || rect.height <= 0) return;
      push({ ref: refOf(run[0]), role: "text", name: text }, place(rect, ctx), ctx);
    }

    function walkChildren(node, ctx) {
      let run = [];
      for (const child of renderedChildren(node)) {
        if (child.nodeType === 3) {
          if (child.nodeValue.trim() || run.length) run.push(child);
          continue;
        }
        if (child.nodeType !== 1) continue;
        if (!ctx.quiet && !skipped(child) && isInlineText(child)) { run.push(child); continue; }
        emitRun(run, ctx);
        run = [];
        walk(child, ctx);
      }
      emitRun(run, ctx);
    }

    function walk(el, ctx) {
      if (skipped(el)) return;
      const style = getComputedStyle(el);
      if (style.display === "none") return;
      if (style.display === "contents") { walkChildren(el, ctx); return; }
      const role = roleOf(el);
      const interactive = isInteractive(el, role);
      const rect = el.getBoundingClientRect();
      // A label that names a control is already that control's name.
      if (el.tagName === "LABEL" && el.control) { walkChildren(el, Object.assign({}, ctx, { quiet: true })); return; }
      const frame = role === "iframe";
      if (interactive || (role && !frame) || closedHosts.has(el)) {
        const hitBox = interactive ? hiddenControlBox(el, rect, style) : null;
        if (!hitBox && parseFloat(style.opacity) === 0) { walkHiddenControls(el, ctx); return; }
        const visible = hitBox || isVisible(el, rect, style);
        const container = !interactive && CONTAINER_ROLES.has(role);
        const own = container ? ownRunText(el) : "";
        const listed = visible && (!container || own || full);
        const box = listed ? place(hitBox || rect, ctx) : null;
        // Off screen it is only counted: its name, value and states are not worked out.
        if (listed && !full && !inView(box, ctx)) countOffscreen(box, ctx);
        else if (listed) {
          const entry = { ref: refOf(el), role: role || el.tagName.toLowerCase(), name: container ? clean(own, 120) : nameOf(el, role) };
          const value = valueOf(el);
          if (value !== null && value !== "") entry.value = value;
          const states = statesOf(el, active);
          if (hitBox) states.push("hidden-control");
          if (closedHosts.has(el)) states.push("closed-shadow-root");
          if (states.length) entry.states = states;
          const level = role === "heading" ? headingLevel(el) : null;
          if (level) entry.level = level;
          if (el.id) entry.id = el.id;
          push(entry, box, ctx);
        }
        if (container && own) { walkChildren(el, Object.assign({}, ctx, { quiet: true, structure: true })); return; }
        const quiet = interactive || NAMED_BY_CONTENT.has(role) || closedHosts.has(el);
        walkChildren(el, quiet ? Object.assign({}, ctx, { quiet: true }) : ctx);
        return;
      }
      if (frame) {
        if (!isVisible(el, rect, style)) return;
        const entry = { ref: refOf(el), role: "iframe", name: nameOf(el, role), frame: true };
        const box = place(rect, ctx);
        const [x, y] = contentOffset(el);
        entry.content = [x + ctx.dx, y + ctx.dy, el.clientWidth, el.clientHeight];
        push(entry, box, ctx);
        const doc = frameDocument(el);
        if (doc && doc.body) {
          entry.sameOrigin = true;
          const [cl, ct, cw, ch] = entry.content;
          const clip = [Math.max(ctx.clip[0], cl), Math.max(ctx.clip[1], ct), Math.min(ctx.clip[2], cl + cw), Math.min(ctx.clip[3], ct + ch)];
          walkChildren(doc.body, Object.assign({}, ctx, { dx: cl, dy: ct, clip }));
        }
        return;
      }
      // A transparent subtree shows nothing but the controls hidden in it; `visibility:
      // hidden` hides only this element's own text (runs check their parent), not children
      // that are visible again.
      if (parseFloat(style.opacity) === 0) { walkHiddenControls(el, ctx); return; }
      walkChildren(el, ctx);
    }

    // Inside a transparent subtree only operable hidden controls are listed.
    function walkHiddenControls(el, ctx) {
      for (const control of el.querySelectorAll("input,select,textarea")) {
        const rect = control.getBoundingClientRect();
        const box = hiddenControlBox(control, rect, getComputedStyle(control)) || ((rect.width > 0 && rect.height > 0) ? rect : null);
        if (!box) continue;
        const role = roleOf(control);
        if (!role) continue;
        const entry = { ref: refOf(control), role, name: nameOf(control, role) };
        const states = statesOf(control, active);
        states.push("hidden-control");
        entry.states = states;
        if (control.id) entry.id = control.id;
        push(entry, place(box, ctx), ctx);
      }
    }

    const root = modal || document.body || document.documentElement;
    const ctx = { dx: 0, dy: 0, clip: topClip, quiet: false };
    // A document still loading may have no root element yet: nothing to list.
    if (modal) walk(modal, ctx); else if (root) walkChildren(root, ctx);
    return { elements: out, offscreen, modal };
  }

  // The text of a container's own runs (its text nodes and inline text children).
  function ownRunText(el) {
    let text = "";
    for (const child of renderedChildren(el)) {
      if (child.nodeType === 3) text += child.nodeValue;
      else if (child.nodeType === 1 && !skipped(child) && isInlineText(child)) text += inlineTextOf(child);
    }
    return text.trim();
  }

  function pageInfo() {
    const doc = document.scrollingElement || document.documentElement;
    const size = (key) => (doc ? Math.round(doc[key]) : 0);
    return {
      url: location.href,
      title: document.title,
      viewport: [window.innerWidth, window.innerHeight],
      dpr: window.devicePixelRatio,
      scroll: [size("scrollLeft"), size("scrollTop")],
      content: [size("scrollWidth"), size("scrollHeight")],
    };
  }

  function rectOfNode(node) {
    if (node.nodeType === 3) return runRect(node, node);
    return node.getBoundingClientRect();
  }

  function describeTarget(node) {
    const el = node.nodeType === 3 ? node.parentElement : node;
    let rect = rectOfNode(node);
    const style = getComputedStyle(el);
    const hitBox = hiddenControlBox(el, rect, style);
    if (hitBox) rect = hitBox;
    const [dx, dy] = offsetOf(el);
    const left0 = rect.left + dx, top0 = rect.top + dy;
    // Off screen is outside the viewport or outside the frames around the element.
    const [cl, ct, cr, cb] = clipOf(el);
    let offscreen = null;
    if (top0 >= cb) offscreen = "below"; else if (top0 + rect.height <= ct) offscreen = "above";
    else if (left0 >= cr) offscreen = "right"; else if (left0 + rect.width <= cl) offscreen = "left";
    // The visible part's centre, so a tap on a partly scrolled element still lands on it.
    const left = Math.max(left0, cl), right = Math.min(left0 + rect.width, cr);
    const top = Math.max(top0, ct), bottom = Math.min(top0 + rect.height, cb);
    const visible = !!hitBox || (node.nodeType === 3 ? rect.width > 0 && style.visibility !== "hidden" : isVisible(el, rect, style));
    return {
      found: true,
      ref: refOf(node),
      visible,
      offscreen,
      bounds: [left0, top0, rect.width, rect.height],
      center: [(left + right) / 2, (top + bottom) / 2],
      editable: el.isContentEditable || el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && !NOT_TYPED.includes((el.getAttribute("type") || "text").toLowerCase())),
      disabled: !!el.disabled,
    };
  }

  // Visits every element as rendered (shadow roots, slots, same-origin frames), in order.
  function visitAll(root, visit) {
    const stack = [root];
    while (stack.length) {
      const node = stack.pop();
      if (node.nodeType === 1) {
        if (skipped(node)) continue;
        if (node !== root) visit(node);
        if (node.tagName === "IFRAME" || node.tagName === "FRAME") {
          const doc = frameDocument(node);
          if (doc && doc.body) stack.push(doc.body);
          continue;
        }
      }
      const children = Array.from(renderedChildren(node));
      for (let i = children.length - 1; i >= 0; i--) if (children[i].nodeType === 1) stack.push(children[i]);
    }
  }

  // Text matches exactly, after collapsing whitespace and ignoring case: a tap never lands on
  // a control whose text merely contains the words asked for. Near misses (one contains the
  // other) come back as candidates for the error.
  function norm(text) {
    return text.replace(/\s+/g, " ").trim().toLowerCase();
  }

  function byText(text) {
    const modal = activeModal();
    const root = modal || document.body;
    const needle = norm(text);
    const candidates = [];
    const near = [];
    visitAll(root, (el) => {
      const role = roleOf(el);
      const interactive = isInteractive(el, role);
      let names;
      if (interactive || (role && role !== "iframe") || closedHosts.has(el)) names = [nameOf(el, role)];
      else if (isInlineText(el)) return;
      else names = [ownRunText(el)];
      for (const raw of names) {
        const name = norm(clean(raw, 200));
        if (!name) continue;
        const exact = name === needle;
        if (!exact && !(name.includes(needle) || needle.includes(name))) continue;
        const rect = el.getBoundingClientRect();
        const style = getComputedStyle(el);
        if (!(isVisible(el, rect, style) || (interactive && hiddenControlBox(el, rect, style)))) continue;
        if (!exact) {
          if (near.length < 5 && (interactive || role)) near.push(el);
          continue;
        }
        candidates.push({ el, score: interactive ? 0 : 1, area: rect.width * rect.height });
        return;
      }
    });
    candidates.sort((a, b) => a.score - b.score || a.area - b.area);
    return { el: candidates.length ? candidates[0].el : null, near };
  }

  function byId(id) {
    const direct = document.getElementById(id);
    if (direct) return direct;
    let found = null;
    visitAll(document.body, (el) => { if (!found && el.id === id) found = el; });
    return found;
  }

  function find(query) {
    if (query.ref) return byRef(query.ref);
    if (query.id) return byId(query.id);
    if (query.text) return byText(query.text).el;
    return null;
  }

  window.__paddock = {
    setRefBase(base) {
      if (state.nextRef < base) state.nextRef = base;
    },
    // Refs of a cross-origin frame's document carry its frame's prefix (`f2e5`), so the
    // device knows which document an action is for.
    setPrefix(prefix) {
      state.prefix = prefix;
    },
    observe(options) {
      if (state.refs.size > 20000) for (const [ref, held] of state.refs) if (!held.deref()) state.refs.delete(ref);
      if (options && options.refBase) this.setRefBase(options.refBase);
      if (options && options.prefix) this.setPrefix(options.prefix);
      const { elements, offscreen, modal } = collect(!!(options && options.full));
      keepReplacedRefs(elements);
      const focused = deepActive();
      return Object.assign(pageInfo(), {
        elements,
        offscreenCount: offscreen,
        focused: focused && focused !== document.body && focused[REF] ? focused[REF] : null,
        modal: modal ? nameOf(modal, "dialog") || "dialog" : null,
        nextRef: state.nextRef,
      });
    },
    locate(query) {
      let el = null;
      if (query.ref) el = byRef(query.ref);
      else if (query.id) el = byId(query.id);
      else if (query.text) {
        const found = byText(query.text);
        el = found.el;
        if (!el) {
          const near = found.near.map((other) => {
            const role = roleOf(other) || "text";
            return { ref: refOf(other), role, name: clean(nameOf(other, role) || ownRunText(other), 80) };
          });
          return { found: false, near };
        }
      }
      if (!el) return { found: false };
      return describeTarget(el);
    },
    // The element a query names (`{ref}`, `{id}` or `{text}`), or null: for CDP commands that
    // take a node, such as setting a file input's files.
    elementFor(query) {
      const node = find(query);
      return node && node.nodeType === 3 ? node.parentElement : node;
    },
    // Where a frame element's document sits in this window, and its ref: for merging a
    // cross-origin frame's observation into this one.
    frameBox(frame) {
      const [dx, dy] = offsetOf(frame);
      const [x, y] = contentOffset(frame);
      const rect = frame.getBoundingClientRect();
      return { ref: refOf(frame), content: [x + dx, y + dy, frame.clientWidth, frame.clientHeight], visible: isVisible(frame, rect, getComputedStyle(frame)) };
    },
    focused() {
      const el = deepActive();
      if (!el || el === document.body) return { found: false };
      if ((el.tagName === "IFRAME" || el.tagName === "FRAME") && !frameDocument(el)) return { found: false, frame: refOf(el) };
      return describeTarget(el);
    },
    selectFocused() {
      const el = deepActive();
      if (!el || el === document.body) return false;
      if (typeof el.select === "function") { el.select(); return true; }
      if (el.isContentEditable) {
        const doc = el.ownerDocument;
        const range = doc.createRange();
        range.selectNodeContents(el);
        const selection = doc.defaultView.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        return true;
      }
      return false;
    },
    selectionText() {
      const el = deepActive();
      if (el && typeof el.selectionStart === "number" && el.selectionEnd > el.selectionStart) {
        return el.value.slice(el.selectionStart, el.selectionEnd);
      }
      const doc = el ? el.ownerDocument : document;
      return String(doc.defaultView.getSelection() || "");
    },
    scrollInfo() {
      return pageInfo();
    },
    // Scrolls what a finger at (x, y) would (see `scrollIn`). Over a cross-origin frame the
    // answer names the frame (`{frame: ref}`) for the device to scroll there; `chain` (the
    // frame could not move) scrolls this document's scrollers instead.
    scrollAt(x, y, dx, dy, chain) {
      return scrollIn(document, x, y, dx, dy, !chain);
    },
    highlight(boxes, color) {
      for (const box of boxes) {
        const div = document.createElement("div");
        div.setAttribute("data-paddock-overlay", "");
        div.style.cssText = `position:fixed;left:${box[0]}px;top:${box[1]}px;width:${box[2]}px;height:${box[3]}px;border:3px solid ${color};box-sizing:border-box;pointer-events:none;z-index:2147483647`;
        document.documentElement.appendChild(div);
      }
      return boxes.length;
    },
    clearHighlights() {
      const overlays = document.querySelectorAll("[data-paddock-overlay]");
      overlays.forEach((el) => el.remove());
      return overlays.length;
    },
    // Resolves true once the document has loaded and the DOM has been quiet for `quietMs`.
    // After a route change (history or hash) it first waits for the new route to render (the
    // first mutation after the change, at most `routeMs`), and before answering it lets two
    // animation frames pass, so work queued for the next frame has landed.
    settle(quietMs, timeoutMs, sinceMs) {
      const routeMs = 1000;
      return new Promise((resolve) => {
        const started = performance.now();
        const since = typeof sinceMs === "number" ? started - sinceMs : started;
        let last = started;
        let mutatedAfterRoute = false;
        const observer = new MutationObserver(() => {
          last = performance.now();
          if (state.routeChangedAt >= since) mutatedAfterRoute = true;
        });
        observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
        const done = (value) => { observer.disconnect(); resolve(value); };
        const frames = (then) => requestAnimationFrame(() => requestAnimationFrame(then));
        const tick = () => {
          const now = performance.now();
          if (now - started >= timeoutMs) { done(false); return; }
          const routePending = state.routeChangedAt >= since && !mutatedAfterRoute && now - state.routeChangedAt < routeMs;
          if (document.readyState === "complete" && !routePending && now - last >= quietMs) {
            const before = last;
            frames(() => {
              if (last === before) done(true); else setTimeout(tick, Math.min(quietMs, 25));
            });
            return;
          }
          setTimeout(tick, Math.min(quietMs, 25));
        };
        tick();
      });
    },
  };
})();
