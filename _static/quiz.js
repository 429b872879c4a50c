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
