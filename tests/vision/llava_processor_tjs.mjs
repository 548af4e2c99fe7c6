// Transformers.js 4.3.1's AutoProcessor on an `hfx create-tiny llava` folder: the processor class it builds,
// pixel_values and input_ids for one image and a prompt (tests/vision/llava_tiny_test.cpp).
// usage: node llava_processor_tjs.mjs NODE_MODULES MODEL_DIR IMAGE PROMPT OUT.f32
// Prints {"processor": class, "image_processor": class, "input_ids": [...], "dims": [...]}.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, modelDir, image, prompt, out] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoProcessor, RawImage, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(modelDir)) + '/';
const processor = await AutoProcessor.from_pretrained(path.basename(path.resolve(modelDir)));
const inputs = await processor(await RawImage.read(image), prompt);
const pv = inputs.pixel_values.data;
fs.writeFileSync(out, Buffer.from(pv.buffer, pv.byteOffset, pv.byteLength));
console.log(JSON.stringify({
  processor: processor.constructor.name,
  image_processor: processor.image_processor.constructor.name,
  input_ids: Array.from(inputs.input_ids.data, Number),
  dims: inputs.pixel_values.dims,
}));
