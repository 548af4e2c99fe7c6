// Transformers.js 4.3.1 over an `hfx export --format onnx` folder of a tiny qwen2_vl (tests/vision/qwen2_vl_test.cpp).
// usage: node qwen2_vl_tjs.mjs NODE_MODULES EXPORT_DIR IDS_JSON GRIDS_JSON
//          AutoModelForImageTextToText (Qwen2VLForConditionalGeneration).generate on input_ids, pixel_values of the
//          golden's pattern (1.5 sin(0.37 i), float32, [patches, C*T*P*P] for GRIDS) and image_grid_thw, greedy,
//          32 new tokens (Transformers.js computes the multimodal positions itself); prints {"model", "ids"}.
//        node qwen2_vl_tjs.mjs NODE_MODULES EXPORT_DIR processor PROMPT IMAGE...
//          AutoProcessor (Qwen2VLProcessor: smart resize, patches, <|image_pad|> expanded) on the files; prints
//          {"prompt_ids", "shape", "grid_thw", "pixel_values"}.
//        node qwen2_vl_tjs.mjs NODE_MODULES EXPORT_DIR generate PROMPT IMAGE...
//          the processor, then generate() on its inputs; prints {"prompt_ids", "ids"}.
// Several images: Transformers.js 4.3.1's Qwen2VLImageProcessor takes a list of images as the frames of one
// video (grid_t = images / temporal_patch_size) and throws for two sizes, so each image goes through its
// image processor alone and the markers are expanded as Qwen2VLProcessor does (one <|image_pad|> per merged
// patch of the k-th image); the tokenizer is Transformers.js's as it is.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, exportDir, mode, arg, ...files] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoModelForImageTextToText, AutoProcessor, RawImage, Tensor, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(exportDir)) + '/';
const name = path.basename(path.resolve(exportDir));
const load = () => AutoModelForImageTextToText.from_pretrained(name, { dtype: 'fp32', device: 'cpu' });

if (mode === 'processor' || mode === 'generate') {
  const processor = await AutoProcessor.from_pretrained(name);
  const images = await Promise.all(files.map((f) => RawImage.read(f)));
  let inputs;
  if (images.length === 1) {
    inputs = await processor(arg, images);
  } else {
    const parts = [];
    for (const im of images) parts.push(await processor.image_processor(im));
    const grids = parts.map((p) => Array.from(p.image_grid_thw.data, Number));
    const merge = processor.image_processor.config.merge_size ** 2;
    let k = 0;
    const expand = () => {
      const [t, h, w] = grids[k++];
      return '<|placeholder|>'.repeat((t * h * w) / merge);
    };
    const text = arg.replace(/<\|image_pad\|>/g, expand).replaceAll('<|placeholder|>', '<|image_pad|>');
    inputs = {
      ...processor.tokenizer([text]),
      pixel_values: tjs.cat(parts.map((p) => p.pixel_values), 0),
      image_grid_thw: new Tensor('int64', BigInt64Array.from(grids.flat().map(BigInt)), [grids.length, 3]),
    };
  }
  const prompt_ids = Array.from(inputs.input_ids.data, Number);
  if (mode === 'processor') {
    // No process.exit here: it would cut a long write to a pipe short.
    console.log(JSON.stringify({ prompt_ids, shape: inputs.pixel_values.dims,
                                 grid_thw: Array.from(inputs.image_grid_thw.data, Number),
                                 pixel_values: Array.from(inputs.pixel_values.data) }));
  } else {
    const model = await load();
    const out = await model.generate({ ...inputs, max_new_tokens: 32, do_sample: false });
    console.log(JSON.stringify({ prompt_ids, ids: Array.from(out.data, Number).slice(prompt_ids.length) }));
  }
} else {
  const model = await load();
  const ids = JSON.parse(mode);
  const grids = JSON.parse(arg);
  const dim = 3 * 2 * 4 * 4;  // C*T*P*P of the tiny checkpoint
  const patches = grids.reduce((a, g) => a + g[0] * g[1] * g[2], 0);
  const px = new Float32Array(patches * dim);
  for (let i = 0; i < px.length; i++) px[i] = Math.fround(1.5 * Math.sin(0.37 * i));
  const S = ids.length;
  const out = await model.generate({
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, S]),
    attention_mask: new Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
    pixel_values: new Tensor('float32', px, [patches, dim]),
    image_grid_thw: new Tensor('int64', BigInt64Array.from(grids.flat().map(BigInt)), [grids.length, 3]),
    max_new_tokens: 32,
    do_sample: false,
  });
  console.log(JSON.stringify({ model: model.constructor.name, ids: Array.from(out.data, Number).slice(S) }));
}
