"""The files here are the proof programs of the catalogue's patterns, which
tests/command/fixes/test_pattern_proofs.py runs and fixes; importing them (as --doctest-modules would) runs
them, so pytest does not collect them."""

collect_ignore_glob = ["*.py"]
