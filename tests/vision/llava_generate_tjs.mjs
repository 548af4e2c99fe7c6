// Transformers.js 4.3.1 running an `hfx export --format onnx` folder of a tiny llava: its AutoProcessor on
// the images and prompt, LlavaForConditionalGeneration over onnx/vision_encoder.onnx, embed_tokens.onnx and
// decoder_model_merged.onnx, greedy generate() (tests/vision/llava_generate_test.cpp).
// usage: node llava_generate_tjs.mjs NODE_MODULES EXPORT_DIR MAX_NEW_TOKENS PROMPT IMAGE...
// Prints {"model": class, "prompt_ids": [...], "ids": [new tokens]}.
// The image markers are expanded here as transformers' LlavaProcessor expands them (every marker; patches
// plus num_additional_image_tokens, minus the CLS position that the 'default' feature strategy drops):
// Transformers.js 4.3.1's LlavaProcessor expands only the first marker and ignores the strategy, which
// gives one token more than the features of a llava-1.5 checkpoint (its merge then throws "Number of
// tokens and features do not match"). Its image processor and tokenizer are used as they are.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, exportDir, maxNew, prompt, ...images] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoProcessor, LlavaForConditionalGeneration, RawImage, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(exportDir)) + '/';
const id = path.basename(path.resolve(exportDir));
const processor = await AutoProcessor.from_pretrained(id);
const model = await LlavaForConditionalGeneration.from_pretrained(id, { dtype: 'fp32', device: 'cpu' });
const raw = await Promise.all(images.map((f) => RawImage.read(f)));
const imageInputs = await processor.image_processor(raw.length === 1 ? raw[0] : raw);
const [height, width] = imageInputs.pixel_values.dims.slice(-2);
const { image_token, patch_size, num_additional_image_tokens, vision_feature_select_strategy } = processor.config;
const perImage = Math.floor(height / patch_size) * Math.floor(width / patch_size) + (num_additional_image_tokens ?? 0) -
    (vision_feature_select_strategy === 'default' ? 1 : 0);
const text = prompt.split(image_token).join(image_token.repeat(perImage));
const inputs = { ...imageInputs, ...processor.tokenizer(text) };
const out = await model.generate({ ...inputs, max_new_tokens: Number(maxNew), do_sample: false });
const promptIds = Array.from(inputs.input_ids.data, Number);
const all = Array.from(out.data, Number);
console.log(JSON.stringify({ model: model.constructor.name, prompt_ids: promptIds, ids: all.slice(promptIds.length) }));
