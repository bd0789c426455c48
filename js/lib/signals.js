// Nothing ctxgate's wrappers start outlives them. A signal that would end
// this process — SIGTERM, SIGINT, SIGHUP — is passed on to the ctxgate
// binary it runs, which stops its subjects as it dies (each asks for
// SIGKILL on its death, PR_SET_PDEATHSIG). The `ctxgate` command forwards
// and then dies as the binary died (forwardSignals); check(), which runs in
// someone else's process (a test runner), forwards, removes its scratch
// folder, and — only when no one else listens for the signal, so that the
// process would have died of it — dies of it once its children are gone
// (guardChild). A SIGKILL cannot be caught, so cannot be passed on.

import fs from 'node:fs';

/** The signals passed on: those that end a process by default and can be caught. */
export const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** How long check() waits for its ctxgate to die of a forwarded signal before it kills it. */
const GRACE_MS = 2000;

function kill(child, signal) {
  try {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  } catch {
    // already gone
  }
}

/**
 * Pass FORWARDED signals sent to this process on to `child`; kill it if
 * this process exits first. Returns the function that stops it (call it
 * when the child has exited).
 */
export function forwardSignals(child) {
  const handlers = FORWARDED.map((signal) => [signal, () => kill(child, signal)]);
  const onExit = () => kill(child, 'SIGTERM');
  for (const [signal, handler] of handlers) process.on(signal, handler);
  process.on('exit', onExit);
  return () => {
    for (const [signal, handler] of handlers) process.removeListener(signal, handler);
    process.removeListener('exit', onExit);
  };
}

// check()'s children, each with the folder to remove when it is stopped.
const guarded = new Map();
const handlers = new Map();

function onExit() {
  for (const [child, scratch] of guarded) {
    kill(child, 'SIGTERM');
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function onSignal(signal) {
  const alone = process.listenerCount(signal) === 1; // only ours: without us the process would die of it
  const children = [...guarded.keys()];
  for (const [child, scratch] of guarded) {
    kill(child, signal);
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
  if (!alone) return; // someone else handles it: their choice whether the process ends
  const gone = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once('exit', r))));
  const grace = new Promise((r) => setTimeout(r, GRACE_MS).unref());
  Promise.race([Promise.all(gone), grace]).then(() => {
    for (const c of children) kill(c, 'SIGKILL');
    uninstall();
    process.kill(process.pid, signal);
  });
}

function install() {
  for (const signal of FORWARDED) {
    const handler = () => onSignal(signal);
    handlers.set(signal, handler);
    process.on(signal, handler);
  }
  process.on('exit', onExit);
}

function uninstall() {
  for (const [signal, handler] of handlers) process.removeListener(signal, handler);
  handlers.clear();
  process.removeListener('exit', onExit);
}

/**
 * Stop `child` and remove `scratch` (a folder, if given) when this process
 * is asked to end (FORWARDED signals) or exits, until the returned function
 * is called.
 */
export function guardChild(child, scratch) {
  if (guarded.size === 0) install();
  guarded.set(child, scratch);
  return () => {
    guarded.delete(child);
    if (guarded.size === 0) uninstall();
  };
}
