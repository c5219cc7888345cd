// Paddock's in-page helper, injected into every document of a web device. It observes the page
// for an LLM (compact, stable refs) and locates elements for actions. It never changes the page
// except for `highlight` overlays, which carry `data-paddock-overlay` and are never observed.
(() => {
  if (window.__paddock) return;
  const REF = Symbol("paddockRef");
  const state = { nextRef: 1 };
  const INTERACTIVE_TAGS = new Set(["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY", "DETAILS", "OPTION", "VIDEO", "AUDIO"]);
  const TEXT_TAGS = new Set(["H1", "H2", "H3", "H4", "H5", "H6", "P", "LI", "TD", "TH", "LABEL", "SPAN", "DIV", "DT", "DD", "FIGCAPTION", "CAPTION", "LEGEND", "STRONG", "EM", "B", "I", "SMALL", "CODE", "PRE", "BLOCKQUOTE"]);
  const CONTAINER_ROLES = new Set(["cell", "columnheader", "rowheader", "listitem", "row", "rowgroup", "table", "grid", "list", "navigation", "group", "region", "main", "banner", "contentinfo", "form", "article", "section", "complementary", "presentation", "none", "generic"]);
  const SKIP_TAGS = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "SVG"]);
  const INPUT_ROLES = { checkbox: "checkbox", radio: "radio", range: "slider", button: "button", submit: "button", reset: "button", image: "button", search: "searchbox", email: "textbox", tel: "textbox", url: "textbox", text: "textbox", password: "textbox", number: "spinbutton", date: "textbox", time: "textbox", "datetime-local": "textbox", month: "textbox", week: "textbox", color: "button", file: "button" };

  function refOf(el) {
    if (!el[REF]) el[REF] = "e" + state.nextRef++;
    return el[REF];
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
      default: return null;
    }
  }

  function clean(text, max) {
    if (!text) return "";
    const collapsed = text.replace(/\s+/g, " ").trim();
    return collapsed.length > max ? collapsed.slice(0, max - 1) + "…" : collapsed;
  }

  function labelText(el) {
    const labelledBy = el.getAttribute("aria-labelledby");
    if (labelledBy) {
      const text = labelledBy.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean).map((node) => node.textContent).join(" ");
      if (text.trim()) return text;
    }
    if (el.labels && el.labels.length) return Array.from(el.labels).map((label) => label.textContent).join(" ");
    return "";
  }

  function nameOf(el, role) {
    const aria = el.getAttribute("aria-label");
    if (aria && aria.trim()) return clean(aria, 80);
    const label = labelText(el);
    if (label.trim()) return clean(label, 80);
    if (el.tagName === "IMG") return clean(el.getAttribute("alt") || "", 80);
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT") {
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (type === "submit" || type === "button" || type === "reset") return clean(el.value, 80);
      return clean(el.getAttribute("placeholder") || el.getAttribute("title") || "", 80);
    }
    if (role === "dialog") {
      const heading = el.querySelector("h1,h2,h3,h4,h5,h6");
      if (heading) return clean(heading.textContent, 80);
    }
    const text = el.innerText !== undefined ? el.innerText : el.textContent;
    const name = clean(text, 80);
    if (name) return name;
    return clean(el.getAttribute("title") || "", 80);
  }

  function isVisible(el, rect, style) {
    if (rect.width <= 0 || rect.height <= 0) return false;
    if (style.visibility === "hidden" || style.visibility === "collapse" || style.display === "none") return false;
    if (parseFloat(style.opacity) === 0) return false;
    return true;
  }

  function ownText(el) {
    let text = "";
    for (const node of el.childNodes) {
      if (node.nodeType === 3) text += node.nodeValue;
    }
    return text.trim();
  }

  function isInteractive(el, role) {
    if (INTERACTIVE_TAGS.has(el.tagName)) return !(el.tagName === "A" && !el.hasAttribute("href"));
    if (el.hasAttribute("onclick") || el.hasAttribute("contenteditable") && el.getAttribute("contenteditable") !== "false") return true;
    const tabindex = el.getAttribute("tabindex");
    if (tabindex !== null && tabindex !== "-1") return true;
    return ["button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "option", "slider", "textbox", "combobox", "searchbox", "spinbutton"].includes(role);
  }

  function statesOf(el) {
    const states = [];
    if (el.disabled || el.getAttribute("aria-disabled") === "true") states.push("disabled");
    if (el.checked === true || el.getAttribute("aria-checked") === "true") states.push("checked");
    if (el.getAttribute("aria-expanded") === "true" || (el.tagName === "DETAILS" && el.open)) states.push("expanded");
    if (el.getAttribute("aria-selected") === "true" || (el.tagName === "OPTION" && el.selected)) states.push("selected");
    if (el.required || el.getAttribute("aria-required") === "true") states.push("required");
    if (el.readOnly === true) states.push("readonly");
    if (el.getAttribute("aria-invalid") === "true") states.push("invalid");
    if (el.tagName === "INPUT" && el.type === "password") states.push("password");
    if (document.activeElement === el && el !== document.body) states.push("focused");
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

  // The modal dialog that owns the screen, if any: everything outside it is inert.
  function activeModal() {
    const open = Array.from(document.querySelectorAll("dialog[open], [role=dialog][aria-modal=true], [role=alertdialog][aria-modal=true]"));
    const modal = open.reverse().find((el) => (el.tagName !== "DIALOG" || el.matches(":modal")) && el.getClientRects().length);
    return modal || null;
  }

  function collect(full) {
    const vw = window.innerWidth, vh = window.innerHeight;
    const modal = activeModal();
    const root = modal || document.body || document.documentElement;
    const out = [];
    const offscreen = { above: 0, below: 0 };
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT, {
      acceptNode(node) {
        if (SKIP_TAGS.has(node.tagName) || node.hasAttribute("data-paddock-overlay")) return NodeFilter.FILTER_REJECT;
        if (node.getAttribute("aria-hidden") === "true") return NodeFilter.FILTER_REJECT;
        return NodeFilter.FILTER_ACCEPT;
      },
    });
    const consumed = new WeakSet();
    let node = modal ? root : walker.nextNode();
    if (modal) walker.currentNode = root;
    while (node) {
      const el = node;
      node = walker.nextNode();
      const role = roleOf(el);
      const interactive = isInteractive(el, role);
      const own = ownText(el);
      // A label that names a control is already that control's name.
      if (el.tagName === "LABEL" && el.control) continue;
      const isText = !interactive && !role && TEXT_TAGS.has(el.tagName) && own.length > 0;
      const structural = role && !interactive;
      if (!interactive && !isText && !structural) continue;
      // Containers are implied by their content; listing them only costs characters. A cell or
      // list item with text of its own is listed as that text.
      const container = structural && CONTAINER_ROLES.has(role);
      if (container && !own && !full) continue;
      // A plain text element inside an interactive element adds nothing beyond its parent.
      if (isText && el.parentElement && consumed.has(el.parentElement)) { consumed.add(el); continue; }
      const rect = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      if (!isVisible(el, rect, style)) continue;
      const inView = rect.bottom > 0 && rect.top < vh && rect.right > 0 && rect.left < vw;
      if (!inView && !full) {
        if (rect.top >= vh) offscreen.below += 1; else if (rect.bottom <= 0) offscreen.above += 1;
        continue;
      }
      if (interactive) consumed.add(el);
      const name = isText || container ? clean(own, 120) : nameOf(el, role);
      const entry = {
        ref: refOf(el),
        role: role || (isText ? "text" : el.tagName.toLowerCase()),
        name,
        bounds: [Math.round(rect.left), Math.round(rect.top), Math.round(rect.width), Math.round(rect.height)],
      };
      const value = valueOf(el);
      if (value !== null && value !== "") entry.value = value;
      const states = statesOf(el);
      if (states.length) entry.states = states;
      const level = role === "heading" ? headingLevel(el) : null;
      if (level) entry.level = level;
      if (el.id) entry.id = el.id;
      if (!inView) entry.offscreen = true;
      out.push(entry);
    }
    return { elements: out, offscreen, modal };
  }

  function pageInfo() {
    const doc = document.scrollingElement || document.documentElement;
    return {
      url: location.href,
      title: document.title,
      viewport: [window.innerWidth, window.innerHeight],
      dpr: window.devicePixelRatio,
      scroll: [Math.round(doc.scrollLeft), Math.round(doc.scrollTop)],
      content: [Math.round(doc.scrollWidth), Math.round(doc.scrollHeight)],
    };
  }

  function describeTarget(el) {
    const rect = el.getBoundingClientRect();
    const vw = window.innerWidth, vh = window.innerHeight;
    let offscreen = null;
    if (rect.top >= vh) offscreen = "below"; else if (rect.bottom <= 0) offscreen = "above";
    else if (rect.left >= vw) offscreen = "right"; else if (rect.right <= 0) offscreen = "left";
    const style = getComputedStyle(el);
    // The visible part's centre, so a tap on a partly scrolled element still lands on it.
    const left = Math.max(rect.left, 0), right = Math.min(rect.right, vw);
    const top = Math.max(rect.top, 0), bottom = Math.min(rect.bottom, vh);
    return {
      found: true,
      ref: refOf(el),
      visible: isVisible(el, rect, style),
      offscreen,
      bounds: [rect.left, rect.top, rect.width, rect.height],
      center: [(left + right) / 2, (top + bottom) / 2],
      editable: el.isContentEditable || el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && !["checkbox", "radio", "submit", "button", "reset", "image", "file", "hidden", "range", "color"].includes((el.getAttribute("type") || "text").toLowerCase())),
      disabled: !!el.disabled,
    };
  }

  function byRef(ref) {
    const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_ELEMENT);
    let node = walker.currentNode;
    while (node) {
      if (node[REF] === ref) return node;
      node = walker.nextNode();
    }
    return null;
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
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT, {
      acceptNode(node) {
        if (SKIP_TAGS.has(node.tagName) || node.hasAttribute("data-paddock-overlay")) return NodeFilter.FILTER_REJECT;
        return NodeFilter.FILTER_ACCEPT;
      },
    });
    let node = walker.nextNode();
    while (node) {
      const el = node;
      node = walker.nextNode();
      const role = roleOf(el);
      const interactive = isInteractive(el, role);
      const name = norm(interactive || role ? nameOf(el, role) : clean(ownText(el), 200));
      if (!name) continue;
      const exact = name === needle;
      if (!exact && !(name.includes(needle) || needle.includes(name))) continue;
      const rect = el.getBoundingClientRect();
      if (!isVisible(el, rect, getComputedStyle(el))) continue;
      if (!exact) {
        if (near.length < 5 && (interactive || role)) near.push(el);
        continue;
      }
      candidates.push({ el, score: interactive ? 0 : 1, area: rect.width * rect.height });
    }
    candidates.sort((a, b) => a.score - b.score || a.area - b.area);
    return { el: candidates.length ? candidates[0].el : null, near };
  }

  window.__paddock = {
    setRefBase(base) {
      if (state.nextRef < base) state.nextRef = base;
    },
    observe(options) {
      if (options && options.refBase) this.setRefBase(options.refBase);
      const { elements, offscreen, modal } = collect(!!(options && options.full));
      const focused = document.activeElement && document.activeElement !== document.body ? document.activeElement : null;
      return Object.assign(pageInfo(), {
        elements,
        offscreenCount: offscreen,
        focused: focused && focused[REF] ? focused[REF] : null,
        modal: modal ? nameOf(modal, "dialog") || "dialog" : null,
        nextRef: state.nextRef,
      });
    },
    locate(query) {
      let el = null;
      if (query.ref) el = byRef(query.ref);
      else if (query.id) el = document.getElementById(query.id);
      else if (query.text) {
        const found = byText(query.text);
        el = found.el;
        if (!el) {
          const near = found.near.map((other) => {
            const role = roleOf(other) || "text";
            return { ref: refOf(other), role, name: clean(nameOf(other, role) || ownText(other), 80) };
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
      if (query.ref) return byRef(query.ref);
      if (query.id) return document.getElementById(query.id);
      if (query.text) return byText(query.text).el;
      return null;
    },
    focused() {
      const el = document.activeElement;
      if (!el || el === document.body) return { found: false };
      return describeTarget(el);
    },
    selectFocused() {
      const el = document.activeElement;
      if (!el || el === document.body) return false;
      if (typeof el.select === "function") { el.select(); return true; }
      if (el.isContentEditable) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        return true;
      }
      return false;
    },
    selectionText() {
      const el = document.activeElement;
      if (el && typeof el.selectionStart === "number" && el.selectionEnd > el.selectionStart) {
        return el.value.slice(el.selectionStart, el.selectionEnd);
      }
      return String(window.getSelection() || "");
    },
    scrollInfo() {
      return pageInfo();
    },
    // Scrolls the innermost scroller under (x, y) that can move that way, else the document,
    // instantly: a smooth scroll would still be moving when the next tap arrives, and a tap on
    // a moving page only stops it.
    scrollAt(x, y, dx, dy) {
      const canScroll = (el) => {
        const style = getComputedStyle(el);
        const vertical = dy !== 0 && /(auto|scroll|overlay)/.test(style.overflowY) && el.scrollHeight > el.clientHeight &&
          (dy > 0 ? el.scrollTop + el.clientHeight < el.scrollHeight - 1 : el.scrollTop > 0);
        const horizontal = dx !== 0 && /(auto|scroll|overlay)/.test(style.overflowX) && el.scrollWidth > el.clientWidth &&
          (dx > 0 ? el.scrollLeft + el.clientWidth < el.scrollWidth - 1 : el.scrollLeft > 0);
        return vertical || horizontal;
      };
      let el = document.elementFromPoint(x, y);
      while (el && el !== document.body && el !== document.documentElement && !canScroll(el)) el = el.parentElement;
      const scroller = el && el !== document.body && el !== document.documentElement ? el : (document.scrollingElement || document.documentElement);
      const before = [scroller.scrollLeft, scroller.scrollTop];
      scroller.scrollBy({ left: dx, top: dy, behavior: "instant" });
      return before[0] !== scroller.scrollLeft || before[1] !== scroller.scrollTop;
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
    settle(quietMs, timeoutMs) {
      return new Promise((resolve) => {
        let last = performance.now();
        const observer = new MutationObserver(() => { last = performance.now(); });
        observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
        const started = performance.now();
        const tick = () => {
          const now = performance.now();
          if (document.readyState === "complete" && now - last >= quietMs) { observer.disconnect(); resolve(true); return; }
          if (now - started >= timeoutMs) { observer.disconnect(); resolve(false); return; }
          setTimeout(tick, Math.min(quietMs, 25));
        };
        tick();
      });
    },
  };
})();
