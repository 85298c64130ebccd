"""The model runner: persistent per-request slots, per-step input gathering, forward and sampling."""

from engine.runner.model_runner import ModelRunner

__all__ = ["ModelRunner"]
