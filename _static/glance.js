// Short tracebacks. A cell that is meant to fail (tagged raises-exception) stores PyTorch's whole
// traceback, and the page used to show all of it: some fifty lines of torch's own frames, then the
// error message as one unwrapped line thousands of pixels wide. Here the page shows the reader's
// own frames (the notebook's cells, "Cell In[...]") and the message wrapped to the column; the
// whole traceback, unchanged, stays one click away in a <details> toggle. Only the page changes:
// the stored output, which the tests compare, is left as it is.
(function () {
  "use strict";
  const FRAME = /^(Cell In\[\d+\]|File |Input In \[)/;
  const HEADER = /Traceback \(most recent call last\)/;

  function parse(text) {
    const lines = text.replace(/\s+$/, "").split("\n");
    const header = lines.findIndex(line => HEADER.test(line));
    if (header < 0) return null;
    const ename = lines[header].trim().split(/\s+/)[0];
    let message = -1;
    for (let i = lines.length - 1; i > header; i--) {
      if (lines[i] === ename || lines[i].startsWith(ename + ":")) { message = i; break; }
    }
    if (message < 0) return null;
    const frames = [];
    for (let i = header + 1; i < message; i++) {
      if (FRAME.test(lines[i])) frames.push([lines[i]]);
      else if (frames.length) frames[frames.length - 1].push(lines[i]);
    }
    return {lines, frames, message: lines.slice(message).join("\n")};
  }

  function block(className, text) {
    const pre = document.createElement("pre");
    pre.className = className;
    pre.textContent = text;
    return pre;
  }

  function shorten(output) {
    const full = output.querySelector(":scope > .highlight");
    const pre = full && full.querySelector("pre");   // not the copy button's text beside it
    const parsed = pre && parse(pre.textContent);
    if (!parsed) return;
    const own = parsed.frames.filter(frame => frame[0].startsWith("Cell In"));
    const others = parsed.frames.length - own.length;
    const short = document.createElement("div");
    short.className = "short-traceback";
    if (own.length) short.append(block("traceback-frames", own.map(f => f.join("\n").trimEnd()).join("\n\n")));
    if (others) {
      const note = document.createElement("p");
      note.className = "traceback-elided";
      note.textContent = `\u2026 ${others} frame${others > 1 ? "s" : ""} inside PyTorch and other libraries (in the full traceback below)`;
      short.append(note);
    }
    short.append(block("traceback-message", parsed.message));
    const details = document.createElement("details");
    details.className = "full-traceback";
    const summary = document.createElement("summary");
    summary.textContent = `Full traceback (${parsed.lines.length} lines)`;
    output.insertBefore(short, full);
    output.insertBefore(details, full);
    details.append(summary, full);
  }

  function shortenAll() {
    document.querySelectorAll(".tag_raises-exception .output.traceback").forEach(shorten);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", shortenAll);
  else shortenAll();
})();

// Every graph drawing opens full size on a click, in a viewer over the page (no library, nothing
// fetched from another host). The bare SVG file, which the link used to open, showed on a phone
// zoomed out to the screen's width (its labels about 5 px) with no way back but the browser's Back.
// The viewer fits the screen's width; it shows the drawing as wide as the screen, or wider when its
// smallest label would read under MIN_PX there (it then pans by scrolling, starting at its middle);
// its - and + buttons zoom (and a phone's pinch zooms as on any page); its Close button, Escape and
// the browser's Back close it and leave the reader where they were. The link still leads to the
// SVG file (a new tab, or no script).
(function () {
  "use strict";
  const MIN_PX = 10;      // a little over the 9 px that every label must reach
  const STEP = 1.25;      // one press of - or +
  let viewer = null;

  // The drawing's natural width (CSS px, from its width attribute) and its smallest label at that
  // width: font size, times Graphviz's inner scale, times the width over the viewBox's width.
  async function measure(src, img) {
    const text = await (await fetch(src)).text();
    const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
    const box = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
    const sizes = Array.from(svg.querySelectorAll("text"))
      .map(t => parseFloat(t.getAttribute("font-size") || "14")).filter(x => x > 0);
    const group = svg.querySelector("g.graph");
    const scale = group && /scale\(([\d.]+)/.exec(group.getAttribute("transform") || "");
    const width = img.naturalWidth || box[2] || 600;
    const smallest = sizes.length && box[2] ? Math.min(...sizes) * (scale ? parseFloat(scale[1]) : 1) * width / box[2] : null;
    return {width: width, smallest: smallest};
  }

  function button(label, text, action) {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("aria-label", label);
    b.title = label;
    b.textContent = text;
    b.addEventListener("click", action);
    return b;
  }

  function build() {
    const dialog = document.createElement("dialog");
    dialog.className = "drawing-viewer";
    dialog.setAttribute("aria-labelledby", "drawing-viewer-title");
    const bar = document.createElement("div");
    bar.className = "drawing-viewer-bar";
    const title = document.createElement("p");
    title.id = "drawing-viewer-title";
    const pane = document.createElement("div");
    pane.className = "drawing-viewer-pane";
    pane.tabIndex = 0;   // scrolls by keyboard too
    pane.setAttribute("role", "region");
    pane.setAttribute("aria-label", "The drawing (scroll to pan)");
    const img = document.createElement("img");
    pane.append(img);
    const state = {dialog, title, pane, img, zoom: 1, natural: null, opener: null, pushed: false};
    const zoomBy = factor => setZoom(state, state.zoom * factor);
    bar.append(title,
               button("Zoom out", "\u2212", () => zoomBy(1 / STEP)),
               button("Zoom in", "+", () => zoomBy(STEP)),
               button("Close the drawing", "\u00d7 Close", () => close(state)));
    dialog.append(bar, pane);
    dialog.addEventListener("cancel", event => { event.preventDefault(); close(state); });   // Escape
    dialog.addEventListener("close", () => finish(state));
    window.addEventListener("popstate", () => {   // the browser's Back
      if (state.dialog.open) { state.pushed = false; state.dialog.close(); }
    });
    document.body.append(dialog);
    return state;
  }

  function setZoom(state, zoom, keepCentre = true) {
    const {pane, img, natural} = state;
    if (!natural) return;
    const fit = pane.clientWidth / natural.width;
    zoom = Math.min(Math.max(zoom, Math.min(fit, state.readable)), 4 * Math.max(fit, state.readable));
    const cx = (pane.scrollLeft + pane.clientWidth / 2) / (img.width || 1);
    const cy = (pane.scrollTop + pane.clientHeight / 2) / (img.height || 1);
    state.zoom = zoom;
    img.style.width = Math.round(natural.width * zoom) + "px";
    if (keepCentre) {
      pane.scrollLeft = cx * img.width - pane.clientWidth / 2;
      pane.scrollTop = cy * img.height - pane.clientHeight / 2;
    }
  }

  async function open(link, img) {
    viewer = viewer || build();
    const state = viewer;
    const src = link.getAttribute("href");
    const figure = img.closest("figure");
    const caption = figure && figure.querySelector(".caption-text");
    state.title.textContent = caption ? caption.textContent : (img.getAttribute("alt") || "Drawing");
    state.img.alt = img.getAttribute("alt") || "";
    state.img.style.width = "";
    state.natural = null;
    state.opener = link;
    state.img.src = img.currentSrc || img.src;
    state.dialog.showModal();
    if (!state.pushed) { history.pushState({drawingViewer: true}, ""); state.pushed = true; }
    await state.img.decode().catch(() => {});
    state.natural = await measure(src, state.img);
    const fit = state.pane.clientWidth / state.natural.width;
    state.readable = state.natural.smallest ? MIN_PX / state.natural.smallest : fit;
    setZoom(state, Math.max(state.readable, Math.min(fit, 2)), false);
    state.pane.scrollLeft = (state.pane.scrollWidth - state.pane.clientWidth) / 2;
    state.pane.scrollTop = 0;
    state.dialog.dataset.ready = "true";
  }

  function close(state) {
    if (!state.dialog.open) return;
    state.dialog.close();
    if (state.pushed) { state.pushed = false; history.back(); }
  }

  function finish(state) {
    delete state.dialog.dataset.ready;
    if (state.opener) state.opener.focus();
  }

  function openable(img) {
    if (img.closest("a")) return;
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "open-full";
    link.title = "Open this drawing full size (zoom and pan)";
    link.addEventListener("click", event => {
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;  // a new tab
      event.preventDefault();
      open(link, img);
    });
    img.parentNode.insertBefore(link, img);
    link.append(img);
  }
  function all() { document.querySelectorAll(".cell_output img[src$='.svg']").forEach(openable); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();


// A backward replay opens full size in its own box: a button beside the picture shows it at its
// natural size inside a box that scrolls both ways (a phone's column is too narrow for its labels),
// and puts it back. Stepping through the frames works the same either way.
(function () {
  "use strict";
  function openable(frames) {
    if (frames.querySelector(".al-open")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "al-open";
    button.setAttribute("aria-pressed", "false");
    button.textContent = "Full size";
    button.title = "Show the replay full size (scroll to pan, the browser's zoom to zoom)";
    button.addEventListener("click", function () {
      const open = frames.classList.toggle("al-full");
      button.setAttribute("aria-pressed", String(open));
      button.textContent = open ? "Fit to the column" : "Full size";
      const box = frames.querySelector(".al-frame");   // opened: start at the picture's middle
      box.scrollLeft = open ? (box.scrollWidth - box.clientWidth) / 2 : 0;
    });
    frames.querySelector(".al-frame").before(button);
  }
  function all() { document.querySelectorAll(".al-frames").forEach(openable); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();
