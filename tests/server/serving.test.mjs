// The serving engine behind the API: turn 2 of an image chat reuses the prefix and the image
// (usage.prompt_tokens_details.cached_tokens, /metrics), concurrent OpenAI SDK streams run in one
// batch, one of them cancelled mid-stream without disturbing the others, and /props shows the
// cache budgets.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, imageDataUri, metricValue } from './helpers.mjs';

let server;
let client;

before(async () => {
  server = await startServer(['--parallel', '4', '--kv-cache-mb', '64', '--image-cache-mb', '16']);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

test('turn 2 of an image chat reuses the prefix and the image', async () => {
  const image = { type: 'image_url', image_url: { url: imageDataUri('a_iv_shapes_256x200.png') } };
  const turn1 = [{ role: 'user', content: [image, { type: 'text', text: 'What shapes do you see?' }] }];
  const first = await client.chat.completions.create({
    model: 'tiny', messages: turn1, max_tokens: 8, temperature: 0,
  });
  assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
  const turn2 = [...turn1, { role: 'assistant', content: first.choices[0].message.content },
    { role: 'user', content: 'Which one is the largest?' }];
  const second = await client.chat.completions.create({
    model: 'tiny', messages: turn2, max_tokens: 8, temperature: 0,
  });
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 1,
    `cached ${second.usage.prompt_tokens_details.cached_tokens} of turn 1's ${first.usage.prompt_tokens}`);
  assert.ok(await metricValue(server, 'qvl_image_cache_hits_total') >= 1);
  assert.ok(await metricValue(server, 'qvl_prefix_cache_hit_tokens_total') >=
    second.usage.prompt_tokens_details.cached_tokens);
  assert.ok(await metricValue(server, 'qvl_kv_blocks_cached') > 0);
});

test('concurrent streams share the batch; cancelling one leaves the others whole', async () => {
  const open = (i) => client.chat.completions.create({
    model: 'tiny', max_tokens: 40, temperature: 0, stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: `Tell a long story, part ${i}.` }],
  });
  const streams = await Promise.all([0, 1, 2, 3].map(open));
  const results = await Promise.all(streams.map(async (stream, i) => {
    let chunks = 0;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length && ++chunks === 3 && i === 1) {
        stream.controller.abort();  // the client goes away mid-stream
        break;
      }
    }
    return { chunks, usage };
  }));
  for (const i of [0, 2, 3]) assert.equal(results[i].usage.completion_tokens, 40);
  assert.equal(results[1].chunks, 3);
  // Batches of more than one request were stepped, and every page came back.
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  const batched = metrics.split('\n').find((l) => l.startsWith('qvl_batch_size_bucket{le="1"}'));
  const total = await metricValue(server, 'qvl_batch_size_count');
  assert.ok(Number(batched.split(' ')[1]) < total, 'some steps advanced several requests');
  for (let tries = 0; tries < 100 && await metricValue(server, 'qvl_kv_blocks_used') > 0; ++tries) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(await metricValue(server, 'qvl_kv_blocks_used'), 0);
});

test('/props reports the cache budgets', async () => {
  const props = await (await fetch(`${server.url}/props`)).json();
  assert.equal(props.cache.image_cache_bytes, 16 * 1024 * 1024);
  assert.ok(props.cache.kv_cache_bytes > 0 && props.cache.kv_cache_bytes <= 64 * 1024 * 1024);
  assert.equal(props.cache.kv_page_tokens, 128);
  assert.equal(props.cache.max_batch, 4);
});
