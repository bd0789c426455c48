// bodyBytes() and toolCallsFloor() on hand-written bodies (ci.sh compares
// bodyBytes with the binary on thousands of generated cases).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { bodyBytes, bodyMeterFor, toolCallsFloor } from '../index.js';

const bytes = (text) => Buffer.byteLength(text, 'utf8');
const call = { id: 'c1', name: 'read_file', arguments: { path: 'a.txt' } };
const history = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'héllo' },
  { role: 'assistant', content: null, toolCalls: [call] },
  { role: 'tool', toolCallId: 'c1', content: 'data' },
];

test('engine: the envelope, then the messages as they are', () => {
  assert.equal(bodyBytes([], {}), bytes('{"messages":[]}'));
  assert.equal(bodyBytes(history, { envelope: { model: 'm' } }), bytes(
    '{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"héllo"},'
    + '{"role":"assistant","content":null,"toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"a.txt"}}]},'
    + '{"role":"tool","toolCallId":"c1","content":"data"}]}'));
});

test('openai: tool_calls with arguments as JSON text, tool_call_id', () => {
  assert.equal(bodyBytes(history, { wireFormat: 'openai' }), bytes(
    '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"héllo"},'
    + '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\\"path\\":\\"a.txt\\"}"}}]},'
    + '{"role":"tool","content":"data","tool_call_id":"c1"}]}'));
});

test('anthropic: system on top, tool_use blocks, results in a user message', () => {
  assert.equal(bodyBytes(history, { wireFormat: 'anthropic', envelope: { max_tokens: 5 } }), bytes(
    '{"max_tokens":5,"system":"be brief","messages":[{"role":"user","content":"héllo"},'
    + '{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"read_file","input":{"path":"a.txt"}}]},'
    + '{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"data"}]}]}'));
});

test('images: openai writes a data URL, anthropic a base64 source', () => {
  const image = { type: 'image', mediaType: 'image/png', data: 'AAAA' };
  const msgs = [{ role: 'user', content: [{ type: 'text', text: 'see' }, image] }];
  assert.equal(bodyBytes(msgs, { wireFormat: 'openai' }), bytes(
    '{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}'));
  assert.equal(bodyBytes(msgs, { wireFormat: 'anthropic' }), bytes(
    '{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}'));
});

test('a meter measures like bodyBytes, message objects measured again included', () => {
  const meter = bodyMeterFor({ wireFormat: 'openai' });
  assert.equal(meter(history), bodyBytes(history, { wireFormat: 'openai' }));
  assert.equal(meter(history.slice(1)), bodyBytes(history.slice(1), { wireFormat: 'openai' }));
});

test('a config bodyBytes cannot read is a TypeError naming the field', () => {
  assert.throws(() => bodyBytes([], { wireFormat: 'xml' }), /config.wireFormat: "xml" is not one of engine, openai, anthropic/);
  assert.throws(() => bodyBytes([], { envelope: [] }), /config.envelope: must be an object/);
  assert.throws(() => bodyBytes('[]', {}), /`messages` must be an array/);
});

test('toolCallsFloor: ceil(bytes of the toolCalls JSON / bytesPerToken), summed', () => {
  const json = '[{"id":"c1","name":"read_file","arguments":{"path":"a.txt"}}]';
  assert.equal(toolCallsFloor(history, { bytesPerToken: 4 }), Math.ceil(bytes(json) / 4));
  assert.equal(toolCallsFloor(history, {}), Math.ceil(bytes(json) / 4));
  assert.equal(toolCallsFloor([...history, ...history], { bytesPerToken: 3 }), 2 * Math.ceil(bytes(json) / 3));
  assert.equal(toolCallsFloor([{ role: 'assistant', content: 'x', toolCalls: [] }], {}), 0);
});
