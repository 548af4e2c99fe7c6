// Transformers.js 4.3.1's image processor (AutoImageProcessor on a folder's preprocessor_config.json) over
// image files: the reference for hfx's pixel_values (tests/vision/image_processor_test.cpp).
// usage: node clip_tjs_oracle.mjs NODE_MODULES MODEL_DIR OUT_DIR IMAGE...
// Writes OUT_DIR/<i>.f32 (pixel_values of image i, float32 little-endian, [3, H, W]) and prints
// {"shapes": [[3, H, W], ...]} on stdout.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, modelDir, outDir, ...images] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoImageProcessor, RawImage, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(modelDir)) + '/';
const processor = await AutoImageProcessor.from_pretrained(path.basename(path.resolve(modelDir)));
const shapes = [];
for (let i = 0; i < images.length; i++) {
  const image = await RawImage.read(images[i]);
  const { pixel_values } = await processor(image);
  const data = pixel_values.data;
  fs.writeFileSync(path.join(outDir, `${i}.f32`), Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  shapes.push(pixel_values.dims.slice(1));
}
console.log(JSON.stringify({ shapes }));
