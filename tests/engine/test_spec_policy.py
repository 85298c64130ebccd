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
