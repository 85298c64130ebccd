"""The engine core: one transaction per step (schedule, execute, absorb), no I/O.

Called by the core process's busy loop, by the in-process client's thread, or directly
by the offline `LLM`. Requests arrive as `EngineRequest`s; outputs leave as `EngineOutput`s.
"""

from __future__ import annotations

import logging
import time

import torch

from engine import hardware
from engine.config import EngineConfig
from engine.kv_cache import KVCacheManager
from engine.prefill_pacing import PrefillPacer
from engine.loader import resolve_model
from engine.loader.weights import load_model
from engine.request import Request
from engine.runner import ModelRunner
from engine.runner.cuda_graphs import CudaGraphBackend
from engine.runner.gpu_memory import bytes_per_block, profile_num_blocks
from engine.scheduler import Progress, Scheduler, SchedulerOutput
from engine.spec import TargetFacts, build_speculator
from engine.structured import StructuredOutputs
from engine.validation import Limits, admit
from schemas.engine import EngineOutput, EngineRequest, EngineStats, ModelInfo, TokenLogprob

log = logging.getLogger(__name__)
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_engine_model(config: EngineConfig, model: str | None, device: torch.device, dtype_name: str, model_impl: str):
    """(files, loaded model, KV cache dtype name) of `model` under the config's loading rules."""
    files = resolve_model(model, config.cache_dir)
    loaded = load_model(files.folder, files.config, device, _DTYPES[dtype_name], model_impl, config.quantization,
                        config.cpu_kernels, config.cache_dir, config.linear_activations)  # fmt: skip
    if loaded.use_cpu_kernels:
        kv_name = config.kv_cache_dtype or hardware.default_kv_dtype(dtype_name, True)
    else:
        kv_name = dtype_name  # the torch path reads the cache in the model's dtype only
    return files, loaded, kv_name


def _num_blocks(config: EngineConfig, model, dtype: torch.dtype, device: torch.device) -> int:
    """The configured count; on CUDA what `gpu_memory_utilization` leaves after a profiling step;
    elsewhere `kv_cache_gib`'s worth."""
    if config.num_kv_blocks is not None:
        return config.num_kv_blocks
    if device.type == "cuda":
        return profile_num_blocks(model, dtype, config.block_size, config.max_num_batched_tokens, config.max_num_seqs,
                                  config.gpu_memory_utilization, device).num_blocks  # fmt: skip
    return max(1, int(config.kv_cache_gib * (1 << 30) // bytes_per_block(model.kv_shape, config.block_size, dtype)))


def _graph_backend(config: EngineConfig, device: torch.device):
    """CUDA graphs for decode steps on CUDA unless `enforce_eager`; None (eager) elsewhere."""
    return CudaGraphBackend() if device.type == "cuda" and not config.enforce_eager else None


def _error_output(request_id: str, message: str) -> EngineOutput:
    return EngineOutput(request_id=request_id, new_token_ids=[], finish_reason="error", error=message)


class EngineCore:
    """Holds the scheduler, KV cache manager and model runner of one engine instance."""

    def __init__(self, config: EngineConfig) -> None:
        config.validate()
        device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype_name = config.dtype or hardware.default_dtype(device)
        dtype = _DTYPES[dtype_name]
        num_threads = config.num_threads or (hardware.usable_cores() if device.type == "cpu" else None)
        if num_threads:
            torch.set_num_threads(num_threads)
        torch.manual_seed(config.seed)
        files, loaded, kv_name = load_engine_model(config, config.model, device, dtype_name, config.model_impl)
        model = loaded.model
        kv_dtype = _DTYPES[kv_name]
        num_blocks = _num_blocks(config, model, kv_dtype, device)
        max_len = min(config.max_model_len or model.max_position_embeddings, num_blocks * config.block_size)
        self.kv = KVCacheManager(num_blocks, config.block_size, config.enable_prefix_caching)
        prefill_cap = config.max_prefill_tokens_while_decoding
        stall_ratio = config.prefill_stall_ratio
        if stall_ratio is None:  # a cap given alone means that cap
            stall_ratio = hardware.default_prefill_stall_ratio(device) if prefill_cap is None else 0.0
        if prefill_cap is None:
            prefill_cap = hardware.default_prefill_cap(device)
        pacer = PrefillPacer(stall_ratio, fallback_tokens=prefill_cap or config.max_num_batched_tokens) if stall_ratio else None
        self.scheduler = Scheduler(self.kv, config.max_num_seqs, config.max_num_batched_tokens, max_len,
                                   prefill_cap or None, pacer)  # fmt: skip
        if pacer is not None:
            prefill_note = f"paced: prompt tokens cost at most {stall_ratio:g}x the step's decode ({prefill_cap or 'no cap'} tokens until learned)"
        else:
            prefill_note = f"{prefill_cap} tokens a step" if prefill_cap else "the whole budget"
        self.runner = ModelRunner(model, num_blocks, config.block_size, config.max_num_seqs, max_len,
                                  files.eos_token_ids, device, kv_dtype,
                                  loaded.use_cpu_kernels, _graph_backend(config, device))  # fmt: skip
        graphs = self.runner.graphs
        summary = (f"{loaded.impl}; {loaded.note + '; ' if loaded.note else ''}dtype {dtype_name}"
                   f"{' (auto)' if config.dtype is None else ''}; {num_threads or 'default'} threads; "
                   f"{num_blocks} KV blocks of {config.block_size} ({kv_name}); "
                   f"prefill while decoding: {prefill_note}; "
                   f"resident {hardware.resident_mib():.0f} MiB; "
                   f"{f'CUDA graphs for decode batches up to {graphs.sizes[-1]}; ' if graphs else ''}"
                   f"{hardware.describe(device)}")  # fmt: skip
        log.info("engine: %s", summary)
        self.info = ModelInfo(files.name, str(files.folder), max_len, model.vocab_size,
                              files.eos_token_ids, num_blocks, summary)  # fmt: skip
        self.structured = StructuredOutputs(self.info.path, self.info.vocab_size, self.info.eos_token_ids,
                                            config.grammar_compile_timeout, config.structured_outputs_open_objects,
                                            config.structured_outputs_property_order,
                                            config.structured_outputs_lenient)  # fmt: skip
        self.structured.warm()
        self.speculator = None
        if config.speculative is not None:
            facts = TargetFacts(self.runner, self.kv, files.folder, model.vocab_size, device, max_len,
                                lambda m: load_engine_model(config, m, device, dtype_name, "auto"),
                                lambda m, kv_dtype: num_blocks if device.type == "cuda" else _num_blocks(config, m, kv_dtype, device))  # fmt: skip
            self.speculator = build_speculator(config, facts)
            k = config.num_speculative_tokens
            log.info("speculative: %s, %s", config.speculative,
                     f"k = {k}" if k else "k auto (0 to 8 per request and step, 0 where drafts do not pay)")
        self.limits = Limits(self.info.vocab_size, self.info.max_model_len)
        self._accepted: list[str] = []  # admission answers not yet sent (take_admissions)
        self._refused: list[EngineOutput] = []
        self.num_prompt_tokens = 0
        self.num_generation_tokens = 0
        self._rss, self._rss_at = 0, -1.0

    def add_request(self, req: EngineRequest) -> None:
        """Admits a request: validated here (the one rule set, engine/validation.py), then scheduled,
        or first compiled when it carries an output constraint. The answer (accepted, or an error
        output naming the field) waits in `take_admissions`."""
        try:
            if req.request_id in self.scheduler.requests or self.structured.is_pending(req.request_id):
                raise ValueError(f"request_id: {req.request_id!r} is already running")
            params = admit(req.prompt_token_ids, req.params, self.limits)
        except ValueError as exc:
            self._refused.append(_error_output(req.request_id, str(exc)))
            return
        max_tokens = params.max_tokens or self.info.max_model_len - len(req.prompt_token_ids)
        request = Request(req.request_id, list(req.prompt_token_ids), params, max_tokens,
                          frozenset(self.info.eos_token_ids), req.arrival_time or time.time(), req.priority)  # fmt: skip
        if params.structured is not None:
            self.structured.submit(request)  # accepted (and scheduled) once its grammar has compiled
        else:
            self._schedule(request)

    def _schedule(self, request: Request) -> None:
        self.scheduler.add(request)
        self._accepted.append(request.request_id)
        self.num_prompt_tokens += len(request.prompt_token_ids)

    def take_admissions(self) -> tuple[list[str], list[EngineOutput]]:
        """(ids accepted, error outputs of requests refused) since the last call."""
        self._admit_compiled()
        accepted, refused = self._accepted, self._refused
        self._accepted, self._refused = [], []
        return accepted, refused

    def abort(self, request_ids: list[str]) -> None:
        for request_id in request_ids:
            self.structured.remove(request_id)
            request = self.scheduler.requests.get(request_id)
            if request is not None:
                self.scheduler.finish(request, "abort")
        self._release_finished()

    def _release_finished(self) -> None:
        """Frees the runner slots of requests the scheduler has ended since the last plan."""
        for request_id in self.scheduler.freed_req_ids:
            self.runner.slots.remove(request_id)
            self.structured.remove(request_id)
        if self.speculator is not None:
            self.speculator.remove(self.scheduler.freed_req_ids)
        self.scheduler.freed_req_ids.clear()

    def has_work(self) -> bool:
        return self.scheduler.has_work() or self.structured.has_pending()

    def _admit_compiled(self) -> None:
        """Schedules the requests whose grammar is ready; refuses those whose compile failed or overran."""
        if not self.structured.pending:
            return
        ready, failed = self.structured.poll()
        for request in ready:
            self._schedule(request)
        self._refused += [_error_output(r.request_id, f"structured: {msg}") for r, msg in failed]

    def _grammar_masks(self, plan: SchedulerOutput):
        """Starts filling the masks of the rows that sample this step; returns the waiter (or None)."""
        sampling = [
            req_id
            for req_id, num_new, num_computed in zip(plan.req_ids, plan.num_scheduled_tokens, plan.num_computed_tokens)
            if num_computed + num_new - len(plan.spec_token_ids.get(req_id, ())) == self.scheduler.requests[req_id].num_tokens
        ]
        return self.structured.masks_async(sampling, plan.spec_token_ids)

    def _advance_matchers(self, progressed: list[Progress]) -> None:
        for p in progressed:
            for token_id in p.token_ids:
                if not self.structured.accept(p.request.request_id, token_id) and p.request.finish_reason is None:
                    self.scheduler.finish(p.request, "error")  # cannot happen unless a mask was wrong
                    break

    def step(self) -> list[EngineOutput]:
        """Schedules and runs one step; returns the outputs of requests that got tokens."""
        self._admit_compiled()
        if not self.scheduler.has_work():
            time.sleep(0.001)  # only grammars compiling: do not spin hot
            return []
        started = time.perf_counter()
        plan = self.scheduler.schedule()
        if self.speculator is not None:
            self.speculator.remove(plan.freed_req_ids)  # preempted requests rebuild their draft state
        masks = self._grammar_masks(plan) if self.structured.matchers else None
        result = self.runner.execute(plan, masks)
        if masks is not None:
            masks()  # done already unless no row sampled; matchers are touched below
        for request_id, (start, entries) in result.prompt_logprobs.items():
            request = self.scheduler.requests.get(request_id)
            if request is not None and request.prompt_logprobs is not None:  # recomputed after preemption: overwrite
                request.prompt_logprobs[start : start + len(entries)] = entries
        progressed = self.scheduler.update(plan, result.token_ids)
        if self.structured.matchers:
            self._advance_matchers(progressed)
        outputs = [self._output(p, result.logprobs.get(p.request.request_id)) for p in progressed]
        self._release_finished()
        self.num_generation_tokens += sum(len(p.token_ids) for p in progressed)
        if self.speculator is not None:
            self._propose(progressed)
        if self.scheduler.pacer is not None:  # what this step's decode and prompt tokens cost
            self.scheduler.pacer.observe(plan.num_decode_tokens, plan.num_prefill_tokens, time.perf_counter() - started)
        return outputs

    def _resident_bytes(self) -> int:
        now = time.monotonic()
        if now - self._rss_at > 1.0:  # a /proc read per step would cost more than the figure is worth
            self._rss, self._rss_at = int(hardware.resident_mib() * 2**20), now
        return self._rss

    def _output(self, p: Progress, logprobs) -> EngineOutput:
        request = p.request
        prompt_lp = None
        if request.prompt_logprobs is not None and not request.prompt_logprobs_sent:
            prompt_lp, request.prompt_logprobs_sent = request.prompt_logprobs, True
        return EngineOutput(
            request_id=request.request_id,
            new_token_ids=p.token_ids,
            new_logprobs=[TokenLogprob(t, *lp) for t, lp in zip(p.token_ids, logprobs)] if logprobs else None,
            prompt_logprobs=prompt_lp,
            finish_reason=request.finish_reason,
            stop_reason=request.stop_reason,
            num_cached_tokens=max(request.num_cached_tokens, 0),
            num_draft_tokens=p.num_draft_tokens,
            num_accepted_tokens=p.num_accepted_tokens,
            structured_violation=self.structured.violation(request.request_id) if request.finish_reason == "stop" else None,
        )

    def _propose(self, progressed: list[Progress]) -> None:
        """Draft tokens for the next step, after this step's verify rounds are counted."""
        for p in progressed:
            if p.num_draft_tokens:
                self.speculator.observe(p.request, p.num_draft_tokens, p.num_accepted_tokens)
        pending = sum(r.num_tokens - r.num_computed_tokens for r in self.scheduler.running if r.num_tokens - r.num_computed_tokens > 1)
        pending += sum(r.num_tokens - r.num_computed_tokens for r in self.scheduler.waiting)
        self.speculator.propose(self.scheduler.running, min(pending, self.scheduler.max_num_batched_tokens),
                                self.structured.num_allowed_drafts)  # fmt: skip

    def stats(self) -> EngineStats:
        return EngineStats(
            resident_bytes=self._resident_bytes(),
            num_running=len(self.scheduler.running),
            num_waiting=len(self.scheduler.waiting),
            num_total_blocks=self.kv.num_blocks,
            num_free_blocks=self.kv.num_free_blocks,
            kv_usage=self.kv.usage,
            prefix_cache_queries=self.kv.num_queried_tokens,
            prefix_cache_hits=self.kv.num_hit_tokens,
            num_preemptions=self.scheduler.num_preemptions,
            num_prompt_tokens=self.num_prompt_tokens,
            num_generation_tokens=self.num_generation_tokens,
            spec_num_draft_tokens=self.scheduler.num_draft_tokens,
            spec_num_accepted_tokens=self.scheduler.num_accepted_tokens,
            spec_num_rounds=self.scheduler.num_spec_rounds,
        )
