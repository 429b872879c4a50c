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

// Every graph drawing opens full size on a click: the SVG file itself, where the browser's own
// zoom and scrolling pan and zoom it (no library, nothing fetched from another host).
(function () {
  "use strict";
  function openable(img) {
    if (img.closest("a")) return;
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "open-full";
    link.title = "Open this drawing full size (zoom and scroll in the browser)";
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
