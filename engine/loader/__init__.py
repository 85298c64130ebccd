"""Model loading: resolve a model argument to a Hugging Face folder, then build and fill the model."""

from engine.loader.resolve import ModelFiles, resolve_model

__all__ = ["ModelFiles", "resolve_model"]
