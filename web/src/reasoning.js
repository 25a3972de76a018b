// A Thinking model's reasoning (the server's reasoning_content deltas): kept on the answer as
// `reasoning`, timed from its first piece to the answer's first piece (`thinkMs`), and shown
// above the answer as a collapsible "Thought for N s" block, open while the model thinks.

// Adds a streamed piece of reasoning; `now` is performance.now().
export function addReasoning(answer, text, now) {
  if (!answer.reasoning) {
    answer.reasoning = '';
    answer.thinkStarted = now;
  }
  answer.reasoning += text;
}

// The reasoning is over (the answer began, or the stream ended): its duration is fixed.
export function endReasoning(answer, now) {
  if (answer.reasoning && answer.thinkMs === undefined && answer.thinkStarted !== undefined) {
    answer.thinkMs = now - answer.thinkStarted;
  }
  delete answer.thinkStarted;
}

const duration = (ms) => (ms < 10000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

// The block for an answer with reasoning, or null. Open while thinking (until the reader
// toggles it); the reasoning is model text, so it is set as plain text.
export function reasoningBlock(message, now = performance.now()) {
  if (!message.reasoning) return null;
  const thinking = message.thinkMs === undefined && message.state === 'streaming';
  const details = document.createElement('details');
  details.className = thinking ? 'reasoning thinking' : 'reasoning';
  details.open = message.reasoningOpen ?? thinking;
  // Only the reader's choice is kept: setting `open` above fires a toggle event too.
  details.addEventListener('toggle', () => {
    if (details.open === thinking) delete message.reasoningOpen;
    else message.reasoningOpen = details.open;
  });
  const summary = document.createElement('summary');
  const ms = thinking ? now - (message.thinkStarted ?? now) : message.thinkMs;
  summary.textContent = thinking ? `Thinking… ${duration(ms)}`
    : ms === undefined ? 'Thoughts' : `Thought for ${duration(ms)}`;
  const text = document.createElement('div');
  text.className = 'reasoning-text';
  text.tabIndex = 0;  // it scrolls: reachable by keyboard
  text.textContent = message.reasoning;
  details.append(summary, text);
  return details;
}
