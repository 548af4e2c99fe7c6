#!/usr/bin/env node
// Regenerates tests/data/tokenizers/{corpus.txt, *.json} with Hugging Face's own Rust tokenizers
// (npm `tokenizers@0.23.2`). Usage: node tests/tokenizers/make_fixtures.js [node_modules dir]
// The fixtures are trained on the corpus plus a few paragraphs, then edited into the layouts of
// real checkpoints (GPT-2, Llama-3, Qwen2, Llama-2, BERT, T5-like Unigram) and trimmed small.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const nodeModules = process.argv[2] || path.join(root, 'deps', 'npm', 'node_modules');
const tk = require(path.join(nodeModules, 'tokenizers'));
const out = path.join(root, 'tests', 'data', 'tokenizers');
fs.mkdirSync(out, { recursive: true });

// ---------------------------------------------------------------- corpus (one JSON string a line)
const base = [
  '', ' ', '  ', '\t', '\n', '\r\n', ' \n \n', 'a', 'A', '.', '!!', '...',
  'Hello world', 'Hello world!', 'hello, world.', ' Hello', 'Hello ', '  Hello  world  ',
  'The quick brown fox jumps over the lazy dog.', 'THE QUICK BROWN FOX', 'tHe QuIcK bRoWn',
  "I'm sure you'll see they've done it, haven't they? It's John's.", "DON'T SHOUT, I'LL HEAR", "I 'm  'll 're",
  'The year 2024 had 366 days; 3.14159 is pi and 1,000,000 is a million.', '12345678901234567890', '1 2 3 4 5', '0.5e-10', 'x=42',
  'Café, naïve, résumé, façade, jalapeño, Ångström, Øresund, Straße.', 'CAFÉ NAÏVE', 'e\u0301 a\u0300 o\u0308 (combining)', 'ﬁ ﬂ ① ² ½ Ⅻ ㈱ ＡＢＣ １２３ (compatibility)',
  'İstanbul ıi İI', 'Σίσυφος ΣΊΣΥΦΟΣ', 'Ελληνικά κείμενα', 'Привет, мир! Как дела?', 'Здравствуйте', 'שלום עולם', 'مرحبا بالعالم', 'नमस्ते दुनिया', 'สวัสดีชาวโลก', 'Xin chào thế giới', 'Tiếng Việt có dấu',
  '你好，世界！', '我爱自然语言处理。', '今天天气很好', '東京は日本の首都です。', 'こんにちは世界', 'カタカナとひらがな', '안녕하세요 세계', '한국어 텍스트', '中文English混合text', '𠀋𡈽𡌛 (CJK Ext B)',
  '😀', '😀😃😄', 'I love 🍕 and 🍣!', '👍🏽', '👨‍👩‍👧‍👦 family', '🏳️‍🌈 flag', '❤️ heart', '🇯🇵🇺🇸 flags', 'emoji👩‍💻coder', '\u200b zero width \u200d joiner \ufeff bom',
  'tab\tseparated\tvalues', 'line one\nline two\nline three', 'windows\r\nline\r\nendings', 'trailing spaces   ', '   leading spaces', 'many     spaces     here',
  '\n\n\nthree newlines', 'mixed \t \n whitespace', 'a\u00a0b\u2003c\u3000d (unicode spaces)', 'end with newline\n', 'x\u000by\u000cz',
  'def add(a, b):\n    return a + b\n', 'for (int i = 0; i < n; ++i) { sum += v[i]; }', 'const x = () => { console.log("hi"); };',
  '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); }', 'SELECT * FROM users WHERE id = 7;', 'git commit -m "fix: bug #123"',
  '<div class="x">Hello</div>', '{"key": "value", "n": [1, 2, 3]}', 'https://huggingface.co/docs?q=tokenizers&x=1', 'user@example.com',
  '    indented code', '\tdef f():\n\t\tpass', 'snake_case_name camelCaseName PascalCase kebab-case', 'a_b__c___d', '$PATH ~/.bashrc && echo $?',
  '//comment', '/* block */', '>>> print(1)', '[1, 2, 3]', 'x**2 + y**2 == z**2', '100% sure @ 5pm #tag',
  '<s>', '</s>', '<unk>', '<s>Hello</s>', 'Hello <s> world </s>', '<|endoftext|>', 'text<|endoftext|>more', '<|begin_of_text|>Hi<|end_of_text|>',
  '<|im_start|>user\nHi<|im_end|>', '[CLS] query [SEP] doc [SEP]', '[MASK] is [MASK]', 'a [UNK] token', '<pad><pad>', '<mask> here', 'hello<special>world',
  ' <extra> ', 'word<extra>word', '<extra>', 'x <extra>y', 'x<extra> y', 'yes[SPECIAL]no', ' [SPECIAL] ', 'mid[SPECIAL]', 'lol', 'lolly', ' lol ', 'lol!',
  'ÀÁÂÃÄÅ àáâãäå', 'ßẞ', 'ǅǆǄ', 'ΐΰ', 'ﬀ', 'Ⅷ', '…', '—–-', '“quotes” ‘single’', '«guillemets»', '¿Qué? ¡Sí!', '©®™', '€£¥₹', '±×÷', '→←↑↓',
  '\u0000null', 'ctrl\u0007bell', '\ufffd replacement', '\u00ad soft hyphen', '\u2028 line sep', 'combining ̈ alone', 'ä\u0308 double',
  'Ünïcödé wörds everywhere', 'supercalifragilisticexpialidocious', 'antidisestablishmentarianism', 'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'the the the the the', 'ab ab ab ab', '   ', '\t\t', '\n\n', '.,;:!?', '((()))', '____', '----', '====', '~~~~', '@@@@',
];
// Sentences from the training paragraphs and combinations of the above fill the rest.
const paragraphs = [
  'Tokenizers split text into pieces that a language model can read. Byte-pair encoding merges the most frequent pairs of symbols, one merge at a time, until the vocabulary is large enough.',
  'WordPiece is the algorithm used by BERT. It starts from characters and adds the piece that most increases the likelihood of the training data.',
  'The Unigram model keeps a large vocabulary of candidate pieces and prunes it, keeping the pieces whose loss is smallest; encoding finds the best segmentation with the Viterbi algorithm.',
  'SentencePiece treats the input as a raw stream of characters and replaces spaces with a meta symbol, so that decoding is lossless.',
  'In the beginning was the Word, and the Word was with God. Call me Ishmael. It was the best of times, it was the worst of times.',
  'Machine learning models are trained on large datasets, evaluated on held-out data, and exported to ONNX, ExecuTorch or torch.export for deployment.',
  'Les modèles de langue apprennent à prédire le mot suivant. Die Sprachmodelle lernen, das nächste Wort vorherzusagen. Los modelos de lenguaje aprenden a predecir la siguiente palabra.',
  'def tokenize(text):\n    return [t for t in text.split() if t]\n\nclass Model:\n    def __init__(self, n):\n        self.n = n\n',
  'int main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n  for (auto x : v) std::cout << x << "\\n";\n  return 0;\n}\n',
  '人工智能正在改变世界。机器学习是人工智能的一个分支。日本語の文章も少し含めます。한국어 문장도 조금 포함합니다.',
];
const sentences = paragraphs.flatMap((p) => p.split(/(?<=[.。!?])\s+/));
const corpus = [...base, ...sentences];
for (let i = 0; corpus.length < 240; ++i) corpus.push(base[(i * 7) % base.length] + ' ' + sentences[(i * 3) % sentences.length]);
fs.writeFileSync(path.join(out, 'corpus.txt'), corpus.map((s) => JSON.stringify(s)).join('\n') + '\n');

const trainFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hfx-tok-')), 'train.txt');
fs.writeFileSync(trainFile, [...corpus, ...paragraphs, ...paragraphs].join('\n') + '\n');

// ---------------------------------------------------------------- helpers
function trained(model, setup) {
  const t = new tk.Tokenizer(model);
  setup(t);
  t.train([trainFile]);
  const p = path.join(path.dirname(trainFile), 'tmp.json');
  t.save(p, false);
  return JSON.parse(fs.readFileSync(p, 'utf8'));
}
function write(name, j) {
  const p = path.join(out, name);
  fs.writeFileSync(p, JSON.stringify(j, null, 1) + '\n');
  tk.Tokenizer.fromFile(p); // must load in HF
  const kb = fs.statSync(p).size / 1024;
  if (kb > 300) throw new Error(`${name} is ${kb.toFixed(0)} KB`);
  console.log(`${name}: ${kb.toFixed(0)} KB`);
}
const added = (id, content, special, o = {}) => ({
  id, content, single_word: !!o.single_word, lstrip: !!o.lstrip, rstrip: !!o.rstrip,
  normalized: o.normalized === undefined ? !special : o.normalized, special,
});
const splitMerge = (m) => (Array.isArray(m) ? m : [m.slice(0, m.indexOf(' ')), m.slice(m.indexOf(' ') + 1)]);
// Keeps the first `n` merges and the tokens they need; ids renumbered from `first`.
function trimBpe(model, n, keepToken, first = 0) {
  const merges = [];
  const need = new Set(Object.keys(model.vocab).filter((t) => [...t].length === 1 && keepToken(t)));
  for (const m of model.merges.map(splitMerge)) {
    if (merges.length >= n) break;
    if (!need.has(m[0]) || !need.has(m[1])) continue;
    merges.push(m);
    need.add(m[0] + m[1]);
  }
  const order = Object.entries(model.vocab).sort((a, b) => a[1] - b[1]).map((e) => e[0]).filter((t) => need.has(t));
  const vocab = {};
  order.forEach((t, i) => (vocab[t] = first + i));
  return { vocab, merges };
}
const ASCIIish = (t) => [...t].every((c) => c.codePointAt(0) < 0x3000 || c === '▁');

// ---------------------------------------------------------------- (a) byte-level BPE, GPT-2 layout
const bl = trained(tk.BPE.empty(), (t) => { t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));});
{
  const { vocab, merges } = trimBpe(bl.model, 1200, () => true);
  let next = Object.keys(vocab).length;
  for (const c of tk.byteLevelAlphabet()) if (!(c in vocab)) vocab[c] = next++;
  const eot = next++;
  const j = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(eot, '<|endoftext|>', true)],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false,
      byte_fallback: false, vocab, merges: merges.map((m) => m.join(' ')) },
  };
  write('gpt2_bpe.json', j);

  // Llama-3 layout: Split regex + ByteLevel(use_regex=false), BOS template, ignore_merges, pair merges.
  const l3 = JSON.parse(JSON.stringify(j));
  l3.added_tokens = [added(eot, '<|begin_of_text|>', true), added(eot + 1, '<|end_of_text|>', true),
    added(eot + 2, '<|reserved_special_token_0|>', true), added(eot + 3, '<|eot_id|>', true)];
  l3.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] };
  l3.post_processor = { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [eot], tokens: ['<|begin_of_text|>'] } } }] };
  l3.model.ignore_merges = true;
  l3.model.merges = merges;
  write('llama3_bpe.json', l3);

  // Qwen2 layout: NFC, single-digit regex, chat specials, no BOS.
  const q = JSON.parse(JSON.stringify(j));
  q.added_tokens = [added(eot, '<|endoftext|>', true), added(eot + 1, '<|im_start|>', true), added(eot + 2, '<|im_end|>', true),
    added(eot + 3, '<tool_call>', false)];
  q.normalizer = { type: 'NFC' };
  q.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] };
  q.post_processor = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  q.decoder = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  write('qwen2_bpe.json', q);

  // Byte-level BPE behind a mix of Split behaviors, ByteLevel(add_prefix_space) and lstrip/rstrip/single_word tokens.
  const mix = JSON.parse(JSON.stringify(j));
  mix.added_tokens = [added(eot, '<|endoftext|>', true), added(eot + 1, '<extra>', false, { lstrip: true, rstrip: true }),
    added(eot + 2, '[SPECIAL]', true, { lstrip: true }), added(eot + 3, 'lol', false, { single_word: true, normalized: true }),
    added(eot + 4, 'Hello', false, { normalized: true })];
  mix.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: '\\s{3,}' }, content: '  ' }] };
  mix.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { String: ',' }, behavior: 'MergedWithPrevious', invert: false },
    { type: 'Split', pattern: { Regex: '\\d+' }, behavior: 'Contiguous', invert: false },
    { type: 'Split', pattern: { Regex: '[A-Z]' }, behavior: 'MergedWithNext', invert: false },
    { type: 'Split', pattern: { Regex: '\\p{P}' }, behavior: 'Removed', invert: false },
    { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Isolated', invert: true },
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: false }] };
  write('mixed_bpe.json', mix);
}

// ---------------------------------------------------------------- (b) sentencepiece-style BPE (Llama-2 layout)
const sp = trained(tk.BPE.empty(), (t) => { t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true)); });
{
  const { vocab: tv, merges } = trimBpe(sp.model, 1200, ASCIIish, 0);
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; ++b) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  let next = 259;
  for (const t of Object.keys(tv).sort((a, b) => tv[a] - tv[b])) if (!(t in vocab)) vocab[t] = next++;
  const j = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<unk>', true), added(1, '<s>', true), added(2, '</s>', true)],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
      { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true,
      byte_fallback: true, ignore_merges: false, vocab, merges },
  };
  write('llama2_sp_bpe.json', j);

  // Gemma/Mistral-like: Metaspace pre-tokenizer (prepend first, no split) + Metaspace decoder, no byte fallback
  // (unknown chars -> fused <unk>), legacy "a b" merges, an added non-special token.
  const m = JSON.parse(JSON.stringify(j));
  m.normalizer = null;
  m.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  m.decoder = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  m.model.byte_fallback = false;
  m.model.merges = merges.map((x) => x.join(' '));
  m.added_tokens.push(added(next, '<mask>', false, { normalized: false, lstrip: true }));
  m.model.vocab['<mask>'] = next;
  write('metaspace_bpe.json', m);
}

// ---------------------------------------------------------------- (c) WordPiece (BERT layout)
const wp = trained(tk.WordPiece.empty(), (t) => { t.setNormalizer(tk.bertNormalizer({ lowercase: true })); t.setPreTokenizer(tk.bertPreTokenizer()); });
{
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const vocab = {};
  specials.forEach((s, i) => (vocab[s] = i));
  let next = specials.length;
  const order = Object.entries(wp.model.vocab).sort((a, b) => a[1] - b[1]).map((e) => e[0]);
  for (const t of order) {
    if (next >= 1500) break;
    if (!(t in vocab) && (ASCIIish(t) || [...t.replace(/^##/, '')].length === 1) && !['光', '東', '!'].includes(t)) vocab[t] = next++;
  }
  const j = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: specials.map((s, i) => added(i, s, true)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
  write('bert_wordpiece.json', j);

  // WordPiece behind a normalizer chain and Whitespace/Digits/Punctuation, BertProcessing, cased, max 12 chars.
  const w2 = JSON.parse(JSON.stringify(j));
  w2.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true }] };
  w2.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'Digits', individual_digits: true },
    { type: 'Punctuation', behavior: 'Isolated' }] };
  w2.post_processor = { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] };
  w2.model.max_input_chars_per_word = 12;
  w2.decoder = { type: 'WordPiece', prefix: '##', cleanup: false };
  write('whitespace_wordpiece.json', w2);
}

// ---------------------------------------------------------------- (d) Unigram (T5 / sentencepiece-unigram layout)
const ug = trained(tk.Unigram.empty(), (t) => { t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true)); });
{
  const pieces = ug.model.vocab.filter(([p]) => ASCIIish(p) && p !== '<unk>').slice(0, 1500);
  const vocab = [['<unk>', 0.0], ['<pad>', 0.0], ['</s>', 0.0], ...pieces];
  const j = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<unk>', true), added(1, '<pad>', true), added(2, '</s>', true)],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    post_processor: { type: 'TemplateProcessing', single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } } },
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 0, vocab, byte_fallback: false },
  };
  write('t5_unigram.json', j);

  // Unigram with byte fallback and prepend_scheme "first" behind an lstrip special token.
  const u2 = JSON.parse(JSON.stringify(j));
  const bytes = [];
  for (let b = 0; b < 256; ++b) bytes.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0.0]);
  u2.model.vocab = [...vocab.slice(0, 3), ['<s>', 0.0], ...bytes, ...pieces];
  u2.model.byte_fallback = true;
  u2.added_tokens = [added(0, '<unk>', true), added(1, '<pad>', true), added(2, '</s>', true), added(3, '<s>', true, { lstrip: true, rstrip: true })];
  u2.normalizer = null;
  u2.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true };
  u2.decoder = { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true }, { type: 'ByteFallback' }, { type: 'Fuse' }] };
  u2.post_processor = { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<s>': { id: '<s>', ids: [3], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } } };
  write('bytefallback_unigram.json', u2);
}
