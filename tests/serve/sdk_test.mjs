// `dsv4 serve` driven by the official SDKs (openai, @anthropic-ai/sdk) on loopback, with a tiny
// synthetic model: its text is noise, so the checks are about the protocol (every response is
// well-formed for the SDK that reads it) and about properties that hold for any weights (stop
// strings cut the greedy text exactly where they occur, streamed text equals the non-streamed
// text, reasoning goes to its own field, logprobs describe every token, errors are typed).
//
// Run by CTest (sdk.serve_sdk_test): node --test tests/serve/sdk_test.mjs, with DSV4_BINARY and
// DSV4_TEST_DATA (where fetch_test_data.sh installed the SDKs) set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dataDir = process.env.DSV4_TEST_DATA;
const binary = process.env.DSV4_BINARY;
const require = createRequire(path.join(dataDir, 'node_modules', 'index.js'));
const OpenAI = require('openai').default;
const Anthropic = require('@anthropic-ai/sdk').default;

const KEY = 'test-key';
let server, baseURL, modelDir, openai, anthropic;

before(async () => {
  modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsv4-sdk-'));
  execFileSync(binary, ['make-fixture', '--preset', 'tiny', '--seed', '11', '--out', modelDir, '--force', '-q',
                        '--tokenizer', path.join(dataDir, 'tokenizer-v41.json')]);
  server = spawn(binary, ['serve', '-m', modelDir, '--port', '0', '--api-key', KEY, '--alias', 'tiny',
                          '--parallel', '4', '--ctx-per-seq', '512', '-t', '2', '-q'],
                 { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^(\d+)\n/);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`dsv4 serve exited with ${code}`)));
  });
  baseURL = `http://127.0.0.1:${port}`;
  openai = new OpenAI({ apiKey: KEY, baseURL: `${baseURL}/v1`, maxRetries: 0, timeout: 120000 });
  anthropic = new Anthropic({ apiKey: KEY, baseURL, maxRetries: 0, timeout: 120000 });
});

after(() => {
  if (server) server.kill('SIGTERM');
  if (modelDir) fs.rmSync(modelDir, { recursive: true, force: true });
});

const user = (text) => [{ role: 'user', content: text }];
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

test('models lists the served model', async () => {
  const list = await openai.models.list();
  assert.deepEqual(list.data.map((m) => m.id), ['tiny']);
});

test('chat: streamed deltas add up to the non-streamed answer', async () => {
  const req = { model: 'tiny', messages: user('Tell me a story.'), max_tokens: 16, temperature: 0 };
  const whole = await openai.chat.completions.create(req);
  assert.equal(whole.object, 'chat.completion');
  const choice = whole.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
  assert.equal(choice.message.reasoning_content, undefined);  // thinking is off by default

  const stream = await openai.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let content = '', finish = null, usage = null, first = true;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.equal(chunk.id, chunk.id);
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    if (first) assert.equal(chunk.choices[0].delta.role, 'assistant');
    first = false;
    content += chunk.choices[0].delta.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(content, choice.message.content ?? '');
  assert.equal(finish, choice.finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('completions: a stop string cuts the greedy text exactly before it', async () => {
  const req = { model: 'tiny', prompt: 'The history of the city begins', max_tokens: 24, temperature: 0 };
  const full = await openai.completions.create(req);
  const text = full.choices[0].text;
  assert.ok(text.length > 8, `too little text to cut: ${JSON.stringify(text)}`);
  const stop = text.slice(5, 8);
  const cut = await openai.completions.create({ ...req, stop: [stop] });
  assert.equal(cut.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
  // Streamed, the held-back stop never leaks either.
  const stream = await openai.completions.create({ ...req, stop: [stop], stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, cut.choices[0].text);
});

test('chat: logprobs describe every generated token', async () => {
  const r = await openai.chat.completions.create({
    model: 'tiny', messages: user('Count.'), max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    // Greedy: the chosen token is the most likely one.
    assert.equal(t.logprob, t.top_logprobs[0].logprob);
    for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob);
  }
});

test('chat: reasoning on goes to reasoning_content, off does not', async () => {
  const on = await openai.chat.completions.create({
    model: 'tiny', messages: user('Think first.'), max_tokens: 8, temperature: 0, reasoning_effort: 'high',
  });
  // The random model never closes its reasoning: everything it says is reasoning.
  assert.ok(on.choices[0].message.reasoning_content.length > 0);
  const off = await openai.chat.completions.create({
    model: 'tiny', messages: user('Think first.'), max_tokens: 8, temperature: 0,
    chat_template_kwargs: { thinking: false },
  });
  assert.equal(off.choices[0].message.reasoning_content, undefined);
  // Streamed reasoning arrives as reasoning_content deltas.
  const stream = await openai.chat.completions.create({
    model: 'tiny', messages: user('Think first.'), max_tokens: 8, temperature: 0, reasoning_effort: 'high', stream: true,
  });
  let reasoning = '';
  for await (const chunk of stream) reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
  assert.equal(reasoning, on.choices[0].message.reasoning_content);
});

test('chat: a named tool call is returned, then answered', async () => {
  const messages = user('What is the weather in Paris?');
  const r = await openai.chat.completions.create({
    model: 'tiny', messages, tools: [weatherTool], max_tokens: 12, temperature: 0,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const calls = r.choices[0].message.tool_calls;
  assert.equal(calls.length >= 1, true);
  assert.equal(calls[0].type, 'function');
  assert.equal(calls[0].function.name, 'get_weather');
  assert.equal(typeof JSON.parse(calls[0].function.arguments), 'object');
  // Streamed: the same call, its arguments in fragments.
  const stream = await openai.chat.completions.create({
    model: 'tiny', messages, tools: [weatherTool], max_tokens: 12, temperature: 0, stream: true,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  let name = '', args = '', id = '';
  for await (const chunk of stream)
    for (const c of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (c.index !== 0) continue;
      if (c.id) id = c.id;
      if (c.function?.name) name += c.function.name;
      args += c.function?.arguments ?? '';
    }
  assert.equal(name, 'get_weather');
  assert.match(id, /^call_/);
  assert.deepEqual(JSON.parse(args), JSON.parse(calls[0].function.arguments));
  // The answer to the call goes back as a tool message and the conversation continues.
  const answer = await openai.chat.completions.create({
    model: 'tiny', tools: [weatherTool], max_tokens: 4, temperature: 0,
    messages: [...messages, r.choices[0].message, { role: 'tool', tool_call_id: calls[0].id, content: '{"temp": 21}' }],
  });
  assert.equal(answer.choices[0].message.role, 'assistant');
});

test('openai errors are typed', async () => {
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: user('x'), temperature: 'hot' }),
                       (e) => e instanceof OpenAI.BadRequestError && /temperature/.test(e.message));
  await assert.rejects(openai.chat.completions.create({ model: 'gpt-9', messages: user('x') }),
                       (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: user('x'), max_tokens: 1000000 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  const wrong = new OpenAI({ apiKey: 'wrong', baseURL: `${baseURL}/v1`, maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});

test('anthropic: message, stream and thinking', async () => {
  const req = { model: 'tiny', max_tokens: 12, temperature: 0, system: 'Be brief.', messages: user('Hello') };
  const msg = await anthropic.messages.create(req);
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.ok(['end_turn', 'max_tokens'].includes(msg.stop_reason));
  assert.ok(msg.usage.input_tokens > 0);
  const text = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

  const stream = anthropic.messages.stream(req);
  let streamed = '';
  stream.on('text', (t) => { streamed += t; });
  const final = await stream.finalMessage();
  assert.equal(streamed, text);
  assert.deepEqual(final.content, msg.content);
  assert.equal(final.stop_reason, msg.stop_reason);
  assert.equal(final.usage.output_tokens, msg.usage.output_tokens);

  const thinking = await anthropic.messages.create({ ...req, thinking: { type: 'enabled', budget_tokens: 1024 } });
  assert.equal(thinking.content[0].type, 'thinking');
  assert.ok(thinking.content[0].thinking.length > 0);
  const tstream = anthropic.messages.stream({ ...req, thinking: { type: 'enabled', budget_tokens: 1024 } });
  const tfinal = await tstream.finalMessage();
  assert.deepEqual(tfinal.content, thinking.content);
});

test('anthropic: a forced tool_use is returned, then answered with tool_result', async () => {
  const tools = [{ name: 'get_weather', description: 'The weather', input_schema: weatherTool.function.parameters }];
  const req = { model: 'tiny', max_tokens: 12, temperature: 0, tools, tool_choice: { type: 'tool', name: 'get_weather' },
                messages: user('Weather in Oslo?') };
  const msg = await anthropic.messages.create(req);
  const use = msg.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(msg.content));
  assert.equal(use.name, 'get_weather');
  assert.equal(typeof use.input, 'object');
  // Streamed: the same blocks in the same order (ids differ: they belong to each response).
  const final = await anthropic.messages.stream(req).finalMessage();
  const withoutIds = (blocks) => blocks.map(({ id, ...rest }) => rest);
  assert.deepEqual(withoutIds(final.content), withoutIds(msg.content));
  assert.match(final.content.find((b) => b.type === 'tool_use').id, /^toolu_/);
  const answer = await anthropic.messages.create({
    model: 'tiny', max_tokens: 4, temperature: 0, tools,
    messages: [...req.messages, { role: 'assistant', content: msg.content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
  });
  assert.equal(answer.type, 'message');
});

test('anthropic errors are typed', async () => {
  await assert.rejects(anthropic.messages.create({ model: 'tiny', messages: user('x') }),
                       (e) => e instanceof Anthropic.BadRequestError);
  const wrong = new Anthropic({ apiKey: 'wrong', baseURL, maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: 'tiny', max_tokens: 2, messages: user('x') }),
                       (e) => e instanceof Anthropic.AuthenticationError);
});
