"""Prints what a script sees of how it was started, for comparison with plain `python`: its
arguments, file and path, torch's thread count after setting OMP_NUM_THREADS before importing
torch, and, at exit, the __main__ module an atexit handler imports."""
import atexit
import os
import sys

os.environ["OMP_NUM_THREADS"] = "1"
import torch  # noqa: E402 - after the environment is set, as such scripts do

MARK = "the script's own __main__"
here = os.path.dirname(os.path.realpath(__file__))
print("argv:", sys.argv)
print("file:", __file__, "name:", __name__, "loader:", type(__loader__).__name__)
print("path[0]:", sys.path[0], "own folder on the path:", here in sys.path)
print("threads:", torch.get_num_threads())


def at_exit():
    import __main__
    print("at exit:", getattr(__main__, "MARK", "another module"))


atexit.register(at_exit)
