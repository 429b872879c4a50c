"""A package run with -m in the tests."""
