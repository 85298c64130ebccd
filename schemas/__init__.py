"""Typed structs that cross a boundary: the OpenAI wire types and the engine's message types."""
