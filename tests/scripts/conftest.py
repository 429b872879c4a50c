"""The files here are scripts that `python -m autograd_lens` runs in tests/command/text/test_cli.py; importing
them (as --doctest-modules would) runs them, so pytest does not collect them."""

collect_ignore_glob = ["*.py", "demo_pkg/*.py"]
