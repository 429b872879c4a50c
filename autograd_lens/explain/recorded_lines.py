"""What the replay recorded, as lines of the command's text: the node whose saved tensor the
failing call met, the line that built it, the backward call that freed it or the write that changed
it, and the names that still hold it."""

from __future__ import annotations

from typing import Any

from ..source.places import place


def _at(site: dict | None) -> str:
    return place(site["file"], site["line"]) if site else "an unknown line"


def _calls(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _library_line(write: dict) -> list[str]:
    lib = write.get("library")
    return [f"The write runs in a library, at {_at(lib)} in {lib['function']} "
            f"(`{lib['text']}`), called from your line above."] if lib else []


def _held_line(evidence: dict) -> list[str]:
    held = [w["name"] for w in evidence.get("written", [])]
    return ["The tensor written is held by: " + ", ".join(
        f"`{n}`" for n in dict.fromkeys(held)) + "."] if held else []


def _hidden_lines(evidence: dict) -> list[str]:
    """The recorded write when no node the graph shows holds the saved tensor (see
    :func:`autograd_lens.run.record_evidence.evidence`): what was recorded, and what was not."""
    write, pieces = evidence["write"], evidence.get("copy_slices", 0)
    views = (f"; the graph has {_calls(pieces, 'CopySlices node')} (in-place writes into "
             "views), which keep the node of the operation they wrap out of reach"
             if pieces else "")
    shape = ", ".join(str(n) for n in write["shape"])
    return [f"Recorded in a replay: a write took a tensor of the reported size [{shape}] from "
            f"version {write['version'] - 1} to {write['version']}, and its last write left it "
            f"at the version the error reports; no node the recording can read holds the "
            f"saved tensor{views}, so the save itself is not recorded."] + \
        _library_line(write) + \
        ([f"That write is optimizer step {write['in_step']} itself."]
         if write.get("in_step") is not None else []) + _held_line(evidence)


def recorded_lines(finding: Any) -> list[str]:
    """What the replay recorded, as lines for the text (empty without a recording)."""
    evidence = getattr(finding, "evidence", None)
    if not getattr(finding, "recorded", False) or evidence is None:
        return []
    node = evidence.get("node")
    if node is None and evidence.get("write") is not None:
        return _hidden_lines(evidence)
    if node is None:
        return ["Recorded in a replay: the failing call, but no node of its graph holds a "
                "saved tensor in the error's state."]
    built = node.get("built") or {}
    made = (f"built at {_at(built.get('user'))} (`{built['user']['text']}`) after "
            f"{_calls(built['backward_calls'], 'backward call')} and "
            f"{_calls(built['steps'], 'optimizer step')}") if built.get("user") else \
        "built where the recording does not show"
    lines = []
    if evidence["kind"] == "modified":
        lines.append(f"Recorded in a replay: {node['name']} (slot {node['slot']}) was {made}.")
        write = evidence.get("write")
        if write is None:
            return lines + ["The recording shows no write of the saved tensor after the save."]
        lines += _library_line(write)
        if write.get("in_step") is not None:
            lines.append(f"That write is optimizer step {write['in_step']} itself.")
        else:
            lines.append(f"Between the save and that write: "
                         f"{_calls(write['backward_calls'], 'backward call')} and "
                         f"{_calls(write['steps'], 'optimizer step')} ran.")
        return lines + _held_line(evidence)
    freed = node.get("freed_by")
    lines.append(f"Recorded in a replay: {node['name']} (slot {node['slot']}) was {made}; " + (
        f"backward call {freed['number']} at {_at(freed['user'])} (`{freed['user']['text']}`) "
        f"freed its saved tensors." if freed and freed.get("user") else
        "the recording does not show which backward call freed it."))
    holders = list(dict.fromkeys(h["name"] for h in evidence.get("holders", [])))
    if holders:
        lines.append("Still held, at the failing call, by: " +
                     ", ".join(f"`{n}`" for n in holders[:6]) + ".")
    return lines

