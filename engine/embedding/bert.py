"""BERT's encoder on a flattened batch: linear layers over all tokens at once, attention per input.

No padding reaches the linear layers (most of the work): the batch is one [num_tokens, hidden]
matrix; only attention scatters it into [num_inputs, max_len] rows with a key mask.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

_ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


@dataclass(slots=True)
class _Layer:
    qkv_w: torch.Tensor  # [3 * hidden, hidden]
    qkv_b: torch.Tensor  # [3 * hidden]
    out_w: torch.Tensor
    out_b: torch.Tensor
    ln1_w: torch.Tensor
    ln1_b: torch.Tensor
    up_w: torch.Tensor  # [intermediate, hidden]
    up_b: torch.Tensor
    down_w: torch.Tensor  # [hidden, intermediate]
    down_b: torch.Tensor
    ln2_w: torch.Tensor
    ln2_b: torch.Tensor


def _check_config(config: dict[str, Any]) -> None:
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"embedding_model: position_embedding_type {config['position_embedding_type']!r} "
                         "is not supported (absolute only)")  # fmt: skip
    if config.get("hidden_act", "gelu") not in _ACTIVATIONS:
        raise ValueError(f"embedding_model: hidden_act {config['hidden_act']!r} is not supported")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ValueError("embedding_model: hidden_size is not a multiple of num_attention_heads")


class BertEncoder:
    """The token states of a BERT model; built by `from_weights`, called by the embedder per batch."""

    def __init__(self, config: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        _check_config(config)
        self.hidden_size = int(config["hidden_size"])
        self.num_heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.vocab_size = int(config["vocab_size"])
        self.act = _ACTIVATIONS[config.get("hidden_act", "gelu")]
        t = tensors
        self.word = t["embeddings.word_embeddings.weight"]  # [vocab, hidden]
        self.position = t["embeddings.position_embeddings.weight"]  # [max_positions, hidden]
        self.token_type0 = t["embeddings.token_type_embeddings.weight"][0]  # [hidden]
        self.emb_ln = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(t, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]

    @staticmethod
    def _layer(t: dict[str, torch.Tensor], p: str) -> _Layer:
        att = p + "attention.self."
        return _Layer(
            qkv_w=torch.cat([t[att + n + ".weight"] for n in ("query", "key", "value")]),
            qkv_b=torch.cat([t[att + n + ".bias"] for n in ("query", "key", "value")]),
            out_w=t[p + "attention.output.dense.weight"], out_b=t[p + "attention.output.dense.bias"],
            ln1_w=t[p + "attention.output.LayerNorm.weight"], ln1_b=t[p + "attention.output.LayerNorm.bias"],
            up_w=t[p + "intermediate.dense.weight"], up_b=t[p + "intermediate.dense.bias"],
            down_w=t[p + "output.dense.weight"], down_b=t[p + "output.dense.bias"],
            ln2_w=t[p + "output.LayerNorm.weight"], ln2_b=t[p + "output.LayerNorm.bias"],
        )  # fmt: skip

    @classmethod
    def from_weights(cls, config: dict[str, Any], weights: Iterable[tuple[str, torch.Tensor]],
                     device: torch.device, dtype: torch.dtype) -> BertEncoder:
        """From (name, tensor) pairs of a BertModel checkpoint (a `bert.` prefix is dropped)."""
        tensors = {name.removeprefix("bert."): w for name, w in weights}
        try:
            encoder = cls(config, tensors)
        except KeyError as exc:
            raise ValueError(f"embedding_model: the weights lack {exc.args[0]}") from None
        encoder._to(device, dtype)
        return encoder

    def _to(self, device: torch.device, dtype: torch.dtype) -> None:
        def move(x: torch.Tensor) -> torch.Tensor:
            return x.to(device=device, dtype=dtype).contiguous()

        self.word, self.position, self.token_type0 = move(self.word), move(self.position), move(self.token_type0)
        self.emb_ln = tuple(move(x) for x in self.emb_ln)
        for layer in self.layers:
            for name in _Layer.__slots__:
                setattr(layer, name, move(getattr(layer, name)))

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, seq_lens: list[int]) -> torch.Tensor:
        """input_ids, positions: [num_tokens] (inputs back to back); returns states [num_tokens, hidden]."""
        hidden = self.word[input_ids] + self.position[positions] + self.token_type0  # [num_tokens, hidden]
        x = F.layer_norm(hidden, (self.hidden_size,), *self.emb_ln, self.eps)
        pad = _Padding(seq_lens, positions)
        for layer in self.layers:
            attn = self._attention(F.linear(x, layer.qkv_w, layer.qkv_b), pad)  # [num_tokens, hidden]
            x = F.layer_norm(x + F.linear(attn, layer.out_w, layer.out_b), (self.hidden_size,),
                             layer.ln1_w, layer.ln1_b, self.eps)  # fmt: skip
            up = self.act(F.linear(x, layer.up_w, layer.up_b))  # [num_tokens, intermediate]
            x = F.layer_norm(x + F.linear(up, layer.down_w, layer.down_b), (self.hidden_size,),
                             layer.ln2_w, layer.ln2_b, self.eps)  # fmt: skip
        return x

    def _attention(self, qkv: torch.Tensor, pad: _Padding) -> torch.Tensor:
        num_tokens = qkv.shape[0]
        head_dim = self.hidden_size // self.num_heads
        rows = pad.scatter(qkv).view(pad.num_seqs, pad.max_len, 3, self.num_heads, head_dim)
        q, k, v = rows.permute(2, 0, 3, 1, 4)  # 3 x [num_seqs, heads, max_len, head_dim]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad.mask)  # [num_seqs, heads, max_len, head_dim]
        return pad.gather(out.transpose(1, 2).reshape(-1, self.hidden_size), num_tokens)


class _Padding:
    """Moves a flattened batch into [num_seqs * max_len] rows and back; the mask hides the padding keys."""

    def __init__(self, seq_lens: list[int], positions: torch.Tensor) -> None:
        self.num_seqs, self.max_len = len(seq_lens), max(seq_lens)
        self.dense = all(n == self.max_len for n in seq_lens)  # no padding at all: plain views
        self.mask = None
        if not self.dense:
            lens = torch.tensor(seq_lens, device=positions.device)
            starts = torch.arange(self.num_seqs, device=positions.device) * self.max_len
            self.rows = torch.repeat_interleave(starts, lens) + positions  # [num_tokens]
            keys = torch.arange(self.max_len, device=positions.device)
            self.mask = (keys[None, :] < lens[:, None])[:, None, None, :]  # [num_seqs, 1, 1, max_len]

    def scatter(self, x: torch.Tensor) -> torch.Tensor:  # [num_tokens, d] -> [num_seqs * max_len, d]
        if self.dense:
            return x
        out = x.new_zeros(self.num_seqs * self.max_len, x.shape[1])
        out[self.rows] = x
        return out

    def gather(self, x: torch.Tensor, num_tokens: int) -> torch.Tensor:  # back to [num_tokens, d]
        return x if self.dense else x[self.rows]
