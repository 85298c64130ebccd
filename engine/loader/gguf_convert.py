"""Converts a GGUF file once into a cached Hugging Face folder (safetensors, tokenizer, config).

transformers (with the `gguf` package) dequantizes the weights and rebuilds the tokenizer;
the GGUF's own metadata is then checked against what it produced (rope theta, context
length, special tokens, chat template) and wins where they differ.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from tqdm import tqdm

log = logging.getLogger(__name__)
_MARKER = "conversion-complete.json"


def _cache_key(path: Path) -> str:
    stat = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    return f"{path.stem}-{digest}"


def _gguf_metadata(path: Path) -> dict:
    """The scalar and string fields of the GGUF header (arrays such as the vocabulary skipped)."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # the gguf package raises assorted errors on bad files
        raise ValueError(f"model: {path} is not a readable GGUF file ({exc})") from None
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key.split(".")[-1] in ("tokens", "scores", "token_type", "merges"):
            continue
        try:
            meta[key] = field.contents()
        except Exception:
            continue
    return meta


def _reconcile(folder: Path, meta: dict) -> list[str]:
    """Makes config.json and the tokenizer agree with the GGUF metadata; returns what changed."""
    arch = meta.get("general.architecture", "llama")
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    fixes = []
    theta = meta.get(f"{arch}.rope.freq_base")
    rope = config.get("rope_parameters") or {}
    current = config.get("rope_theta", rope.get("rope_theta"))
    if theta is not None and current is not None and current != theta:  # per-layer-type rope left as converted
        fixes.append(f"rope_theta {current} -> {theta}")
        if "rope_parameters" in config:
            config["rope_parameters"]["rope_theta"] = theta
        else:
            config["rope_theta"] = theta
    ctx = meta.get(f"{arch}.context_length")
    if ctx is not None and config.get("max_position_embeddings") != ctx:
        fixes.append(f"max_position_embeddings {config.get('max_position_embeddings')} -> {ctx}")
        config["max_position_embeddings"] = ctx
    for name in ("bos", "eos"):
        token_id = meta.get(f"tokenizer.ggml.{name}_token_id")
        if token_id is not None and config.get(f"{name}_token_id") != token_id:
            fixes.append(f"{name}_token_id {config.get(f'{name}_token_id')} -> {token_id}")
            config[f"{name}_token_id"] = token_id
    config.pop("quantization_config", None)
    config_path.write_text(json.dumps(config, indent=2))
    return fixes


def _check_tokenizer(tokenizer, meta: dict) -> None:
    """Sets the tokenizer's special tokens and chat template from the GGUF where they differ."""
    for name in ("bos", "eos"):
        token_id = meta.get(f"tokenizer.ggml.{name}_token_id")
        if token_id is not None and getattr(tokenizer, f"{name}_token_id") != token_id:
            setattr(tokenizer, f"{name}_token", tokenizer.convert_ids_to_tokens(token_id))
    template = meta.get("tokenizer.chat_template")
    if template and tokenizer.chat_template != template:
        tokenizer.chat_template = template


def convert_gguf(path: Path, cache_dir: Path) -> Path:
    """Returns the cached HF folder for `path`, converting it first if needed."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model: no such file {path}")
    target = Path(cache_dir) / _cache_key(path)
    if (target / _MARKER).is_file():
        return target
    meta = _gguf_metadata(path)
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".converting-", dir=cache_dir))
    try:
        _convert_into(path, work, meta)
        try:
            os.rename(work, target)
        except OSError:  # another process finished the same conversion first
            if not (target / _MARKER).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _save_dequantized(model, work: Path) -> None:
    """Writes the dequantized weights and config (transformers refuses save_pretrained on a GGUF model)."""
    from safetensors.torch import save_file

    state = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    save_file(state, str(work / "model.safetensors"), metadata={"format": "pt"})
    model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(str(work))
    model.generation_config.save_pretrained(str(work))


def _convert_into(path: Path, work: Path, meta: dict) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    steps = tqdm(total=4, desc=f"Converting {path.name} (once)", unit="step")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        _check_tokenizer(tokenizer, meta)
        steps.update(1)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        steps.update(1)
        _save_dequantized(model, work)
        tokenizer.save_pretrained(str(work))
        steps.update(1)
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"model: could not convert {path} ({type(exc).__name__}: {exc})") from None
    fixes = _reconcile(work, meta)
    for fix in fixes:
        log.warning("GGUF metadata differs from the converted config: %s (using the GGUF's)", fix)
    (work / _MARKER).write_text(json.dumps({"source": str(path), "fixes": fixes}))
    steps.update(1)
    steps.close()
