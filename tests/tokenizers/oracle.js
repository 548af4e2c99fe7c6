#!/usr/bin/env node
// Oracle for the tokenizer parity test: Hugging Face's Rust tokenizers (npm `tokenizers`).
// Usage: node oracle.js <node_modules> <corpus.txt> <tokenizer.json>...
// Prints one JSON object: { "<tokenizer.json>": { vocab_size, results: [ { ids, ids_plain, text,
// text_skip, text_plain } per corpus line ] } }, where ids/ids_plain are encode() with and without
// special tokens, text/text_skip are decode(ids, false/true) and text_plain is decode(ids_plain, false).
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [nodeModules, corpusPath, ...files] = process.argv.slice(2);
  const { Tokenizer } = require(path.resolve(nodeModules, 'tokenizers'));
  const corpus = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  const out = {};
  for (const file of files) {
    const t = Tokenizer.fromFile(file);
    const results = [];
    for (const s of corpus) {
      const ids = (await t.encode(s, null, { addSpecialTokens: true })).getIds();
      const plain = (await t.encode(s, null, { addSpecialTokens: false })).getIds();
      results.push({
        ids, ids_plain: plain,
        text: await t.decode(ids, false), text_skip: await t.decode(ids, true), text_plain: await t.decode(plain, false),
      });
    }
    out[file] = { vocab_size: t.getVocabSize(true), results };
  }
  process.stdout.write(JSON.stringify(out));
}
main().catch((e) => { console.error(e && e.stack ? e.stack : String(e)); process.exit(1); });
