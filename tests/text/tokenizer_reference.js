#!/usr/bin/env node
// The reference for the C++ tokenizer: the official Hugging Face `tokenizers` Rust library
// through its Node binding (installed by tests/data/fetch_test_data.sh). It shares no code with
// src/text/. Subcommands:
//
//   encode     --tokenizer T --corpus C.jsonl --out IDS.bin [--special-as-text]
//              the ids of every document (encode with add_special_tokens=true), written as
//              "DSV4IDS1", uint32 docs, then per document uint32 count + int32 ids (little-endian).
//              --special-as-text emulates the library's encode_special_tokens=true (not exposed by
//              the Node binding): the special tokens' contents are replaced by strings that occur
//              nowhere in the corpus (in model.vocab too, for those that are vocabulary entries),
//              after checking that this changes nothing else (no non-special token's content
//              occurs inside a special token's, no merge produces a special token).
//   decode     --tokenizer T --out CASES.json [--count N] [--seed S]
//              random id sequences (byte tokens that split characters, special and added tokens,
//              any id) with the library's decode(ids, false) and decode(ids, true).
//   pretokenize --tokenizer T --corpus C.jsonl --out PIECES.json
//              the pre-tokenizer's pieces of every document, in the ByteLevel alphabet.
//   classes    --out CLASSES.json
//              for every Unicode scalar value, which of \p{L} \p{M} \p{N} \p{P} \p{S} \s the
//              library's regex engine matches: [[first, last, mask], ...] with bit i = i-th class.
//   bench      --tokenizer T --corpus C.jsonl [--repeat R]
//              single-threaded speed: encode() one document at a time (awaited in turn), and
//              encodeBatch() of the whole corpus; run with RAYON_NUM_THREADS=1 and
//              UV_THREADPOOL_SIZE=1 for one thread (bench/tokenizer_vs_hf.sh does).
// Every subcommand takes --node-modules DIR (default: node_modules beside the tokenizer, or
// tests/data/downloaded/node_modules) and prints a one-line JSON summary on stdout.
'use strict';
const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const args = { cmd: argv[0], flags: {} };
  for (let i = 1; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith('--')) throw new Error(`unexpected argument ${k}`);
    const name = k.slice(2);
    if (name === 'special-as-text') {
      args.flags[name] = true;
      continue;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`missing value for ${k}`);
    args.flags[name] = v;
  }
  return args;
}

function need(args, name) {
  const v = args.flags[name];
  if (v === undefined) throw new Error(`${args.cmd}: --${name} is required`);
  return v;
}

function loadLibrary(args) {
  let dir = args.flags['node-modules'];
  if (!dir && args.flags.tokenizer) dir = path.join(path.dirname(args.flags.tokenizer), 'node_modules');
  if (!dir || !fs.existsSync(path.join(dir, 'tokenizers'))) dir = path.join(__dirname, '..', 'data', 'downloaded', 'node_modules');
  const tokenizers = require(path.resolve(dir, 'tokenizers'));
  const version = JSON.parse(fs.readFileSync(path.resolve(dir, 'tokenizers', 'package.json'), 'utf8')).version;
  return { tokenizers, version };
}

function readCorpus(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).text);
}

function writeIds(file, all) {
  let total = 0;
  for (const ids of all) total += ids.length;
  const buf = Buffer.alloc(12 + 4 * all.length + 4 * total);
  buf.write('DSV4IDS1', 0, 'latin1');
  buf.writeUInt32LE(all.length, 8);
  let off = 12;
  for (const ids of all) {
    buf.writeUInt32LE(ids.length, off);
    off += 4;
    for (const id of ids) {
      buf.writeInt32LE(id, off);
      off += 4;
    }
  }
  fs.writeFileSync(file, buf);
  return total;
}

// encode_special_tokens=true, emulated: see the header comment.
function specialAsTextJson(file, docs) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const specials = doc.added_tokens.filter((a) => a.special);
  const others = doc.added_tokens.filter((a) => !a.special);
  for (const s of specials)
    for (const o of others)
      if (s.content.includes(o.content))
        throw new Error(`cannot emulate encode_special_tokens: ${JSON.stringify(o.content)} occurs inside special ${JSON.stringify(s.content)}`);
  const marker = '\uFDD0\uFDEF\uFDD0';
  for (const d of docs) if (d.includes(marker)) throw new Error('the corpus contains the emulation marker');
  // A special token that is also a vocabulary entry (BOS, EOS, pad) keeps its id only if the
  // vocabulary entry is renamed too; no merge can produce such an entry (it is not in the
  // ByteLevel alphabet), which is checked.
  const vocab = doc.model.vocab;
  const merged = new Set(doc.model.merges.map((m) => (Array.isArray(m) ? m.join('') : m.replace(' ', ''))));
  for (const s of specials) {
    const content = s.content;
    s.content = `${marker}${s.id}${marker}`;
    if (Object.prototype.hasOwnProperty.call(vocab, content)) {
      if (merged.has(content)) throw new Error(`cannot emulate encode_special_tokens: a merge produces ${JSON.stringify(content)}`);
      vocab[s.content] = vocab[content];
      delete vocab[content];
    }
  }
  return JSON.stringify(doc);
}

async function cmdEncode(args, lib) {
  const tokFile = need(args, 'tokenizer');
  const docs = readCorpus(need(args, 'corpus'));
  const tok = args.flags['special-as-text']
    ? lib.tokenizers.Tokenizer.fromString(specialAsTextJson(tokFile, docs))
    : lib.tokenizers.Tokenizer.fromFile(tokFile);
  const t0 = process.hrtime.bigint();
  const all = [];
  const batch = 256;
  for (let i = 0; i < docs.length; i += batch) {
    const encs = await tok.encodeBatch(docs.slice(i, i + batch), { addSpecialTokens: true });
    for (const e of encs) all.push(e.getIds());
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const tokens = writeIds(need(args, 'out'), all);
  return { tokenizers_version: lib.version, docs: docs.length, tokens, seconds };
}

// A small deterministic PRNG (xorshift32), so the cases do not depend on Math.random.
function rng(seed) {
  let x = (seed >>> 0) || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

async function cmdDecode(args, lib) {
  const tok = lib.tokenizers.Tokenizer.fromFile(need(args, 'tokenizer'));
  const count = Number(args.flags.count || 400);
  const rand = rng(Number(args.flags.seed || 12345));
  const n = tok.getVocabSize(true);
  const vocab = tok.getVocab(true);
  // Ids of single-byte tokens whose byte is >= 0x80 (parts of multi-byte characters).
  const byteIds = [];
  const alphabet = lib.tokenizers.byteLevelAlphabet();
  for (const ch of alphabet) {
    const cp = ch.codePointAt(0);
    if (vocab[ch] !== undefined && (cp >= 0x80 || ch === 'Ġ')) byteIds.push(vocab[ch]);
  }
  const addedIds = [];
  for (let id = 0; id < n; id++) {
    const t = tok.idToToken(id);
    if (t !== null && (t.startsWith('<') || t.includes('\uFF5C'))) addedIds.push(id);
  }
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const cases = [];
  for (let c = 0; c < count; c++) {
    const len = 1 + Math.floor(rand() * 40);
    const ids = [];
    for (let i = 0; i < len; i++) {
      const r = rand();
      if (r < 0.35) ids.push(pick(byteIds));
      else if (r < 0.5) ids.push(pick(addedIds));
      else ids.push(Math.floor(rand() * n));
    }
    cases.push({ ids, text: await tok.decode(ids, false), text_skip: await tok.decode(ids, true) });
  }
  fs.writeFileSync(need(args, 'out'), JSON.stringify(cases));
  return { tokenizers_version: lib.version, cases: cases.length };
}

function cmdPretokenize(args, lib) {
  const tok = lib.tokenizers.Tokenizer.fromFile(need(args, 'tokenizer'));
  const pre = tok.getPreTokenizer();
  const docs = readCorpus(need(args, 'corpus'));
  const out = docs.map((d) => pre.preTokenizeString(d).map((p) => p[0]));
  fs.writeFileSync(need(args, 'out'), JSON.stringify(out));
  return { tokenizers_version: lib.version, docs: docs.length };
}

// One Split pre-tokenizer per class with behavior Removed: what is left of a string holding every
// scalar value once is exactly the set of code points outside the class.
function cmdClasses(args, lib) {
  const cps = [];
  for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) cps.push(c);
  let all = '';
  for (let i = 0; i < cps.length; i += 50000) all += String.fromCodePoint(...cps.slice(i, i + 50000));
  const classes = ['\\p{L}', '\\p{M}', '\\p{N}', '\\p{P}', '\\p{S}', '\\s'];
  const mask = new Uint8Array(0x110000);
  classes.forEach((re, bit) => {
    const json = {
      version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, post_processor: null,
      decoder: null, pre_tokenizer: { type: 'Split', pattern: { Regex: re }, behavior: 'Removed', invert: false },
      model: {
        type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
        fuse_unk: false, byte_fallback: false, vocab: { a: 0 }, merges: [],
      },
    };
    const pre = lib.tokenizers.Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer();
    const outside = new Uint8Array(0x110000);
    for (const [piece] of pre.preTokenizeString(all)) for (const ch of piece) outside[ch.codePointAt(0)] = 1;
    for (const c of cps) if (!outside[c]) mask[c] |= 1 << bit;
  });
  const ranges = [];
  let start = 0;
  for (let c = 1; c <= 0x110000; c++) {
    if (c === 0x110000 || mask[c] !== mask[start]) {
      if (mask[start]) ranges.push([start, c - 1, mask[start]]);
      start = c;
    }
  }
  fs.writeFileSync(need(args, 'out'), JSON.stringify(ranges));
  return { tokenizers_version: lib.version, classes, ranges: ranges.length };
}

async function cmdBench(args, lib) {
  const tok = lib.tokenizers.Tokenizer.fromFile(need(args, 'tokenizer'));
  const docs = readCorpus(need(args, 'corpus'));
  const repeat = Number(args.flags.repeat || 3);
  let bytes = 0;
  for (const d of docs) bytes += Buffer.byteLength(d, 'utf8');
  let tokens = 0;
  for (const d of docs) tokens += (await tok.encode(d)).getLength();  // warm-up (fills the BPE cache)
  let single = Infinity;
  let batch = Infinity;
  for (let r = 0; r < repeat; r++) {
    let t0 = process.hrtime.bigint();
    for (const d of docs) await tok.encode(d);
    single = Math.min(single, Number(process.hrtime.bigint() - t0) / 1e9);
    t0 = process.hrtime.bigint();
    await tok.encodeBatch(docs);
    batch = Math.min(batch, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return {
    tokenizers_version: lib.version, docs: docs.length, bytes, tokens,
    single_doc_seconds: single, single_doc_mb_per_s: bytes / 1e6 / single,
    batch_seconds: batch, batch_mb_per_s: bytes / 1e6 / batch,
    rayon_threads: process.env.RAYON_NUM_THREADS || 'default',
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const lib = loadLibrary(args);
  const cmds = { encode: cmdEncode, decode: cmdDecode, pretokenize: cmdPretokenize, classes: cmdClasses, bench: cmdBench };
  const f = cmds[args.cmd];
  if (!f) throw new Error(`usage: tokenizer_reference.js ${Object.keys(cmds).join('|')} [--flags]`);
  const summary = await f(args, lib);
  process.stdout.write(JSON.stringify(summary) + '\n');
}

main().catch((e) => {
  process.stderr.write(`tokenizer_reference.js: ${e.stack || e}\n`);
  process.exit(1);
});
