"""The notebooks as a workshop reads them: every student and instructor copy in a real JupyterLab.

`make lab` serves the student copies and `make lab-solutions` the instructor's copies
(scripts/student.py writes both); JupyterLab renders their Markdown with jupyterlab-myst
(requirements.txt). This test writes both kinds of copy into a temporary folder as those targets
do, starts one JupyterLab on it (the project's environment, a free port on the loopback, a token,
no browser, settings and runtime files in the temporary folder), and opens every notebook in one
headless Chromium page, without starting a kernel and with requests to other hosts stopped (each
one a failure). In each it reads the text JupyterLab shows:

* no raw MyST: no directive fence (```` ``` ````, ``:::``), no directive option (``:class:``), no role
  (``{ref}``, ``{doc}``), no label line (``(05-error-on-batch-2)=``), no reference jupyterlab-myst
  could not resolve (it shows those as the bare label, marked "Cross Reference Not Found"), and no
  link that shows its own target's file name (an unresolved ``{doc}``);
* the fix box rendered as an admonition, with its diff;
* no quiz answer: no visible cell says which option is right (``"correct"``), and none shows the
  text of an option (the quiz cell's source is hidden; its questions are in a file).

Without Chromium it is skipped, except in CI (CI=true), where it fails (tests/browser.py). It needs
JupyterLab and jupyterlab-myst from requirements.txt.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from browser import LAUNCH_ARGS, chromium_or_skip
from places import REPOSITORY

ROOT = REPOSITORY
sys.path.insert(0, str(ROOT / "scripts"))
import quizzes  # noqa: E402
from nbtools import NOTEBOOKS, notebook_paths  # noqa: E402
from student import write_student_copies  # noqa: E402

SCENARIOS = [p for p in notebook_paths() if p.parent == NOTEBOOKS]
START_TIMEOUT_S = 120
OPEN_TIMEOUT_MS = 60_000
TOKEN = "lab-test-token"

# Lab settings for the test: every cell rendered at once (no windowing, so the whole notebook is in
# the page to read), no news or update check (the test is offline), kernels never started.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}

# Raw MyST in rendered text: a fence, a directive option, a role, a label line.
RAW_MYST = re.compile(r"^\s*(```|~~~|:::)|^\s*:[a-z][\w-]*:(\s|$)|\{[a-z][\w-]*\}`?|^\s*\([\w-]+\)=\s*$",
                      re.MULTILINE)

# What one open notebook shows: the rendered text of each Markdown cell, what jupyterlab-myst could
# not resolve, links that show their own target, the fix box, and the whole visible text.
READ_JS = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const visible = el => el.offsetParent !== null || el.getClientRects().length > 0;
  const markdown = Array.from(panel.querySelectorAll('.jp-MarkdownCell'))
    .map(cell => Array.from(cell.querySelectorAll('.myst, .jp-RenderedMarkdown')).filter(visible)
                   .map(r => r.innerText).join('\n'));
  const unresolved = Array.from(panel.querySelectorAll('[title="Cross Reference Not Found"]'))
    .map(e => e.innerText.trim());
  const selfNamed = Array.from(panel.querySelectorAll('.jp-MarkdownCell a[href]')).filter(a => {
    const last = decodeURIComponent(new URL(a.href, location.href).pathname.split('/').pop() || '');
    const text = a.innerText.trim();
    return text && (text === last || text + '.ipynb' === last);
  }).map(a => a.innerText.trim());
  const box = panel.querySelector('.myst-admonition.fix-box');
  return {markdown, unresolved, selfNamed, text: panel.innerText,
          fixBox: box ? {text: box.innerText, diff: !!box.querySelector('code.language-diff, .language-diff')} : null,
          cells: panel.querySelectorAll('.jp-Cell').length};
}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A running JupyterLab on the student copies (student/) and the instructor's copies (solutions/)."""
    executable = chromium_or_skip()
    root = tmp_path_factory.mktemp("lab")
    copies = {"student": write_student_copies(SCENARIOS, root / "student"),
              "solutions": write_student_copies(SCENARIOS, root / "solutions", solutions=True)}
    settings = root / ".settings"
    for name, values in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               JUPYTER_CONFIG_DIR=str(root / ".config"))
    port = _free_port()
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
               "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    log = open(root / "lab.log", "w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(root / 'lab.log').read_text()[-3000:]}")
                time.sleep(0.2)
        opened = {p.relative_to(root).as_posix(): sum(c.cell_type == "markdown" for c in
                                                      nbformat.read(p, as_version=4).cells)
                  for paths in copies.values() for p in paths}
        started = time.monotonic()
        found = asyncio.run(_read_all(executable, base, opened))
        found["seconds"] = time.monotonic() - started
        kernels = json.load(urllib.request.urlopen(f"{base}/api/kernels?token={TOKEN}", timeout=10))
        found["kernels started"] = len(kernels)
        yield {"found": found, "root": root}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


async def _read_all(executable: str, base: str, opened: dict[str, int]) -> dict:
    """Open each notebook (``opened``: its path under the server's root, and how many Markdown
    cells it has) in turn in one page, wait until all its Markdown cells are rendered, read it."""
    from playwright.async_api import async_playwright

    found: dict = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        # Offline, like the site's test: a request to another host is stopped and reported.
        elsewhere: list[str] = []

        async def stop(route):
            elsewhere.append(route.request.url)
            await route.abort()

        await page.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/])"), stop)
        await page.goto(f"{base}/lab?token={TOKEN}", timeout=OPEN_TIMEOUT_MS)
        await page.wait_for_function("window.jupyterapp !== undefined", timeout=OPEN_TIMEOUT_MS)
        await page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
        for path, count in opened.items():
            opening = time.monotonic()
            await page.evaluate("""path => window.jupyterapp.commands.execute('docmanager:open',
                    {path, factory: 'Notebook', kernelPreference: {shouldStart: false, canStart: false}})""", path)
            await page.wait_for_function(
                """count => { const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
                              if (!panel) return false;
                              const cells = panel.querySelectorAll('.jp-MarkdownCell');
                              return cells.length === count && Array.from(cells).every(
                                c => c.classList.contains('jp-mod-rendered')
                                     && c.querySelector('.myst, .jp-RenderedMarkdown')); }""",
                arg=count, timeout=OPEN_TIMEOUT_MS, polling=100)
            found[path] = await page.evaluate(READ_JS)
            found[path]["seconds"] = time.monotonic() - opening
            await page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")
        found["page errors"] = errors
        found["other hosts"] = elsewhere
        await browser.close()
    return found




def _problems(found: dict, check) -> list[str]:
    return [f"{path}: {problem}" for path, seen in found.items() if isinstance(seen, dict)
            for problem in check(path, seen)]


def test_jupyterlab_opens_every_student_and_instructor_copy(lab):
    found = lab["found"]
    times = sorted((seen["seconds"], p) for p, seen in found.items() if isinstance(seen, dict))
    print(f"read {len(times)} notebooks in {found['seconds']:.0f} s; slowest: {times[-1][1]} {times[-1][0]:.1f} s")
    opened = [p for p, seen in found.items() if isinstance(seen, dict)]
    assert sorted(opened) == sorted(f"{kind}/{p.name}" for kind in ("student", "solutions") for p in SCENARIOS)
    assert found["kernels started"] == 0, "reading the notebooks started a kernel"
    assert found["page errors"] == [], found["page errors"]
    assert found["other hosts"] == [], f"JupyterLab asked other hosts: {found['other hosts'][:5]}"


def raw_myst(path: str, seen: dict) -> list[str]:
    problems = [f"raw MyST {m.group(0).strip()!r} in: {text[max(0, m.start() - 60):m.end() + 60]!r}"
                for text in seen["markdown"] for m in RAW_MYST.finditer(text)]
    problems += [f"a reference JupyterLab cannot resolve, shown as {label!r}" for label in seen["unresolved"]]
    problems += [f"a link that shows its own target {text!r}" for text in seen["selfNamed"]]
    return problems


def test_no_raw_myst_in_jupyterlab(lab):
    problems = _problems(lab["found"], raw_myst)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_the_fix_box_renders_as_on_the_site(lab):
    def check(path, seen):
        box = seen["fixBox"]
        if box is None:
            return ["no fix box rendered as an admonition"]
        return [] if box["diff"] else [f"fix box without its diff: {box['text'][:200]!r}"]

    problems = _problems(lab["found"], check)
    assert not problems, "\n".join(problems)


def quiz_answer_shown(path: str, seen: dict) -> list[str]:
    (question,) = json.loads(quizzes.quiz_path(NOTEBOOKS / Path(path).name).read_text())
    # An option as a rendered page shows it, and as its source spells it (a visible code cell).
    options = [(" ".join(re.sub(r"<[^>]+>", "", a["answer"]).split()), " ".join(a["answer"].split()))
               for a in question["answers"]]
    text = " ".join(seen["text"].split())
    problems = [f"shows {m.group(0)!r}" for m in re.finditer(r'"correct"|correct"?\s*[:=]\s*(True|False|true|false)', text)]
    problems += [f"shows the option {rendered!r}" for rendered, source in options if rendered in text or source in text]
    return problems


def test_no_quiz_answer_shows_in_jupyterlab(lab):
    problems = _problems(lab["found"], quiz_answer_shown)
    assert not problems, "\n".join(problems)


def test_the_checks_catch_raw_myst_and_a_quiz_answer():
    """The same checks on what JupyterLab showed before: the notebooks' MyST as plain Markdown,
    and the quiz's options in its visible source."""
    raw = {"markdown": [":::{admonition} The fix\n:class: fix-box\n```diff\n+ h = h.detach()\n```",
                        "(05-error-on-batch-2)=\nThe loop", "See {ref}`05-detach-per-batch`."],
           "unresolved": ["mm-version-check-gaps"], "selfNamed": ["08_retain_step_backward"]}
    problems = raw_myst("student/05_rnn_hidden_state.ipynb", raw)
    for needle in ("':::'", "'```'", "':class:'", "'(05-error-on-batch-2)='", "'{ref}`'",
                   "'mm-version-check-gaps'", "'08_retain_step_backward'"):
        assert any(needle in p for p in problems), (needle, problems)
    (question,) = json.loads(quizzes.quiz_path(NOTEBOOKS / "05_rnn_hidden_state.ipynb").read_text())
    source = "display_quiz(" + json.dumps([question], ensure_ascii=False).replace("true", "True") + ")"
    shown = quiz_answer_shown("student/05_rnn_hidden_state.ipynb", {"text": source})
    assert any('"correct"' in p for p in shown) and sum("the option" in p for p in shown) == 3, shown


def _dry_run(target: str) -> str:
    """What `make TARGET` would run (make -n), with this environment as the virtualenv."""
    done = subprocess.run(["make", "-n", "--no-print-directory", target, f"VENV={sys.prefix}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_lab_serves_the_student_copies_and_lab_solutions_the_instructors():
    lab, solutions = _dry_run("lab"), _dry_run("lab-solutions")
    assert re.search(r"jupyter lab\b.*--notebook-dir=student$", lab, re.MULTILINE), lab
    assert re.search(r"jupyter lab\b.*--notebook-dir=solutions$", solutions, re.MULTILINE), solutions
    for folder, output, flag in (("student", lab, ""), ("solutions", solutions, "--solutions ")):
        missing = [p for p in SCENARIOS if not (ROOT / folder / p.name).exists()]
        if missing:  # written first, and only those
            assert f"scripts/student.py {flag}" + " ".join(f"notebooks/{p.name}" for p in missing) in output
        else:
            assert "student.py" not in output, f"make would overwrite the copies in {folder}/"
