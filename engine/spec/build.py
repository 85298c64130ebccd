"""Builds the engine's Speculator from the config: loads the draft model, bridges vocabularies, measures step costs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.spec.bridge import VocabBridge
from engine.spec.cost import measure_step_cost
from engine.spec.draft import DraftModel
from engine.spec.policy import MAX_AUTO_TOKENS, SpecPolicy
from engine.spec.speculator import Speculator

log = logging.getLogger(__name__)
COST_CONTEXT = 512  # tokens before the ones a start-up cost step times (a typical request's length)


@dataclass(frozen=True, slots=True)
class TargetFacts:
    """What the engine core hands over: its runner and pool (to measure), the target's
    tokenizer folder and sizes, and how it loads a model and sizes a pool."""

    runner: object  # engine.runner.ModelRunner
    kv: object  # engine.kv_cache.KVCacheManager
    folder: Path
    vocab_size: int
    device: torch.device
    max_model_len: int
    load: Callable  # model path or None -> (files, LoadedModel, KV dtype name)
    num_blocks: Callable  # (draft model, KV dtype) -> its blocks (on CUDA: as many as the target's)


def _token_bytes(folder: Path, vocab_size: int) -> tuple[object, list]:
    from engine.structured import build_vocabulary
    from engine.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(folder)
    return tokenizer, build_vocabulary(tokenizer, vocab_size, []).token_bytes


def _load_draft(config, target: TargetFacts) -> tuple[DraftModel, Path]:
    files, loaded, kv_name = target.load(config.draft_model)
    model = loaded.model
    kv_dtype = getattr(torch, kv_name)
    block_size = target.kv.block_size
    num_blocks = target.num_blocks(model, kv_dtype)
    max_len = min(model.max_position_embeddings, num_blocks * block_size, 2 * target.max_model_len)
    draft = DraftModel(model, num_blocks, block_size, config.max_num_seqs, max_len, target.device, kv_dtype,
                       loaded.use_cpu_kernels)  # fmt: skip
    log.info("speculative: draft %s (%s), %d KV blocks", files.name, loaded.impl, num_blocks)
    return draft, files.folder


def _bridge(target: TargetFacts, draft: DraftModel, draft_folder: Path) -> VocabBridge:
    target_tok, target_bytes = _token_bytes(target.folder, target.vocab_size)
    draft_tok, draft_bytes = _token_bytes(draft_folder, draft.vocab_size)
    return VocabBridge(target_tok, draft_tok, target_bytes, draft_bytes)


def build_speculator(config, target: TargetFacts) -> Speculator:
    """Raises ValueError naming the field when the draft cannot serve this target."""
    draft = bridge = None
    if config.speculative in ("draft", "tli"):
        draft, draft_folder = _load_draft(config, target)
        if config.speculative == "draft" and draft.vocab_size != target.vocab_size:
            raise ValueError(f"draft_model: its vocabulary ({draft.vocab_size} tokens) is not the target's "
                             f"({target.vocab_size}); use speculative 'tli' for a draft of another vocabulary")  # fmt: skip
        if config.speculative == "tli":
            bridge = _bridge(target, draft, draft_folder)
    fixed = config.num_speculative_tokens
    target_cost = draft_cost = None
    if fixed is None:
        limit = min((MAX_AUTO_TOKENS + 1) * config.max_num_seqs, config.max_num_batched_tokens, 256)
        context = min(COST_CONTEXT, target.max_model_len // 2)
        target_cost = measure_step_cost(target.runner, target.kv, target.vocab_size, limit, context)
        if draft is not None:
            draft_cost = measure_step_cost(draft.runner, draft.kv, draft.vocab_size, min(config.max_num_seqs, 64), context)
    policy = SpecPolicy(fixed, target_cost, draft_cost)
    return Speculator(config.speculative, policy, target.max_model_len, draft, bridge)
