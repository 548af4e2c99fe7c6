// Transformers.js 4.3.1 over an `hfx export --format onnx` folder of a tiny gemma3 (tests/vision/gemma3_test.cpp).
// usage: node gemma3_tjs.mjs NODE_MODULES EXPORT_DIR generate IDS_JSON IMAGES
//          Gemma3ForConditionalGeneration.generate on input_ids and the first IMAGES images of the golden's
//          pixel pattern (1.5 sin(0.37 i), float32), greedy, 32 new tokens; prints {"model", "ids"}.
//        node gemma3_tjs.mjs NODE_MODULES EXPORT_DIR processor PROMPT IMAGE
//          AutoProcessor (Gemma3Processor: <start_of_image> expanded, Gemma3ImageProcessor); prints
//          {"prompt_ids", "pixel_values", "shape"}.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, exportDir, mode, ...rest] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoProcessor, Gemma3ForConditionalGeneration, RawImage, Tensor, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(exportDir)) + '/';
const id = path.basename(path.resolve(exportDir));

if (mode === 'generate') {
  const ids = JSON.parse(rest[0]);
  const images = Number(rest[1]);
  const model = await Gemma3ForConditionalGeneration.from_pretrained(id, { dtype: 'fp32', device: 'cpu' });
  const n = images * 3 * 32 * 32;
  const px = new Float32Array(n);
  for (let i = 0; i < n; i++) px[i] = Math.fround(1.5 * Math.sin(0.37 * i));
  const S = ids.length;
  const out = await model.generate({
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, S]),
    attention_mask: new Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
    pixel_values: new Tensor('float32', px, [images, 3, 32, 32]),
    max_new_tokens: 32,
    do_sample: false,
  });
  console.log(JSON.stringify({ model: model.constructor.name, ids: Array.from(out.data, Number).slice(S) }));
} else {
  const [prompt, image] = rest;
  const processor = await AutoProcessor.from_pretrained(id);
  const inputs = await processor(prompt, await RawImage.read(image));
  console.log(JSON.stringify({ prompt_ids: Array.from(inputs.input_ids.data, Number),
                               pixel_values: Array.from(inputs.pixel_values.data), shape: inputs.pixel_values.dims }));
}
