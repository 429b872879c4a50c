"""A package run with -m in the tests."""
import sys

# What `python -m demo_pkg.train one --two` shows the package while importing it.
ARGV_AT_IMPORT = list(sys.argv)
