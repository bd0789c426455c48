// The window and threshold a CLI recipe's start.sh gives its agent, read
// from a `ctxgate agent --config` file (agents/NAME/agent.json) or from an
// agent fixture, whose "config" is then read, so that a known bug's fixture
// replays with the settings it was found with. A bad file: a message naming
// it and the field, exit 2.
//
//   const settings = require(".../agents/lib/settings.cjs")(file, "agents/pi/start.sh");
//   settings.contextWindow, settings.threshold
"use strict";
const fs = require("fs");

module.exports = function readSettings(file, who) {
  function fail(why) {
    process.stderr.write(`${who}: ${file}: ${why}\n`);
    process.exit(2);
  }
  let agent;
  try {
    agent = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    fail(`cannot read the settings: ${e.message}`);
  }
  if (agent && agent.op === "agent" && agent.config) agent = agent.config;
  if (!agent || !Number.isInteger(agent.contextWindow) || agent.contextWindow <= 0)
    fail("contextWindow must be a positive whole number of tokens");
  if (typeof agent.threshold !== "number" || !(agent.threshold > 0 && agent.threshold <= 1))
    fail("threshold must be a number in (0, 1]");
  return { contextWindow: agent.contextWindow, threshold: agent.threshold };
};
