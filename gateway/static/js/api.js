// The page's only door to the network: requests to its own origin with the API key, and an SSE reader.

export class ApiError extends Error {
  constructor(status, message, code = null) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get isAuth() { return this.status === 401; }
}

// A URL on the page's own origin (relative to the page, so a path prefix in front of the gateway works).
export function ownUrl(path) {
  const url = new URL(path, document.baseURI);
  if (url.origin !== window.location.origin) throw new Error(`refusing to leave this origin: ${url}`);
  return url;
}

async function errorFrom(response) {
  const text = await response.text();
  try {
    const error = JSON.parse(text).error;
    if (error && error.message) return new ApiError(response.status, error.message, error.code);
  } catch (_) { /* not an OpenAI error body */ }
  return new ApiError(response.status, `${response.status} ${response.statusText} ${text.slice(0, 200)}`.trim());
}

// Splits an SSE byte stream into the JSON payloads of its `data:` events; stops at `[DONE]`.
export async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        const data = raw.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
        if (!data) continue;
        if (data === "[DONE]") return;
        const event = JSON.parse(data);
        if (event.error) throw new ApiError(null, event.error.message, event.error.code); // after the 200: no status
        yield event;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export class Api {
  // keys: { get(): string|null } — where the API key lives (the tab's session storage).
  constructor(keys) {
    this.keys = keys;
  }

  headers(json) {
    const headers = {};
    if (json) headers["Content-Type"] = "application/json";
    const key = this.keys.get();
    if (key) headers.Authorization = `Bearer ${key}`;
    return headers;
  }

  async fetch(path, { body, signal } = {}) {
    const init = { method: body === undefined ? "GET" : "POST", headers: this.headers(body !== undefined), signal,
                   credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer" };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(ownUrl(path), init);
    if (!response.ok) throw await errorFrom(response);
    return response;
  }

  async json(path, options) {
    return (await this.fetch(path, options)).json();
  }

  async text(path, options) {
    return (await this.fetch(path, options)).text();
  }

  // The chunks of one streamed chat completion.
  async* chat(body, signal) {
    const response = await this.fetch("v1/chat/completions", { body: { ...body, stream: true }, signal });
    yield* sseEvents(response.body);
  }
}
