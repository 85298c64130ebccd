"""Dynamic speculation: k per request from the measured step costs, the batch and each request's
acceptance; a compute-bound step gets no drafts, a memory-bound one gets them."""

from __future__ import annotations

from types import SimpleNamespace

from engine.spec.policy import MAX_AUTO_TOKENS, SpecPolicy, StepCost

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
FLAT = StepCost(SIZES, [0.010] * len(SIZES))  # memory-bound: more tokens cost nothing
LINEAR = StepCost(SIZES, [0.001 * n for n in SIZES])  # compute-bound: every token costs the same
KNEE = StepCost(SIZES, [0.010 * max(1.0, n / 16) for n in SIZES])  # flat up to 16 tokens, then linear


def _request(accepted: float = 0.0, rejected: float = 0.0):
    return SimpleNamespace(spec_accepted=accepted, spec_rejected=rejected)


def test_a_fixed_k_is_capped_only_by_each_request():
    policy = SpecPolicy(4)
    assert policy.choose([_request()] * 3, [10, 2, 0], 0) == [4, 2, 0]


def test_memory_bound_steps_draft_up_to_the_cap():
    policy = SpecPolicy(None, FLAT)
    assert policy.choose([_request(20.0, 0.5)], [MAX_AUTO_TOKENS], 0) == [MAX_AUTO_TOKENS]


def test_compute_bound_steps_draft_nothing():
    policy = SpecPolicy(None, LINEAR)
    assert policy.choose([_request(20.0, 0.1)] * 4, [8] * 4, 0) == [0] * 4


def test_a_large_batch_drafts_nothing_and_a_small_one_drafts():
    policy = SpecPolicy(None, KNEE)
    assert policy.choose([_request(5.0, 1.0)] * 64, [8] * 64, 0) == [0] * 64
    assert sum(policy.choose([_request(5.0, 1.0)] * 2, [8] * 2, 0)) > 0


def test_requests_that_accept_more_get_more_drafts():
    policy = SpecPolicy(None, KNEE)
    good, bad = _request(10.0, 0.2), _request(0.2, 3.0)
    k_good, k_bad = policy.choose([good, bad], [8, 8], 0)
    assert k_good > k_bad


def test_a_draft_model_as_dear_as_the_target_is_not_worth_running():
    policy = SpecPolicy(None, FLAT, draft_cost=FLAT)
    assert policy.choose([_request(1.0, 1.0)], [8], 0) == [0]
    cheap = SpecPolicy(None, FLAT, draft_cost=StepCost(SIZES, [0.001] * len(SIZES)))
    assert cheap.choose([_request(10.0, 0.5)], [8], 0)[0] > 0


def test_acceptance_decays_toward_recent_rounds():
    policy = SpecPolicy(None, FLAT)
    request = _request()
    for _ in range(10):
        policy.observe(request, 4, 4)
    high = policy.acceptance(request)
    for _ in range(10):
        policy.observe(request, 4, 0)
    assert high > 0.8 > 0.5 > policy.acceptance(request)


STEP = StepCost(list(range(1, 10)), [0.010, 0.020, 0.020, 0.020, 0.020, 0.020, 0.020, 0.020, 0.020])


def test_drafts_that_pay_only_together_are_found():
    # The first draft doubles the step, the next ones are free: one draft loses, four win.
    policy = SpecPolicy(None, STEP)
    assert policy.choose([_request(20.0, 0.5)], [4], 0) == [4]
    assert policy.choose([_request(20.0, 0.5)], [1], 0) == [0]


def test_a_gain_within_the_margin_is_not_taken():
    # One draft accepted with probability 0.02 at 1% more cost: a predicted 1% gain is noise.
    cost = StepCost([1, 2], [0.0100, 0.0101])
    policy = SpecPolicy(None, cost)
    assert policy.choose([_request(0.0, 50.0)], [1], 0) == [0]
    assert policy.choose([_request(50.0, 0.1)], [1], 0) == [1]


def test_no_decoding_request_no_drafts():
    assert SpecPolicy(None, FLAT).choose([], [], 5) == []
    assert SpecPolicy(None, FLAT).choose([_request()], [0], 0) == [0]


def test_step_sizes_are_dense_where_kernels_switch():
    from engine.spec.cost import step_sizes

    assert step_sizes(256, 9) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32, 64, 128, 256]
    assert step_sizes(4, 9) == [1, 2, 3, 4]


def test_observed_steps_correct_the_start_up_costs():
    from engine.spec.policy import ObservedCost

    cost = ObservedCost(StepCost([1, 2, 4], [0.010, 0.012, 0.016]))
    for _ in range(200):
        cost.record(1, 0.020)  # the machine got twice as slow (a rise is learnt slowly)
    assert abs(cost(1) - 0.020) < 1e-4
    assert abs(cost(4) - 0.026) < 1e-3  # not seen: priced by the fit, the same extra seconds added
    cost.record(1, 10.0)  # one stall moves the estimate by a bounded step
    assert cost(1) < 0.03
    for _ in range(20):
        cost.record(1, 0.010)  # a fall is learnt fast
    assert cost(1) < 0.011


def test_a_faster_machine_scales_the_unseen_sizes_down():
    from engine.spec.policy import ObservedCost

    cost = ObservedCost(StepCost([1, 2, 4], [0.010, 0.012, 0.016]))
    for _ in range(50):
        cost.record(2, 0.006)  # start-up was timed under load: steps run at half the cost
    assert abs(cost(4) - 0.008) < 1e-4
    assert abs(cost(1) - 0.005) < 1e-4  # below the smallest seen size: the same ratio


def test_per_step_overhead_makes_longer_drafts_pay():
    """Plain steps of a 4-request batch observed at three times their start-up cost (host work
    and the batch's attention, per step): that overhead is paid once per step, so verify
    steps are priced with it added, not multiplied, and longer drafts amortise it (scaled,
    every size would keep its start-up ratio and the drafts would stay at 3 each)."""
    policy = SpecPolicy(None, StepCost([1, 4, 8, 16, 32], [0.010, 0.017, 0.030, 0.047, 0.085]))
    for _ in range(100):
        policy.record_step(4, 0.050)
    good = [_request(20.0, 1.0) for _ in range(4)]
    assert min(policy.choose(good, [8] * 4, 0)) >= 6


def test_verify_steps_of_many_sizes_teach_the_fit_that_tokens_cost_more():
    """64 requests, plain steps 0.2 s slower than at start-up: taken as per-step seconds, so
    drafts look cheap. Then ten verify steps, each of another size and seen once, run at three
    times their start-up cost (load from other processes scales every token): the fit pools
    them, learns the scale and the drafts stop, though no size's own average has moved much."""
    policy = SpecPolicy(None, StepCost([1, 16, 64, 128, 256], [0.010, 0.030, 0.100, 0.200, 0.400]))
    for _ in range(200):
        policy.record_step(64, 0.300)
    batch = [_request(5.0, 1.0)] * 64
    assert sum(policy.choose(batch, [8] * 64, 0)) > 0
    for n in range(70, 170, 10):
        policy.record_step(n, 3 * policy.target_cost.base(n))
    assert policy.choose(batch, [8] * 64, 0) == [0] * 64


def test_drafting_steps_observed_to_cost_more_stop_the_drafts():
    policy = SpecPolicy(None, FLAT)
    good = _request(20.0, 0.5)
    assert policy.choose([good], [8], 0) == [8]
    for _ in range(200):
        policy.record_step(1, 0.010)
        for n in range(2, 10):
            policy.record_step(n, 0.010 * n)  # in fact every token costs a full step
    assert policy.choose([good], [8], 0) == [0]
