"""The OpenAI-compatible HTTP gateway: routes, SSE, chat templates, metrics, engine supervision."""
