#!/usr/bin/env node
// Independent reference for the Engram compressed token map (reference-spec.md §8.2).
//
// It shares no code with src/text/: decoding is done by the official Hugging Face `tokenizers`
// Rust library (its Node binding, installed by tests/data/fetch_test_data.sh), so the
// "raw decode of [t], special tokens kept" is the real thing, not a re-implementation.
//
// Two normalizers are offered:
//   --normalize hf  (default) the Engram reference's own normalizer: a `tokenizers`
//                   normalizers.Sequence([NFKC, NFD, StripAccents, Lowercase,
//                   Replace(/[ \t\r\n]+/, " "), Replace(/^ $/, U+E000), Strip, Replace(U+E000, " ")])
//                   built from JSON and run by the Rust library. This is the ground truth.
//   --normalize js  the same steps written with JavaScript's own Unicode support
//                   (String.prototype.normalize, /\p{M}/u, toLowerCase, a Python-str.strip()
//                   equivalent). It follows Python/JS semantics, which differ from the Rust
//                   library in a few places (final sigma, which chars strip() removes, and the
//                   Unicode version of the tables); the C++ test reports those differences.
//
// Usage: node engram_map_reference.js --tokenizer PATH [--node-modules DIR] [--normalize hf|js]
// Prints one JSON object: {tokenizers_version, node_unicode, node_icu, normalize,
//   compressed_vocab_size, compressed_id: [...], key: [...]} (both arrays indexed by token id).
'use strict';
const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const args = { normalize: 'hf' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`missing value for ${k}`);
    if (k === '--tokenizer') args.tokenizer = v;
    else if (k === '--node-modules') args.modules = v;
    else if (k === '--normalize') args.normalize = v;
    else throw new Error(`unknown argument ${k}`);
  }
  if (!args.tokenizer) throw new Error('--tokenizer PATH is required');
  if (args.normalize !== 'hf' && args.normalize !== 'js') throw new Error('--normalize must be hf or js');
  if (!args.modules) args.modules = path.join(path.dirname(args.tokenizer), 'node_modules');
  return args;
}

const SENTINEL = '\uE000';

// The Engram normalizer as a `tokenizers` normalizer, run by the Rust library. The binding has
// no Regex constructor, so the Sequence is deserialized from JSON through a throwaway tokenizer.
function hfNormalizer(tokenizers) {
  const normalizer = {
    type: 'Sequence',
    normalizers: [
      { type: 'NFKC' },
      { type: 'NFD' },
      { type: 'StripAccents' },
      { type: 'Lowercase' },
      { type: 'Replace', pattern: { Regex: '[ \t\r\n]+' }, content: ' ' },
      { type: 'Replace', pattern: { Regex: '^ $' }, content: SENTINEL },
      { type: 'Strip', strip_left: true, strip_right: true },
      { type: 'Replace', pattern: { String: SENTINEL }, content: ' ' },
    ],
  };
  const json = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer,
    pre_tokenizer: null, post_processor: null, decoder: null,
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: { a: 0 }, merges: [],
    },
  };
  const n = tokenizers.Tokenizer.fromString(JSON.stringify(json)).getNormalizer();
  return (s) => n.normalizeString(s);
}

// Python's str.isspace() set (Py_UNICODE_ISSPACE): bidi class WS/B/S or category Zs. Unlike
// JS trim() it includes U+001C..U+001F and U+0085 and excludes U+FEFF.
const PY_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
function pyStrip(s) {
  const cps = [...s];
  let b = 0;
  let e = cps.length;
  while (b < e && PY_SPACE.has(cps[b].codePointAt(0))) b++;
  while (e > b && PY_SPACE.has(cps[e - 1].codePointAt(0))) e--;
  return cps.slice(b, e).join('');
}
function jsNormalize(s) {
  let t = s.normalize('NFKC').normalize('NFD');
  t = t.replace(/\p{M}/gu, '');
  t = t.toLowerCase();
  t = t.replace(/[ \t\r\n]+/g, ' ');
  if (t === ' ') t = SENTINEL;
  t = pyStrip(t);
  return t.split(SENTINEL).join(' ');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const tokenizers = require(path.resolve(args.modules, 'tokenizers'));
  const pkg = JSON.parse(fs.readFileSync(path.resolve(args.modules, 'tokenizers', 'package.json'), 'utf8'));
  const tok = tokenizers.Tokenizer.fromFile(args.tokenizer);
  const normalize = args.normalize === 'hf' ? hfNormalizer(tokenizers) : jsNormalize;
  const n = tok.getVocabSize(true);

  // decode([t], skip_special_tokens=false) for every id, in batches.
  const texts = [];
  const batch = 8192;
  for (let start = 0; start < n; start += batch) {
    const ids = [];
    for (let t = start; t < Math.min(n, start + batch); t++) ids.push([t]);
    texts.push(...(await tok.decodeBatch(ids, false)));
  }

  const keyToNew = new Map();
  const compressed = new Array(n);
  const keys = new Array(n);
  for (let t = 0; t < n; t++) {
    const text = texts[t];
    let key;
    if (text.includes('\uFFFD')) {
      key = tok.idToToken(t);  // a partial UTF-8 byte token: keyed by its raw form
    } else {
      const norm = normalize(text);
      key = norm !== '' ? norm : text;
    }
    let id = keyToNew.get(key);
    if (id === undefined) {
      id = keyToNew.size;
      keyToNew.set(key, id);
    }
    compressed[t] = id;
    keys[t] = key;
  }
  process.stdout.write(JSON.stringify({
    tokenizers_version: pkg.version,
    node_unicode: process.versions.unicode,
    node_icu: process.versions.icu,
    normalize: args.normalize,
    compressed_vocab_size: keyToNew.size,
    compressed_id: compressed,
    key: keys,
  }));
  process.stdout.write('\n');
}

main().catch((e) => {
  process.stderr.write(`engram_map_reference.js: ${e.stack || e}\n`);
  process.exit(1);
});
