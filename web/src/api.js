// Talks to the qvl server on the page's own origin: /props, media previews and streamed chat
// completions.

export class ApiFailure extends Error {
  // kind: 'http' (status set), 'network' (connection lost), 'stream' (error event mid-answer)
  constructor(kind, message, { status = 0, retryAfter = 0 } = {}) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

function authHeaders(apiKey) {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
}

async function failureFrom(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch { /* not JSON */ }
  const retryAfter = Number(res.headers.get('Retry-After')) || 0;
  return new ApiFailure('http', message, { status: res.status, retryAfter });
}

export async function fetchProps(apiKey) {
  let res;
  try {
    res = await fetch('/props', { headers: authHeaders(apiKey), cache: 'no-store' });
  } catch {
    throw new ApiFailure('network', 'cannot reach the server');
  }
  if (!res.ok) throw await failureFrom(res);
  return res.json();
}

// POST /v1/media/preview: what the server makes of one video or document part (sampled frames,
// rendered pages, token counts); throws ApiFailure with the server's message.
export async function fetchPreview(part, apiKey, signal) {
  let res;
  try {
    res = await fetch('/v1/media/preview', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...authHeaders(apiKey) },
      body: JSON.stringify({ part }),
      signal,
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiFailure('network', 'cannot reach the server');
  }
  if (!res.ok) throw await failureFrom(res);
  return res.json();
}

// GET /health: true when the server answers and is ready; throws ApiFailure('network') when
// it cannot be reached.
export async function fetchHealth() {
  let res;
  try {
    res = await fetch('/health', { cache: 'no-store' });
  } catch {
    throw new ApiFailure('network', 'cannot reach the server');
  }
  return res.ok;
}

// The unlabelled samples of GET /metrics (Prometheus text) as { name: value }.
export function parseMetrics(text) {
  const values = {};
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*) (\S+)$/.exec(line);
    if (m) values[m[1]] = Number(m[2]);
  }
  return values;
}

export async function fetchMetrics() {
  let res;
  try {
    res = await fetch('/metrics', { cache: 'no-store' });
  } catch {
    throw new ApiFailure('network', 'cannot reach the server');
  }
  if (!res.ok) throw new ApiFailure('http', `metrics: ${res.status}`, { status: res.status });
  return parseMetrics(await res.text());
}

// Streams one answer. onHeaders() runs once the server has admitted the request (the response
// starts); onDelta(text) gets each piece of the answer, onReasoning(text) each piece of a Thinking
// model's reasoning (delta.reasoning_content, which comes first); resolves with
// { finishReason, usage, timings, clientTtftMs } or throws ApiFailure / AbortError.
export async function streamChat(body, { apiKey, signal, onDelta, onReasoning = () => {}, onHeaders = () => {} }) {
  const started = performance.now();
  let res;
  try {
    res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...authHeaders(apiKey) },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
      signal,
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiFailure('network', 'cannot reach the server; is qvl serve still running?');
  }
  if (!res.ok) throw await failureFrom(res);
  onHeaders();

  const result = { finishReason: null, usage: null, timings: null, clientTtftMs: null, done: false };
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const handleEvent = (data) => {
    if (data === '[DONE]') {
      result.done = true;
      return;
    }
    let event;
    try { event = JSON.parse(data); } catch { return; }
    if (event.error) throw new ApiFailure('stream', event.error.message || 'the server reported an error');
    if (event.usage) result.usage = event.usage;
    if (event.timings) result.timings = event.timings;
    for (const choice of event.choices || []) {
      const reasoning = choice.delta && choice.delta.reasoning_content;
      if (reasoning) {
        if (result.clientTtftMs === null) result.clientTtftMs = performance.now() - started;
        onReasoning(reasoning);
      }
      const text = choice.delta && choice.delta.content;
      if (text) {
        if (result.clientTtftMs === null) result.clientTtftMs = performance.now() - started;
        onDelta(text);
      }
      if (choice.finish_reason) result.finishReason = choice.finish_reason;
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart()).join('\n');
        if (data) handleEvent(data);
      }
    }
  } catch (error) {
    if (error instanceof ApiFailure || error.name === 'AbortError') throw error;
    throw new ApiFailure('network', 'lost the connection to the server while it was answering');
  }
  if (!result.done && !result.finishReason) {
    throw new ApiFailure('network', 'the answer ended early: the connection to the server was lost');
  }
  return result;
}
