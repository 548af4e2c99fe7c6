// Whisper in Transformers.js (the real consumer) over an hfx export folder.
// usage: node transformersjs_whisper.mjs NODE_MODULES OUT_DIR MODE MAX_NEW_TOKENS WAV16K [WAV16K ...]
//   MODE features: writes WAVi.features.f32 (WhisperFeatureExtractor's input_features, float32 LE) beside each WAV
//   MODE asr: prints {"sequences": [[generate() ids after the prompt], ...], "texts": [pipeline text, ...]}
//   MODE asr_timestamps: the same with return_timestamps: true, plus "chunks": [[{timestamp, text}, ...], ...]
// Each WAV16K is a mono 32-bit float WAV at the feature extractor's rate (hfx writes it after decoding and
// resampling), read here by a minimal RIFF parser so that nothing of hfx decodes it on this side.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, outDir, mode, maxNew, ...wavs] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoProcessor, AutoModelForSpeechSeq2Seq, pipeline, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(outDir)) + '/';
const id = path.basename(path.resolve(outDir));

function readFloatWav(file) {
  const b = fs.readFileSync(file);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not RIFF/WAVE`);
  let pos = 12, fmt = null;
  while (pos + 8 <= b.length) {
    const tag = b.toString('ascii', pos, pos + 4), n = b.readUInt32LE(pos + 4);
    if (tag === 'fmt ') fmt = { format: b.readUInt16LE(pos + 8), channels: b.readUInt16LE(pos + 10), bits: b.readUInt16LE(pos + 22) };
    if (tag === 'data') {
      if (!fmt || fmt.format !== 3 || fmt.channels !== 1 || fmt.bits !== 32) throw new Error(`${file}: expected mono float32`);
      const out = new Float32Array(n / 4);
      for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(pos + 8 + 4 * i);
      return out;
    }
    pos += 8 + n + (n & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

const audios = wavs.map(readFloatWav);
if (mode === 'features') {
  const processor = await AutoProcessor.from_pretrained(id);
  for (let i = 0; i < audios.length; i++) {
    const { input_features } = await processor(audios[i]);
    fs.writeFileSync(wavs[i] + '.features.f32', Buffer.from(input_features.data.buffer));
  }
  process.stdout.write(JSON.stringify({ dims: (await processor(audios[0])).input_features.dims }) + '\n');
} else {
  const n = Number(maxNew);
  const ts = mode === 'asr_timestamps';
  const processor = await AutoProcessor.from_pretrained(id);
  const model = await AutoModelForSpeechSeq2Seq.from_pretrained(id, { dtype: 'fp32' });
  const sequences = [];
  for (const a of audios) {
    const { input_features } = await processor(a);
    const out = await model.generate({ inputs: input_features, language: 'en', task: 'transcribe', max_new_tokens: n, do_sample: false,
                                       return_timestamps: ts });
    sequences.push(Array.from(out.data, Number));
  }
  const pipe = await pipeline('automatic-speech-recognition', id, { dtype: 'fp32' });
  const texts = [], chunks = [];
  for (const a of audios) {
    const r = await pipe(a, { language: 'en', task: 'transcribe', max_new_tokens: n, return_timestamps: ts });
    texts.push(r.text);
    if (ts) chunks.push(r.chunks);
  }
  process.stdout.write(JSON.stringify(ts ? { sequences, texts, chunks } : { sequences, texts }) + '\n');
}
