// Transformers.js pipelines (the real consumer) over an hfx ONNX export folder of an encoder.
// usage: node transformersjs_encoders.mjs NODE_MODULES OUT_DIR TASK ARGS_JSON
// ARGS_JSON: {"texts": [...], "options": {...pipeline options...}}
// Prints {"ids": [[ids of text i]], "results": [result of text i alone], "batch": result of all texts at once}
// as JSON; tensors become {"dims": [...], "data": [...]}.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, outDir, task, argsJson] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { pipeline, env, Tensor } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(outDir)) + '/';
const pipe = await pipeline(task, path.basename(path.resolve(outDir)), { dtype: 'fp32' });
const { texts, options } = JSON.parse(argsJson);

const plain = (r) => (r instanceof Tensor ? { dims: r.dims, data: Array.from(r.data, Number) } : r);
const ids = texts.map((t) => Array.from(pipe.tokenizer(t).input_ids.data, Number));
const results = [];
for (const t of texts) results.push(plain(await pipe(t, options)));
const batch = plain(await pipe(texts, options));
process.stdout.write(JSON.stringify({ ids, results, batch }) + '\n');
