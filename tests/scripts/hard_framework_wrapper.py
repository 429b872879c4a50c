"""A framework's entry point (as hydra's @main does) catches every error, prints a trimmed
traceback of its own, and exits with 1."""
import functools
import sys
import traceback

import torch


def entry_point(task):
    @functools.wraps(task)
    def run():
        try:
            task()
        except Exception as error:  # the framework's own report, then exit 1
            trimmed = error.__traceback__.tb_next
            sys.stderr.write("Error executing job with overrides: []\n")
            traceback.print_exception(type(error), error, trimmed)
            sys.exit(1)
    return run


@entry_point
def task():
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(3, 4)
    h = torch.zeros(2, 4)
    for step in range(3):
        h = cell(torch.randn(2, 3), h)  # enters: h
        h.pow(2).mean().backward()


task()
