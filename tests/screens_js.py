"""What tests/book/test_site_screens.py asks each page, as the JavaScript the browser runs.

Kept apart from the tests so that both read downward: each snippet returns plain data, and the
tests decide what is a failure.
"""

# The landing page's first screen: what of the arrival is visible without scrolling, whole, and
# not cut at the right edge (a box that scrolls sideways hides the rest of its line).
FIRST_SCREEN_JS = """
(install) => {
  const vw = window.innerWidth, vh = window.innerHeight;
  const whole = el => {
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= vh && r.left >= 0 && r.right <= vw
           && el.scrollWidth <= el.clientWidth + 1;
  };
  const article = document.querySelector("article.bd-article") || document.body;
  const h1 = article.querySelector("h1");
  const error = Array.from(article.querySelectorAll("pre")).find(
      p => p.textContent.includes("RuntimeError: Trying to backward through the graph a second time"));
  const errorUnderHeading = !!(h1 && error && h1.nextElementSibling && h1.nextElementSibling.contains(error));
  const meaning = Array.from(article.querySelectorAll("p")).find(p => p.textContent.startsWith("What it means"));
  const sentences = meaning ? meaning.textContent.replace(/\\([^)]*\\)/g, "").split(/[.!?](\\s|$)/)
                                .filter(s => s && s.trim().length > 3).length - 1 : 0;
  const list = article.querySelector("ul");
  const fixes = list ? Array.from(list.children).map(li => ({
      text: li.textContent.trim().slice(0, 60), code: li.querySelectorAll("code").length > 0,
      seen: whole(li)})) : [];
  const command = Array.from(article.querySelectorAll("pre")).find(
      p => p.textContent.includes(install) && p.textContent.includes("python -m autograd_lens"));
  return {
    heading: h1 ? h1.textContent.replace(/#$/, "").trim() : null,
    headingSeen: whole(h1),
    errorSeen: whole(error),
    errorUnderHeading: errorUnderHeading || !!(h1 && h1.textContent.includes("backward through the graph a second time")
                                               && error && whole(error)),
    meaningSeen: whole(meaning),
    meaningSentences: sentences,
    fixes: fixes,
    installSeen: whole(command),
    installFound: !!command,
  };
}
"""

# On a phone: everything of the article fits its column, and nothing scrolls sideways in its own box.
PHONE_JS = """
() => {
  const SLACK = 1;
  const problems = [];
  const article = document.querySelector("article.bd-article");
  if (!article) return problems;
  const edge = article.getBoundingClientRect().right + 1;
  const name = el => el.nodeName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).slice(0, 2).join(".") : "");
  const what = el => (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
  for (const table of article.querySelectorAll("table")) {
    const r = table.getBoundingClientRect();
    if (r.right > edge || table.scrollWidth > table.clientWidth + 1)
      problems.push("a table wider than the column (" + Math.round(r.width) + " px): " + what(table));
    for (const cell of table.querySelectorAll("td, th")) {
      const head = cell.closest("thead");
      if (head && head.getBoundingClientRect().width <= 1) continue;  // said by each cell instead
      const c = cell.getBoundingClientRect();
      if (c.width > 0 && (c.right > edge || cell.scrollWidth > cell.clientWidth + 1)) {
        problems.push("a table cell cut off: " + what(cell));
        break;
      }
    }
  }
  // A formula's box (span.math) is cut when the formula in it is (MathJax's copy for screen readers,
  // clipped to nothing, would count in the box's scroll width).
  const cut = (el, r) => {
    const formula = el.matches(".math") ? el.querySelector("math, mjx-math") : null;
    return formula ? formula.getBoundingClientRect().right > r.right + 1 : el.scrollWidth > el.clientWidth + SLACK;
  };
  // The cue of a box that scrolls: shadows drawn by gradients that stay put (scroll) under covers
  // that move with the content (local), so a shadow shows on each side where something is hidden.
  const cued = style => /gradient/.test(style.backgroundImage) && /local/.test(style.backgroundAttachment)
                        && /scroll/.test(style.backgroundAttachment);
  // What sits inside a box that scrolls with the cue (a code block) is reached by scrolling it.
  const scrollers = Array.from(article.querySelectorAll("pre, .math")).filter(el => {
    const style = getComputedStyle(el);
    return ["auto", "scroll"].includes(style.overflowX) && cued(style);
  });
  for (const el of article.querySelectorAll("*")) {
    if (el.closest("table, mjx-container, math, svg")) continue;
    if (scrollers.some(box => box !== el && box.contains(el))) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.position === "fixed") continue;
    // overflow does not apply to an inline box (a formula in a sentence, a word of code)
    const boxed = style.display !== "inline";
    if (r.right > edge + 1) problems.push("past the column's right edge: " + name(el) + " " + what(el));
    else if (boxed && ["auto", "scroll", "hidden", "clip"].includes(style.overflowX) && cut(el, r)
             && !(["auto", "scroll"].includes(style.overflowX) && cued(style)))
      problems.push("cut off, or scrolls sideways without a cue: " + name(el) + " " + what(el));
  }
  return problems;
}
"""

# Every byte the page loaded, uncompressed (Resource Timing's decoded body sizes: the page itself,
# its scripts, styles, fonts, pictures and the SVG objects), once the network has been quiet.
# Also what each page loads that it may not use: MathJax (formulas are MathML, written at build
# time), the search index, and the longest inline script (a library copied into the page).
WEIGHT_JS = r"""
() => {
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
  const files = entries.map(e => [e.name, e.decodedBodySize]).sort((a, b) => b[1] - a[1]);
  const loads = pattern => files.some(f => pattern.test(new URL(f[0]).pathname));
  return {bytes: files.reduce((sum, f) => sum + f[1], 0), requests: files.length, biggest: files.slice(0, 3),
          formulas: document.querySelectorAll(".math").length, mathjax: loads(/\/mathjax\//),
          searchIndex: loads(/\/searchindex\.js$/),
          inlineScript: Math.max(0, ...Array.from(document.querySelectorAll(
            "script:not([src]):not([type='application/json'])")).map(s => s.text.length))};
}
"""

# axe-core's violations of the page, impact "critical" and "serious" only, with where they are.
# The code blocks' thousands of highlighted tokens made axe take seconds a page, and their colours
# repeat: the rules run on the page without its code, then the colour-contrast rule on one token of
# each kind (its class and colour, in its kind of block): every colour of code on every kind of
# block is checked, once a page.
AXE_JS = """
async (rules) => {
  const only = rules ? {runOnly: {type: "rule", values: rules}} : {};
  const seen = new Set(), tokens = [];
  for (const token of document.querySelectorAll("div.highlight pre span")) {
    if (!token.textContent.trim()) continue;
    const block = token.closest("div.cell_output, div.cell_input, div[class*='highlight-']");
    const kind = token.className + "|" + getComputedStyle(token).color + "|" + (block ? block.className : "");
    if (!seen.has(kind)) { seen.add(kind); tokens.push(token); }
  }
  const page = await axe.run({exclude: [["div.highlight pre"]]}, {resultTypes: ["violations"], ...only});
  const code = tokens.length ? await axe.run({include: tokens},
      {resultTypes: ["violations"], runOnly: {type: "rule", values: ["color-contrast"]}}) : {violations: []};
  return [...page.violations, ...code.violations]
    .filter(v => v.impact === "critical" || v.impact === "serious").map(v => ({
      rule: v.id, impact: v.impact, help: v.help,
      targets: v.nodes.map(n => n.target.join(" ")).slice(0, 50),
    }));
}
"""

SEARCH_DONE_JS = """
() => { const s = document.querySelector("#search-results .search-summary");
        return !!s && /finished|did not match/i.test(s.textContent); }
"""

RESULTS_JS = """
() => Array.from(document.querySelectorAll("#search-results ul.search li > a")).map(a => a.href)
"""

# Each result's snippet: the text under its link (empty when there is none).
SNIPPETS_JS = """
() => Array.from(document.querySelectorAll("#search-results ul.search > li")).map(li => {
  const link = li.querySelector(":scope > a"), snippet = li.querySelector(":scope > p.context");
  return {href: link ? link.href : null,
          snippet: snippet ? snippet.textContent.trim() : "",
          under: !!(link && snippet) && snippet.getBoundingClientRect().top >= link.getBoundingClientRect().bottom - 1};
})
"""

NOT_FOUND_JS = """
() => ({
  title: document.title,
  styles: Array.from(document.querySelectorAll("link[rel=stylesheet]")).map(l => [l.href, !!l.sheet]),
  themed: getComputedStyle(document.body).fontFamily,
  links: Array.from(document.querySelectorAll("article a[href], main a[href]")).map(a => a.href),
})
"""


# ---------------------------------------------------------------------------------------------
# The page's frame and its tools, for a keyboard and on a phone (issue 41's site half).

# The element that has the keyboard's focus, and whether it shows a ring: an outline of 2 px or
# more, or a box-shadow with no offset or blur and a spread of 2 px or more, in a colour at least
# half opaque. null when the focus is on the page itself (the end of the Tab order).
FOCUS_RING_JS = r"""
() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  const s = getComputedStyle(el), r = el.getBoundingClientRect();
  const alpha = c => { const m = /rgba?\(([^)]*)\)/.exec(c || ""); if (!m) return 0;
                       const p = m[1].split(/[\s,\/]+/).filter(Boolean); return p.length > 3 ? parseFloat(p[3]) : 1; };
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2 && alpha(s.outlineColor) >= 0.5;
  const shadow = (s.boxShadow === "none" ? [] : s.boxShadow.split(/,(?![^(]*\))/)).some(one => {
    if (/inset/.test(one)) return false;
    const colour = (/rgba?\([^)]*\)/.exec(one) || [""])[0];
    const px = one.replace(colour, "").trim().split(/\s+/).map(parseFloat);
    return px.length >= 4 && px[0] === 0 && px[1] === 0 && px[2] === 0 && px[3] >= 2 && alpha(colour) >= 0.5;
  });
  const label = (el.getAttribute("aria-label") || el.getAttribute("title") || el.textContent || "").trim();
  return {name: el.tagName.toLowerCase() + (el.className && typeof el.className === "string"
                ? "." + el.className.trim().split(/\s+/).slice(0, 3).join(".") : "") + " " + JSON.stringify(label.slice(0, 40)),
          ring: outline || shadow, shown: r.width >= 2 && r.height >= 2,
          toolbar: !!el.closest(".bd-header-article, .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .dropdown-menu"),
          quiz: !!el.closest(".MultipleChoiceQn, .Quiz")};
}
"""

# The drawing viewer, open: its size against the screen's, the drawing's smallest label as shown
# (from the SVG's viewBox, font sizes and Graphviz's inner scale, and the picture's width on the
# screen), and its close control.
VIEWER_JS = r"""
async () => {
  const dialog = document.querySelector("dialog.drawing-viewer");
  if (!dialog || !dialog.open) return {open: false};
  const img = dialog.querySelector("img"), pane = img.parentElement;
  const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), "image/svg+xml").documentElement;
  const box = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
  const sizes = Array.from(svg.querySelectorAll("text")).map(t => parseFloat(t.getAttribute("font-size") || "14"));
  const group = svg.querySelector("g.graph");
  const scale = group && /scale\(([\d.]+)/.exec(group.getAttribute("transform") || "");
  const shown = img.getBoundingClientRect(), d = dialog.getBoundingClientRect();
  const close = Array.from(dialog.querySelectorAll("button")).find(b => /close/i.test(b.getAttribute("aria-label") || ""));
  const c = close ? close.getBoundingClientRect() : null;
  return {open: true, px: sizes.length && box[2] ? Math.min(...sizes) * (scale ? parseFloat(scale[1]) : 1) * shown.width / box[2] : null,
          width: shown.width, left: d.left, right: d.right, screen: window.innerWidth,
          zoomedOut: window.visualViewport ? window.visualViewport.scale < 0.99 : false,
          pageWidth: document.documentElement.scrollWidth, pans: pane.scrollWidth > pane.clientWidth + 1,
          fits: shown.width <= pane.clientWidth + 1,
          close: !!c && c.width > 0 && c.left >= 0 && c.right <= window.innerWidth && c.top >= 0,
          zoomButtons: dialog.querySelectorAll("button[aria-label^='Zoom']").length,
          paper: getComputedStyle(pane).backgroundColor};
}
"""

# Code blocks on a phone: each keeps its lines (as many lines on the screen as in its text), and a
# block wider than the column scrolls with the cue (the formulas' shadows, their covers in the
# block's own colour, so that they show in either colour scheme).
CODE_LINES_JS = r"""
() => {
  const problems = [];
  const cued = s => /gradient/.test(s.backgroundImage) && /local/.test(s.backgroundAttachment)
                    && /scroll/.test(s.backgroundAttachment);
  for (const pre of document.querySelectorAll("article div.highlight pre")) {
    if (pre.closest(".short-traceback, .landing-error, .landing-install, details:not([open])")) continue;
    const s = getComputedStyle(pre), r = pre.getBoundingClientRect();
    if (r.width === 0) continue;
    const lines = pre.textContent.replace(/\n$/, "").split("\n").length;
    const height = pre.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
    const shown = Math.round(height / parseFloat(s.lineHeight));
    const block = pre.closest("div[class*='highlight-']");
    const what = (block ? block.className.split(" ")[0] : "pre") + ": " + JSON.stringify(pre.textContent.trim().slice(0, 50));
    if (shown > lines) problems.push("wrapped, " + lines + " lines shown on " + shown + ": " + what);
    if (pre.scrollWidth > pre.clientWidth + 1) {
      if (!cued(s)) problems.push("scrolls sideways without the cue: " + what);
      else if (!s.backgroundImage.includes(s.backgroundColor)) problems.push("the cue's covers are not the block's colour: " + what);
    }
  }
  return problems;
}
"""

# The decision guide's drawing: where its start box is among the others, and the sentence that
# tells the reader where to start.
DECISION_START_JS = r"""
() => {
  const object = document.querySelector("div.graphviz object");
  const svg = object && object.contentDocument;
  if (!svg) return {error: "no drawing"};
  const nodes = Array.from(svg.querySelectorAll("g.node")).map(g => ({
    name: g.querySelector("title").textContent, box: g.getBoundingClientRect()}));
  const start = nodes.find(n => n.name === "start");
  if (!start) return {error: "no start node"};
  const others = nodes.filter(n => n !== start).map(n => n.box);
  const sentence = Array.from(document.querySelectorAll("article p")).map(p => p.textContent.replace(/\s+/g, " "))
    .find(t => /\bStart at\b/.test(t));
  return {sentence: sentence || null, nodes: nodes.length,
          top: start.box.top <= Math.min(...others.map(b => b.top)) + 1,
          bottom: start.box.bottom >= Math.max(...others.map(b => b.bottom)) - 1,
          left: start.box.left <= Math.min(...others.map(b => b.left)) + 1,
          right: start.box.right >= Math.max(...others.map(b => b.right)) - 1};
}
"""

# Each visible search field: where its magnifier ends, and where the query's first letter starts.
MAGNIFIER_JS = r"""
() => Array.from(document.querySelectorAll("form.bd-search")).map(form => {
  const input = form.querySelector("input"), icon = form.querySelector(".fa-magnifying-glass, svg, i");
  if (!input || !icon) return null;
  const r = input.getBoundingClientRect(), i = icon.getBoundingClientRect(), s = getComputedStyle(input);
  if (r.width === 0 || i.width === 0) return null;
  const text = r.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft);
  return {iconRight: i.right, textLeft: text, overlaps: i.right > text && i.left < r.right && i.bottom > r.top && i.top < r.bottom};
}).filter(Boolean)
"""
