// `qvl serve --no-prefix-cache`: a finished request's KV pages are freed, turn 2 of a chat is
// computed in full (no request's speed depends on another's prompt), and /props says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, metricValue } from './helpers.mjs';

let server;
let client;

before(async () => {
  server = await startServer(['--no-prefix-cache', '--kv-cache-mb', '64']);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

test('turn 2 reuses nothing and no page stays cached', async () => {
  const props = await (await fetch(`${server.url}/props`)).json();
  assert.equal(props.cache.prefix_cache, false);
  const turn1 = [{ role: 'user', content: 'Name three colours of the rainbow, please.' }];
  const first = await client.chat.completions.create({
    model: 'tiny', messages: turn1, max_tokens: 8, temperature: 0,
  });
  const turn2 = [...turn1, { role: 'assistant', content: first.choices[0].message.content },
    { role: 'user', content: 'And two more?' }];
  const second = await client.chat.completions.create({
    model: 'tiny', messages: turn2, max_tokens: 8, temperature: 0,
  });
  assert.equal(second.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(await metricValue(server, 'qvl_prefix_cache_hit_tokens_total'), 0);
  // The pages come back when the engine retires the request, which may be just after the reply.
  for (let tries = 0; tries < 200 && await metricValue(server, 'qvl_kv_blocks_used') > 0; ++tries) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(await metricValue(server, 'qvl_kv_blocks_used'), 0);
  assert.equal(await metricValue(server, 'qvl_kv_blocks_cached'), 0);
});
