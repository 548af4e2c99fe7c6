// Transformers.js 4.3.1 over an `hfx export --format onnx` folder of a tiny idefics3 (tests/vision/idefics3_test.cpp):
// AutoModelForImageTextToText (Idefics3ForConditionalGeneration / SmolVLMForConditionalGeneration).generate on input_ids and the first IMAGES images of the golden's pixel
// pattern (1.5 sin(0.37 i), float32, [1, IMAGES, 3, 32, 32]), greedy, 32 new tokens; prints {"model", "ids"}.
// usage: node idefics3_tjs.mjs NODE_MODULES EXPORT_DIR IDS_JSON IMAGES
//        node idefics3_tjs.mjs NODE_MODULES EXPORT_DIR processor PROMPT IMAGE...
//          AutoProcessor (Idefics3Processor: image splitting, <image> expanded) on the files; prints
//          {"prompt_ids", "shape", "pixel_values"}.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, exportDir, idsJson, imagesArg, ...files] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoModelForImageTextToText, AutoProcessor, RawImage, Tensor, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(exportDir)) + '/';
if (idsJson === 'processor') {
  const processor = await AutoProcessor.from_pretrained(path.basename(path.resolve(exportDir)));
  const images = await Promise.all(files.map((f) => RawImage.read(f)));  // imagesArg is the prompt here
  const inputs = await processor(imagesArg, images);
  // No process.exit here: it would cut a long write to a pipe short.
  console.log(JSON.stringify({ prompt_ids: Array.from(inputs.input_ids.data, Number), shape: inputs.pixel_values.dims,
                               pixel_values: Array.from(inputs.pixel_values.data) }));
} else {
  const model = await AutoModelForImageTextToText.from_pretrained(path.basename(path.resolve(exportDir)),
                                                                       { dtype: 'fp32', device: 'cpu' });
  const ids = JSON.parse(idsJson);
  const images = Number(imagesArg);
  const n = images * 3 * 32 * 32;
  const px = new Float32Array(n);
  for (let i = 0; i < n; i++) px[i] = Math.fround(1.5 * Math.sin(0.37 * i));
  const S = ids.length;
  const out = await model.generate({
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, S]),
    attention_mask: new Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
    pixel_values: new Tensor('float32', px, [1, images, 3, 32, 32]),
    max_new_tokens: 32,
    do_sample: false,
  });
  console.log(JSON.stringify({ model: model.constructor.name, ids: Array.from(out.data, Number).slice(S) }));
}
