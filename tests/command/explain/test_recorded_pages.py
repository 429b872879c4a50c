"""The page from the recorded situation: one network scoring a kept tensor beside other inputs
looks like a discriminator scoring a fake batch, but when the recording shows the kept tensor's
graph made once, at the program's top level before any backward call or step, the page is the
one of a tensor computed outside the loop."""

from __future__ import annotations

from command_runs import command_reports

NAME = "freed_prompt_encoded_once_scored_beside_a_learned_one.py"


def test_a_tensor_made_up_front_gets_the_outside_loop_page(tmp_path):
    report = command_reports([NAME], tmp_path)[NAME]["report"]
    built = report["recorded"]["node"]["built"]
    assert (built["backward_calls"], built["steps"]) == (0, 0)
    assert built["user"]["text"] == "prompt = encoder(torch.tensor([1, 2])).mean(0, keepdim=True)"
    assert report["carriers"][0]["name"] == "prompt"
    assert report["pattern"] == "outside_loop"
    assert report["page"].endswith("/13_tensor_outside_loop.html")


TRAINER = "freed_batch_on_trainer_read_by_critic_steps.py"


def test_a_batch_kept_on_a_trainer_and_scored_by_its_critic_gets_the_gan_page(tmp_path):
    """Kept on the trainer object (a module's state, as the pattern says), the generated batch
    is scored by the critic beside real data, whose weights also take inputs without the old
    graph: the discriminator's page."""
    report = command_reports([TRAINER], tmp_path)[TRAINER]["report"]
    assert report["carriers"][0]["name"] == "self.made"
    assert report["pattern"] == "module_state"
    assert report["page"].endswith("/12_gan_discriminator.html")


HOOK = "freed_weight_made_by_a_library_hook_once.py"
TWO = "g4_sum_of_two_losses_one_step.py"


def test_a_shared_part_made_before_the_loop_gets_the_outside_loop_page(tmp_path):
    """A weight a library hook made at one call before the loop, which every step's loss
    reads: the outside-loop page; two losses of one forward at the top level, without a loop,
    keep the two-losses page."""
    reports = command_reports([HOOK, TWO], tmp_path)
    hook = reports[HOOK]["report"]
    built = hook["recorded"]["node"]["built"]
    assert (built["backward_calls"], built["steps"]) == (0, 0)
    assert hook["pattern"] == "shared_trunk"
    assert hook["page"].endswith("/13_tensor_outside_loop.html")
    two = reports[TWO]["report"]
    assert two["pattern"] == "shared_trunk"
    assert two["page"].endswith("/02_two_losses_one_forward.html")


STEP = "freed_memory_encoded_once_read_by_step_function.py"


def test_a_tensor_made_up_front_and_read_by_a_step_function_gets_the_outside_loop_page(tmp_path):
    """The failing call is not in a loop of its own function: the loop calls the step
    function; the recording shows the failing call made by the very line whose earlier call
    freed the graph, which is the loop's reuse."""
    report = command_reports([STEP], tmp_path)[STEP]["report"]
    recorded = report["recorded"]
    assert recorded["node"]["freed_by"]["user"]["line"] == recorded["at"]["line"]
    assert (recorded["node"]["built"]["backward_calls"], recorded["node"]["built"]["steps"]) == \
        (0, 0)
    assert report["carriers"][0]["name"] == "memory"
    assert report["page"].endswith("/13_tensor_outside_loop.html")
