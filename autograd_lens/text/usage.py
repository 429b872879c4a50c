"""What ``python -m autograd_lens --help`` says: the command's name and usage, what it does (the
first run, the replay, the runs of the edits in the sandbox, what is said when), and examples.
"""

PROG = "python -m autograd_lens"
USAGE = (f"{PROG} [--report FILE] [--no-verify] (script.py | -m module) [args ...]\n"
         f"   or: {PROG} [--report FILE] [--no-verify] (-c code | -) [args ...]")
DESCRIPTION = """\
Run a Python script (or, with -m, a module) exactly as `python script.py` would: the same
sys.argv, its folder first on sys.path, __name__ == "__main__", the same output and exit code.
If a backward (or torch.autograd.grad) fails with "Trying to backward through the graph a
second time" or with the in-place (version counter) error, Python's usual traceback is followed
by a diagnosis (said at the moment of the failure instead when the program could catch the
error, so that a program that catches it, logs it and exits still gets it): the variables of
your program that carry the old graph into this step (most likely first, each with the file,
line and function where it enters the step), the likely pattern, its fix, and the book's page
about it; then the fix written as an edit of your own lines (a unified diff; where the intent
is unclear, other edits follow, each saying what it computes).
Before the diagnosis is printed, the program is replayed in a second Python process (from the
moment the backward fails) up to the call that failed, under a recorder of every in-place
write, graph node, backward call and optimizer step: the write, the node, the backward that
freed it and the names that hold it are said from that recording. A replay that does not fail
the same way (or none, under torchrun) leaves what the text says about a write, a step or a
loop marked as a guess. The replay runs in the sandbox described below, in a temporary copy of
the program's folder: what it writes there goes with the copy, a write outside it and the
network (but this machine) are refused, and its output is not shown; only a process it starts
(subprocess, os.system) is not held to that.
A program that catches the error and goes on gets the diagnosis in full the first time; the
same error again at the same line is one line ("the same error at train.py:57 again, 3 times so
far"). When the error ends the program, the diagnosis in short (the carrier and its line, the
fix, the edit, the page) is said last. A program that calls diagnose_on_error() itself gets the
diagnosis from it, in the error's message, and from the command only what the replay adds.
A child process the program starts (os.fork; multiprocessing's Process, Pool and
ProcessPoolExecutor workers by the fork, spawn or forkserver method; torch.multiprocessing.spawn)
is watched: its failure is diagnosed there, at once, and listed in the report's "children" with
its pid and how it was started; its output, exit code and results are as under python. Only the
command's own process replays the failure and runs the edits. Not watched: a Python the program
starts otherwise (subprocess.run([sys.executable, ...]), os.system, os.exec*); when the error
that ends the program carries such a process's failure, the command says where it happened.
Healthy runs print nothing extra. The first run, the replay and each edit's run see the
environment that python gives the program (PYTHONPATH, sys.path, the environment variables;
and so do the processes they start), but that a re-run's working folder, its script's folder on
sys.path, PWD and TMPDIR are in its temporary copy. As under python, the folder of the
script's real file (a symbolic link resolved) comes first on sys.path, except under -P; zip
applications and folders with a __main__.py run too; -m, -c and - (the program on standard
input) run as python runs them, with python's errors and exit codes (the edits of a program
given as text are not run); no frame of the command shows in a traceback; options are not
taken abbreviated, as python's are not; "--" may end the command's options.

Before an edit is printed as the fix, it is run: the command applies each suggested edit to a
copy of the program and runs it in a sandbox, one run after the other, each in a new process
forked from one started with the first run (which imports torch meanwhile); the first runs go
on beside the replay, from the moment it reaches the call that failed. The sandbox's
working folder is a temporary copy of the program's folder (small files copied, big ones
linked); a write outside it (open for writing, torch.save, os and shutil's file operations) and
the network (but this machine) are refused, and the run reads no input. A run stops after the
call that failed and two more (or, for an edit that merges backward calls, past the optimizer
step that failed), or when the program ends, or at its bound in time. The first edit that gets
there without an error, every parameter that the failing call would reach and an optimizer
updates still getting a gradient in some call past that point (the run goes on until the
optimizers that update them stepped past it), is printed as the fix;
others that hold as alternatives; one that failed only as a failed attempt, with what
happened; one that could not be checked (the sandbox refused what it needed, it ended before
the failure) with why. That shows the error is gone, not that the edit
computes what you meant. The temporary folder is removed, and the runs stopped, when the command
ends, however it ends. The exit code stays the first run's. --no-verify prints the edits
without running them, said as not run. Under torchrun (or another launcher that set RANK or
LOCAL_RANK with WORLD_SIZE) the edits are not run, and the command says so: a rank's re-run
would wait for the other ranks'. --verify is accepted and does nothing (running is the
default)."""
EPILOG = """\
examples:
  python -m autograd_lens train.py --epochs 3
  python -m autograd_lens --report diagnosis.json train.py
  python -m autograd_lens --no-verify train.py
  python -m autograd_lens -m mypackage.train"""
