// Documents render once their request holds a generation slot: with one slot, a second PDF waits
// in the queue unrendered while the first renders, so a queue of big PDFs never renders all at once
// (the render gate would allow two at a time here; admission is what orders them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { metricValue, postJson, startServer, waitForMetric } from './helpers.mjs';
import { runLengthBombPdf } from './make_pdf.mjs';

const renderSeconds = 3;
let server;

before(async () => {
  server = await startServer(['--parallel', '1', '--queue', '4', '--document-renders', '2',
                              '--max-document-seconds', String(renderSeconds)]);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const bombRequest = () => postJson(server, '/v1/chat/completions', {
  model: 'tiny',
  max_tokens: 1,
  messages: [{
    role: 'user',
    content: [{ type: 'text', text: 'Read this.' },
              { type: 'file', file: { file_data: `data:application/pdf;base64,${runLengthBombPdf().toString('base64')}` } }],
  }],
});

test('a queued document renders only after the one ahead of it released the slot', async () => {
  const start = Date.now();
  const first = bombRequest().then((res) => ({ res, ms: Date.now() - start }));
  // The first holds the slot, rendering for renderSeconds.
  await waitForMetric(server, 'qvl_active_requests', 1, renderSeconds * 1000);
  const second = bombRequest().then((res) => ({ res, ms: Date.now() - start }));
  // The second waits in the queue meanwhile, unrendered.
  await waitForMetric(server, 'qvl_queue_depth', 1, renderSeconds * 1000);
  assert.equal(await metricValue(server, 'qvl_active_requests'), 1);
  const [a, b] = await Promise.all([first, second]);
  for (const { res } of [a, b]) {
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /took longer than its time limit/);
  }
  // Rendered one after the other: the second's render began when the first's time limit ended.
  assert.ok(a.ms >= renderSeconds * 1000, `first answered after ${a.ms} ms`);
  assert.ok(b.ms >= 2 * renderSeconds * 1000, `second answered after ${b.ms} ms`);
  assert.equal(await metricValue(server, 'qvl_active_requests'), 0);
});
