// Oracle for the tiny tokenizer kinds: Transformers.js (the JavaScript consumer of hfx exports) loading a
// tokenizer folder (tokenizer.json + tokenizer_config.json) with AutoTokenizer, as an application would.
// Usage: node tjs_oracle.mjs <node_modules> <corpus.txt> <out.json> <dir>...
// Writes { "<dir>": { class, vocab_size, ids: [[...] per corpus line], ids_plain: [...], text: [...] } } to
// out.json, where ids / ids_plain are encode(s) with and without special tokens and text is
// decode(ids, { clean_up_tokenization_spaces: false }) (the Rust tokenizers' decode).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, corpusPath, outPath, ...dirs] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoTokenizer, env } = tjs;
env.allowRemoteModels = false;
const corpus = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
const out = {};
for (const dir of dirs) {
  const abs = path.resolve(dir);
  env.localModelPath = path.dirname(abs) + '/';
  const tok = await AutoTokenizer.from_pretrained(path.basename(abs), { local_files_only: true });
  const ids = corpus.map((s) => tok.encode(s));
  out[dir] = {
    class: tok.constructor.name,
    vocab_size: tok.get_vocab().size,
    ids,
    ids_plain: corpus.map((s) => tok.encode(s, { add_special_tokens: false })),
    text: ids.map((x) => (x.length ? tok.decode(x, { clean_up_tokenization_spaces: false }) : '')),
  };
}
fs.writeFileSync(outPath, JSON.stringify(out));
