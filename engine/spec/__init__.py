"""Speculative decoding: proposers (n-gram lookup, a draft model, a draft model of another
vocabulary), the policy that picks how many tokens each request proposes, and the
`Speculator` the engine core calls once per step."""

from engine.spec.build import TargetFacts, build_speculator
from engine.spec.speculator import Speculator

__all__ = ["Speculator", "TargetFacts", "build_speculator"]
