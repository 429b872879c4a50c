"""What tests/test_site_screens.py asks each page, as the JavaScript the browser runs.

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
  for (const el of article.querySelectorAll("*")) {
    if (el.closest("table, mjx-container, math, svg")) continue;
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

NOT_FOUND_JS = """
() => ({
  title: document.title,
  styles: Array.from(document.querySelectorAll("link[rel=stylesheet]")).map(l => [l.href, !!l.sheet]),
  themed: getComputedStyle(document.body).fontFamily,
  links: Array.from(document.querySelectorAll("article a[href], main a[href]")).map(a => a.href),
})
"""
