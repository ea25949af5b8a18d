#!/usr/bin/env node
// Builds a DeepSeek V4.1 stand-in tokenizer.json from the V3 one (no V4.1 tokenizer file can be
// fetched here). chat-encoding.md §1: apart from its added tokens, the V4/V4.1 tokenizer is the
// V3-era byte-level BPE (same vocabulary, merges, pre-tokenizer and decoder); V4.1 extends the
// added tokens from 128,815 ids to vocab_size 129,280 and renames id 128799.
//
// What is applied:
//   - every added token that chat-encoding.md §1 names with its id (29 new ids in 128815..129279,
//     plus 128799 renamed from "<｜place▁holder▁no▁799｜>" to "<｜System｜>");
//   - "special": false for <｜System｜> (128799) and <｜deepseek_image｜> (129264), as §1 states,
//     and for the other named tokens as well, like V3's named markers (<｜User｜>, fim, tool
//     tokens); "normalized": true for all of them, as §1 states for <｜System｜>;
//   - the 436 ids §1 does not name (128815–128820, 128823–128824, 128847–129261, 129265–129270,
//     129272–129277, 129279) are filled with V3-style placeholders "<｜place▁holder▁no▁N｜>",
//     N = id − 128000, special: true, normalized: false like V3's placeholders. They are needed
//     because the `tokenizers` library assigns added-token ids in list order without gaps, so the
//     named ids past 128846 cannot be declared without them. Their real V4.1 strings are unknown.
// Usage: node make_tokenizer_v41.js V3_TOKENIZER_JSON OUT_JSON
'use strict';
const fs = require('fs');

const BAR = '\uFF5C'; // ｜ FULLWIDTH VERTICAL LINE
const SEP = '\u2581'; // ▁ LOWER ONE EIGHTH BLOCK
const t = (s) => s.replace(/\|/g, BAR).replace(/_/g, SEP);

// chat-encoding.md §1, ids >= 128799 with a stated string. Names containing an ASCII '_' in the
// table (latest_reminder, read_url, ...) keep it; t() is only applied where §1 writes '▁'.
const NAMED = new Map([
  [128799, `<${BAR}System${BAR}>`],
  [128821, '<think>'],
  [128822, '</think>'],
  [128825, `${BAR}DSML${BAR}`],
  [128826, t('<|begin_sys|>')],
  [128827, t('<|end_sys|>')],
  [128828, `<${BAR}latest_reminder${BAR}>`],
  [128829, `<${BAR}action${BAR}>`],
  [128830, `<${BAR}query${BAR}>`],
  [128831, `<${BAR}authority${BAR}>`],
  [128832, `<${BAR}domain${BAR}>`],
  [128833, `<${BAR}task${BAR}>`],
  [128834, `<${BAR}political${BAR}>`],
  [128835, `<${BAR}entity${BAR}>`],
  [128836, `<${BAR}title${BAR}>`],
  [128837, `<${BAR}safety${BAR}>`],
  [128838, `<${BAR}answer${BAR}>`],
  [128839, `<${BAR}search${BAR}>`],
  [128840, '<dsml:'],
  [128841, '</dsml:'],
  [128842, t('<|search_begin|>')],
  [128843, t('<|search_end|>')],
  [128844, `<${BAR}extracted_url${BAR}>`],
  [128845, `<${BAR}read_url${BAR}>`],
  [128846, `<${BAR}end_of_query${BAR}>`],
  [129262, `<${BAR}rl_image_pad${BAR}>`],
  [129263, `<${BAR}rl_image_start${BAR}>`],
  [129264, `<${BAR}deepseek_image${BAR}>`],
  [129271, `<${BAR}/polygon${BAR}>`],
  [129278, `<${BAR}ref${BAR}>`],
]);
const V3_SIZE = 128815;
const V41_SIZE = 129280; // config vocab_size

function main() {
  const [src, out] = process.argv.slice(2);
  if (!src || !out) throw new Error('usage: make_tokenizer_v41.js V3_TOKENIZER_JSON OUT_JSON');
  const doc = JSON.parse(fs.readFileSync(src, 'utf8'));
  const added = doc.added_tokens;
  const last = added[added.length - 1];
  if (last.id !== V3_SIZE - 1) throw new Error(`${src}: expected the V3 tokenizer (last added id ${V3_SIZE - 1})`);
  const entry = (id, content, named) => ({
    id, content, single_word: false, lstrip: false, rstrip: false,
    normalized: named, special: !named,
  });
  // Rename within the V3 range.
  for (const a of added) {
    if (NAMED.has(a.id)) Object.assign(a, entry(a.id, NAMED.get(a.id), true));
  }
  // Extend to vocab_size, in id order (the order the tokenizers library assigns ids in).
  for (let id = V3_SIZE; id < V41_SIZE; id++) {
    const named = NAMED.has(id);
    added.push(entry(id, named ? NAMED.get(id) : t(`<|place_holder_no_${id - 128000}|>`), named));
  }
  fs.writeFileSync(out, JSON.stringify(doc));
}

main();
