#!/usr/bin/env bash
# Check that the book's pinned toolchain and autograd_lens install and import with one Python
# interpreter, in a throwaway virtual environment under a temporary directory.
#
#   scripts/check_python_versions.sh /path/to/python3.12
#   scripts/check_python_versions.sh python3.13 --torch 2.15.0   # try another torch than the pin
#   scripts/check_python_versions.sh python3.12 --keep           # keep the temporary directory
#
# It downloads packages, so it is NOT part of `make test`. It never installs CUDA packages:
#   1. resolves requirements.txt (pip --dry-run) and reports the torch wheel pip picks and every
#      CUDA package (nvidia-*, cuda-*, triton) that wheel would pull in;
#   2. without CUDA packages: installs requirements.txt and the library, then checks the pins,
#      `import torchviz`, `import autograd_lens` and a tiny draw / saved_tensors / second-backward
#      run;
#      with CUDA packages: installs everything except torch (torchviz with --no-deps), then proves
#      what can be proven without torch: the pins, the `distutils` module torchviz needs (from
#      setuptools), that `import torchviz` gets past its `distutils` and `graphviz` imports and
#      stops only at `import torch`, and that the library's sources compile.
# The CPU-only torch build comes from PyTorch's own index: set
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu to let pip find it.
#
# Exit status: 0 every check ran and passed; 2 passed, but the checks that need torch were
# skipped (torch only with CUDA packages); 1 a check failed or the set-up broke.
set -uo pipefail

usage() { echo "usage: $0 PYTHON [--torch VERSION] [--keep]" >&2; exit 1; }
[ $# -ge 1 ] || usage
PYTHON=$1; shift
TORCH=""; KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
    --torch) [ $# -ge 2 ] || usage; TORCH=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) usage ;;
  esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "ERROR: interpreter '$PYTHON' not found" >&2; exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "ERROR: $("$PYTHON" --version 2>&1) is older than 3.11, which the book needs" >&2; exit 1
fi

WORK=$(mktemp -d -t check-python.XXXXXX)
if [ "$KEEP" = 1 ]; then
  echo "Keeping $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
VENV=$WORK/venv
PY=$VENV/bin/python
RESULTS=$WORK/results.tsv
: >"$RESULTS"
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"; }
# pip's own output goes to a log, shown only when pip fails.
pip_logged() {
  echo "\$ pip $*" >>"$WORK/pip.log"
  "$PY" -m pip "$@" >>"$WORK/pip.log" 2>&1 && return 0
  echo "pip $* failed; the end of its output:" >&2
  tail -n 30 "$WORK/pip.log" >&2
  return 1
}

summary() {
  echo
  echo "== Summary for $("$PYTHON" -c 'import platform, sys; print(sys.executable, platform.python_version(), platform.machine())')"
  local fails=0 skips=0
  while IFS=$'\t' read -r status name detail; do
    printf '%-5s %-34s %s\n' "$status" "$name" "$detail"
    [ "$status" = FAIL ] && fails=$((fails + 1))
    [ "$status" = SKIP ] && skips=$((skips + 1))
  done <"$RESULTS"
  if [ "$fails" -gt 0 ]; then
    echo "RESULT: FAIL ($fails check(s) failed)"; exit 1
  elif [ "$skips" -gt 0 ]; then
    echo "RESULT: PARTIAL PASS (every check that ran passed; $skips skipped: torch only came with CUDA packages)"; exit 2
  fi
  echo "RESULT: PASS"; exit 0
}

# The requirements, with torch replaced when --torch is given.
REQS=$WORK/requirements.txt
if [ -n "$TORCH" ]; then
  sed -E "s/^torch==[^[:space:]]+/torch==$TORCH/" "$ROOT/requirements.txt" >"$REQS"
else
  cp "$ROOT/requirements.txt" "$REQS"
fi
# The library's sources, copied so that building it writes nothing into the work tree.
mkdir -p "$WORK/src"
cp "$ROOT/pyproject.toml" "$ROOT/README.md" "$WORK/src/"
cp -r "$ROOT/autograd_lens" "$WORK/src/"
find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +

echo "== Creating a virtual environment with $("$PYTHON" --version 2>&1)"
if ! "$PYTHON" -m venv "$VENV" || ! pip_logged install --upgrade pip; then
  record FAIL "venv + pip" "could not create the virtual environment or upgrade pip"; summary
fi
record PASS "venv + pip" "$("$PY" -m pip --version | cut -d' ' -f1-2)"

echo "== Resolving requirements.txt (dry run, nothing installed)"
if ! pip_logged install --dry-run --ignore-installed --report "$WORK/report.json" -r "$REQS"; then
  record FAIL "resolve requirements.txt" "pip could not resolve the pins for this Python (see above)"
  summary
fi
# Prints: count <TAB> torch wheel <TAB> CUDA packages (comma separated, may be empty)
IFS=$'\t' read -r COUNT TORCH_WHEEL CUDA <<<"$("$PY" - "$WORK/report.json" <<'EOF'
import json, re, sys, urllib.parse
items = json.load(open(sys.argv[1]))["install"]
torch = [urllib.parse.unquote(i["download_info"]["url"].rsplit("/", 1)[-1]) for i in items
         if i["metadata"]["name"].lower() == "torch"]
cuda = sorted(f'{i["metadata"]["name"]}=={i["metadata"]["version"]}' for i in items
              if re.match(r"(nvidia[-_]|cuda[-_]|triton$)", i["metadata"]["name"].lower()))
print(len(items), torch[0] if torch else "none", ",".join(cuda) or "-", sep="\t")
EOF
)"
record PASS "resolve requirements.txt" "$COUNT distributions, torch wheel: $TORCH_WHEEL"

if [ "$CUDA" = "-" ]; then
  MODE=full
  record PASS "torch without CUDA packages" "$TORCH_WHEEL"
  echo "== Installing requirements.txt"
  if ! pip_logged install -r "$REQS"; then
    record FAIL "install requirements.txt" "pip install failed (see above)"; summary
  fi
  record PASS "install requirements.txt" "all pins, torch included"
else
  MODE=partial
  N_CUDA=$(tr ',' '\n' <<<"$CUDA" | wc -l)
  echo "   $TORCH_WHEEL needs these CUDA packages: $CUDA"
  record SKIP "torch without CUDA packages" \
    "$TORCH_WHEEL would pull $N_CUDA CUDA packages (listed above); none installed"
  echo "== Installing requirements.txt except torch (torchviz with --no-deps)"
  grep -v -E '^torch(viz)?[[:space:]]*[=<>~!]' "$REQS" >"$WORK/requirements-no-torch.txt"
  TORCHVIZ_PIN=$(grep -E '^torchviz[[:space:]]*==' "$REQS" | tr -d '[:space:]')
  if ! pip_logged install -r "$WORK/requirements-no-torch.txt" \
      || ! pip_logged install --no-deps "$TORCHVIZ_PIN"; then
    record FAIL "install requirements.txt" "pip install failed (see above)"; summary
  fi
  record PASS "install requirements.txt" "all pins except torch"
fi

echo "== Installing autograd_lens (--no-deps)"
if ! pip_logged install --no-deps --no-build-isolation "$WORK/src"; then
  record FAIL "install autograd_lens" "pip install of the library failed (see above)"; summary
fi
record PASS "install autograd_lens" "$("$PY" -m pip show autograd_lens 2>/dev/null | sed -n 's/^Version: //p')"

echo "== Import and run checks"
# Prints one line per check: STATUS <TAB> name <TAB> detail.
cd "$WORK" && "$PY" -W error::SyntaxWarning - "$REQS" "$MODE" >>"$RESULTS" 2>"$WORK/checks.err" <<'EOF'
import ast, compileall, importlib, importlib.metadata as md, importlib.util, io, os, re, shutil, sys, traceback
from contextlib import redirect_stdout
from pathlib import Path

reqs, mode = sys.argv[1], sys.argv[2]


def out(status, name, detail):
    print(f"{status}\t{name}\t{' '.join(str(detail).split())}", flush=True)


def short(path):
    """A path relative to the venv or the interpreter's prefix: no machine path in the summary."""
    for prefix in (sys.prefix, sys.base_prefix):
        if path.is_relative_to(prefix):
            return path.relative_to(prefix)
    return path.name


def check(name, fn):
    try:
        out("PASS", name, fn())
    except Exception as err:  # every failure is reported, none stops the others
        out("FAIL", name, f"{type(err).__name__}: {err}")


def pins():
    wrong = []
    for line in Path(reqs).read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        if not m or (mode == "partial" and m[1] == "torch"):
            continue
        try:
            got = md.version(m[1])
        except md.PackageNotFoundError:
            wrong.append(f"{m[1]} missing")
            continue
        if got.split("+")[0] != m[2]:
            wrong.append(f"{m[1]} {got} != {m[2]}")
    assert not wrong, "; ".join(wrong)
    return "every == pin installed at its version" + (" (torch excluded)" if mode == "partial" else "")


def distutils_check():
    from distutils.version import LooseVersion
    import distutils
    assert LooseVersion("2.13.0") > LooseVersion("1.9")
    origin = Path(distutils.__file__).parts
    where = "setuptools" if "setuptools" in origin or "_distutils_hack" in origin else "the standard library"
    if sys.version_info >= (3, 12):
        assert where == "setuptools", f"distutils came from {distutils.__file__}"
    return (f"distutils.version.LooseVersion importable, provided by {where} "
            f"({short(Path(distutils.__file__).parent)})")


def torchviz_without_torch():
    # torchviz/dot.py imports distutils and graphviz before torch: show that order from its source,
    # then show the import runs past them and stops exactly at `import torch`.
    # (find_spec("torchviz.dot") would import the package, so locate dot.py beside __init__.py)
    dot = str(Path(importlib.util.find_spec("torchviz").origin).with_name("dot.py"))
    tree = ast.parse(Path(dot).read_text())
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [n.module if isinstance(n, ast.ImportFrom) else n.names[0].name for n in imports]
    torch_at = names.index("torch")
    before = names[:torch_at]
    assert "distutils.version" in before and "graphviz" in before, names
    try:
        importlib.import_module("torchviz")
    except ModuleNotFoundError as err:
        assert err.name == "torch", f"stopped at {err.name!r}, not at torch"
        frame = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == dot][-1]
        assert frame.lineno == imports[torch_at].lineno, (frame.lineno, frame.line)
        return (f"import torchviz ran its imports of {', '.join(before)} and stopped only at "
                f"`import torch` (dot.py line {frame.lineno})")
    raise AssertionError("import torchviz succeeded although torch is not installed")


def compile_sources():
    spec = importlib.util.find_spec("autograd_lens")
    folder = Path(spec.origin).parent
    buf = io.StringIO()
    with redirect_stdout(buf):
        ok = compileall.compile_dir(str(folder), quiet=1, force=True)
    assert ok, buf.getvalue()
    n = len(list(folder.glob("*.py")))
    return f"{n} modules of the installed library compile, SyntaxWarnings as errors"


def torch_import():
    import torch
    return f"torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}"


def torchviz_import():
    import torchviz
    assert callable(torchviz.make_dot)
    return "import torchviz; torchviz.make_dot available"


def lens_run():
    import graphviz, torch
    import autograd_lens as al
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sum()
    before = al.saved_tensors(loss)
    assert before and all(s.state == "alive" for s in before), before
    picture = al.draw(loss, params={"x": x})
    assert isinstance(picture, graphviz.Digraph)
    loss.backward()
    after = al.saved_tensors(loss)
    assert after and all(s.state == "freed" for s in after), after
    assert torch.allclose(x.grad, x.detach().exp())  # d/dx sum(exp(x)) = exp(x)
    try:
        loss.backward()
    except RuntimeError as err:
        assert al.is_freed_graph_error(err), err
    else:
        raise AssertionError("a second backward did not raise")
    rendered = "not rendered: Graphviz `dot` not on PATH"
    if shutil.which("dot"):
        svg = al.draw(loss, params={"x": x}).pipe(format="svg")
        assert svg.lstrip().startswith(b"<?xml") or b"<svg" in svg
        rendered = "rendered to SVG by dot"
    return (f"import autograd_lens {al.__version__}; {len(before)} saved tensor(s) alive, then freed "
            f"by backward; second backward raises the freed-graph error; draw {rendered}")


check("pinned versions", pins)
check("distutils for torchviz", distutils_check)
check("library sources compile", compile_sources)
if mode == "full":
    check("import torch", torch_import)
    check("import torchviz", torchviz_import)
    check("autograd_lens import + run", lens_run)
else:
    check("import torchviz (torch absent)", torchviz_without_torch)
    out("SKIP", "import torch", "not installed: it would pull CUDA packages")
    out("SKIP", "autograd_lens import + run", "needs torch")
EOF
rc=$?
if [ $rc -ne 0 ] || grep -q '^FAIL' "$RESULTS"; then
  cat "$WORK/checks.err" >&2
fi
[ $rc -ne 0 ] && record FAIL "check program" "exited with status $rc"
summary
