// The test model as a Qwen3-VL-*-Thinking model: a temporary folder with the tiny model's files
// (linked) and the Thinking chat template (tests/tokenizer/qwen3vl_thinking_chat_template.jinja)
// as its chat_template.json. Removed when the process exits.
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TEMPLATE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'tokenizer',
  'qwen3vl_thinking_chat_template.jinja');

export function makeThinkingModel(modelDir) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'qvl-thinking-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const source = path.resolve(modelDir);
  for (const name of readdirSync(source)) {
    if (name === 'chat_template.json' || name === 'tokenizer.json') continue;
    symlinkSync(path.join(source, name), path.join(dir, name));
  }
  // tokenizer.json may be a pointer file (a copied symlink) relative to the model folder.
  const tokenizer = readFileSync(path.join(source, 'tokenizer.json'), 'utf8');
  const pointer = tokenizer.length < 1024 && !tokenizer.trimStart().startsWith('{');
  if (pointer) {
    writeFileSync(path.join(dir, 'tokenizer.json'), path.resolve(source, tokenizer.trim()));
  } else {
    symlinkSync(path.join(source, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  }
  writeFileSync(path.join(dir, 'chat_template.json'),
    JSON.stringify({ chat_template: readFileSync(TEMPLATE, 'utf8') }));
  return dir;
}
