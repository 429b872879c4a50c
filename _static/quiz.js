// The predict-then-run quizzes (jupyterquiz) typeset their text with MathJax whenever a global
// `MathJax` exists, and index `MathJax.version`, which only a loaded MathJax has. Until MathJax has
// loaded (or for good, where it cannot load: offline, its server unreachable) the global is the
// page's configuration object, and every quiz would throw a TypeError. Give that object an empty,
// non-enumerable `version`: the quizzes then skip typesetting, and MathJax, which takes a global
// with an empty version for its configuration, loads and replaces it as usual.
if (window.MathJax && !("version" in window.MathJax)) {
  Object.defineProperty(window.MathJax, "version", {value: "", enumerable: false, writable: true,
                                                    configurable: true});
}

// The quizzes by keyboard alone. jupyterquiz makes each option a <label> holding a hidden radio
// button: Tab reaches only one option of the group, and an arrow key moves the checked radio to
// the next option, which clicks it and so answers the question. Each option's content goes into a
// <button> of its own instead, and the radio goes: Tab reaches every option, Enter or Space
// answers (the button's click reaches the label, whose handler jupyterquiz set), arrows do
// nothing, and the option around the focused button shows a ring (the style below: the quiz's own
// purple, which the options' light background holds at 9:1 or more in both colour schemes; the
// theme keeps an HTML output light in the dark scheme). The feedback is announced when it changes.
(function () {
  const STYLE = `
.MCButton > .MCOption { all: unset; display: block; width: 100%; cursor: pointer; }
.MCButton:has(> .MCOption:focus-visible) { outline: 3px solid #392061; outline-offset: 3px; }
`;

  function keyboardOptions(root) {
    root.querySelectorAll(".MCButton:not([data-keyboard])").forEach(option => {
      option.dataset.keyboard = "";
      option.querySelectorAll("input[type=radio]").forEach(radio => radio.remove());
      const button = document.createElement("button");
      button.type = "button";
      button.className = "MCOption";
      while (option.firstChild) button.appendChild(option.firstChild);
      option.appendChild(button);
    });
    root.querySelectorAll(".Quiz .Feedback:not([aria-live])").forEach(feedback => {
      feedback.setAttribute("aria-live", "polite");
    });
  }

  function start() {
    const style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
    keyboardOptions(document);
    // jupyterquiz draws its quiz after the page has loaded (and again when a quiz cell reruns).
    new MutationObserver(() => keyboardOptions(document))
      .observe(document.body, {childList: true, subtree: true});
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
