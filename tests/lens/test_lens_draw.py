"""draw and backward_frames: every graph, before and after backward; stable; the slider works."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_lens as al
from autograd_lens.lens import focus as lens_focus, replay as lens_replay
from lens_functions import Square
from browser import LAUNCH_ARGS, chromium_or_skip


def _graphs():
    def linear():
        w = torch.randn(3, 1, requires_grad=True)
        return ((torch.randn(4, 3) @ w - 1) ** 2).mean(), {"w": w}

    def no_saved():
        x = torch.ones(3, requires_grad=True)
        return (x + 1).sum(), {"x": x}

    def custom():
        x = torch.randn(3, requires_grad=True)
        return Square.apply(x.sin()).sum(), {"x": x}

    def ckpt_reentrant():
        x = torch.randn(3, requires_grad=True)
        return checkpoint(lambda t: t.sin().exp(), x, use_reentrant=True).sum(), {"x": x}

    def ckpt_non_reentrant():
        x = torch.randn(3, requires_grad=True)
        return checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum(), {"x": x}

    def lstm():
        cell = nn.LSTM(3, 4)
        out, (h, c) = cell(torch.randn(2, 1, 3))
        return out.sum() + c.sum(), dict(cell.named_parameters())

    return [linear, no_saved, custom, ckpt_reentrant, ckpt_non_reentrant, lstm]


@pytest.mark.parametrize("build", _graphs(), ids=lambda f: f.__name__)
def test_draw_before_and_after_backward_on_every_graph(build):
    root, params = build()
    before = al.draw(root, params=params)
    slots = al.saved_tensors(root)
    assert before.source.count("fillcolor=orange") == len(slots) + 1   # + the legend's swatch
    assert "cluster_legend" in before.source
    root.backward()
    after = al.draw(root, params=params, title="after")
    freed = [s for s in al.saved_tensors(root) if s.state == "freed"]
    assert len(freed) == len(slots) or not slots
    assert after.source.count("\nfreed\"") == len(freed) + 1        # each freed slot + the legend
    assert 'label=after' in after.source
    assert after.pipe(format="svg").startswith(b"<?xml")               # Graphviz renders it


def test_saved_tensor_label_has_shape_and_size():
    w = torch.randn(3, 2, requires_grad=True)
    src = al.draw((torch.randn(4, 3) @ w).sum(), legend=False).source
    assert "self (4, 3)\n48 bytes" in src
    assert "legend" not in src


def test_modified_slot_is_marked():
    w = torch.randn(3, requires_grad=True)
    loss = (w.sin() * 2).sum()
    with torch.no_grad():
        w.add_(1)
    src = al.draw(loss, legend=False).source
    assert "modified in place" in src and "fillcolor=tomato" in src


def test_params_name_the_leaves_and_roots():
    lin = nn.Linear(2, 1)
    src = al.draw(lin(torch.randn(3, 2)).sum(), params=dict(lin.named_parameters())).source
    assert "weight\n (1, 2)" in src and "bias\n (1)" in src and "root\n ()" in src


def test_output_is_stable_from_run_to_run():
    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        return model(torch.randn(2, 3)).sum(), dict(model.named_parameters())

    (a, pa), (b, pb) = make(), make()
    assert al.draw(a, params=pa).source == al.draw(b, params=pb).source
    assert not re.search(r"\b\d{9,}\b", al.draw(a).source)   # no Python id() in node names


def test_big_graph_is_capped_and_says_so():
    x = torch.randn(3, requires_grad=True)
    y = x
    for _ in range(300):
        y = y * 1.01
    src = al.draw(y.sum(), max_nodes=40).source
    assert "262 more nodes not drawn" in src and "max_nodes=40" in src
    assert src.count("MulBackward0") == 39


def test_draw_bad_arguments():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(TypeError, match="params must be a mapping"):
        al.draw(y, params=[x])
    with pytest.raises(TypeError, match="not a tensor"):
        al.draw(y, params={"x": 1})
    with pytest.raises(ValueError, match="max_nodes"):
        al.draw(y, max_nodes=0)


def test_backward_frames_one_per_executed_node():
    x = torch.randn(3, requires_grad=True)
    loss = (x.exp() * x).sin().sum()
    frames = al.backward_frames(loss, params={"x": x})
    assert [f.node_name for f in frames] == ["SumBackward0", "SinBackward0", "MulBackward0",
                                             "ExpBackward0", "AccumulateGrad"]
    assert [f.freed for f in frames] == [(), ("self",), ("other", "self"), ("result",), ()]
    assert [f.step for f in frames] == [1, 2, 3, 4, 5]
    assert torch.allclose(x.grad, torch.cos((x.exp() * x).detach()) * (x.exp() * (1 + x)).detach())
    # Step by step: after step 2 only SinBackward0 is freed, MulBackward0 still alive.
    src = frames.draw(1).source
    assert "step 2 of 5: SinBackward0 ran; freed: self" in src
    assert src.count("\nfreed\"") == 1 + 1                     # one slot + the legend


def test_backward_frames_partial_and_retained():
    w, v = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    loss = (w.exp() + v.sin()).sum()
    frames = al.backward_frames(loss, retain_graph=True)
    assert all(f.freed == () for f in frames)
    assert {s.state for s in al.saved_tensors(loss)} == {"alive"}
    frames = al.backward_frames(loss)
    assert {f.node_name for f in frames} >= {"ExpBackward0", "SinBackward0"}


def test_backward_frames_custom_and_checkpoint():
    x = torch.randn(3, requires_grad=True)
    frames = al.backward_frames(Square.apply(x).sum())
    assert ("SquareBackward", ("saved_tensors",)) in [(f.node_name, f.freed) for f in frames]
    out = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum()
    frames = al.backward_frames(out)
    assert [f.freed for f in frames if f.node_name == "SinBackward0"] == [("self",)]


def test_frames_html_has_one_picture_and_every_frame_as_data_with_a_slider():
    x = torch.randn(3, requires_grad=True)
    frames = al.backward_frames((x * x).sin().sum())
    page = frames.to_html()
    assert page == frames._repr_html_()
    assert page.count("<svg") == 1 and 'type="range"' in page and f'max="{len(frames) - 1}"' in page
    data = json.loads(re.search(r'<script type="application/json" class="al-states">(.*?)</script>',
                                page, re.S).group(1))
    assert len(data["changes"]) == len(data["captions"]) == len(frames) == 4
    assert data["captions"] == [frames.caption(k) for k in range(len(frames))]


def _boxes(svg: str) -> dict[str, str]:
    """Each node box of a picture: its id and the text of its labels."""
    return {key: " ".join(re.findall(r">([^<>]*)</text>", body))
            for key, body in lens_replay.NODE_BOX.findall(svg)}


@contextmanager
def _replay_page(tmp_path, frames, body_style: str = ""):
    """The frames' replay on a page of its own, opened in Chromium (skipped locally without one)."""
    from playwright import sync_api

    executable = chromium_or_skip()   # the site test's lookup: skipped locally, never in CI
    page_file = tmp_path / "frames.html"
    page_file.write_text(f"<!doctype html><html><body style='{body_style}'>{frames.to_html()}</body></html>")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            yield page
        finally:
            browser.close()


def test_frames_slider_really_switches_frames_in_a_browser(tmp_path):
    x = torch.randn(3, requires_grad=True)
    frames = al.backward_frames((x * x).sin().sum())
    with _replay_page(tmp_path, frames) as page:
        for k in (0, 2, 3, 1, 0):   # forward, and back: each frame as draw(k) pictures it
            page.fill('input[type="range"]', str(k))
            shown = page.eval_on_selector(".al-frame svg", "s => s.outerHTML")
            drawn = frames.draw(k, same_size=True).pipe(format="svg").decode()
            assert _boxes(shown) == _boxes(drawn), f"frame {k} is not the graph after step {k + 1}"
            assert page.inner_text(".al-step") == frames.caption(k)


# ----- focus="stale" and the drawing's description (its alt text) -----

def _step_two_of_a_carried_state(steps: int = 6):
    """Step 2 of a loop that carries a tensor with history: a new head over a freed old graph."""
    w = torch.randn(3, requires_grad=True)
    h = torch.ones(3)
    for _ in range(steps):
        h = (h * w).tanh()
    h.sum().backward()                       # the old graph: every saved tensor freed
    return ((h * w).sin().sum()), {"w": w}


def test_focus_stale_keeps_the_path_into_the_freed_graph_and_collapses_the_rest():
    loss, params = _step_two_of_a_carried_state()
    nodes = al.walk(loss)
    kept = lens_focus.stale_path(nodes)
    names = [al.node_name(n) for n in kept]
    # sum, sin, mul of the new step, the first freed node (the old graph's last tanh), and w
    assert names == ["SumBackward0", "SinBackward0", "MulBackward0", "TanhBackward0", "AccumulateGrad"]
    stale = [n for n in kept if any(s.stale for s in al.node_slots(n))]
    assert len(stale) == 1
    src = al.draw(loss, params=params, focus="stale", legend=False).source
    hidden = len(nodes) - len(kept)
    assert f"{hidden} more nodes, collapsed" in src
    tanh = re.findall(r"\b(n\d+) \[label=TanhBackward0", src)
    assert len(tanh) == 1 and re.findall(r"\bmore -> (n\d+)", src) == tanh   # the box joins the freed node
    full = al.draw(loss, params=params, legend=False).source
    assert len(re.findall(r"\[label=TanhBackward0", full)) == 6 and "collapsed" not in full


def test_focus_keeps_every_node_when_nothing_is_stale():
    x = torch.randn(3, requires_grad=True)
    loss = (x.exp() * x).sum()
    assert lens_focus.stale_path(al.walk(loss)) == al.walk(loss)
    assert al.draw(loss, focus="stale").source == al.draw(loss).source


def test_focus_rejects_an_unknown_rule():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="focus must be None or one of"):
        al.draw((x * x).sum(), focus="freed-ish")


def _two_branches():
    """A loss over two branches of three nodes each, with a parameter at the top of each."""
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    loss = (a.exp() * 2).sin().sum() + (b.cos() * 3).tanh().sum()
    return loss, a, b


def test_focus_on_a_parameter_draws_its_path_and_collapses_the_other_branch():
    loss, a, b = _two_branches()
    nodes = al.walk(loss)
    kept = lens_focus.paths_to(nodes, [b])
    names = [al.node_name(n) for n in kept]
    assert names == ["AddBackward0", "SumBackward0", "TanhBackward0", "MulBackward0",
                     "CosBackward0", "AccumulateGrad"]
    assert [n.variable for n in kept if hasattr(n, "variable")] == [b]     # a's branch is left out
    src = al.draw(loss, params={"a": a, "b": b}, focus=[b], legend=False).source
    assert f"{len(nodes) - len(kept)} more nodes, collapsed" in src
    assert "ExpBackward0" not in src and "SinBackward0" not in src and "CosBackward0" in src
    assert al.draw(loss, focus=b).source == al.draw(loss, focus=[b]).source     # one target or a list
    node = b.cos().grad_fn                       # not in loss's graph: a new node
    with pytest.raises(ValueError, match="not a node of the drawn graph"):
        al.draw(loss, focus=[node])


def test_focus_on_a_node_joins_a_root_whose_node_is_collapsed_to_the_box():
    loss, a, b = _two_branches()
    other = (a * 5).sum()
    target = [n for n in al.walk(loss) if al.node_name(n) == "CosBackward0"][0]
    src = al.draw([loss, other], focus=[target], legend=False).source
    assert "CosBackward0" in src and "ExpBackward0" not in src
    assert re.search(r"\bmore -> r1\b", src)      # other's root: drawn, and joined to the box
    with pytest.raises(ValueError, match="leaf tensor the graph does not reach"):
        al.draw(loss, focus=[torch.ones(2, requires_grad=True)])


def test_describe_counts_nodes_and_saved_tensors_from_the_graph():
    loss, params = _step_two_of_a_carried_state(steps=2)
    text = al.describe(loss, params)
    slots = al.saved_tensors(loss)
    freed = sum(s.state == "freed" for s in slots)
    alive = sum(s.state == "alive" for s in slots)
    assert text.startswith(f"Autograd graph of {len(al.walk(loss))} nodes, leaves: w.")
    assert f"{len(slots)} saved tensors: {alive} alive, {freed} freed (" in text
    assert "2 x TanhBackward0 result" in text
    assert al.draw(loss, params=params).name == text          # the SVG's title: the alt text
    assert "<title>" + text.split(".")[0] in al.draw(loss, params=params).pipe(format="svg").decode()
    focused = al.draw(loss, params=params, focus="stale")
    kept = len(lens_focus.stale_path(al.walk(loss)))
    assert focused.name.endswith(f"Drawn in full: {kept} of the nodes; "
                                 f"the other {len(al.walk(loss)) - kept} in one box.")


def test_describe_names_modified_slots():
    w = torch.randn(3, requires_grad=True)
    v = w * 1.0
    loss = (v * v).sum()
    v.mul_(2)
    assert al.describe(loss).endswith(
        "2 modified in place (MulBackward0 other, MulBackward0 self).")


# ----- the replay: one layout for every frame, step buttons beside the slider -----

def _frames_of_a_two_layer_net():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return al.backward_frames(model(torch.randn(2, 3)).pow(2).mean(),
                              params=dict(model.named_parameters()))


def _layout(svg: str) -> tuple[str, list[tuple[str, str]]]:
    """The picture's size and every node's box (its id and polygon), the labels left out."""
    size = re.search(r'<svg width="([^"]+)" height="([^"]+)"', svg).groups()
    boxes = re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]+)</title>\s*<polygon[^>]* points="([^"]+)"', svg)
    return size, boxes


def test_replay_frames_share_one_layout():
    frames = _frames_of_a_two_layer_net()
    layouts = [_layout(frames.draw(k, same_size=True).pipe(format="svg").decode())
               for k in range(len(frames))]
    assert len(layouts[0][1]) > 10
    assert all(layout == layouts[0] for layout in layouts), "a node moved or a frame changed size"
    # without same_size the freed labels are smaller than the alive ones: the layout moves
    loose = [_layout(frames.draw(k).pipe(format="svg").decode()) for k in (0, len(frames) - 1)]
    assert loose[0] != loose[1]


def test_replay_has_step_buttons_beside_the_slider():
    frames = _frames_of_a_two_layer_net()
    page = frames.to_html()
    controls = re.search(r'<div class="al-controls">(.*?)</div>', page, re.S).group(1)
    assert re.findall(r'aria-label="(previous step|backward step|next step)"', controls) == [
        "previous step", "backward step", "next step"]
    assert page.count('<p class="al-step">step ') == 1 and page.count('"step ') == len(frames)


def test_replay_carries_the_picture_once_and_only_the_boxes_that_change():
    frames = _frames_of_a_two_layer_net()
    svg, variants, changes = frames.states()
    whole = sum(len(frames.draw(k, same_size=True).pipe(format="svg")) for k in range(len(frames)))
    assert len(frames.to_html()) < whole / 4          # every frame drawn in full is 4 times more
    ran = {f"node{i}" for i in range(100)}
    assert changes[0] == {} and all(len(c) <= 6 for c in changes) and set(variants) < ran
    assert all(len(v) == 2 for v in variants.values())    # a box is as in frame 0, or changed


def test_replay_step_buttons_and_frame_sizes_in_a_browser(tmp_path):
    frames = _frames_of_a_two_layer_net()
    with _replay_page(tmp_path, frames, body_style="width:700px") as page:
        sizes = set()
        for k in range(len(frames)):
            assert page.inner_text(".al-step") == frames.caption(k)
            sizes.add(tuple(page.eval_on_selector(
                ".al-frame svg",
                "s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; }")))
            page.click('button[aria-label="next step"]')
        page.click('button[aria-label="previous step"]')
        assert page.eval_on_selector('input[type="range"]', "s => s.value") == str(len(frames) - 2)
        assert len(sizes) == 1, f"frames of different sizes: {sorted(sizes)}"


# ----- a focused replay: a big graph's pass drawn along the path the page is about -----

def _critic_over_a_generator():
    """A GAN-like loss: a critic on real points and on a generator's output (not detached)."""
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 2))
    critic = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 1))
    params = ({f"G.{k}": v for k, v in gen.named_parameters()}
              | {f"D.{k}": v for k, v in critic.named_parameters()})
    loss = critic(torch.randn(5, 2)).mean() - critic(gen(torch.randn(5, 2))).mean()
    return loss, params


def _collapsed_box(svg: str) -> tuple[str, int, int]:
    """The collapsed nodes' box in a frame: its outline width and its 'freed of total' count."""
    body = dict(lens_replay.NODE_BOX.findall(svg))
    box = [b for b in body.values() if "<title>more</title>" in b]
    assert len(box) == 1, "no box of collapsed nodes in the frame"
    freed, total = map(int, re.search(r">\s*(\d+) of (\d+) saved tensors freed<", box[0]).groups())
    width = re.search(r'stroke-width="([\d.]+)"', box[0])
    return (width.group(1) if width else "1"), freed, total


def test_focused_replay_keeps_the_path_in_full_and_counts_what_the_collapsed_nodes_free():
    loss, params = _critic_over_a_generator()
    nodes = al.walk(loss)
    kept = {nodes.index(n) for n in lens_focus.paths_to(nodes, [params["G.0.weight"]])}
    slots_before = len(al.saved_tensors(loss))
    frames = al.backward_frames(loss, params=params, focus=[params["G.0.weight"]], legend=False)
    assert {s.state for s in al.saved_tensors(loss)} == {"freed"}        # the pass really ran
    pictures = [frames.draw(k, same_size=True).pipe(format="svg").decode() for k in range(len(frames))]
    titles = {tuple(sorted(_boxes(svg))) for svg in pictures}
    assert len(titles) == 1, "the frames do not draw the same boxes"
    drawn_slots = len(re.findall(r"<title>s\d+_\d+</title>", pictures[0]))
    assert len(re.findall(r"<title>n\d+</title>", pictures[0])) == len(kept) < len(nodes)
    for k, svg in enumerate(pictures):
        width, freed, total = _collapsed_box(svg)
        assert total == slots_before - drawn_slots       # every saved tensor once: drawn or counted
        # freed so far among the collapsed nodes, from the frames' own record of each step
        assert freed == sum(len(f.freed) for f in frames[: k + 1] if f.node_index not in kept), k
        ran_hidden = frames[k].node_index not in kept
        assert (float(width) >= 3) == ran_hidden, f"frame {k}: the box's outline says the wrong node ran"
        outlined = [key for key, body in lens_replay.NODE_BOX.findall(svg)
                    if 'stroke-width="3"' in body and "<title>more</title>" not in body]
        ran = [] if ran_hidden else [f"n{sorted(kept).index(frames[k].node_index)}"]
        assert [re.search(r"<title>(\w+)</title>", dict(lens_replay.NODE_BOX.findall(svg))[key]).group(1)
                for key in outlined] == ran, f"frame {k}: the wrong node is outlined as the one that ran"
    assert 0 < sum(f.node_index not in kept for f in frames) < len(frames)
    assert _collapsed_box(pictures[-1])[1:] == (total, total) and total > 0
    assert all(_layout(svg) == _layout(pictures[0]) for svg in pictures), "a node moved or a frame changed size"
    assert "cluster_legend" not in frames.draw(0).source and "cluster_legend" in frames.draw(0, legend=True).source


def test_focused_replay_is_narrower_than_the_whole_pass_and_its_page_shows_the_same_frames():
    loss, params = _critic_over_a_generator()
    focused = al.backward_frames(loss, params=params, focus=params["G.0.weight"], legend=False)
    loss, params = _critic_over_a_generator()
    whole = al.backward_frames(loss, params=params)
    assert [f.node_name for f in focused] == [f.node_name for f in whole]    # the same pass

    def points_wide(frames):
        return float(re.search(r'<svg width="([\d.]+)pt"', frames.states()[0]).group(1))
    assert points_wide(focused) < 0.8 * points_wide(whole)
    page = focused.to_html()
    assert page.count("<svg") == 1 and f'max="{len(focused) - 1}"' in page and "<title>more</title>" in page


def test_focused_replay_rejects_a_bad_focus_before_backward_frees_anything():
    loss, params = _critic_over_a_generator()
    stranger = torch.ones(2, requires_grad=True)
    for focus, message in (("stale", "a replay runs backward"), ("freed", "a replay runs backward"),
                           ([stranger], "leaf tensor the graph does not reach"),
                           (3, "focus must be None or one of")):
        with pytest.raises(ValueError, match=message):
            al.backward_frames(loss, params=params, focus=focus)
    assert {s.state for s in al.saved_tensors(loss)} == {"alive"}      # backward never ran


def test_focused_replay_slider_shows_each_frame_in_a_browser(tmp_path):
    loss, params = _critic_over_a_generator()
    frames = al.backward_frames(loss, params=params, focus=[params["G.0.weight"]], legend=False)
    with _replay_page(tmp_path, frames) as page:
        for k in (0, len(frames) // 2, len(frames) - 1, 1):
            page.fill('input[type="range"]', str(k))
            shown = page.eval_on_selector(".al-frame svg", "s => s.outerHTML")
            drawn = frames.draw(k, same_size=True).pipe(format="svg").decode()
            assert _boxes(shown) == _boxes(drawn), f"frame {k} is not the graph after step {k + 1}"
