"""Whether the command runs as one rank of a distributed job (``torchrun``, or any launcher that
sets the process-group variables), where the edits are not run (the text says so).

Running an edit re-runs the program in a second process. A rank's re-run joins the job's process
group again and waits in every collective (DDP's gradient all-reduce, FSDP's gathers) for the
re-runs of the other ranks: a rank whose program failed alone, or later than the others, or not
at all, leaves the re-runs waiting for each other, and torchrun ends the whole job as soon as one
rank exits. No re-run of one rank can stand for the job, so the command prints the edits as not run and says why.

>>> distributed_launch({"TORCHELASTIC_RUN_ID": "none", "RANK": "1"})
'RANK'
>>> distributed_launch({"HOME": "/home/me"}) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping

# What torchrun (torch.distributed.run, its elastic agent) sets in every rank's environment,
# and what the older launchers and hand-written multi-process scripts set for init_process_group.
_AGENT = ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT")
_RANK = ("RANK", "LOCAL_RANK")


def distributed_launch(environ: Mapping[str, str]) -> str | None:
    """The variable that shows this process is one rank of a distributed job, or None: torchrun's
    agent variables, or a rank together with the job's size (``WORLD_SIZE``)."""
    for name in _AGENT:
        if name in environ:
            return next((rank for rank in _RANK if rank in environ), name)
    if "WORLD_SIZE" in environ:
        return next((rank for rank in _RANK if rank in environ), None)
    return None


def verify_skipped(environ: Mapping[str, str]) -> str:
    """Why the edits are not run in a distributed job (empty outside one)."""
    variable = distributed_launch(environ)
    if variable is None:
        return ""
    return (f"under torchrun or another distributed launcher ({variable} is set), a rank's "
            "re-run would wait for the other ranks' re-runs in the job's process group; run the "
            "program alone (one process) to have them run")
