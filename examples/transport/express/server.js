// ADR 0098's api end, as the incident had it: an Express app whose JSON
// parser was never configured. With JSON_LIMIT unset it is exactly
// `app.use(express.json())` — body-parser's implicit '100kb' (102,400
// bytes); JSON_LIMIT=10mb is the ADR's fix, `express.json({ limit: '10mb' })`.
//
// It listens on 127.0.0.1 on a port the kernel picks (no race for a free
// port) and writes its URL to the file named by URL_FILE once it listens.
'use strict';
const fs = require('node:fs');
const express = require('express');

const app = express();
const limit = process.env.JSON_LIMIT;
app.use(limit ? express.json({ limit }) : express.json());

// The heaviest leg of the ADR's transport: the whole history, every turn.
app.post('/internal/sessions/:sessionId/llm-turn', (req, res) => {
  const messages = Array.isArray(req.body?.messages) ? req.body.messages.length : null;
  res.json({ ok: true, sessionId: req.params.sessionId, messages });
});

const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const url = `http://127.0.0.1:${port}/internal/sessions/ctxgate/llm-turn`;
  const file = process.env.URL_FILE;
  if (file) {
    fs.writeFileSync(`${file}.tmp`, `${url}\n`);
    fs.renameSync(`${file}.tmp`, file);
  }
  console.log(`express (json limit: ${limit || "express.json()'s implicit default"}) listening: ${url}`);
});
