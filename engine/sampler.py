"""The sampler: logits of the rows that produce a token -> one token id each, plus logprobs.

Order: logit bias, penalties, the grammar bitmask, min-tokens suppression of stop tokens
(which yields where the grammar allows nothing but stop tokens: the grammar decides where a
constrained output ends), then greedy or temperature / top-k / top-p / min-p sampling. A seeded request draws its
noise from a generator seeded by (seed, output position), so its tokens do not depend on
what else is in the batch. Logprobs are of the model's raw distribution.

`verify` checks draft tokens (speculative decoding): greedy rows keep drafts while they
equal the argmax, so the output is the one plain decoding gives; sampled rows use rejection
sampling, so the output keeps the target's distribution whatever the drafts were.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from compute_kernels import apply_token_bitmask, argmax

_GREEDY_EPS = 1e-5


@dataclass(slots=True)
class SamplingBatch:
    """Per-row sampling inputs, gathered by the runner for one step."""

    temperature: torch.Tensor  # [num_rows] float
    top_k: torch.Tensor  # [num_rows] long, 0 = off
    top_p: torch.Tensor  # [num_rows] float
    min_p: torch.Tensor  # [num_rows] float
    seeds: list[int | None]
    output_positions: list[int]  # index of the token each row samples, within its output
    logit_bias: list[dict[int, float] | None]
    suppress_ids: list[list[int] | None]  # stop token ids to mask while under min_tokens
    penalties: list[tuple[float, float, float] | None]  # (presence, frequency, repetition)
    penalty_tokens: list[tuple[torch.Tensor, torch.Tensor] | None]  # (prompt ids, output ids)
    num_logprobs: list[int | None]
    token_bitmask: torch.Tensor | None = None  # [num_rows, ceil(vocab / 32)] int32, the grammar's packed masks


    def select(self, rows: list[int]) -> SamplingBatch:
        """The same inputs for `rows` only, in that order."""
        index = torch.tensor(rows, dtype=torch.long, device=self.temperature.device)
        pick = lambda values: [values[r] for r in rows]  # noqa: E731
        return SamplingBatch(
            self.temperature[index], self.top_k[index], self.top_p[index], self.min_p[index], pick(self.seeds),
            pick(self.output_positions), pick(self.logit_bias), pick(self.suppress_ids), pick(self.penalties),
            pick(self.penalty_tokens), pick(self.num_logprobs),
            None if self.token_bitmask is None else self.token_bitmask[index],
        )  # fmt: skip


def plain_greedy_rows(batch: SamplingBatch) -> list[int]:
    """Greedy rows that need nothing of their logits but the argmax: no logprobs, penalties or
    logit bias (the grammar's mask and suppressed stop tokens are allowed)."""
    greedy = (batch.temperature < _GREEDY_EPS).tolist()
    return [row for row, g in enumerate(greedy)
            if g and batch.num_logprobs[row] is None and batch.penalties[row] is None and not batch.logit_bias[row]]  # fmt: skip


@dataclass(slots=True)
class SamplerOutput:
    token_ids: list[int]
    logprobs: list[tuple[float, list[int], list[float]] | None]  # (sampled logprob, top ids, top logprobs)


def _apply_penalties(logits: torch.Tensor, batch: SamplingBatch) -> None:
    vocab = logits.shape[1]
    for row, pen in enumerate(batch.penalties):
        if pen is None:
            continue
        presence, frequency, repetition = pen
        prompt_ids, output_ids = batch.penalty_tokens[row]
        counts = torch.bincount(output_ids, minlength=vocab)[:vocab].to(logits.dtype)  # [vocab]
        if repetition != 1.0:
            seen = counts > 0
            seen[prompt_ids] = True
            scores = logits[row]
            logits[row] = torch.where(seen, torch.where(scores > 0, scores / repetition, scores * repetition), scores)
        if frequency:
            logits[row] -= frequency * counts
        if presence:
            logits[row] -= presence * (counts > 0).to(logits.dtype)


def _process(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    for row, bias in enumerate(batch.logit_bias):
        if bias:
            ids = torch.tensor(list(bias.keys()), device=logits.device)
            logits[row, ids] += torch.tensor(list(bias.values()), device=logits.device, dtype=logits.dtype)
    _apply_penalties(logits, batch)
    if batch.token_bitmask is not None:
        apply_token_bitmask(logits, batch.token_bitmask)
    for row, ids in enumerate(batch.suppress_ids):
        if ids:
            kept = logits[row, ids] if batch.token_bitmask is not None else None  # indexing copies
            logits[row, ids] = float("-inf")
            if kept is not None and not bool(torch.isfinite(logits[row]).any()):
                logits[row, ids] = kept  # the grammar allows only stop tokens: it ends the output
    return logits


def _filter(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """Top-k, top-p and min-p on temperature-scaled logits; removed entries become -inf."""
    if bool((batch.top_k > 0).any()) or bool((batch.top_p < 1.0).any()):
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # [num_rows, vocab]
        ranks = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0)
        k = torch.where(batch.top_k > 0, batch.top_k, logits.shape[1]).unsqueeze(1)
        remove = ranks >= k
        probs = sorted_logits.softmax(dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass strictly above each entry
        remove |= before >= batch.top_p.unsqueeze(1)
        remove[:, 0] = False
        sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
        logits = torch.empty_like(logits).scatter_(1, order, sorted_logits)
    if bool((batch.min_p > 0).any()):
        probs = logits.softmax(dim=-1)
        threshold = probs.max(dim=-1, keepdim=True).values * batch.min_p.unsqueeze(1)
        logits = logits.masked_fill(probs < threshold, float("-inf"))
    return logits


def _exponential_noise(batch: SamplingBatch, shape: tuple[int, int], device) -> torch.Tensor:
    """Exp(1) noise [num_rows, vocab] as -log(U): on a CPU about 3x cheaper than `exponential_`.
    Unseeded rows draw from the global generator in one call; seeded rows from their own."""
    seeded = [row for row, seed in enumerate(batch.seeds) if seed is not None]
    noise = torch.empty(shape, device=device)
    if len(seeded) < shape[0]:
        free = [row for row in range(shape[0]) if batch.seeds[row] is None]
        noise[free] = torch.rand((len(free), shape[1]), device=device)
    for row in seeded:
        gen = torch.Generator(device=device)
        gen.manual_seed(hash((batch.seeds[row], batch.output_positions[row])) & 0x7FFF_FFFF_FFFF_FFFF)
        torch.rand(shape[1], generator=gen, device=device, out=noise[row])
    return noise.log_().neg_()  # U in [0, 1): U = 0 gives +inf noise, i.e. that token is never picked


def _logprobs(raw: torch.Tensor, token_ids: torch.Tensor, num_logprobs: list[int | None]) -> list:
    wanted = [n for n in num_logprobs if n is not None]
    if not wanted:
        return [None] * raw.shape[0]
    logprobs = raw.log_softmax(dim=-1)  # [num_rows, vocab]
    top_vals, top_ids = logprobs.topk(max(max(wanted), 1), dim=-1)
    sampled = logprobs.gather(1, token_ids.unsqueeze(1)).squeeze(1).tolist()
    out = []
    for row, n in enumerate(num_logprobs):
        if n is None:
            out.append(None)
        else:
            out.append((sampled[row], top_ids[row, :n].tolist(), top_vals[row, :n].tolist()))
    return out


def sample(logits: torch.Tensor, batch: SamplingBatch) -> SamplerOutput:
    """Picks one token per row of logits [num_rows, vocab] (float32, modified in place)."""
    raw = logits.clone() if any(n is not None for n in batch.num_logprobs) else logits
    logits = _process(logits, batch)
    greedy = batch.temperature < _GREEDY_EPS  # [num_rows]
    token_ids = argmax(logits)
    if not bool(greedy.all()):
        temps = torch.where(greedy, 1.0, batch.temperature).unsqueeze(1)
        probs = _filter(logits / temps, batch).softmax(dim=-1)
        noise = _exponential_noise(batch, tuple(probs.shape), probs.device)
        sampled = (probs / noise).argmax(dim=-1)
        token_ids = torch.where(greedy, token_ids, sampled)
    return SamplerOutput(token_ids.tolist(), _logprobs(raw, token_ids, batch.num_logprobs))


def _uniform(batch: SamplingBatch, device) -> list[float]:
    """One U[0, 1) per row for the accept test; seeded rows draw theirs from (seed, position)."""
    values = torch.rand(len(batch.seeds), device=device)
    for row, seed in enumerate(batch.seeds):
        if seed is not None:
            gen = torch.Generator(device=device)
            gen.manual_seed(hash((seed, batch.output_positions[row], 1)) & 0x7FFF_FFFF_FFFF_FFFF)
            values[row] = torch.rand(1, generator=gen, device=device)[0]
    return values.tolist()


def _rejection(probs, noise, uniform, draft_ids: list[int], draft_probs) -> list[int]:
    """Accepts draft x at row j with probability min(1, p(x) / q(x)); on the first rejection
    draws from max(p - q, 0) (q one-hot on x when `draft_probs` is None); when all pass, one
    more token from the last row. probs, noise [len(draft_ids) + 1, vocab]."""
    for j, x in enumerate(draft_ids):
        p = probs[j]
        q_x = 1.0 if draft_probs is None else float(draft_probs[j][x])
        if uniform[j] * q_x < float(p[x]):
            continue
        if draft_probs is None:
            residual = p.clone()
            residual[x] = 0.0
        else:
            residual = (p - draft_probs[j].to(p.dtype)).clamp_min_(0.0)
        if not bool((residual > 0).any()):
            residual = p
        return draft_ids[:j] + [int((residual / noise[j]).argmax())]
    n = len(draft_ids)
    return draft_ids + [int((probs[n] / noise[n]).argmax())]


def verify(logits: torch.Tensor, batch: SamplingBatch, draft_ids: list[list[int]],
           draft_probs: list[torch.Tensor | None] | None = None) -> tuple[list[list[int]], list[list | None]]:  # fmt: skip
    """Checks each request's drafts against logits [num_rows, vocab] laid out request by request,
    len(draft_ids[i]) + 1 rows each (modified in place). `draft_probs[i]` [len(draft_ids[i]), vocab]
    is the distribution the drafts were drawn from, None for a deterministic proposer.

    Returns (per request: the accepted drafts and one more token, per request: a logprobs
    entry per token or None).
    """
    raw = logits.clone() if any(n is not None for n in batch.num_logprobs) else logits
    logits = _process(logits, batch)
    greedy = (batch.temperature < _GREEDY_EPS).tolist()  # [num_rows]
    targets = argmax(logits).tolist()
    if not all(greedy):
        temps = torch.where(batch.temperature < _GREEDY_EPS, 1.0, batch.temperature).unsqueeze(1)
        probs = _filter(logits / temps, batch).softmax(dim=-1)
        noise = _exponential_noise(batch, tuple(probs.shape), probs.device)
        uniform = _uniform(batch, probs.device)
    tokens, emitted_rows, row = [], [], 0
    for i, drafts in enumerate(draft_ids):
        n = len(drafts)
        if greedy[row]:
            a = 0
            while a < n and drafts[a] == targets[row + a]:
                a += 1
            out = drafts[:a] + [targets[row + a]]
        else:
            q = draft_probs[i] if draft_probs is not None else None
            end = row + n + 1
            out = _rejection(probs[row:end], noise[row:end], uniform[row:end], drafts, q)
        tokens.append(out)
        emitted_rows += range(row, row + len(out))
        row += n + 1
    flat = torch.tensor([t for out in tokens for t in out], device=raw.device)
    entries = _logprobs(raw[emitted_rows], flat, [batch.num_logprobs[r] for r in emitted_rows])
    logprobs, start = [], 0
    for out in tokens:
        chunk = entries[start : start + len(out)]
        logprobs.append(None if chunk[0] is None else chunk)
        start += len(out)
    return tokens, logprobs
